"""The SDK's errors. Every one has a ``kind``, one of the names the three SDKs share
(docs/sdk.md): ``binary_not_found``, ``setup_failed``, ``snapshot_failed``,
``timeout``, ``cancelled``, ``protocol``."""
from typing import Optional


class SandboxError(Exception):
    """zerobox could not run the command (setup error, usage error, missing binary,
    or a failed ``zerobox snapshot`` subcommand). The subclasses below say which;
    a SandboxError raised as such has ``kind`` ``setup_failed``."""

    kind = "setup_failed"

    def __init__(self, message: str, *, exit_code: Optional[int] = None,
                 stderr: bytes = b"") -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.stderr = stderr


class BinaryNotFoundError(SandboxError):
    """No usable zerobox executable; the message names every place tried."""

    kind = "binary_not_found"


class SetupFailedError(SandboxError):
    """zerobox did not run the command: a ``setup_error`` event (exit 125), a usage
    error (exit 2), or zerobox ending without the command having exited."""

    kind = "setup_failed"


class SnapshotFailedError(SandboxError):
    """A ``zerobox snapshot`` subcommand refused or failed (exit 1 or 2)."""

    kind = "snapshot_failed"


class SandboxCancelled(SandboxError):
    """The run was cancelled with :meth:`Process.kill` before the command exited.
    (A KeyboardInterrupt or asyncio cancellation while waiting kills the sandbox and
    then propagates as itself.)"""

    kind = "cancelled"


class ProtocolError(SandboxError):
    """zerobox's machine-readable output (status events, ``--json``) did not have the
    expected shape."""

    kind = "protocol"


class SandboxTimeout(TimeoutError):
    """The command did not finish in time; the sandbox was killed."""

    kind = "timeout"

    def __init__(self, message: str, *, stdout: bytes = b"", stderr: bytes = b"") -> None:
        super().__init__(message)
        self.stdout = stdout
        self.stderr = stderr
