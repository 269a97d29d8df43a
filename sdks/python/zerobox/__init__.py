"""Python SDK for zerobox, a Linux sandbox CLI.

    from zerobox import Sandbox
    r = Sandbox(allow_write=["/var/tmp/out"]).run("sh", ["-c", "echo hi"])
    print(r.exit_code, r.text())

The asyncio API is :mod:`zerobox.aio` (``AsyncSandbox``, ``snapshots``).
"""
from ._binary import find_binary
from .errors import (BinaryNotFoundError, ProtocolError, SandboxCancelled, SandboxError,
                     SandboxTimeout, SetupFailedError, SnapshotFailedError)
from .records import Session, SessionRecord
from .sandbox import Process, Result, Sandbox, SandboxPolicy
from . import snapshots

__all__ = [
    "Sandbox",
    "SandboxPolicy",
    "Process",
    "Result",
    "Session",
    "SessionRecord",
    "SandboxError",
    "BinaryNotFoundError",
    "SetupFailedError",
    "SnapshotFailedError",
    "SandboxTimeout",
    "SandboxCancelled",
    "ProtocolError",
    "find_binary",
    "snapshots",
]
__version__ = "0.1.0"
