"""``zerobox snapshot`` subcommands."""
import json
import os
import subprocess
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ._binary import find_binary
from .errors import SandboxError

__all__ = ["list", "show", "diff", "accept", "discard", "restore", "clean"]

_list = list


def _run(args: Sequence[str], env: Optional[Mapping[str, str]], binary: Optional[str]) -> bytes:
    penv = None
    if env:
        penv = dict(os.environ)
        penv.update(env)
    argv = [find_binary(binary), "snapshot"] + _list(args)
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=penv)
    if p.returncode != 0:
        err = p.stderr.decode("utf-8", "replace").strip()
        raise SandboxError(err or f"zerobox snapshot {args[0]} exited {p.returncode}",
                           exit_code=p.returncode, stderr=p.stderr)
    return p.stdout


def list(*, env: Optional[Mapping[str, str]] = None, binary: Optional[str] = None) -> List[Dict[str, Any]]:  # noqa: A001
    """All sessions, oldest first."""
    data = json.loads(_run(["list", "--json"], env, binary) or b"[]")
    if isinstance(data, dict):  # tolerate {"sessions": [...]}
        data = data.get("sessions", [])
    return data


def show(id: str, *, env: Optional[Mapping[str, str]] = None, binary: Optional[str] = None) -> Dict[str, Any]:
    return json.loads(_run(["show", id, "--json"], env, binary))


def diff(id: str, paths: Sequence[str] = (), *, env: Optional[Mapping[str, str]] = None,
         binary: Optional[str] = None) -> Dict[str, Any]:
    """``{"session": ID, "changes": [...]}``, optionally limited to ``paths``."""
    return json.loads(_run(["diff", id, "--json", "--"] + _list(paths) if paths
                           else ["diff", id, "--json"], env, binary))


def diff_text(id: str, paths: Sequence[str] = (), *, env: Optional[Mapping[str, str]] = None,
              binary: Optional[str] = None) -> str:
    """The git-style unified diff, uncoloured."""
    args = ["diff", id, "--color=never"] + (["--"] + _list(paths) if paths else [])
    return _run(args, env, binary).decode("utf-8", "replace")


def accept(id: str, force: bool = False, *, env: Optional[Mapping[str, str]] = None,
           binary: Optional[str] = None) -> None:
    _run(["accept", id] + (["--force"] if force else []), env, binary)


def discard(id: str, *, env: Optional[Mapping[str, str]] = None, binary: Optional[str] = None) -> None:
    _run(["discard", id], env, binary)


def restore(id: str, force: bool = False, *, env: Optional[Mapping[str, str]] = None,
            binary: Optional[str] = None) -> None:
    _run(["restore", id] + (["--force"] if force else []), env, binary)


def clean(older_than_days: int, *, env: Optional[Mapping[str, str]] = None,
          binary: Optional[str] = None) -> None:
    _run(["clean", f"--older-than={int(older_than_days)}"], env, binary)
