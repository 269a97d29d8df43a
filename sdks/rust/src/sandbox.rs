//! The sandbox policy and how it becomes zerobox's command line.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::Error;
use crate::process::{self, Output, Process};
use crate::snapshots::Snapshots;

/// What happens to the writes of a run (zerobox's `--snapshot`, `--restore`, `--review`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotMode {
    /// Writes are applied at exit and journaled, so they can be restored later.
    Snapshot,
    /// Writes are thrown away at exit; the session keeps its diff.
    Restore,
    /// Nothing is applied at exit: the session stays pending until accepted or discarded.
    Review,
}

impl SnapshotMode {
    fn flag(self) -> &'static str {
        match self {
            SnapshotMode::Snapshot => "--snapshot",
            SnapshotMode::Restore => "--restore",
            SnapshotMode::Review => "--review",
        }
    }
}

/// A list flag that also has a bare form meaning "everything" (`--allow-write`).
#[derive(Debug, Clone, Default)]
struct OptList {
    all: bool,
    items: Vec<OsString>,
}

#[derive(Clone)]
enum Secret {
    /// The value travels in zerobox's environment under the same name.
    Value(OsString, OsString),
    /// zerobox reads the value from this file.
    File(OsString, PathBuf),
}

/// Shows the key, never the value: a policy may well end up in a log.
impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Secret::Value(k, _) => f.debug_tuple("Value").field(k).field(&"<redacted>").finish(),
            Secret::File(k, p) => f.debug_tuple("File").field(k).field(p).finish(),
        }
    }
}

/// A sandbox policy. Each [`run`](Sandbox::run) or [`spawn`](Sandbox::spawn) starts a
/// fresh zerobox with it; a `Sandbox` can be shared between threads and reused.
///
/// The defaults are zerobox's: read everything except credentials, write nowhere
/// (`/tmp` is private scratch), no network, only `PATH HOME USER SHELL TERM LANG`
/// from the environment.
///
/// ```no_run
/// use zerobox::{Sandbox, SnapshotMode};
///
/// let sb = Sandbox::new()
///     .allow_write(["/var/tmp/work"])
///     .cwd("/var/tmp/work")
///     .env("RUST_LOG", "debug")
///     .snapshot(SnapshotMode::Review)
///     .host_env("ZEROBOX_HOME", "/var/tmp/zerobox-store");
/// let out = sb.run("sh", ["-c", "echo hi > greeting"])?;
/// assert_eq!(out.exit_code, Some(0));
/// # Ok::<(), zerobox::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
#[must_use = "a Sandbox does nothing until a command is run with it"]
pub struct Sandbox {
    binary: Option<PathBuf>,
    allow_read: Vec<OsString>,
    deny_read: Vec<OsString>,
    allow_write: OptList,
    deny_write: Vec<OsString>,
    allow_net: OptList,
    deny_net: Vec<OsString>,
    allow_env: OptList,
    deny_env: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    secrets: Vec<Secret>,
    secret_hosts: Vec<(OsString, Vec<OsString>)>,
    resolve: Vec<(OsString, OsString)>,
    upstream_ca: Vec<OsString>,
    cwd: Option<PathBuf>,
    snapshot: Option<SnapshotMode>,
    snapshot_paths: Vec<OsString>,
    snapshot_exclude: Vec<OsString>,
    no_protect: bool,
    strict: bool,
    quiet: bool,
    host_env: Vec<(OsString, OsString)>,
}

fn strings<I, S>(items: I) -> impl Iterator<Item = OsString>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    items.into_iter().map(|s| s.as_ref().to_os_string())
}

impl Sandbox {
    /// zerobox's default policy (see the type's documentation).
    pub fn new() -> Self {
        Self::default()
    }

    /// Use this zerobox executable instead of `$ZEROBOX_BIN` or `PATH`.
    pub fn binary(mut self, path: impl Into<PathBuf>) -> Self {
        self.binary = Some(path.into());
        self
    }

    /// Limit readable user data to these paths (`--allow-read`); system paths stay readable.
    pub fn allow_read<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, paths: I) -> Self {
        self.allow_read.extend(strings(paths));
        self
    }

    /// Make these paths unreadable (`--deny-read`); wins over `allow_read`.
    pub fn deny_read<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, paths: I) -> Self {
        self.deny_read.extend(strings(paths));
        self
    }

    /// Make these paths writable (`--allow-write=P,...`).
    pub fn allow_write<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, paths: I) -> Self {
        self.allow_write.items.extend(strings(paths));
        self
    }

    /// Make the whole filesystem writable (bare `--allow-write`).
    pub fn allow_write_all(mut self) -> Self {
        self.allow_write.all = true;
        self
    }

    /// Keep these paths read-only even inside a writable path (`--deny-write`).
    pub fn deny_write<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, paths: I) -> Self {
        self.deny_write.extend(strings(paths));
        self
    }

    /// Allow only these hosts, through zerobox's filtering proxy (`--allow-net=D,...`).
    /// Rules are zerobox's: `example.com`, `*.example.com`, `host:port`, IP literals.
    pub fn allow_net<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, hosts: I) -> Self {
        self.allow_net.items.extend(strings(hosts));
        self
    }

    /// Full network access (bare `--allow-net`; filtered if `deny_net` is also set).
    pub fn allow_net_all(mut self) -> Self {
        self.allow_net.all = true;
        self
    }

    /// Never these hosts (`--deny-net`); wins over every allow rule.
    pub fn deny_net<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, hosts: I) -> Self {
        self.deny_net.extend(strings(hosts));
        self
    }

    /// Inherit these variables from zerobox's environment as well as the default six
    /// (`--allow-env=K,...`). See [`host_env`](Sandbox::host_env) for setting them.
    pub fn allow_env<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, keys: I) -> Self {
        self.allow_env.items.extend(strings(keys));
        self
    }

    /// Inherit every variable of zerobox's environment (bare `--allow-env`).
    pub fn allow_env_all(mut self) -> Self {
        self.allow_env.all = true;
        self
    }

    /// Drop these variables (`--deny-env`); wins over `allow_env`.
    pub fn deny_env<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, keys: I) -> Self {
        self.deny_env.extend(strings(keys));
        self
    }

    /// Set a variable inside the sandbox (`--env KEY=VALUE`). The value is visible in
    /// zerobox's argv: use [`secret`](Sandbox::secret) for anything confidential.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env.push((key.as_ref().into(), value.as_ref().into()));
        self
    }

    /// A secret: the command sees `KEY=ZEROBOX_SECRET_<random>` and zerobox's proxy
    /// puts `value` back into requests to the approved hosts.
    ///
    /// The value never appears in any argv: it is put into zerobox's own environment
    /// as `KEY` and zerobox is passed `--secret KEY`. It overrides a
    /// [`host_env`](Sandbox::host_env) of the same name.
    pub fn secret(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.secrets.push(Secret::Value(key.as_ref().into(), value.as_ref().into()));
        self
    }

    /// A secret whose value zerobox reads from `path` (`--secret-file KEY=PATH`; one
    /// trailing newline is stripped). The file is unreadable inside the sandbox.
    pub fn secret_file(mut self, key: impl AsRef<OsStr>, path: impl Into<PathBuf>) -> Self {
        self.secrets.push(Secret::File(key.as_ref().into(), path.into()));
        self
    }

    /// Restrict secret `key` to these hosts (`--secret-host KEY=H,...`). They are
    /// reachable without being listed in `allow_net`.
    pub fn secret_hosts<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(
        mut self,
        key: impl AsRef<OsStr>,
        hosts: I,
    ) -> Self {
        self.secret_hosts.push((key.as_ref().into(), strings(hosts).collect()));
        self
    }

    /// Connect to `ip` for `host`, like curl's `--resolve` (`--resolve HOST:IP`).
    pub fn resolve(mut self, host: impl AsRef<OsStr>, ip: impl AsRef<OsStr>) -> Self {
        self.resolve.push((host.as_ref().into(), ip.as_ref().into()));
        self
    }

    /// Extra CA certificates (a PEM file) the proxy trusts when it verifies the TLS of a
    /// secret's host (`--upstream-ca FILE`).
    pub fn upstream_ca(mut self, file: impl AsRef<OsStr>) -> Self {
        self.upstream_ca.push(file.as_ref().into());
        self
    }

    /// The command's working directory (`-C DIR`).
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Record the run's writes as a session (`--snapshot`, `--restore` or `--review`).
    pub fn snapshot(mut self, mode: SnapshotMode) -> Self {
        self.snapshot = Some(mode);
        self
    }

    /// Which writable directories are tracked (`--snapshot-path`).
    pub fn snapshot_paths<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, paths: I) -> Self {
        self.snapshot_paths.extend(strings(paths));
        self
    }

    /// gitignore-like patterns applied directly, never journaled (`--snapshot-exclude`).
    pub fn snapshot_exclude<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, globs: I) -> Self {
        self.snapshot_exclude.extend(strings(globs));
        self
    }

    /// Turn off zerobox's protected paths (`--no-protect`).
    pub fn no_protect(mut self, on: bool) -> Self {
        self.no_protect = on;
        self
    }

    /// Fail the run with a setup error rather than run it with a weaker isolation
    /// layer (`--strict-sandbox`; today: when Landlock is unavailable).
    pub fn strict(mut self, on: bool) -> Self {
        self.strict = on;
        self
    }

    /// No zerobox messages on stderr except errors (`--quiet`).
    pub fn quiet(mut self, on: bool) -> Self {
        self.quiet = on;
        self
    }

    /// Set a variable in the environment zerobox itself runs with, on top of this
    /// process's environment: `ZEROBOX_HOME` for the snapshot store, or variables
    /// for `allow_env` to pass through. Not visible in the sandbox unless allowed.
    pub fn host_env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.host_env.push((key.as_ref().into(), value.as_ref().into()));
        self
    }

    /// A [`Snapshots`] client with this sandbox's binary and `host_env`, so it uses
    /// the same store as the runs.
    pub fn snapshots(&self) -> Snapshots {
        let mut s = Snapshots::new();
        if let Some(b) = &self.binary {
            s = s.binary(b);
        }
        for (k, v) in &self.host_env {
            s = s.env(k, v);
        }
        s
    }

    /// zerobox's option flags for this policy (without `--status-fd` and the command).
    /// Secret values are not among them.
    pub fn flags(&self) -> Result<Vec<OsString>, Error> {
        let mut a = Vec::new();
        list_flag(&mut a, "allow-read", &self.allow_read)?;
        list_flag(&mut a, "deny-read", &self.deny_read)?;
        opt_flag(&mut a, "allow-write", &self.allow_write)?;
        list_flag(&mut a, "deny-write", &self.deny_write)?;
        opt_flag(&mut a, "allow-net", &self.allow_net)?;
        list_flag(&mut a, "deny-net", &self.deny_net)?;
        opt_flag(&mut a, "allow-env", &self.allow_env)?;
        list_flag(&mut a, "deny-env", &self.deny_env)?;
        for (k, v) in &self.env {
            check_key("env", k)?;
            a.push("--env".into());
            a.push(join(&[k.as_bytes(), b"=", v.as_bytes()]));
        }
        for s in &self.secrets {
            match s {
                Secret::Value(k, _) => {
                    check_key("secret", k)?;
                    a.push("--secret".into());
                    a.push(k.clone());
                }
                Secret::File(k, p) => {
                    check_key("secret", k)?;
                    a.push("--secret-file".into());
                    a.push(join(&[k.as_bytes(), b"=", p.as_os_str().as_bytes()]));
                }
            }
        }
        for (k, hosts) in &self.secret_hosts {
            check_key("secret host", k)?;
            for list in escaped_lists("secret-host", hosts)? {
                a.push("--secret-host".into());
                a.push(join(&[k.as_bytes(), b"=", list.as_bytes()]));
            }
        }
        for (host, ip) in &self.resolve {
            if host.is_empty() || host.as_bytes().contains(&b':') {
                return Err(Error::InvalidArgument(format!(
                    "resolve: host {:?} must be a non-empty name without ':'",
                    host
                )));
            }
            a.push("--resolve".into());
            a.push(join(&[host.as_bytes(), b":", ip.as_bytes()]));
        }
        list_flag(&mut a, "upstream-ca", &self.upstream_ca)?;
        if let Some(mode) = self.snapshot {
            a.push(mode.flag().into());
        }
        list_flag(&mut a, "snapshot-path", &self.snapshot_paths)?;
        list_flag(&mut a, "snapshot-exclude", &self.snapshot_exclude)?;
        if self.no_protect {
            a.push("--no-protect".into());
        }
        if self.strict {
            a.push("--strict-sandbox".into());
        }
        if self.quiet {
            a.push("--quiet".into());
        }
        if let Some(dir) = &self.cwd {
            a.push("-C".into());
            a.push(dir.clone().into_os_string());
        }
        Ok(a)
    }

    /// A command to run under this policy; see [`Command`] for input and timeouts.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        Command {
            sandbox: self.clone(),
            program: program.as_ref().into(),
            args: Vec::new(),
            input: None,
            pipe_stdin: false,
            timeout: None,
        }
    }

    /// Runs `program args...` to completion (stdin is `/dev/null`).
    ///
    /// `Ok` whenever the command ran, whatever its exit code (even 125);
    /// [`Error::Sandbox`] when zerobox did not run it.
    pub fn run<I, S>(&self, program: impl AsRef<OsStr>, args: I) -> Result<Output, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command(program).args(args).run()
    }

    /// Starts `program args...` and returns at once; read its output while it runs.
    pub fn spawn<I, S>(&self, program: impl AsRef<OsStr>, args: I) -> Result<Process, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command(program).args(args).spawn()
    }

    pub(crate) fn binary_path(&self) -> Option<&Path> {
        self.binary.as_deref()
    }

    /// Variables for zerobox's own environment: `host_env`, then secret values.
    pub(crate) fn zerobox_env(&self) -> Vec<(OsString, OsString)> {
        let mut e = self.host_env.clone();
        for s in &self.secrets {
            if let Secret::Value(k, v) = s {
                e.push((k.clone(), v.clone()));
            }
        }
        e
    }
}

/// One command under a [`Sandbox`] (a copy of its policy), configured like
/// `std::process::Command`.
///
/// ```no_run
/// use std::time::Duration;
/// let sb = zerobox::Sandbox::new();
/// let out = sb.command("cat").input(b"{\"a\": 1}".to_vec()).timeout(Duration::from_secs(10)).run()?;
/// assert_eq!(out.json()?["a"].as_i64(), Some(1));
/// # Ok::<(), zerobox::Error>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "a Command does nothing until it is run or spawned"]
pub struct Command {
    sandbox: Sandbox,
    program: OsString,
    args: Vec<OsString>,
    input: Option<Vec<u8>>,
    pipe_stdin: bool,
    timeout: Option<Duration>,
}

impl Command {
    /// Adds one argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().into());
        self
    }

    /// Adds arguments.
    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, args: I) -> Self {
        self.args.extend(strings(args));
        self
    }

    /// Feeds these bytes to the command's stdin, then closes it.
    pub fn input(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.input = Some(bytes.into());
        self
    }

    /// For [`spawn`](Command::spawn): give the [`Process`] a `stdin` pipe to write to
    /// (ignored when [`input`](Command::input) is set). Otherwise stdin is `/dev/null`.
    pub fn stdin_piped(mut self) -> Self {
        self.pipe_stdin = true;
        self
    }

    /// Kill the whole sandbox if the command has not finished this long after it was
    /// started; the run then fails with [`Error::Timeout`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The zerobox command line, without `--status-fd` (which [`spawn`](Command::spawn)
    /// adds): the binary, the policy's flags, `--`, the program and its arguments.
    pub fn argv(&self) -> Result<Vec<OsString>, Error> {
        self.build_argv(None)
    }

    pub(crate) fn build_argv(&self, status_fd: Option<i32>) -> Result<Vec<OsString>, Error> {
        let bin = crate::binary::find_binary(self.sandbox.binary_path())?;
        let mut v = vec![bin.into_os_string()];
        v.extend(self.sandbox.flags()?);
        if let Some(fd) = status_fd {
            v.push(format!("--status-fd={fd}").into());
        }
        v.push("--".into());
        v.push(self.program.clone());
        v.extend(self.args.iter().cloned());
        Ok(v)
    }

    /// Runs the command to completion and collects its output.
    ///
    /// `Ok` whenever the command ran, whatever its exit code; [`Error::Sandbox`] when
    /// zerobox did not run it; [`Error::Timeout`] when the timeout expired.
    pub fn run(&self) -> Result<Output, Error> {
        self.spawn()?.wait()
    }

    /// Starts the command; zerobox runs in its own process group, so that
    /// [`Process::kill`] and timeouts take down everything it started.
    pub fn spawn(&self) -> Result<Process, Error> {
        process::spawn(self)
    }

    pub(crate) fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    pub(crate) fn input_bytes(&self) -> Option<&[u8]> {
        self.input.as_deref()
    }

    pub(crate) fn wants_stdin_pipe(&self) -> bool {
        self.pipe_stdin
    }

    pub(crate) fn timeout_value(&self) -> Option<Duration> {
        self.timeout
    }
}

/// `a + b + c` as an OsString (bytes, so non-UTF-8 paths survive).
fn join(parts: &[&[u8]]) -> OsString {
    OsString::from_vec(parts.concat())
}

fn check_key(what: &str, k: &OsStr) -> Result<(), Error> {
    if k.is_empty() || k.as_bytes().contains(&b'=') {
        return Err(Error::InvalidArgument(format!("{what}: variable name {k:?} must be non-empty and without '='")));
    }
    Ok(())
}

/// Escapes one list item: `,` becomes `\,` (zerobox's only list escape).
pub(crate) fn escape(item: &OsStr) -> Vec<u8> {
    let mut out = Vec::with_capacity(item.len());
    for &b in item.as_bytes() {
        if b == b',' {
            out.push(b'\\');
        }
        out.push(b);
    }
    out
}

/// The items joined into comma-separated values, as few as possible.
///
/// zerobox reads `\,` as a literal comma, so an item ending in `\` would swallow the
/// comma after it. Such an item goes last in its value, where the backslash is kept
/// as it is (repeating a list flag adds to the list).
fn escaped_lists(name: &str, items: &[OsString]) -> Result<Vec<OsString>, Error> {
    let mut out = Vec::new();
    let mut cur: Vec<u8> = Vec::new();
    let mut open = false;
    for item in items {
        if item.is_empty() {
            return Err(Error::InvalidArgument(format!("{name}: empty list item")));
        }
        if open {
            cur.push(b',');
        }
        cur.extend(escape(item));
        open = true;
        if item.as_bytes().ends_with(b"\\") {
            out.push(OsString::from_vec(std::mem::take(&mut cur)));
            open = false;
        }
    }
    if open {
        out.push(OsString::from_vec(cur));
    }
    Ok(out)
}

fn list_flag(a: &mut Vec<OsString>, name: &str, items: &[OsString]) -> Result<(), Error> {
    for list in escaped_lists(name, items)? {
        a.push(join(&[b"--", name.as_bytes(), b"=", list.as_bytes()]));
    }
    Ok(())
}

fn opt_flag(a: &mut Vec<OsString>, name: &str, v: &OptList) -> Result<(), Error> {
    if v.all {
        a.push(format!("--{name}").into());
    }
    list_flag(a, name, &v.items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(sb: &Sandbox) -> Vec<String> {
        sb.flags().unwrap().into_iter().map(|s| s.into_string().unwrap()).collect()
    }

    #[test]
    fn flag_order_and_forms() {
        let sb = Sandbox::new()
            .allow_write_all()
            .allow_net(["a.com", "b.com"])
            .allow_env_all()
            .deny_env(["X"])
            .env("A", "1")
            .env("B", "x=y")
            .cwd("/usr")
            .resolve("h.test", "127.0.0.1")
            .snapshot(SnapshotMode::Review)
            .snapshot_exclude(["*.log"])
            .no_protect(true)
            .quiet(true);
        assert_eq!(
            flags(&sb),
            [
                "--allow-write",
                "--allow-net=a.com,b.com",
                "--allow-env",
                "--deny-env=X",
                "--env",
                "A=1",
                "--env",
                "B=x=y",
                "--resolve",
                "h.test:127.0.0.1",
                "--review",
                "--snapshot-exclude=*.log",
                "--no-protect",
                "--quiet",
                "-C",
                "/usr",
            ]
        );
        assert!(flags(&Sandbox::new()).is_empty());
        let sb = Sandbox::new()
            .allow_read(["/a"])
            .deny_read(["/b"])
            .allow_write(["/c"])
            .allow_write(["/d"])
            .deny_write(["/e"])
            .deny_net(["x.test"])
            .allow_env(["K"])
            .snapshot(SnapshotMode::Snapshot)
            .snapshot_paths(["/c"]);
        assert_eq!(
            flags(&sb),
            [
                "--allow-read=/a",
                "--deny-read=/b",
                "--allow-write=/c,/d",
                "--deny-write=/e",
                "--deny-net=x.test",
                "--allow-env=K",
                "--snapshot",
                "--snapshot-path=/c",
            ]
        );
        assert_eq!(flags(&Sandbox::new().snapshot(SnapshotMode::Restore)), ["--restore"]);
    }

    #[test]
    fn comma_escape() {
        assert_eq!(flags(&Sandbox::new().allow_read(["/a,b", "/c"])), ["--allow-read=/a\\,b,/c"]);
        // A trailing backslash would escape the separator: that item ends its value.
        assert_eq!(
            flags(&Sandbox::new().allow_read(["/x\\", "/y", "/z,\\", "/w"])),
            ["--allow-read=/x\\", "--allow-read=/y,/z\\,\\", "--allow-read=/w"]
        );
        assert!(Sandbox::new().allow_read([""]).flags().is_err());
    }

    #[test]
    fn secrets_stay_out_of_argv() {
        let sb = Sandbox::new()
            .secret("TOKEN", "s3cr3t-value")
            .secret_file("KEY", "/run/key")
            .secret_hosts("TOKEN", ["api.test:8080", "b.test"]);
        assert_eq!(
            flags(&sb),
            ["--secret", "TOKEN", "--secret-file", "KEY=/run/key", "--secret-host", "TOKEN=api.test:8080,b.test"]
        );
        let env = sb.zerobox_env();
        assert_eq!(env, [("TOKEN".into(), "s3cr3t-value".into())]);
        let cmd = sb.clone().binary("/bin/true").command("sh");
        let argv = cmd.argv().unwrap();
        assert!(argv.iter().all(|a| !a.to_string_lossy().contains("s3cr3t")), "{argv:?}");
        let debug = format!("{cmd:?}");
        assert!(!debug.contains("s3cr3t") && debug.contains("<redacted>"), "{debug}");
    }

    #[test]
    fn invalid_names() {
        for sb in [
            Sandbox::new().env("A=B", "1"),
            Sandbox::new().env("", "1"),
            Sandbox::new().secret("A=B", "1"),
            Sandbox::new().secret_file("", "/x"),
            Sandbox::new().secret_hosts("K=", ["h"]),
            Sandbox::new().resolve("h:1", "127.0.0.1"),
        ] {
            match sb.flags() {
                Err(Error::InvalidArgument(_)) => {}
                other => panic!("{sb:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn non_utf8_paths_survive() {
        let p = OsString::from_vec(b"/tmp/\xff,x".to_vec());
        let f = Sandbox::new().allow_write([&p]).flags().unwrap();
        assert_eq!(f[0].as_bytes(), b"--allow-write=/tmp/\xff\\,x");
    }

    #[test]
    fn argv_shape() {
        let sb = Sandbox::new().binary("/bin/true").quiet(true);
        let argv = sb.command("printf").arg("%s").args(["a", "b"]).build_argv(Some(3)).unwrap();
        assert_eq!(argv, ["/bin/true", "--quiet", "--status-fd=3", "--", "printf", "%s", "a", "b"]);
        // The command may itself look like an option: it comes after `--`.
        let argv = sb.command("--allow-all").argv().unwrap();
        assert_eq!(argv, ["/bin/true", "--quiet", "--", "--allow-all"]);
    }
}
