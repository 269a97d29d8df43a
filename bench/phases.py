#!/usr/bin/env python3
"""bench/phases.py - split a sandbox tool's start-up into phases with `perf trace`.

Usage: phases.py [-n RUNS] [--json FILE] LABEL 'COMMAND LINE' [LABEL 'COMMAND LINE' ...]
  e.g. phases.py -n 20 zerobox '/path/zerobox --allow-write=/d -- /bin/true' \
                       bwrap   '/usr/bin/bwrap --ro-bind / / ... -- /bin/true'
Each COMMAND LINE is one shell word (tool, its options, its own '--', the payload; use
absolute paths). Every run is `perf trace -e <a few syscalls> -- /bin/sh -c 'exec CMD'`
(the sh wrapper makes the tool's own execve visible); the phases are cut at syscalls:

  start      tool execve entry -> entry of the first clone()/unshare() creating a user namespace
  clone-ns   that clone()/unshare() call itself (namespace creation; the network ns dominates)
  sync       end of it -> first mount() (uid/gid maps, parent/child handshake)
  mounts     first mount() -> end of the last mount/umount2/pivot_root (the mount plan)
  lockdown   -> payload execve entry (caps, no_new_privs, Landlock, seccomp, fork of the payload)
  payload    payload execve entry -> payload exit_group (exec, dynamic loading, run)
  teardown   payload exit_group -> tool's top-level exit_group (reaping, status, exit), split
             at the exit_group of the sandbox's init (the namespace clone's child; negative
             when the tool exits before its init has finished exiting, as bwrap does)

Only a handful of syscalls are traced, but tracing still inflates every phase a little:
compare phases with each other and across tools, and take end-to-end time from hyperfine.
Prints a markdown table of per-phase medians (ms) over the runs. Needs root and perf.
"""
import json
import os
import re
import statistics as st
import subprocess
import sys
import tempfile

EVENTS = "execve,clone,clone3,unshare,mount,umount2,pivot_root,prctl,seccomp,exit_group"
LINE = re.compile(r"^\s*([\d.?]+)\s+\(\s*([\d.]*)\s*(?:ms)?\s*\):\s+(\S*)/(\d+)\s+(.*)$")
PHASES = ["start", "clone-ns", "sync", "mounts", "lockdown", "payload", "teardown"]


def parse(path):
    ev = []
    for raw in open(path, errors="replace"):
        m = LINE.match(raw)
        if not m:
            continue
        ts, dur, comm, pid, rest = m.groups()
        cont = rest.startswith("... [continued]:")
        body = rest[len("... [continued]:"):].strip() if cont else rest
        name = body.split("(", 1)[0].strip()
        ret = body.rsplit("=", 1)[1].strip() if "=" in body and not body.rstrip().endswith("...") else ""
        ev.append(dict(ts=None if ts == "?" else float(ts), dur=float(dur) if dur else None,
                       comm=comm, pid=int(pid), name=name, body=body, cont=cont, ret=ret))
    return ev


def phases(ev):
    # successful execve entries: "= 0" on the entry line, or an interrupted entry ("...")
    # whose "[continued]" line for the same pid returns 0
    ok = set(i for i, e in enumerate(ev) if e["name"] == "execve" and e["cont"] and e["ret"] == "0")
    ex = []
    for i, e in enumerate(ev):
        if e["name"] != "execve" or e["cont"] or e["ts"] is None:
            continue
        if e["ret"] == "0" or (e["body"].rstrip().endswith("...") and any(
                j > i and ev[j]["pid"] == e["pid"] for j in ok)):
            ex.append(e)
    if len(ex) < 2:
        raise ValueError("execve of tool or payload not seen")
    tool, pay = ex[0], ex[-1]
    top = tool["pid"]
    t0 = tool["ts"]
    ns = [e for e in ev if e["name"] in ("clone", "clone3", "unshare") and not e["cont"]
          and "NEWUSER" in e["body"] and e["ts"] is not None]
    if not ns:
        raise ValueError("no namespace-creating clone/unshare seen")
    c = ns[0]
    try:
        init = int(c["ret"].split()[0])
    except (ValueError, IndexError):
        init = None
    c_end = c["ts"] + (c["dur"] or 0.0)
    mnt = [e for e in ev if e["name"] in ("mount", "umount2", "pivot_root") and e["ts"] is not None
           and c["ts"] <= e["ts"] <= pay["ts"] and not e["cont"]]
    if not mnt:
        raise ValueError("no mounts seen")
    m0 = mnt[0]["ts"]
    m1 = max(e["ts"] + (e["dur"] or 0.0) for e in mnt)
    pexit = [e for e in ev if e["name"] == "exit_group" and e["pid"] == pay["pid"] and e["ts"] is not None]
    texit = [e for e in ev if e["name"] == "exit_group" and e["pid"] == top and e["ts"] is not None]
    if not pexit or not texit:
        raise ValueError("exit_group of payload or tool not seen")
    iexit = [e for e in ev if e["name"] == "exit_group" and e["pid"] == init and e["ts"] is not None]
    t_iexit = iexit[0]["ts"] if iexit else None
    seccomp = sum((e["dur"] or 0.0) for e in ev if not e["cont"] and (
        e["name"] == "seccomp" or (e["name"] == "prctl" and "SET_SECCOMP" in e["body"])))
    return {
        "start": c["ts"] - t0, "clone-ns": c_end - c["ts"], "sync": m0 - c_end, "mounts": m1 - m0,
        "lockdown": pay["ts"] - m1, "payload": pexit[0]["ts"] - pay["ts"], "teardown": texit[0]["ts"] - pexit[0]["ts"],
        "total": texit[0]["ts"] - t0, "n_mount_calls": sum(1 for e in mnt if e["name"] == "mount"),
        "seccomp_call": seccomp,
        "teardown_to_init_exit": (t_iexit - pexit[0]["ts"]) if t_iexit else None,
        "teardown_after_init_exit": (texit[0]["ts"] - t_iexit) if t_iexit else None,
    }


def main(argv):
    runs, jout = 20, None
    while argv and argv[0].startswith("-"):
        if argv[0] == "-n":
            runs = int(argv[1])
            argv = argv[2:]
        elif argv[0] == "--json":
            jout = argv[1]
            argv = argv[2:]
        else:
            print(__doc__)
            return 2
    if not argv or len(argv) % 2:
        print(__doc__)
        return 2
    groups = [(argv[k], argv[k + 1]) for k in range(0, len(argv), 2)]
    res = {}
    tmp = tempfile.mkdtemp(prefix="phases.", dir="/var/tmp")
    for label, cmd in groups:
        rows, errs = [], []
        for k in range(runs + 1):                    # first run is a warm-up, discarded
            out = os.path.join(tmp, f"{label}.{k}.txt")
            r = subprocess.run(["perf", "trace", "-o", out, "-e", EVENTS, "--", "/bin/sh", "-c",
                                "exec " + cmd],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if r.returncode != 0:
                errs.append(f"rc={r.returncode}: {r.stderr.decode(errors='replace').strip()[:200]}")
                continue
            try:
                p = phases(parse(out))
            except ValueError as e:
                errs.append(str(e))
                continue
            if k:
                rows.append(p)
        res[label] = dict(cmd=cmd, runs=rows, errors=errs)
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)
    if jout:
        json.dump(res, open(jout, "w"), indent=1)
    labels = [label for label, _ in groups]
    print("| phase (median ms over %d traced runs) | " % runs + " | ".join(labels) + " |")
    print("|---|" + "---:|" * len(labels))
    for ph in PHASES + ["teardown_to_init_exit", "teardown_after_init_exit", "total", "seccomp_call", "n_mount_calls"]:
        cells = []
        for label in labels:
            xs = [r[ph] for r in res[label]["runs"] if r[ph] is not None]
            fmt = "{:.0f}" if ph == "n_mount_calls" else "{:.2f}"
            cells.append(fmt.format(st.median(xs)) if xs else "n/a")
        name = {"total": "**total (traced)**", "seccomp_call": "lockdown: of which seccomp filter load",
                "teardown_to_init_exit": "teardown: payload exit -> sandbox init (pid 1) exit",
                "teardown_after_init_exit": "teardown: init exit -> tool exit",
                "n_mount_calls": "mount() calls"}.get(ph, ph)
        print(f"| {name} | " + " | ".join(cells) + " |")
    for label in labels:
        if res[label]["errors"]:
            print(f"\n{label}: {len(res[label]['errors'])} run(s) not usable, e.g. {res[label]['errors'][0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
