"""Running commands under zerobox (the synchronous API).

The policy, the command line and the reading of ``--status-fd`` events live here and
are shared with :mod:`zerobox.aio`, which only replaces the process plumbing."""
import fcntl
import json
import os
import select
import selectors
import signal as _signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union

from ._binary import find_binary
from .errors import ProtocolError, SandboxCancelled, SandboxTimeout, SetupFailedError
from .records import Session

_PIPE_BUF = getattr(select, "PIPE_BUF", 512)
# How long to wait for zerobox to go away after it was killed.
_GRACE_SECONDS = 10.0
# zerobox gets a process group of its own, so that one kill reaches all it started.
# setpgid (process_group=0, Python >= 3.11) rather than setsid where possible: with the
# scheduler's autogroups (on by default), a new session is also a new scheduling group,
# and on a busy machine that cost 5-10 ms a run (measured with bench/sdk.sh). zerobox
# itself detaches the command from the caller's terminal.
_NEW_GROUP: Dict[str, Any] = (
    {"process_group": 0} if sys.version_info >= (3, 11) else {"start_new_session": True})

PathList = Optional[Sequence[str]]
BoolOrList = Union[bool, Sequence[str], None]
SnapshotMode = Literal["snapshot", "restore", "review"]
# {"host": "ip"} or ["host:ip", ...], as curl's --resolve
ResolveSpec = Union[Mapping[str, str], Sequence[str], None]
# {"KEY": ["host", ...]}; a single string is one host
HostMap = Optional[Mapping[str, Union[str, Sequence[str]]]]


def _escape(item: str) -> str:
    return str(item).replace(",", "\\,")


def _escaped_lists(option: str, items: Sequence[str]) -> List[str]:
    """The items joined into as few comma-separated values as zerobox reads back exactly.

    zerobox's rule: values are split at commas, ``\\,`` is a literal comma, and any other
    backslash is itself. So an item ending in a backslash would take the comma after it
    into a literal one and swallow the next item: such an item ends its value, and the
    rest go into another one (repeating a list flag adds to the list)."""
    out: List[str] = []
    group: List[str] = []
    for item in items:
        item = item if isinstance(item, str) else os.fsdecode(item)
        if item == "":
            raise ValueError(f"{option}: empty list item")
        group.append(_escape(item))
        if item.endswith("\\"):
            out.append(",".join(group))
            group = []
    if group:
        out.append(",".join(group))
    return out


def _as_list(items: Union[str, Sequence[str]]) -> List[str]:
    if isinstance(items, (str, bytes)):
        items = [items]  # a single string is one path, not a list of characters
    return [os.fspath(i) for i in items]


def _list_flag(name: str, items: Sequence[str]) -> List[str]:
    return [f"--{name}={v}" for v in _escaped_lists(name, _as_list(items))]


def _opt_flag(name: str, value: BoolOrList) -> List[str]:
    if value is None or value is False:
        return []
    if value is True:
        return [f"--{name}"]
    return _list_flag(name, value)


def _check_name(what: str, key: str) -> None:
    if not isinstance(key, str) or not key or "=" in key or "\0" in key:
        raise ValueError(f"invalid {what} name: {key!r}")


@dataclass
class Result:
    """The outcome of a sandboxed command.

    ``session`` is the snapshot session the run recorded (runs with a ``snapshot``
    mode), else None. ``session_id``, ``session_state`` and ``session_changes`` are
    the same values flat, kept for older callers; new code reads ``session``."""

    exit_code: Optional[int]
    signal: Optional[int]
    stdout: bytes
    stderr: bytes
    session_id: Optional[str] = None
    session_state: Optional[str] = None
    session_changes: Optional[int] = None
    pid: Optional[int] = None
    events: List[Dict[str, Any]] = field(default_factory=list)
    session: Optional[Session] = None

    def __post_init__(self) -> None:
        # Either spelling given, both filled in.
        if self.session is not None:
            self.session_id = self.session.id
            self.session_state = self.session.state
            self.session_changes = self.session.changes
        elif self.session_id is not None:
            self.session = Session(self.session_id, self.session_state or "",
                                   self.session_changes or 0)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def text(self, encoding: str = "utf-8", errors: str = "replace") -> str:
        return self.stdout.decode(encoding, errors)

    def json(self) -> Any:
        return json.loads(self.stdout)


class _EventLog:
    """Turns the bytes read from ``--status-fd`` into events, whatever the chunking.
    Lines that are not JSON objects are skipped: the protocol may grow."""

    def __init__(self) -> None:
        self.events: List[Dict[str, Any]] = []
        self._buf = b""

    def feed(self, data: bytes) -> None:
        self._buf += data
        while b"\n" in self._buf:
            line, self._buf = self._buf.split(b"\n", 1)
            self._add(line)

    def close(self) -> None:
        """End of file: a last line without a newline still counts."""
        if self._buf.strip():
            self._add(self._buf)
        self._buf = b""

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


class _StatusReader(threading.Thread):
    def __init__(self, fd: int) -> None:
        super().__init__(daemon=True)
        self._file = os.fdopen(fd, "rb", buffering=0)
        self._log = _EventLog()
        self.events = self._log.events

    def run(self) -> None:
        try:
            while True:
                chunk = self._file.read(65536)
                if not chunk:
                    break
                self._log.feed(chunk)
            self._log.close()
        finally:
            self._file.close()


def _status_pipe() -> Tuple[int, int]:
    """A pipe for ``--status-fd``: (read end, write end), both close-on-exec (the
    write end is handed to zerobox alone through ``pass_fds``)."""
    rfd, wfd = os.pipe()
    if wfd < 3:  # --status-fd needs N >= 3 (possible when the caller closed fd 0-2)
        try:
            new = fcntl.fcntl(wfd, fcntl.F_DUPFD_CLOEXEC, 3)
        except BaseException:
            os.close(rfd)
            os.close(wfd)
            raise
        os.close(wfd)
        wfd = new
    return rfd, wfd


def _kill_group(pid: int) -> None:
    """SIGKILL zerobox's process group (it was started in a group of its own);
    zerobox's death takes the whole sandbox down with it."""
    try:
        os.killpg(pid, _signal.SIGKILL)
    except ProcessLookupError:
        pass


def _build_result(returncode: Optional[int], events: List[Dict[str, Any]],
                  stdout: bytes, stderr: bytes, cancelled: bool = False) -> Result:
    """Interpret the events of one run. Raises SetupFailedError when zerobox reported
    a setup error or ended without the command having run and exited (SandboxCancelled
    instead when ``cancelled``: the caller killed it), ProtocolError on a malformed
    ``child_exit`` or ``session`` event."""
    res = Result(exit_code=None, signal=None, stdout=stdout, stderr=stderr, events=events)
    saw_exit = False
    for ev in events:
        kind = ev.get("event")
        if kind == "setup_error":
            raise SetupFailedError(str(ev.get("message", "setup error")),
                                   exit_code=returncode, stderr=stderr)
        if kind == "child_started":
            res.pid = ev.get("pid")
        elif kind == "child_exit":
            saw_exit = True
            res.exit_code = ev.get("code")
            res.signal = ev.get("signal")
            if res.exit_code is None and res.signal is None:
                raise ProtocolError(f"child_exit event without code or signal: {ev}",
                                    exit_code=returncode, stderr=stderr)
        elif kind == "session":
            sid, state, changes = ev.get("id"), ev.get("state"), ev.get("changes")
            if not isinstance(sid, str) or not isinstance(state, str) or not isinstance(changes, int):
                raise ProtocolError(f"malformed session event: {ev}", exit_code=returncode,
                                    stderr=stderr)
            res.session = Session(sid, state, changes)
            res.session_id, res.session_state, res.session_changes = sid, state, changes
    if not saw_exit:
        rc = returncode
        msg = stderr.decode("utf-8", "replace").strip().splitlines()
        detail = msg[0] if msg else f"exit status {rc}"
        if rc is not None and rc < 0:
            detail = f"zerobox was killed by signal {-rc}"
        if cancelled:
            raise SandboxCancelled(f"the sandbox was killed before the command finished ({detail})",
                                   exit_code=rc, stderr=stderr)
        raise SetupFailedError(f"zerobox did not run the command: {detail}",
                               exit_code=rc, stderr=stderr)
    return res


class Process:
    """A running sandboxed command (from :meth:`Sandbox.spawn`)."""

    def __init__(self, popen: "subprocess.Popen[bytes]", reader: _StatusReader) -> None:
        self._popen = popen
        self._reader = reader
        self._killed = False
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
        self._killed = True
        _kill_group(self._popen.pid)

    def send_signal(self, sig: int) -> None:
        """Send ``sig`` to zerobox, which forwards common signals to the command."""
        self._popen.send_signal(sig)

    def _communicate(self, input: Optional[bytes], timeout: Optional[float]) -> Result:
        try:
            out, err = self._popen.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(self._popen.pid)
            try:
                out, err = self._popen.communicate(timeout=_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                out, err = b"", b""
            self._reader.join(_GRACE_SECONDS)
            raise SandboxTimeout(f"command timed out after {timeout} seconds",
                                 stdout=out or b"", stderr=err or b"") from None
        except BaseException:
            # e.g. KeyboardInterrupt: zerobox runs in a process group of its own, so
            # the terminal's SIGINT never reached it; the sandbox must not outlive the call.
            self.kill()
            self._popen.wait()
            for f in (self._popen.stdin, self._popen.stdout, self._popen.stderr):
                if f is not None:
                    f.close()
            self._reader.join(_GRACE_SECONDS)
            raise
        self._reader.join()
        return _build_result(self._popen.returncode, self._reader.events, out or b"", err or b"",
                             cancelled=self._killed)

    def wait(self, timeout: Optional[float] = None) -> Result:
        """Wait for the command; unread output is collected into the Result.
        On timeout the sandbox is killed and SandboxTimeout is raised; an exception
        while waiting (KeyboardInterrupt) kills it too. After :meth:`kill`, raises
        SandboxCancelled unless the command had already exited."""
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


class SandboxPolicy:
    """A sandbox policy and the zerobox command line it becomes. :class:`Sandbox`
    (blocking) and :class:`zerobox.aio.AsyncSandbox` (asyncio) run commands with it;
    each run starts a fresh zerobox."""

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
        resolve: ResolveSpec = None,
        no_protect: bool = False,
        strict: bool = False,
        binary: Optional[str] = None,
        quiet: bool = False,
        host_env: Optional[Mapping[str, str]] = None,
        secrets: Optional[Mapping[str, str]] = None,
        secret_files: Optional[Mapping[str, str]] = None,
        secret_hosts: HostMap = None,
        upstream_ca: Union[str, Sequence[str], None] = None,
    ) -> None:
        """``host_env`` adds variables to the environment of zerobox itself (for
        example ``ZEROBOX_HOME``); ``env`` sets variables inside the sandbox.

        ``secrets`` maps KEY to its real value: the command sees KEY set to a
        placeholder that zerobox's proxy replaces by the value in requests to the
        approved hosts. The value is passed in zerobox's own environment with
        ``--secret KEY``, never on a command line. ``secret_files`` maps KEY to a file
        holding the value (``--secret-file``), ``secret_hosts`` KEY to the hosts that
        may receive it (``--secret-host``; without it, every allowed host).
        ``upstream_ca`` names extra CA files the proxy trusts upstream.

        ``strict`` (``--strict-sandbox``) fails the run with a setup error rather than
        run it with a weaker isolation layer (today: when Landlock is unavailable)."""
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
            _check_name("environment variable", k)
            a += ["--env", f"{k}={v}"]
        if isinstance(resolve, Mapping):
            a += [x for host, ip in resolve.items() for x in ("--resolve", f"{host}:{ip}")]
        elif resolve is not None:
            a += [x for item in _as_list(resolve) for x in ("--resolve", item)]
        if upstream_ca is not None:
            a += [f"--upstream-ca={f}" for f in _as_list(upstream_ca)]
        # Kept apart from host_env so that nothing that shows the policy shows them.
        self._secret_env: Dict[str, str] = {}
        for k, v in (secrets or {}).items():
            _check_name("secret", k)
            if not isinstance(v, str) or "\0" in v:
                raise ValueError(f"secret {k}: the value must be a string without NUL")
            self._secret_env[k] = v
            a += ["--secret", k]
        for k, path in (secret_files or {}).items():
            _check_name("secret", k)
            a += ["--secret-file", f"{k}={os.fspath(path)}"]
        for k, hosts in (secret_hosts or {}).items():
            _check_name("secret", k)
            hl = _as_list(hosts)
            if not hl:
                raise ValueError(f"secret_hosts[{k!r}] names no host")
            for v in _escaped_lists(f"secret_hosts[{k!r}]", hl):
                a += ["--secret-host", f"{k}={v}"]
        if snapshot:
            a.append(f"--{snapshot}")
        if snapshot_paths is not None:
            a += _list_flag("snapshot-path", snapshot_paths)
        if snapshot_exclude is not None:
            a += _list_flag("snapshot-exclude", snapshot_exclude)
        if no_protect:
            a.append("--no-protect")
        if strict:
            a.append("--strict-sandbox")
        if quiet:
            a.append("--quiet")
        if cwd is not None:
            a += ["-C", os.fspath(cwd)]
        self.args: List[str] = a

    def argv(self, cmd: str, args: Sequence[str] = (), status_fd: Optional[int] = None) -> List[str]:
        """The full zerobox command line for ``cmd args...`` (secret values are not
        in it: they travel in zerobox's environment)."""
        out = [find_binary(self.binary)] + self.args
        if status_fd is not None:
            out.append(f"--status-fd={status_fd}")
        return out + ["--", cmd] + [os.fspath(x) for x in args]

    def _zerobox_env(self) -> Optional[Dict[str, str]]:
        """zerobox's own environment: the caller's, plus host_env and the secret
        values; None (inherit unchanged) when there is nothing to add."""
        if not self.host_env and not self._secret_env:
            return None
        penv = dict(os.environ)
        penv.update(self.host_env or {})
        penv.update(self._secret_env)
        return penv

    @staticmethod
    def _check_args(args: Sequence[str]) -> None:
        if isinstance(args, (str, bytes)):
            raise TypeError("args must be a list of strings, not a string")


class Sandbox(SandboxPolicy):
    """A sandbox policy; each :meth:`run` / :meth:`spawn` starts a fresh zerobox.
    The constructor's arguments are described in :class:`SandboxPolicy`."""

    def _popen(self, cmd: str, args: Sequence[str], stdin: Any) -> "Tuple[subprocess.Popen[bytes], int]":
        """Start zerobox; returns it and the read end of its status pipe."""
        self._check_args(args)
        rfd, wfd = _status_pipe()
        try:
            argv = self.argv(cmd, args, status_fd=wfd)
            popen = subprocess.Popen(
                argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                pass_fds=(wfd,), env=self._zerobox_env(), **_NEW_GROUP,
            )
        except BaseException:
            os.close(rfd)
            os.close(wfd)
            raise
        os.close(wfd)
        return popen, rfd

    def run(self, cmd: str, args: Sequence[str] = (), input: Optional[bytes] = None,
            timeout: Optional[float] = None) -> Result:
        """Run ``cmd args...`` to completion and return its Result.

        Raises SetupFailedError (a SandboxError) when zerobox could not start the
        command (the command's own exit status, even 125, is returned in ``exit_code``),
        BinaryNotFoundError when there is no zerobox, and SandboxTimeout
        (a TimeoutError) after killing the sandbox when ``timeout`` expires. An
        exception while waiting (KeyboardInterrupt) kills the sandbox too."""
        popen, rfd = self._popen(cmd, args, subprocess.PIPE if input is not None else subprocess.DEVNULL)
        return _collect(popen, rfd, input, timeout)

    def spawn(self, cmd: str, args: Sequence[str] = (), stdin: bool = False) -> Process:
        """Start ``cmd args...`` and return a Process whose ``stdout``/``stderr``
        can be read while it runs."""
        popen, rfd = self._popen(cmd, args, subprocess.PIPE if stdin else subprocess.DEVNULL)
        reader = _StatusReader(rfd)
        reader.start()
        return Process(popen, reader)


def _collect(popen: "subprocess.Popen[bytes]", status_fd: int, input: Optional[bytes],
             timeout: Optional[float]) -> Result:
    """Feed ``input``, read stdout, stderr and the status pipe to EOF in one poll loop,
    and reap zerobox. run() uses this rather than Popen.communicate plus a reader
    thread: starting that thread was half of the SDK's own CPU time per run."""
    out, err, status = bytearray(), bytearray(), _EventLog()
    assert popen.stdout is not None and popen.stderr is not None
    sinks: Dict[int, Any] = {status_fd: status.feed, popen.stdout.fileno(): out.extend,
                             popen.stderr.fileno(): err.extend}
    stdin_fd = popen.stdin.fileno() if popen.stdin is not None else -1
    view = memoryview(input or b"")
    sent = 0
    timed_out = False
    sel = selectors.PollSelector()
    try:
        for fd in sinks:
            sel.register(fd, selectors.EVENT_READ)
        if popen.stdin is not None:
            if view:
                sel.register(stdin_fd, selectors.EVENT_WRITE)
            else:
                popen.stdin.close()
        deadline = None if timeout is None else time.monotonic() + timeout
        while sel.get_map():
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                if timed_out:
                    break  # killed, and still no EOF after the grace period
                timed_out = True
                _kill_group(popen.pid)
                deadline = time.monotonic() + _GRACE_SECONDS
                continue
            for key, _ in sel.select(wait):
                fd = key.fd
                if fd == stdin_fd:
                    try:
                        # poll() said writable: PIPE_BUF bytes fit without blocking
                        sent += os.write(fd, view[sent:sent + _PIPE_BUF])
                    except (BrokenPipeError, ConnectionResetError):
                        sent = len(view)  # the command stopped reading its input
                    if sent >= len(view):
                        sel.unregister(fd)
                        assert popen.stdin is not None
                        popen.stdin.close()
                    continue
                data = os.read(fd, 65536)
                if data:
                    sinks[fd](data)
                else:
                    sel.unregister(fd)
        status.close()
        if timed_out:
            try:
                popen.wait(_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                pass
        else:
            popen.wait()
    except BaseException:
        if popen.returncode is None:
            # e.g. KeyboardInterrupt: zerobox runs in a process group of its own, so
            # the terminal's SIGINT never reached it; the sandbox must not outlive the call.
            _kill_group(popen.pid)
            popen.wait()
        raise
    finally:
        sel.close()
        os.close(status_fd)
        for f in (popen.stdin, popen.stdout, popen.stderr):
            if f is not None:
                f.close()
    if timed_out:
        raise SandboxTimeout(f"command timed out after {timeout} seconds",
                             stdout=bytes(out), stderr=bytes(err))
    return _build_result(popen.returncode, status.events, bytes(out), bytes(err))
