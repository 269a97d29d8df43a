#!/usr/bin/env python3
"""bench/sdk/py_bench.py RUNS WARMUP - times `true` through the zerobox CLI and through
the Python SDK, all inside this one process (so the interpreter's start-up is not in any
figure). Rows, interleaved and rotated every iteration so that drift hits them alike:

  python-cli    subprocess.run([ZEROBOX_BIN, "--", "true"]), output to /dev/null
  python-sync   zerobox.Sandbox().run("true")
  python-async  await zerobox.aio.AsyncSandbox().run("true"), in one running event loop

Prints one `row<TAB>wall ms<TAB>cpu ms` line per timed call, cpu being this process's
own CPU time (all its threads; not zerobox's). ZEROBOX_BIN names the binary."""
import asyncio
import os
import subprocess
import sys
import time
from typing import Awaitable, Callable, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "sdks", "python"))
from zerobox import Sandbox  # noqa: E402
from zerobox.aio import AsyncSandbox  # noqa: E402


async def main(runs: int, warmup: int) -> None:
    zb = os.environ["ZEROBOX_BIN"]
    sync_sb, async_sb = Sandbox(), AsyncSandbox()

    async def cli() -> None:
        rc = subprocess.run([zb, "--", "true"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        if rc != 0:
            raise SystemExit(f"python-cli: zerobox -- true exited {rc}")

    async def sync() -> None:
        r = sync_sb.run("true")
        if r.exit_code != 0:
            raise SystemExit(f"python-sync: exit {r.exit_code}: {r.stderr!r}")

    async def aio() -> None:
        r = await async_sb.run("true")
        if r.exit_code != 0:
            raise SystemExit(f"python-async: exit {r.exit_code}: {r.stderr!r}")

    rows: Dict[str, Callable[[], Awaitable[None]]] = {
        "python-cli": cli, "python-sync": sync, "python-async": aio}
    names: List[str] = list(rows)
    out: List[str] = []
    for i in range(warmup + runs):
        order = names[i % len(names):] + names[:i % len(names)]
        for name in order:
            c0, t0 = time.process_time_ns(), time.perf_counter_ns()
            await rows[name]()
            ms = (time.perf_counter_ns() - t0) / 1e6
            cpu = (time.process_time_ns() - c0) / 1e6
            if i >= warmup:
                out.append(f"{name}\t{ms:.4f}\t{cpu:.4f}")
    print("\n".join(out))


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
