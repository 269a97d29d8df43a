"""Running commands under zerobox from asyncio.

Only the process plumbing differs from :mod:`zerobox.sandbox`: the command line, the
environment, the ``--status-fd`` parsing and the reading of the events into a Result
or a SandboxError are the same code."""
import asyncio
import os
from typing import Any, List, Optional, Sequence

from ..errors import SandboxTimeout
from ..sandbox import (_GRACE_SECONDS, _NEW_GROUP, Result, SandboxPolicy, _build_result,
                       _EventLog, _kill_group, _status_pipe)


class _StatusProtocol(asyncio.Protocol):
    """Reads ``--status-fd`` events until zerobox closes its end."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.log = _EventLog()
        self.closed: "asyncio.Future[None]" = loop.create_future()

    def data_received(self, data: bytes) -> None:
        self.log.feed(data)

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.log.close()
        if not self.closed.done():
            self.closed.set_result(None)


async def _drain(stream: Optional[asyncio.StreamReader], into: bytearray) -> None:
    if stream is None:
        return
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            return
        into += chunk


class AsyncProcess:
    """A running sandboxed command (from :meth:`AsyncSandbox.spawn`). ``stdout`` and
    ``stderr`` are :class:`asyncio.StreamReader`; ``stdin`` (with ``stdin=True``) is an
    :class:`asyncio.StreamWriter`."""

    def __init__(self, proc: "asyncio.subprocess.Process", transport: asyncio.BaseTransport,
                 status: _StatusProtocol) -> None:
        self._proc = proc
        self._transport = transport
        self._status = status
        self._killed = False
        self.stdin: Optional[asyncio.StreamWriter] = proc.stdin
        self.stdout: Optional[asyncio.StreamReader] = proc.stdout
        self.stderr: Optional[asyncio.StreamReader] = proc.stderr

    @property
    def pid(self) -> int:
        """The pid of the zerobox process (not the sandboxed command)."""
        return self._proc.pid

    @property
    def returncode(self) -> Optional[int]:
        """zerobox's exit status once it has been reaped, else None."""
        return self._proc.returncode

    def kill(self) -> None:
        """Kill zerobox's process group; zerobox's death kills the whole sandbox."""
        if self._proc.returncode is not None:
            return
        self._killed = True
        _kill_group(self._proc.pid)

    def send_signal(self, sig: int) -> None:
        """Send ``sig`` to zerobox, which forwards common signals to the command."""
        if self._proc.returncode is None:
            self._proc.send_signal(sig)

    async def _feed(self, input: Optional[bytes]) -> None:
        w = self._proc.stdin
        if w is None:
            return
        try:
            if input:
                w.write(input)
                await w.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the command stopped reading; its exit status tells the rest
        w.close()
        try:
            # also retrieves a broken pipe's error, which asyncio would log otherwise
            await w.wait_closed()
        except (BrokenPipeError, ConnectionResetError):
            pass

    async def _status_closed(self) -> None:
        await asyncio.shield(self._status.closed)

    async def _communicate(self, input: Optional[bytes], timeout: Optional[float]) -> Result:
        out, err = bytearray(), bytearray()
        # return_exceptions: `everything` ends only when every part has ended
        everything = asyncio.gather(
            self._feed(input), _drain(self.stdout, out), _drain(self.stderr, err),
            self._proc.wait(), self._status_closed(), return_exceptions=True)
        try:
            # asyncio.wait, unlike wait_for, leaves `everything` running on timeout,
            # so the output read so far is kept and zerobox is reaped after the kill.
            done, _ = await asyncio.wait({everything}, timeout=timeout)
        except BaseException:  # cancelled: the sandbox must not outlive the caller
            self.kill()
            await self._reap(everything)
            raise
        if not done:
            if self._proc.returncode is None:
                _kill_group(self._proc.pid)
            await self._reap(everything)
            raise SandboxTimeout(f"command timed out after {timeout} seconds",
                                 stdout=bytes(out), stderr=bytes(err))
        self._transport.close()
        for part in everything.result():
            if isinstance(part, BaseException):
                raise part
        return _build_result(self._proc.returncode, self._status.log.events, bytes(out), bytes(err),
                             cancelled=self._killed)

    async def _reap(self, everything: "asyncio.Future[Any]") -> None:
        try:
            await asyncio.wait({everything}, timeout=_GRACE_SECONDS)
        finally:
            if not everything.done():
                everything.cancel()
            self._transport.close()

    async def wait(self, timeout: Optional[float] = None) -> Result:
        """Wait for the command; unread output is collected into the Result (do not
        read the streams from another task meanwhile). On timeout the sandbox is
        killed and SandboxTimeout is raised; cancelling the call kills it too. After
        :meth:`kill`, raises SandboxCancelled unless the command had already exited."""
        return await self._communicate(None, timeout)

    async def __aenter__(self) -> "AsyncProcess":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        """Kill the sandbox if it still runs, and reap it."""
        self.kill()
        try:
            await self._communicate(None, _GRACE_SECONDS)
        except Exception:
            pass


class AsyncSandbox(SandboxPolicy):
    """A sandbox policy for asyncio; each :meth:`run` / :meth:`spawn` starts a fresh
    zerobox. Takes the same arguments as :class:`zerobox.Sandbox` and gives the same
    Results and errors."""

    async def _start(self, cmd: str, args: Sequence[str], stdin: int) -> AsyncProcess:
        self._check_args(args)
        loop = asyncio.get_running_loop()
        rfd, wfd = _status_pipe()
        try:
            argv: List[str] = self.argv(cmd, args, status_fd=wfd)
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=stdin, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, pass_fds=(wfd,),
                env=self._zerobox_env(), **_NEW_GROUP)
        except BaseException:
            os.close(rfd)
            os.close(wfd)
            raise
        os.close(wfd)
        try:
            rfile = os.fdopen(rfd, "rb", buffering=0)
        except BaseException:
            os.close(rfd)
            _kill_group(proc.pid)
            raise
        try:
            transport, status = await loop.connect_read_pipe(lambda: _StatusProtocol(loop), rfile)
        except BaseException:
            rfile.close()
            _kill_group(proc.pid)
            raise
        return AsyncProcess(proc, transport, status)

    async def run(self, cmd: str, args: Sequence[str] = (), input: Optional[bytes] = None,
                  timeout: Optional[float] = None) -> Result:
        """Run ``cmd args...`` to completion and return its Result.

        Raises SetupFailedError (a SandboxError) when zerobox could not start the
        command (the command's own exit status, even 125, is returned in ``exit_code``),
        BinaryNotFoundError when there is no zerobox, and SandboxTimeout
        (a TimeoutError) after killing the sandbox when ``timeout`` expires.
        Cancelling the call (``task.cancel()``, ``asyncio.wait_for``) kills the
        sandbox before the CancelledError propagates."""
        stdin = asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL
        proc = await self._start(cmd, args, stdin)
        return await proc._communicate(input, timeout)

    async def spawn(self, cmd: str, args: Sequence[str] = (), stdin: bool = False) -> AsyncProcess:
        """Start ``cmd args...`` and return an AsyncProcess whose ``stdout`` /
        ``stderr`` can be read while it runs."""
        return await self._start(
            cmd, args, asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL)
