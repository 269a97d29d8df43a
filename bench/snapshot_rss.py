#!/usr/bin/env python3
"""Peak memory of one zerobox run (helper of bench/snapshot.sh).

Usage: snapshot_rss.py -- COMMAND [ARGS...]

Runs `/usr/bin/time -f %M COMMAND...` and, while it runs, polls VmHWM of COMMAND's own
process (the child of /usr/bin/time, i.e. zerobox's top-level process) every 5 ms.
Prints one JSON object:
  exit        COMMAND's exit status (as /usr/bin/time reports it)
  elapsed_s   wall-clock time of the whole run
  time_kb     /usr/bin/time %M: the largest ru_maxrss of any process of the run's tree
              (zerobox, its helpers and the sandboxed command)
  hwm_kb      the last VmHWM read from zerobox's own process before it exited (a lower
              bound of its peak, missing at most the last 5 ms)
"""
import json
import subprocess
import sys
import tempfile
import time


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def vm_hwm(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def main():
    args = sys.argv[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        sys.exit(__doc__)
    with tempfile.NamedTemporaryFile("r", suffix=".time") as out:
        start = time.monotonic()
        p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", out.name] + args,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        target = None
        hwm = 0
        while p.poll() is None:
            if target is None:
                kids = children(p.pid)
                target = kids[0] if kids else None
            if target is not None:
                v = vm_hwm(target)
                if v is not None:
                    hwm = max(hwm, v)
            time.sleep(0.005)
        elapsed = time.monotonic() - start
        text = out.read().split()
    time_kb = int(text[-1]) if text and text[-1].isdigit() else None
    print(json.dumps({"exit": p.returncode, "elapsed_s": round(elapsed, 3),
                      "time_kb": time_kb, "hwm_kb": hwm or None}))


if __name__ == "__main__":
    main()
