"""``zerobox snapshot`` subcommands (blocking; :mod:`zerobox.aio.snapshots` has the
same calls for asyncio). A refused or failed subcommand raises SnapshotFailedError (a
SandboxError) with zerobox's message."""
import json
import os
import subprocess
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ._binary import find_binary
from .errors import ProtocolError, SnapshotFailedError
from .records import SessionRecord

__all__ = ["list", "show", "diff", "diff_text", "accept", "discard", "restore", "clean"]

_list = list

# One subcommand: its arguments after ``zerobox snapshot`` and how to read its stdout.
# Both the blocking and the asyncio calls are built from these.
_Op = Tuple[List[str], Callable[[bytes], Any]]


def _argv(args: Sequence[str], binary: Optional[str]) -> List[str]:
    return [find_binary(binary), "snapshot"] + _list(args)


def _environ(env: Optional[Mapping[str, str]]) -> Optional[Dict[str, str]]:
    if not env:
        return None
    penv = dict(os.environ)
    penv.update(env)
    return penv


def _check(args: Sequence[str], returncode: int, stdout: bytes, stderr: bytes) -> bytes:
    if returncode != 0:
        err = stderr.decode("utf-8", "replace").strip()
        raise SnapshotFailedError(err or f"zerobox snapshot {args[0]} exited {returncode}",
                                  exit_code=returncode, stderr=stderr)
    return stdout


def _json(out: bytes) -> Any:
    try:
        return json.loads(out)
    except ValueError as e:
        raise ProtocolError(f"zerobox snapshot printed something that is not JSON: {e}") from None


def _parse_list(out: bytes) -> List[SessionRecord]:
    data = _json(out or b"[]")
    if isinstance(data, dict):  # tolerate {"sessions": [...]}
        data = data.get("sessions", [])
    if not isinstance(data, _list):
        raise ProtocolError("zerobox snapshot list --json: not an array")
    return [SessionRecord.from_json(d) for d in data]


def _parse_show(out: bytes) -> SessionRecord:
    return SessionRecord.from_json(_json(out))


def _nothing(out: bytes) -> None:
    return None


def _text(out: bytes) -> str:
    return out.decode("utf-8", "replace")


def _op_list() -> _Op:
    return ["list", "--json"], _parse_list


def _op_show(id: str) -> _Op:
    return ["show", id, "--json"], _parse_show


def _op_diff(id: str, paths: Sequence[str]) -> _Op:
    return ["diff", id, "--json"] + (["--"] + _list(paths) if paths else []), _json


def _op_diff_text(id: str, paths: Sequence[str]) -> _Op:
    return ["diff", id, "--color=never"] + (["--"] + _list(paths) if paths else []), _text


def _op_accept(id: str, force: bool) -> _Op:
    return ["accept", id] + (["--force"] if force else []), _nothing


def _op_discard(id: str) -> _Op:
    return ["discard", id], _nothing


def _op_restore(id: str, force: bool) -> _Op:
    return ["restore", id] + (["--force"] if force else []), _nothing


def _op_clean(older_than_days: int) -> _Op:
    return ["clean", f"--older-than={int(older_than_days)}"], _nothing


def _call(op: _Op, env: Optional[Mapping[str, str]], binary: Optional[str]) -> Any:
    args, parse = op
    p = subprocess.run(_argv(args, binary), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=_environ(env))
    return parse(_check(args, p.returncode, p.stdout, p.stderr))


def list(*, env: Optional[Mapping[str, str]] = None, binary: Optional[str] = None) -> List[SessionRecord]:  # noqa: A001
    """All sessions, oldest first. Each is a SessionRecord, which also reads as the
    JSON object (``rec["state"]``). Raises SnapshotFailedError when zerobox refuses,
    ProtocolError when its output is not what ``--json`` promises."""
    return _call(_op_list(), env, binary)  # type: ignore[no-any-return]


def show(id: str, *, env: Optional[Mapping[str, str]] = None, binary: Optional[str] = None) -> SessionRecord:
    """One session (an unknown id raises SnapshotFailedError)."""
    return _call(_op_show(id), env, binary)  # type: ignore[no-any-return]


def diff(id: str, paths: Sequence[str] = (), *, env: Optional[Mapping[str, str]] = None,
         binary: Optional[str] = None) -> Dict[str, Any]:
    """``{"session": ID, "changes": [...]}``, optionally limited to ``paths``."""
    return _call(_op_diff(id, paths), env, binary)  # type: ignore[no-any-return]


def diff_text(id: str, paths: Sequence[str] = (), *, env: Optional[Mapping[str, str]] = None,
              binary: Optional[str] = None) -> str:
    """The git-style unified diff, uncoloured."""
    return _call(_op_diff_text(id, paths), env, binary)  # type: ignore[no-any-return]


def accept(id: str, force: bool = False, *, env: Optional[Mapping[str, str]] = None,
           binary: Optional[str] = None) -> None:
    _call(_op_accept(id, force), env, binary)


def discard(id: str, *, env: Optional[Mapping[str, str]] = None, binary: Optional[str] = None) -> None:
    _call(_op_discard(id), env, binary)


def restore(id: str, force: bool = False, *, env: Optional[Mapping[str, str]] = None,
            binary: Optional[str] = None) -> None:
    _call(_op_restore(id, force), env, binary)


def clean(older_than_days: int, *, env: Optional[Mapping[str, str]] = None,
          binary: Optional[str] = None) -> None:
    _call(_op_clean(older_than_days), env, binary)
