#!/usr/bin/env python3
"""An agent's shell tool call, run in a zerobox sandbox and reviewed before it lands.

A fake model (hard-coded replies: no API key, no network) asks to run a shell command.
The command runs with no network and may write only to a work directory, in review
mode: its changes wait in a pending session until someone accepts them. ZEROBOX_HOME
points at a temporary store, so the example leaves nothing behind.

    ZEROBOX_BIN=path/to/zerobox python3 examples/python/agent_tool_call.py

Exits 0 when every step behaved as described here, 1 otherwise (CTest runs it as
sdk.python.examples)."""
import os
import shutil
import sys
import tempfile
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import zerobox
except ImportError:  # not installed: use the SDK from this repository
    sys.path.insert(0, os.path.join(HERE, "..", "..", "sdks", "python"))
    import zerobox
from zerobox import Sandbox, snapshots  # noqa: E402 (after the fallback above)

# What the model asks the shell tool to run: add a file, edit one, and (being a model)
# also try the network and a write outside the project.
TOOL_COMMAND = r"""
printf 'def greet(name):\n    return f"hello, {name}"\n' > greet.py
sed -i 's/^status: draft$/status: greet() added/' README.md
echo "wrote greet.py, updated README.md"
getent hosts pypi.org >/dev/null 2>&1 && echo "network: reachable" || echo "network: none"
touch /etc/agent-was-here 2>/dev/null && echo "outside write: allowed" || echo "outside write: refused"
"""


def fake_model(messages: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Stands in for a model API: first a tool call, then an answer using its result."""
    tool_results = [m for m in messages if m["role"] == "tool"]
    if not tool_results:
        return {"role": "assistant",
                "tool_call": {"name": "shell", "arguments": {"command": TOOL_COMMAND}}}
    return {"role": "assistant",
            "content": "Added greet() in greet.py. Tool output:\n" + tool_results[-1]["content"]}


def expect(ok: bool, what: str) -> None:
    if not ok:
        print(f"UNEXPECTED: {what}", file=sys.stderr)
        sys.exit(1)


def main() -> int:
    root = tempfile.mkdtemp(prefix="zerobox-agent-example-")
    try:
        work = os.path.join(root, "project")
        os.mkdir(work)
        with open(os.path.join(work, "README.md"), "w") as f:
            f.write("# demo project\nstatus: draft\n")
        store = {"ZEROBOX_HOME": os.path.join(root, "store")}

        messages: List[Dict[str, Any]] = [
            {"role": "user", "content": "Add a greet(name) helper to the project."}]
        reply = fake_model(messages)
        call = reply["tool_call"]
        print("model asks to run:", call["arguments"]["command"].strip().replace("\n", "\n    "),
              sep="\n    ")

        sandbox = Sandbox(
            allow_write=[work],            # the only writable place
            cwd=work,
            snapshot="review",             # hold the changes until accepted
            snapshot_paths=[work],
            host_env=store,                # where zerobox keeps the session
            quiet=True,
        )                                  # no allow_net: no network at all
        r = sandbox.run("sh", ["-c", call["arguments"]["command"]], timeout=60)
        print(f"\nsandbox: exit {r.exit_code}, session {r.session_id} "
              f"({r.session_changes} changes, {r.session_state})")
        print("tool output:\n    " + r.text().strip().replace("\n", "\n    "))
        expect(r.exit_code == 0, f"tool exit code {r.exit_code}: {r.stderr!r}")
        expect("network: none" in r.text(), "the sandbox had network")
        expect("outside write: refused" in r.text(), "a write outside the work dir succeeded")
        expect(r.session_state == "pending" and r.session_id is not None, "no pending session")
        expect(not os.path.exists(os.path.join(work, "greet.py")),
               "greet.py landed before review")
        sid = str(r.session_id)

        print("\nstructured diff (zerobox.snapshots.diff):")
        changes = snapshots.diff(sid, env=store)["changes"]
        for c in changes:
            size = " -> ".join(str(c[k]) for k in ("old_size", "new_size") if c.get(k) is not None)
            print(f"    {c['kind']:<9} {os.path.relpath(c['path'], work):<10} "
                  f"{c.get('new_type') or c.get('old_type')}, {size} bytes")
        print("unified diff:\n    " +
              snapshots.diff_text(sid, env=store).strip().replace("\n", "\n    "))
        outside = [c["path"] for c in changes
                   if os.path.commonpath([work, c["path"]]) != work]
        expect(not outside, f"changes outside the work dir: {outside}")
        expect({os.path.basename(c["path"]) for c in changes} == {"greet.py", "README.md"},
               f"unexpected set of changes: {changes}")

        # The reviewer here is a rule (every change stays in the project); a real agent
        # would show the diff to a person.
        snapshots.accept(sid, env=store)
        print(f"\naccepted; session is now {snapshots.show(sid, env=store).get('state')}")
        with open(os.path.join(work, "greet.py")) as f:
            landed = f.read()
        print("greet.py on the host:\n    " + landed.strip().replace("\n", "\n    "))
        expect("def greet" in landed, "greet.py did not land")
        with open(os.path.join(work, "README.md")) as f:
            expect("status: greet() added" in f.read(), "README.md was not updated")

        messages += [reply, {"role": "tool", "name": "shell", "content": r.text()}]
        print("\nmodel:", fake_model(messages)["content"].strip())
        return 0
    except zerobox.SandboxError as e:
        print(f"zerobox failed: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
