#!/usr/bin/env python3
"""bench/sdk/summarize.py RESULTS_DIR - the markdown report of bench/sdk.sh.

Reads RESULTS_DIR/cli.json (hyperfine, `zerobox -- true`) and every RESULTS_DIR/*.tsv
(`row<TAB>wall ms<TAB>cpu ms` lines from the in-process drivers, in the order they were
timed; cpu is "-" where the driver cannot measure it). A row named LANG-cli is the CLI
started from that language's driver; the other LANG-* rows are that language's SDK.

For an SDK row:
  - wall over CLI: median(SDK) - median(LANG-cli), both timed in the same process,
    interleaved; and the median of the per-iteration differences ("paired"), which
    cancels drift that hits both calls of an iteration;
  - over hyperfine: median(SDK) - hyperfine's median for `zerobox -- true` (timed
    before the drivers, so drift is not cancelled);
  - CPU over CLI: the driver process's own CPU time per call (mean), SDK minus CLI. It
    hardly moves with the machine's load, unlike wall time, and is a floor for what the
    SDK adds to the wall time on an idle machine.
The issue's target is at most +5 ms over the CLI."""
import glob
import json
import os
import statistics
import sys
from typing import Dict, List, Optional

TARGET_MS = 5.0
ORDER = ["python-cli", "python-sync", "python-async", "typescript-cli", "typescript-sdk",
         "rust-cli", "rust-sdk"]


def quantile(xs: List[float], q: float) -> float:
    xs = sorted(xs)
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def main(res: str) -> int:
    with open(os.path.join(res, "cli.json")) as f:
        hf = json.load(f)["results"][0]
    hf_ms = [t * 1e3 for t in hf["times"]]
    hf_med = statistics.median(hf_ms)

    wall: Dict[str, List[float]] = {}
    cpu: Dict[str, List[float]] = {}
    for path in sorted(glob.glob(os.path.join(res, "*.tsv"))):
        with open(path) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) < 2:
                    continue
                wall.setdefault(parts[0], []).append(float(parts[1]))
                if len(parts) > 2 and parts[2] != "-":
                    cpu.setdefault(parts[0], []).append(float(parts[2]))

    def mean_cpu(name: str) -> Optional[float]:
        xs = cpu.get(name)
        return statistics.fmean(xs) if xs else None

    print("| row | runs | wall median ms (p25-p75) | wall over same-process CLI ms: "
          "medians / paired | wall over hyperfine ms | driver CPU ms/call | CPU over CLI ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print(f"| `zerobox -- true` (hyperfine -N) | {len(hf_ms)} | {hf_med:.2f} "
          f"({quantile(hf_ms, .25):.2f}-{quantile(hf_ms, .75):.2f}) | - | - | - | - |")
    checks: List[str] = []
    for name in sorted(wall, key=lambda r: (ORDER.index(r) if r in ORDER else len(ORDER), r)):
        xs = wall[name]
        lang = name.split("-", 1)[0]
        cli = f"{lang}-cli"
        med = statistics.median(xs)
        c = mean_cpu(name)
        cells = [name, str(len(xs)),
                 f"{med:.2f} ({quantile(xs, .25):.2f}-{quantile(xs, .75):.2f})",
                 "-", f"{med - hf_med:+.2f}", "-" if c is None else f"{c:.2f}", "-"]
        if name != cli and cli in wall:
            base = wall[cli]
            n = min(len(xs), len(base))
            paired = statistics.median(xs[i] - base[i] for i in range(n))
            over = med - statistics.median(base)
            cells[3] = f"{over:+.2f} / {paired:+.2f}"
            cb = mean_cpu(cli)
            cpu_over = None if c is None or cb is None else c - cb
            if cpu_over is not None:
                cells[6] = f"{cpu_over:+.2f}"
            worst = max(over, paired)
            checks.append(
                f"- {name}: wall +{worst:.2f} ms over the CLI started from the same process"
                f" ({med - hf_med:+.2f} ms over hyperfine's median)"
                + ("" if cpu_over is None else f", CPU {cpu_over:+.2f} ms")
                + " -> " + ("within" if worst <= TARGET_MS else "ABOVE")
                + f" the {TARGET_MS:g} ms target")
        print("| " + " | ".join(cells) + " |")
    print()
    print(f"Target (from the issue): an SDK adds at most {TARGET_MS:g} ms to the CLI for a "
          "trivial command.")
    print("\n".join(checks))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
