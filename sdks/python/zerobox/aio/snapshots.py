"""``zerobox snapshot`` subcommands for asyncio: the calls of
:mod:`zerobox.snapshots`, with the same arguments, results and errors."""
import asyncio
from typing import Any, Dict, List, Mapping, Optional, Sequence

from .. import snapshots as _sync
from ..records import SessionRecord

__all__ = ["list", "show", "diff", "diff_text", "accept", "discard", "restore", "clean"]


async def _call(op: "_sync._Op", env: Optional[Mapping[str, str]], binary: Optional[str]) -> Any:
    args, parse = op
    proc = await asyncio.create_subprocess_exec(
        *_sync._argv(args, binary), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=_sync._environ(env))
    try:
        out, err = await proc.communicate()
    except BaseException:
        # Cancelled: kill the subcommand rather than leave it running unowned. The
        # store survives kill -9 at any instant: the next zerobox call finishes or
        # rolls back what it was doing.
        if proc.returncode is None:
            proc.kill()
            await asyncio.shield(proc.wait())
        raise
    assert proc.returncode is not None
    return parse(_sync._check(args, proc.returncode, out, err))


async def list(*, env: Optional[Mapping[str, str]] = None,  # noqa: A001
               binary: Optional[str] = None) -> List[SessionRecord]:
    """All sessions, oldest first."""
    return await _call(_sync._op_list(), env, binary)  # type: ignore[no-any-return]


async def show(id: str, *, env: Optional[Mapping[str, str]] = None,
               binary: Optional[str] = None) -> SessionRecord:
    return await _call(_sync._op_show(id), env, binary)  # type: ignore[no-any-return]


async def diff(id: str, paths: Sequence[str] = (), *, env: Optional[Mapping[str, str]] = None,
               binary: Optional[str] = None) -> Dict[str, Any]:
    """``{"session": ID, "changes": [...]}``, optionally limited to ``paths``."""
    return await _call(_sync._op_diff(id, paths), env, binary)  # type: ignore[no-any-return]


async def diff_text(id: str, paths: Sequence[str] = (), *, env: Optional[Mapping[str, str]] = None,
                    binary: Optional[str] = None) -> str:
    """The git-style unified diff, uncoloured."""
    return await _call(_sync._op_diff_text(id, paths), env, binary)  # type: ignore[no-any-return]


async def accept(id: str, force: bool = False, *, env: Optional[Mapping[str, str]] = None,
                 binary: Optional[str] = None) -> None:
    await _call(_sync._op_accept(id, force), env, binary)


async def discard(id: str, *, env: Optional[Mapping[str, str]] = None,
                  binary: Optional[str] = None) -> None:
    await _call(_sync._op_discard(id), env, binary)


async def restore(id: str, force: bool = False, *, env: Optional[Mapping[str, str]] = None,
                  binary: Optional[str] = None) -> None:
    await _call(_sync._op_restore(id, force), env, binary)


async def clean(older_than_days: int, *, env: Optional[Mapping[str, str]] = None,
                binary: Optional[str] = None) -> None:
    await _call(_sync._op_clean(older_than_days), env, binary)
