from typing import Optional


class SandboxError(Exception):
    """zerobox could not run the command (setup error, usage error, missing binary,
    or a failed ``zerobox snapshot`` subcommand)."""

    def __init__(self, message: str, *, exit_code: Optional[int] = None,
                 stderr: bytes = b"") -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.stderr = stderr


class SandboxTimeout(TimeoutError):
    """The command did not finish in time; the sandbox was killed."""

    def __init__(self, message: str, *, stdout: bytes = b"", stderr: bytes = b"") -> None:
        super().__init__(message)
        self.stdout = stdout
        self.stderr = stderr
