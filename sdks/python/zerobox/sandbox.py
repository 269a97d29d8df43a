"""Running commands under zerobox."""
import fcntl
import json
import os
import signal as _signal
import subprocess
import threading
from dataclasses import dataclass, field
from typing import IO, Any, Dict, List, Literal, Mapping, Optional, Sequence, Union

from ._binary import find_binary
from .errors import SandboxError, SandboxTimeout

PathList = Optional[Sequence[str]]
BoolOrList = Union[bool, Sequence[str], None]
SnapshotMode = Literal["snapshot", "restore", "review"]


def _escape(item: str) -> str:
    return str(item).replace(",", "\\,")


def _list_flag(name: str, items: Sequence[str]) -> List[str]:
    if isinstance(items, (str, bytes)):
        items = [items]  # a single string is one path, not a list of characters
    items = [os.fspath(i) for i in items]
    if not items:
        return []
    return [f"--{name}=" + ",".join(_escape(i) for i in items)]


def _opt_flag(name: str, value: BoolOrList) -> List[str]:
    if value is None or value is False:
        return []
    if value is True:
        return [f"--{name}"]
    return _list_flag(name, value)  # type: ignore[arg-type]


@dataclass
class Result:
    """The outcome of a sandboxed command."""

    exit_code: Optional[int]
    signal: Optional[int]
    stdout: bytes
    stderr: bytes
    session_id: Optional[str] = None
    session_state: Optional[str] = None
    session_changes: Optional[int] = None
    pid: Optional[int] = None
    events: List[Dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def text(self, encoding: str = "utf-8", errors: str = "replace") -> str:
        return self.stdout.decode(encoding, errors)

    def json(self) -> Any:
        return json.loads(self.stdout)


class _StatusReader(threading.Thread):
    def __init__(self, fd: int) -> None:
        super().__init__(daemon=True)
        self._file = os.fdopen(fd, "rb", buffering=0)
        self.events: List[Dict[str, Any]] = []

    def run(self) -> None:
        buf = b""
        try:
            while True:
                chunk = self._file.read(65536)
                if not chunk:
                    break
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    self._add(line)
            if buf.strip():
                self._add(buf)
        finally:
            self._file.close()

    def _add(self, line: bytes) -> None:
        line = line.strip()
        if not line:
            return
        try:
            ev = json.loads(line)
        except ValueError:
            return
        if isinstance(ev, dict):
            self.events.append(ev)


def _build_result(proc: "subprocess.Popen[bytes]", events: List[Dict[str, Any]],
                  stdout: bytes, stderr: bytes) -> Result:
    res = Result(exit_code=None, signal=None, stdout=stdout, stderr=stderr, events=events)
    saw_exit = False
    for ev in events:
        kind = ev.get("event")
        if kind == "setup_error":
            raise SandboxError(str(ev.get("message", "setup error")),
                               exit_code=proc.returncode, stderr=stderr)
        if kind == "child_started":
            res.pid = ev.get("pid")
        elif kind == "child_exit":
            saw_exit = True
            res.exit_code = ev.get("code")
            res.signal = ev.get("signal")
        elif kind == "session":
            res.session_id = ev.get("id")
            res.session_state = ev.get("state")
            res.session_changes = ev.get("changes")
    if not saw_exit:
        rc = proc.returncode
        msg = stderr.decode("utf-8", "replace").strip().splitlines()
        detail = msg[0] if msg else f"exit status {rc}"
        if rc is not None and rc < 0:
            detail = f"zerobox was killed by signal {-rc}"
        raise SandboxError(f"zerobox did not run the command: {detail}",
                           exit_code=rc, stderr=stderr)
    return res


class Process:
    """A running sandboxed command (from :meth:`Sandbox.spawn`)."""

    def __init__(self, popen: "subprocess.Popen[bytes]", reader: _StatusReader) -> None:
        self._popen = popen
        self._reader = reader
        self.stdin: Optional[IO[bytes]] = popen.stdin
        self.stdout: Optional[IO[bytes]] = popen.stdout
        self.stderr: Optional[IO[bytes]] = popen.stderr

    @property
    def pid(self) -> int:
        """The pid of the zerobox process (not the sandboxed command)."""
        return self._popen.pid

    def poll(self) -> Optional[int]:
        return self._popen.poll()

    def kill(self) -> None:
        """Kill zerobox's process group; zerobox's death kills the whole sandbox."""
        if self._popen.returncode is not None:
            return
        try:
            os.killpg(self._popen.pid, _signal.SIGKILL)
        except ProcessLookupError:
            pass

    def send_signal(self, sig: int) -> None:
        """Send ``sig`` to zerobox, which forwards common signals to the command."""
        self._popen.send_signal(sig)

    def _communicate(self, input: Optional[bytes], timeout: Optional[float]) -> Result:
        try:
            out, err = self._popen.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            try:
                out, err = self._popen.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                out, err = b"", b""
            self._reader.join(10)
            raise SandboxTimeout(f"command timed out after {timeout} seconds",
                                 stdout=out or b"", stderr=err or b"") from None
        self._reader.join()
        return _build_result(self._popen, self._reader.events, out or b"", err or b"")

    def wait(self, timeout: Optional[float] = None) -> Result:
        """Wait for the command; unread output is collected into the Result.
        On timeout the sandbox is killed and SandboxTimeout is raised."""
        return self._communicate(None, timeout)

    def __enter__(self) -> "Process":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.kill()
        try:
            self._popen.communicate(timeout=10)
        except Exception:
            pass
        self._reader.join(10)


class Sandbox:
    """A sandbox policy; each :meth:`run` / :meth:`spawn` starts a fresh zerobox."""

    def __init__(
        self,
        allow_read: PathList = None,
        deny_read: PathList = None,
        allow_write: BoolOrList = None,
        deny_write: PathList = None,
        allow_net: BoolOrList = None,
        deny_net: PathList = None,
        allow_env: BoolOrList = None,
        deny_env: PathList = None,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        snapshot: Optional[SnapshotMode] = None,
        snapshot_paths: PathList = None,
        snapshot_exclude: PathList = None,
        resolve: Optional[Mapping[str, str]] = None,
        no_protect: bool = False,
        binary: Optional[str] = None,
        quiet: bool = False,
        host_env: Optional[Mapping[str, str]] = None,
    ) -> None:
        """``host_env`` adds variables to the environment of zerobox itself (for
        example ``ZEROBOX_HOME``); ``env`` sets variables inside the sandbox."""
        if snapshot not in (None, "snapshot", "restore", "review"):
            raise ValueError(f"snapshot must be 'snapshot', 'restore' or 'review', not {snapshot!r}")
        self.binary = binary
        self.host_env = dict(host_env) if host_env else None
        a: List[str] = []
        if allow_read is not None:
            a += _list_flag("allow-read", allow_read)
        if deny_read is not None:
            a += _list_flag("deny-read", deny_read)
        a += _opt_flag("allow-write", allow_write)
        if deny_write is not None:
            a += _list_flag("deny-write", deny_write)
        a += _opt_flag("allow-net", allow_net)
        if deny_net is not None:
            a += _list_flag("deny-net", deny_net)
        a += _opt_flag("allow-env", allow_env)
        if deny_env is not None:
            a += _list_flag("deny-env", deny_env)
        for k, v in (env or {}).items():
            if not k or "=" in k:
                raise ValueError(f"invalid environment variable name: {k!r}")
            a += ["--env", f"{k}={v}"]
        for host, ip in (resolve or {}).items():
            a += ["--resolve", f"{host}:{ip}"]
        if snapshot:
            a.append(f"--{snapshot}")
        if snapshot_paths is not None:
            a += _list_flag("snapshot-path", snapshot_paths)
        if snapshot_exclude is not None:
            a += _list_flag("snapshot-exclude", snapshot_exclude)
        if no_protect:
            a.append("--no-protect")
        if quiet:
            a.append("--quiet")
        if cwd is not None:
            a += ["-C", os.fspath(cwd)]
        self.args: List[str] = a

    def argv(self, cmd: str, args: Sequence[str] = (), status_fd: Optional[int] = None) -> List[str]:
        """The full zerobox command line for ``cmd args...``."""
        out = [find_binary(self.binary)] + self.args
        if status_fd is not None:
            out.append(f"--status-fd={status_fd}")
        return out + ["--", cmd] + [os.fspath(x) for x in args]

    def _start(self, cmd: str, args: Sequence[str], stdin: Any) -> Process:
        if isinstance(args, (str, bytes)):
            raise TypeError("args must be a list of strings, not a string")
        rfd, wfd = os.pipe()
        try:
            if wfd < 3:  # --status-fd needs N >= 3
                new = fcntl.fcntl(wfd, fcntl.F_DUPFD_CLOEXEC, 3)
                os.close(wfd)
                wfd = new
            argv = self.argv(cmd, args, status_fd=wfd)
            penv = None
            if self.host_env:
                penv = dict(os.environ)
                penv.update(self.host_env)
            popen = subprocess.Popen(
                argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                pass_fds=(wfd,), start_new_session=True, env=penv,
            )
        except BaseException:
            os.close(rfd)
            os.close(wfd)
            raise
        os.close(wfd)
        reader = _StatusReader(rfd)
        reader.start()
        return Process(popen, reader)

    def run(self, cmd: str, args: Sequence[str] = (), input: Optional[bytes] = None,
            timeout: Optional[float] = None) -> Result:
        """Run ``cmd args...`` to completion and return its Result.

        Raises SandboxError when zerobox could not start the command (the command's
        own exit status, even 125, is returned in ``exit_code``) and SandboxTimeout
        (a TimeoutError) after killing the sandbox when ``timeout`` expires."""
        proc = self._start(cmd, args, subprocess.PIPE if input is not None else subprocess.DEVNULL)
        return proc._communicate(input, timeout)

    def spawn(self, cmd: str, args: Sequence[str] = (), stdin: bool = False) -> Process:
        """Start ``cmd args...`` and return a Process whose ``stdout``/``stderr``
        can be read while it runs."""
        return self._start(cmd, args, subprocess.PIPE if stdin else subprocess.DEVNULL)
