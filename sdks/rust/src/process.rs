//! Starting zerobox, reading its `--status-fd` events, waiting, killing.
//!
//! zerobox runs in a process group of its own. Killing that group with SIGKILL kills
//! zerobox, and zerobox's death takes the sandbox down (the command runs in a pid
//! namespace whose init is zerobox's child), so no grandchild survives a timeout.
//!
//! The group id is zerobox's pid, and it can only be reused once zerobox is reaped.
//! Every reap therefore happens under the same lock as every kill: a kill never hits
//! a recycled pid.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use crate::error::{io_error, Error};
use crate::json::Json;
use crate::sandbox::Command;
use crate::sys;

/// The fd number zerobox is told to write events to (or the next one, see `spawn`).
const STATUS_FD: i32 = 3;

/// After a kill, how long to wait for the pipes to reach EOF before giving up on them.
const DRAIN_AFTER_KILL: Duration = Duration::from_secs(10);

/// The session a snapshot run created (from the `session` status event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The full session id (32 hex digits).
    pub id: String,
    /// Its state when zerobox exited.
    pub state: SessionState,
    /// How many changes it recorded.
    pub changes: u64,
}

/// The state of a snapshot session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionState {
    /// Its zerobox is still running.
    Running,
    /// Reviewed, not applied yet.
    Pending,
    /// Applied to the real filesystem.
    Accepted,
    /// Dropped without being applied.
    Discarded,
    /// Undone, or thrown away by `--restore`.
    Restored,
    /// zerobox failed before the command started.
    Failed,
    /// A state this SDK does not know yet.
    Other(String),
}

impl SessionState {
    /// Parses zerobox's name for a state.
    pub fn parse(s: &str) -> SessionState {
        match s {
            "running" => SessionState::Running,
            "pending" => SessionState::Pending,
            "accepted" => SessionState::Accepted,
            "discarded" => SessionState::Discarded,
            "restored" => SessionState::Restored,
            "failed" => SessionState::Failed,
            other => SessionState::Other(other.to_string()),
        }
    }

    /// zerobox's name for the state.
    pub fn as_str(&self) -> &str {
        match self {
            SessionState::Running => "running",
            SessionState::Pending => "pending",
            SessionState::Accepted => "accepted",
            SessionState::Discarded => "discarded",
            SessionState::Restored => "restored",
            SessionState::Failed => "failed",
            SessionState::Other(s) => s,
        }
    }
}

impl std::fmt::Display for SessionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outcome of a command that ran in the sandbox.
#[derive(Debug, Clone)]
pub struct Output {
    /// The command's exit code; `None` when a signal killed it.
    pub exit_code: Option<i32>,
    /// The signal that killed the command. zerobox itself then exits 128+N, but the
    /// SDK reports the signal here, so a command that *exits* 143 (`exit_code`) and
    /// one killed by SIGTERM (`signal`) stay apart.
    pub signal: Option<i32>,
    /// Everything the command wrote to stdout (minus what was read from
    /// [`Process::stdout`] before waiting).
    pub stdout: Vec<u8>,
    /// The command's stderr, with zerobox's own messages (e.g. its session line).
    pub stderr: Vec<u8>,
    /// The command's pid as the host sees it.
    pub pid: Option<u32>,
    /// The session, for runs with a [`SnapshotMode`](crate::SnapshotMode).
    pub session: Option<Session>,
    /// Every `--status-fd` event, in order (`net` events included).
    pub events: Vec<Json>,
}

impl Output {
    /// Whether the command exited with 0.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0)
    }

    /// stdout as text (invalid UTF-8 replaced by U+FFFD).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// stderr as text (invalid UTF-8 replaced by U+FFFD).
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// stdout parsed as one JSON value.
    pub fn json(&self) -> Result<Json, Error> {
        Ok(Json::from_slice(&self.stdout)?)
    }
}

/// What the waiting side and every killer share.
struct ChildState {
    child: Child,
    /// Set when the child has been reaped; from then on its pid is not ours.
    status: Option<ExitStatus>,
    /// Set by an explicit kill (not a timeout).
    killed: bool,
}

struct Shared {
    state: Mutex<ChildState>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, ChildState> {
        // A panic while holding the lock leaves plain data behind; keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// SIGKILL zerobox's process group, unless zerobox was already reaped.
    fn kill_group(&self, explicit: bool) -> Result<(), Error> {
        kill_locked(&mut self.lock(), explicit)
    }
}

/// SIGKILL zerobox's process group, unless zerobox was already reaped. Call with the
/// lock held. `explicit`: a cancellation, not a timeout.
fn kill_locked(st: &mut ChildState, explicit: bool) -> Result<(), Error> {
    if st.status.is_some() {
        return Ok(());
    }
    if explicit {
        st.killed = true;
    }
    let pid = st.child.id() as i32;
    match sys::kill(-pid, sys::SIGKILL) {
        Ok(()) => Ok(()),
        // No such group: every member has exited (zerobox is a zombie) or, should the
        // group never have been made, zerobox still runs; it is unreaped either way.
        Err(e) if e.raw_os_error() == Some(3 /* ESRCH */) => {
            let _ = sys::kill(pid, sys::SIGKILL);
            Ok(())
        }
        Err(e) => Err(io_error(format!("kill process group {pid}"))(e)),
    }
}

/// A handle that kills a running sandbox from any thread (cancellation).
///
/// Killing after the run has finished does nothing.
#[derive(Clone)]
pub struct Killer {
    shared: Arc<Shared>,
}

impl Killer {
    /// Kills zerobox's whole process group with SIGKILL; the sandbox goes with it.
    /// The waiting side then gets [`Error::Killed`] (unless the command had already
    /// exited, in which case its result stands).
    pub fn kill(&self) -> Result<(), Error> {
        self.shared.kill_group(true)
    }
}

impl std::fmt::Debug for Killer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Killer").finish_non_exhaustive()
    }
}

/// A running sandboxed command, from [`Sandbox::spawn`](crate::Sandbox::spawn) or
/// [`Command::spawn`].
///
/// Read `stdout`/`stderr` while it runs (they are buffered readers, so anything read
/// ahead is not lost), then [`wait`](Process::wait) for the [`Output`], which holds
/// what was not read. Note that a command blocks once a pipe nobody reads is full:
/// reading only stdout of a command that writes a lot to stderr stalls it until
/// `wait` is called.
///
/// Dropping a `Process` that has not been waited for kills the sandbox.
#[must_use = "dropping a Process kills the sandbox"]
pub struct Process {
    /// The command's stdin, with [`Command::stdin_piped`].
    pub stdin: Option<ChildStdin>,
    /// The command's stdout.
    pub stdout: Option<BufReader<ChildStdout>>,
    /// The command's stderr (zerobox's own messages included).
    pub stderr: Option<BufReader<ChildStderr>>,
    shared: Arc<Shared>,
    pid: u32,
    events: Arc<Mutex<Vec<Json>>>,
    status_done: Option<Receiver<()>>,
    input_writer: Option<thread::JoinHandle<()>>,
    deadline: Option<(Instant, Duration)>,
}

impl std::fmt::Debug for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Process").field("pid", &self.pid).finish_non_exhaustive()
    }
}

/// Moves `fd` to a number of 3 or more: the child's stdio setup would overwrite 0-2.
fn above_stdio(mut s: UnixStream) -> Result<UnixStream, Error> {
    while s.as_raw_fd() < 3 {
        // try_clone is F_DUPFD_CLOEXEC with a minimum of 3.
        s = s.try_clone().map_err(io_error("duplicate status socket"))?;
    }
    Ok(s)
}

pub(crate) fn spawn(cmd: &Command) -> Result<Process, Error> {
    // Both ends are close-on-exec: the child end reaches zerobox only as the fd that
    // pre_exec dup2()s it to, and no other child we start holds a copy, so the parent
    // end sees EOF exactly when zerobox (and anything it gave the fd to) is gone.
    let (parent_end, child_end) = UnixStream::pair().map_err(io_error("socketpair for --status-fd"))?;
    let child_end = above_stdio(child_end)?;
    let src = child_end.as_raw_fd();
    // dup2(fd, fd) would keep FD_CLOEXEC, so never ask for the number it already has.
    let target = if src == STATUS_FD { STATUS_FD + 1 } else { STATUS_FD };

    let argv = cmd.build_argv(Some(target))?;
    let mut pc = std::process::Command::new(&argv[0]);
    pc.args(&argv[1..]);
    for (k, v) in cmd.sandbox().zerobox_env() {
        pc.env(k, v);
    }
    let stdin = if cmd.input_bytes().is_some() || cmd.wants_stdin_pipe() { Stdio::piped() } else { Stdio::null() };
    pc.stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped());
    pc.process_group(0);
    // SAFETY: the closure runs in the forked child before exec. It captures two
    // integers and calls only dup2 and reads errno: no allocation, no lock, nothing
    // that is unsafe after fork in a multi-threaded parent.
    unsafe {
        pc.pre_exec(move || sys::dup2(src, target));
    }
    let mut child = pc.spawn().map_err(io_error(format!("spawn {}", OsString::from(&argv[0]).to_string_lossy())))?;
    drop(child_end);

    // From here on an early return drops the Process, which kills the sandbox.
    let (done_tx, done_rx) = mpsc::channel();
    let mut p = Process {
        stdin: child.stdin.take(),
        stdout: child.stdout.take().map(BufReader::new),
        stderr: child.stderr.take().map(BufReader::new),
        pid: child.id(),
        shared: Arc::new(Shared { state: Mutex::new(ChildState { child, status: None, killed: false }) }),
        events: Arc::new(Mutex::new(Vec::new())),
        status_done: Some(done_rx),
        input_writer: None,
        deadline: cmd.timeout_value().map(|t| (Instant::now() + t, t)),
    };
    let events = Arc::clone(&p.events);
    thread::Builder::new()
        .name("zerobox-status".into())
        .spawn(move || {
            read_events(parent_end, &events);
            let _ = done_tx.send(());
        })
        .map_err(io_error("start status reader thread"))?;

    if let Some(bytes) = cmd.input_bytes() {
        let bytes = bytes.to_vec();
        let mut pipe = p.stdin.take().expect("stdin is piped when input is set");
        let writer = thread::Builder::new()
            .name("zerobox-stdin".into())
            .spawn(move || {
                // The command may exit without reading all of it; that is its business.
                let _ = pipe.write_all(&bytes);
            })
            .map_err(io_error("start stdin writer thread"))?;
        p.input_writer = Some(writer);
    }
    Ok(p)
}

/// Reads JSON Lines until EOF. A line that is not a JSON object is skipped: the
/// protocol is versioned, and a garbled line must not hide the ones after it.
fn read_events(sock: UnixStream, events: &Mutex<Vec<Json>>) {
    for line in BufReader::new(sock).split(b'\n') {
        let Ok(line) = line else { break };
        if let Ok(ev @ Json::Object(_)) = Json::from_slice(trim(&line)) {
            events.lock().unwrap_or_else(|e| e.into_inner()).push(ev);
        }
    }
}

fn trim(mut b: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = b {
        if !first.is_ascii_whitespace() {
            break;
        }
        b = rest;
    }
    while let [rest @ .., last] = b {
        if !last.is_ascii_whitespace() {
            break;
        }
        b = rest;
    }
    b
}

/// Reads `r` to EOF on a thread; the bytes arrive on the returned channel.
fn collect<R: Read + Send + 'static>(r: Option<R>, name: &str) -> Result<Receiver<Vec<u8>>, Error> {
    let (tx, rx) = mpsc::sync_channel(1);
    match r {
        None => {
            let _ = tx.send(Vec::new());
        }
        Some(mut r) => {
            thread::Builder::new()
                .name(name.into())
                .spawn(move || {
                    let mut buf = Vec::new();
                    // A read error ends the stream like EOF; what was read is kept.
                    let _ = r.read_to_end(&mut buf);
                    let _ = tx.send(buf);
                })
                .map_err(io_error(format!("start {name} thread")))?;
        }
    }
    Ok(rx)
}

/// Waits for a reader until `until` (forever if `None`); `None` if it did not finish.
fn recv_until<T>(rx: &Receiver<T>, until: Option<Instant>) -> Option<T> {
    match until {
        None => rx.recv().ok(),
        Some(t) => rx.recv_timeout(t.saturating_duration_since(Instant::now())).ok(),
    }
}

impl Process {
    /// zerobox's pid (also its process group id). The command's own pid is in
    /// [`command_pid`](Process::command_pid).
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// The command's pid as the host sees it, once zerobox has reported it.
    pub fn command_pid(&self) -> Option<u32> {
        let events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        events
            .iter()
            .find(|e| e["event"].as_str() == Some("child_started"))
            .and_then(|e| e["pid"].as_u64())
            .and_then(|p| u32::try_from(p).ok())
    }

    /// The `--status-fd` events received so far.
    pub fn events(&self) -> Vec<Json> {
        self.events.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// zerobox's exit status if it has exited (it then reaps it), else `None`.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>, Error> {
        let mut st = self.shared.lock();
        reap(&mut st)
    }

    /// Kills the sandbox: SIGKILL to zerobox's whole process group. [`wait`](Process::wait)
    /// then returns [`Error::Killed`], unless the command had already exited.
    pub fn kill(&self) -> Result<(), Error> {
        self.shared.kill_group(true)
    }

    /// A handle to kill this sandbox from another thread while this one waits.
    pub fn killer(&self) -> Killer {
        Killer { shared: Arc::clone(&self.shared) }
    }

    /// Sends `signal` to zerobox alone; zerobox forwards SIGHUP, SIGINT, SIGQUIT,
    /// SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGCONT and SIGWINCH to the command.
    pub fn signal(&self, signal: i32) -> Result<(), Error> {
        let st = self.shared.lock();
        if st.status.is_some() {
            return Ok(());
        }
        sys::kill(self.pid as i32, signal).map_err(io_error(format!("kill {} (signal {signal})", self.pid)))
    }

    /// Waits for the command (until its [`Command::timeout`], if any) and returns its
    /// [`Output`]. Output not read yet is collected, from both pipes at once.
    pub fn wait(self) -> Result<Output, Error> {
        let deadline = self.deadline;
        self.wait_until(deadline)
    }

    /// Like [`wait`](Process::wait), but kills the sandbox and returns
    /// [`Error::Timeout`] if it has not finished within `timeout` from now (or by
    /// the [`Command::timeout`], whichever comes first).
    pub fn wait_timeout(self, timeout: Duration) -> Result<Output, Error> {
        let mine = (Instant::now() + timeout, timeout);
        let deadline = match self.deadline {
            Some(d) if d.0 < mine.0 => d,
            _ => mine,
        };
        self.wait_until(Some(deadline))
    }

    fn wait_until(mut self, deadline: Option<(Instant, Duration)>) -> Result<Output, Error> {
        drop(self.stdin.take()); // a command reading stdin would wait for us forever
        let out_rx = collect(self.stdout.take(), "zerobox-stdout")?;
        let err_rx = collect(self.stderr.take(), "zerobox-stderr")?;
        let status_rx = self.status_done.take();
        let until = deadline.map(|d| d.0);

        // Poll rather than block in wait(): the reap must happen under the lock that
        // kills take (see the module comment). The status socket reaches EOF as zerobox
        // exits, so sleeping on it wakes us at the right moment.
        let mut status_eof = false;
        let mut pause = Duration::from_millis(1);
        let (status, timed_out) = loop {
            {
                let mut st = self.shared.lock();
                if let Some(s) = reap(&mut st)? {
                    break (s, false);
                }
                if until.is_some_and(|t| Instant::now() >= t) {
                    kill_locked(&mut st, false)?;
                    let s = st.child.wait().map_err(io_error(format!("wait for zerobox {}", self.pid)))?;
                    st.status = Some(s);
                    break (s, true);
                }
            }
            let nap = until.map_or(pause, |t| pause.min(t.saturating_duration_since(Instant::now())));
            match &status_rx {
                Some(rx) if !status_eof => {
                    if !matches!(rx.recv_timeout(nap), Err(RecvTimeoutError::Timeout)) {
                        status_eof = true;
                        pause = Duration::from_millis(1);
                        continue;
                    }
                }
                _ => thread::sleep(nap),
            }
            pause = (pause * 2).min(Duration::from_millis(50));
        };
        let killed = self.shared.lock().killed;

        // zerobox is gone, and the sandbox with it, so the pipes reach EOF unless
        // something outside the sandbox inherited them. After a kill, do not wait long.
        let drain_until = if timed_out || killed { Some(Instant::now() + DRAIN_AFTER_KILL) } else { until };
        let stdout = recv_until(&out_rx, drain_until);
        let stderr = recv_until(&err_rx, drain_until);
        if let Some(rx) = status_rx.filter(|_| !status_eof) {
            let _ = recv_until(&rx, drain_until);
        }
        if let Some(h) = self.input_writer.take().filter(|h| h.is_finished()) {
            let _ = h.join();
        }
        let drained = stdout.is_some() && stderr.is_some();
        let stdout = stdout.unwrap_or_default();
        let stderr = stderr.unwrap_or_default();

        // Not drained by the deadline (and not killed) means the deadline passed.
        if timed_out || !(killed || drained) {
            let timeout = deadline.map(|d| d.1).unwrap_or_default();
            return Err(Error::Timeout { timeout, stdout, stderr });
        }
        let events = std::mem::take(&mut *self.events.lock().unwrap_or_else(|e| e.into_inner()));
        build_output(status, events, stdout, stderr, killed)
    }
}

/// Reaps the child if it has exited. Call with the lock held.
fn reap(st: &mut ChildState) -> Result<Option<ExitStatus>, Error> {
    if let Some(s) = st.status {
        return Ok(Some(s));
    }
    let pid = st.child.id();
    match st.child.try_wait().map_err(io_error(format!("wait for zerobox {pid}")))? {
        Some(s) => {
            st.status = Some(s);
            Ok(Some(s))
        }
        None => Ok(None),
    }
}

fn first_line(stderr: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(stderr);
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.strip_prefix("zerobox: error: ").unwrap_or(line).to_string())
}

/// Turns zerobox's events and exit status into the command's outcome, or the reason
/// the command did not run.
fn build_output(
    status: ExitStatus,
    events: Vec<Json>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    killed: bool,
) -> Result<Output, Error> {
    let mut out =
        Output { exit_code: None, signal: None, stdout, stderr, pid: None, session: None, events: Vec::new() };
    let mut exited = false;
    for ev in &events {
        match ev["event"].as_str() {
            Some("setup_error") => {
                let message = ev["message"].as_str().unwrap_or("setup error").to_string();
                return Err(Error::Sandbox { message, exit_code: status.code(), stderr: out.stderr });
            }
            Some("child_started") => out.pid = ev["pid"].as_u64().and_then(|p| u32::try_from(p).ok()),
            Some("child_exit") => {
                exited = true;
                out.exit_code = ev["code"].as_i64().and_then(|c| i32::try_from(c).ok());
                out.signal = ev["signal"].as_i64().and_then(|c| i32::try_from(c).ok());
            }
            Some("session") => {
                if let Some(id) = ev["id"].as_str() {
                    out.session = Some(Session {
                        id: id.to_string(),
                        state: SessionState::parse(ev["state"].as_str().unwrap_or("")),
                        changes: ev["changes"].as_u64().unwrap_or(0),
                    });
                }
            }
            _ => {}
        }
    }
    out.events = events;
    if exited {
        if out.exit_code.is_none() && out.signal.is_none() {
            return Err(Error::Protocol("child_exit event without code or signal".into()));
        }
        return Ok(out);
    }
    if killed {
        return Err(Error::Killed { stdout: out.stdout, stderr: out.stderr });
    }
    let detail = match (status.code(), status.signal()) {
        (_, Some(sig)) => format!("zerobox was killed by signal {sig}"),
        (code, None) => match first_line(&out.stderr) {
            Some(line) => format!("{line} (exit status {})", code.unwrap_or(-1)),
            None => format!("exit status {}", code.unwrap_or(-1)),
        },
    };
    Err(Error::Sandbox {
        message: format!("zerobox did not run the command: {detail}"),
        exit_code: status.code(),
        stderr: out.stderr,
    })
}

impl Drop for Process {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        if st.status.is_some() {
            return;
        }
        if let Ok(None) = st.child.try_wait() {
            // Unreaped, so the group id is still ours (see the module comment).
            let _ = sys::kill(-(self.pid as i32), sys::SIGKILL);
        }
        if let Ok(s) = st.child.wait() {
            st.status = Some(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(lines: &[&str]) -> Vec<Json> {
        lines.iter().map(|l| Json::parse(l).unwrap()).collect()
    }

    fn status(code: i32) -> ExitStatus {
        ExitStatus::from_raw(code << 8)
    }

    #[test]
    fn exit_and_session() {
        let ev = events(&[
            r#"{"v":1,"event":"child_started","pid":42}"#,
            r#"{"v":1,"event":"child_exit","code":125}"#,
            r#"{"v":1,"event":"session","id":"ab","state":"pending","changes":2}"#,
        ]);
        let out = build_output(status(125), ev, b"o".to_vec(), vec![], false).unwrap();
        assert_eq!((out.exit_code, out.signal, out.pid), (Some(125), None, Some(42)));
        let s = out.session.unwrap();
        assert_eq!((s.id.as_str(), s.state, s.changes), ("ab", SessionState::Pending, 2));
        assert_eq!(out.events.len(), 3);
    }

    #[test]
    fn signal() {
        let ev = events(&[r#"{"v":1,"event":"child_started","pid":1}"#, r#"{"v":1,"event":"child_exit","signal":15}"#]);
        let out = build_output(status(143), ev, vec![], vec![], false).unwrap();
        assert_eq!((out.exit_code, out.signal), (None, Some(15)));
    }

    #[test]
    fn setup_error_and_usage_error() {
        let ev = events(&[r#"{"v":1,"event":"setup_error","message":"no such dir"}"#]);
        match build_output(status(125), ev, vec![], b"zerobox: error: no such dir\n".to_vec(), false) {
            Err(Error::Sandbox { message, exit_code, .. }) => {
                assert_eq!((message.as_str(), exit_code), ("no such dir", Some(125)));
            }
            other => panic!("{other:?}"),
        }
        let stderr = b"zerobox: error: unrecognized option '--bogus'\nTry 'zerobox --help'\n".to_vec();
        match build_output(status(2), vec![], vec![], stderr, false) {
            Err(Error::Sandbox { message, exit_code, .. }) => {
                assert_eq!(message, "zerobox did not run the command: unrecognized option '--bogus' (exit status 2)");
                assert_eq!(exit_code, Some(2));
            }
            other => panic!("{other:?}"),
        }
        match build_output(ExitStatus::from_raw(9), vec![], vec![], vec![], false) {
            Err(Error::Sandbox { message, exit_code, .. }) => {
                assert_eq!(message, "zerobox did not run the command: zerobox was killed by signal 9");
                assert_eq!(exit_code, None);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            build_output(ExitStatus::from_raw(9), vec![], vec![], vec![], true),
            Err(Error::Killed { .. })
        ));
    }

    #[test]
    fn session_states() {
        for s in ["running", "pending", "accepted", "discarded", "restored", "failed", "new-thing"] {
            assert_eq!(SessionState::parse(s).as_str(), s);
        }
        assert_eq!(SessionState::parse("new-thing"), SessionState::Other("new-thing".into()));
    }
}
