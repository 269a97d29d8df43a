"""Typed sessions: the session of one run (its ``session`` status event) and a stored
session as ``zerobox snapshot show --json`` / ``list --json`` print it."""
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional

from .errors import ProtocolError

__all__ = ["Session", "SessionRecord"]


@dataclass(frozen=True)
class Session:
    """The snapshot session a run recorded: ``Result.session``."""

    id: str
    """The full session id (32 hex digits)."""
    state: str
    """Its state when zerobox exited: ``pending``, ``accepted``, ``restored``, ..."""
    changes: int
    """How many changes it recorded."""


def _opt_int(v: Any) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _opt_str(v: Any) -> Optional[str]:
    return v if isinstance(v, str) else None


def _strs(v: Any) -> List[str]:
    return [s for s in v if isinstance(s, str)] if isinstance(v, list) else []


@dataclass(frozen=True)
class SessionRecord(Mapping[str, Any]):
    """One stored session (``snapshots.show`` / ``snapshots.list``).

    It is also a read-only mapping of the JSON object zerobox printed, so
    ``rec["state"]`` and ``rec.get("exit_code")`` keep working; ``to_dict()`` gives
    that object, with any field this class does not name."""

    id: str
    state: str
    mode: str = ""
    """``snapshot``, ``restore`` or ``review``."""
    kind: str = ""
    """``run``, or ``restore`` for a session that undid another one."""
    parent: Optional[str] = None
    """The session a ``restore`` session undid."""
    changes: int = 0
    changes_by_kind: Dict[str, int] = field(default_factory=dict)
    command: List[str] = field(default_factory=list)
    cwd: Optional[str] = None
    tracked: List[str] = field(default_factory=list)
    exclude: List[str] = field(default_factory=list)
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    created_at: Optional[str] = None
    finished_at: Optional[str] = None
    applied_at: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, obj: Any) -> "SessionRecord":
        """Raises ProtocolError when ``obj`` is not a session object."""
        if not isinstance(obj, dict) or not isinstance(obj.get("id"), str) \
                or not isinstance(obj.get("state"), str):
            raise ProtocolError(f"not a session object (no id or state): {obj!r:.200}")
        by_kind = obj.get("changes_by_kind")
        return cls(
            id=obj["id"], state=obj["state"],
            mode=_opt_str(obj.get("mode")) or "", kind=_opt_str(obj.get("kind")) or "",
            parent=_opt_str(obj.get("parent")), changes=_opt_int(obj.get("changes")) or 0,
            changes_by_kind={k: v for k, v in by_kind.items() if isinstance(v, int)}
            if isinstance(by_kind, dict) else {},
            command=_strs(obj.get("command")), cwd=_opt_str(obj.get("cwd")),
            tracked=_strs(obj.get("tracked")), exclude=_strs(obj.get("exclude")),
            exit_code=_opt_int(obj.get("exit_code")), signal=_opt_int(obj.get("signal")),
            created_at=_opt_str(obj.get("created_at")),
            finished_at=_opt_str(obj.get("finished_at")),
            applied_at=_opt_str(obj.get("applied_at")), raw=dict(obj))

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object zerobox printed (a copy)."""
        return dict(self.raw)

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)
