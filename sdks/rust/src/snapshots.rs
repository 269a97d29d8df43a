//! `zerobox snapshot …`: listing, diffing, accepting, discarding and restoring sessions.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::error::{io_error, Error};
use crate::json::Json;
use crate::process::SessionState;

/// Options of [`Snapshots::accept`] and [`Snapshots::restore`]; `Default` is no force.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ForceOptions {
    /// Apply over targets that changed since the session recorded them (`--force`).
    pub force: bool,
}

/// Options of [`Snapshots::diff`]; `Default` is every change of the session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiffOptions {
    /// Only the changes at or below one of these paths (`-- PATH…`); empty: all.
    pub paths: Vec<PathBuf>,
}

/// Runs `zerobox snapshot` subcommands against one store.
///
/// The store is `$ZEROBOX_HOME` (else `$XDG_STATE_HOME/zerobox`, else
/// `~/.local/state/zerobox`) in the environment given with [`env`](Snapshots::env)
/// or [`home`](Snapshots::home) on top of this process's.
/// [`Sandbox::snapshots`](crate::Sandbox::snapshots) gives one that matches a sandbox.
///
/// A session id may be a unique prefix or `last`. A refusal (a conflict, an unknown
/// id, a session in the wrong state) is [`Error::Snapshot`] with zerobox's message.
///
/// ```no_run
/// let snaps = zerobox::Snapshots::new().home("/var/tmp/zerobox-store");
/// for change in snaps.diff("last", zerobox::DiffOptions::default())?.changes {
///     println!("{:?} {}", change.kind, change.path.display());
/// }
/// snaps.accept("last", zerobox::ForceOptions::default())?;
/// # Ok::<(), zerobox::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct Snapshots {
    binary: Option<PathBuf>,
    env: Vec<(OsString, OsString)>,
}

/// One session, from `snapshot list --json` or `snapshot show --json`.
#[derive(Debug, Clone)]
pub struct SessionRecord {
    /// The full id.
    pub id: String,
    /// Its state now.
    pub state: SessionState,
    /// `snapshot`, `restore` or `review` (a session made by `restore` has `snapshot`).
    pub mode: String,
    /// `run`, or `restore` for a session that undid another one.
    pub kind: String,
    /// The number of changes.
    pub changes: u64,
    /// The command line it ran.
    pub command: Vec<String>,
    /// Its working directory.
    pub cwd: Option<PathBuf>,
    /// The tracked directories.
    pub tracked: Vec<PathBuf>,
    /// The command's exit code, if it exited.
    pub exit_code: Option<i64>,
    /// The signal that killed the command, if one did.
    pub signal: Option<i64>,
    /// The session a `restore` session undid.
    pub parent: Option<String>,
    /// When it was created (UTC, RFC 3339).
    pub created_at: Option<String>,
    /// The whole JSON object, for fields not listed here.
    pub raw: Json,
}

/// What kind of change a [`Change`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeKind {
    /// The path did not exist before.
    Added,
    /// The content (or symlink target) changed.
    Modified,
    /// The path no longer exists.
    Deleted,
    /// File, directory, symlink… became another type.
    TypeChanged,
    /// Only the permission bits changed.
    ModeChanged,
    /// A kind this SDK does not know yet.
    Other(String),
}

impl ChangeKind {
    fn parse(s: &str) -> ChangeKind {
        match s {
            "added" => ChangeKind::Added,
            "modified" => ChangeKind::Modified,
            "deleted" => ChangeKind::Deleted,
            "type_changed" => ChangeKind::TypeChanged,
            "mode_changed" => ChangeKind::ModeChanged,
            other => ChangeKind::Other(other.to_string()),
        }
    }

    /// zerobox's name for the kind (`added`, `type_changed`, …).
    pub fn as_str(&self) -> &str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Modified => "modified",
            ChangeKind::Deleted => "deleted",
            ChangeKind::TypeChanged => "type_changed",
            ChangeKind::ModeChanged => "mode_changed",
            ChangeKind::Other(s) => s,
        }
    }
}

/// One changed path of a session. `old_*` is `None` for an added path, `new_*` for a
/// deleted one.
#[derive(Debug, Clone)]
pub struct Change {
    /// Absolute path (decoded from `path_b64` when the name is not UTF-8).
    pub path: PathBuf,
    /// What changed.
    pub kind: ChangeKind,
    /// `file`, `dir`, `symlink`, `fifo`, … before.
    pub old_type: Option<String>,
    /// … and after.
    pub new_type: Option<String>,
    /// Mode bits before (`0o644`; no file type bits).
    pub old_mode: Option<u32>,
    /// … and after.
    pub new_mode: Option<u32>,
    /// Size in bytes before.
    pub old_size: Option<u64>,
    /// … and after.
    pub new_size: Option<u64>,
    /// Symlink target before.
    pub old_link: Option<PathBuf>,
    /// … and after.
    pub new_link: Option<PathBuf>,
    /// The whole JSON object (mtimes, owners).
    pub raw: Json,
}

/// A session's changes, from `zerobox snapshot diff ID --json`, in path order.
#[derive(Debug, Clone)]
pub struct Diff {
    /// The full session id.
    pub session: String,
    /// The changes.
    pub changes: Vec<Change>,
}

impl Snapshots {
    /// A client for the default store (as found in this process's environment).
    pub fn new() -> Self {
        Self::default()
    }

    /// Use this zerobox executable instead of `$ZEROBOX_BIN` or `PATH`.
    pub fn binary(mut self, path: impl Into<PathBuf>) -> Self {
        self.binary = Some(path.into());
        self
    }

    /// Set a variable in the environment of the subcommands.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env.push((key.as_ref().into(), value.as_ref().into()));
        self
    }

    /// Use the store at `dir` (sets `ZEROBOX_HOME`).
    pub fn home(self, dir: impl AsRef<Path>) -> Self {
        self.env("ZEROBOX_HOME", dir.as_ref())
    }

    fn run(&self, args: &[&OsStr]) -> Result<Vec<u8>, Error> {
        let bin = crate::binary::find_binary(self.binary.as_deref())?;
        let mut c = std::process::Command::new(&bin);
        c.arg("snapshot").args(args).envs(self.env.iter().map(|(k, v)| (k, v)));
        c.stdin(Stdio::null());
        let what = format!("{} snapshot {}", bin.display(), args[0].to_string_lossy());
        let out = c.output().map_err(io_error(format!("run {what}")))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
            let message = if err.is_empty() { format!("{what} failed: {}", out.status) } else { err };
            return Err(Error::Snapshot { message, exit_code: out.status.code(), stderr: out.stderr });
        }
        Ok(out.stdout)
    }

    fn run_json(&self, args: &[&OsStr]) -> Result<Json, Error> {
        let out = self.run(args)?;
        Json::from_slice(&out)
            .map_err(|e| Error::Protocol(format!("zerobox snapshot {}: {e}", args[0].to_string_lossy())))
    }

    /// All sessions, oldest first.
    pub fn list(&self) -> Result<Vec<SessionRecord>, Error> {
        let v = self.run_json(&["list".as_ref(), "--json".as_ref()])?;
        let items = match &v {
            Json::Array(a) => a.as_slice(),
            // tolerate {"sessions": [...]}
            _ => v["sessions"].as_array().ok_or_else(|| Error::Protocol("snapshot list: not an array".into()))?,
        };
        items.iter().map(SessionRecord::from_json).collect()
    }

    /// One session: command, working directory, times, exit status, state, counts.
    pub fn show(&self, id: &str) -> Result<SessionRecord, Error> {
        SessionRecord::from_json(&self.run_json(&["show".as_ref(), id.as_ref(), "--json".as_ref()])?)
    }

    /// The session's changes, structured; with `options.paths`, only those at or below
    /// one of them.
    ///
    /// ```no_run
    /// use zerobox::{DiffOptions, Snapshots};
    /// let snaps = Snapshots::new();
    /// let all = snaps.diff("last", DiffOptions::default())?;
    /// let src = snaps.diff("last", DiffOptions { paths: vec!["/src".into()] })?;
    /// # Ok::<(), zerobox::Error>(())
    /// ```
    pub fn diff(&self, id: &str, options: DiffOptions) -> Result<Diff, Error> {
        let mut args: Vec<&OsStr> = vec!["diff".as_ref(), id.as_ref(), "--json".as_ref()];
        if !options.paths.is_empty() {
            args.push("--".as_ref());
            args.extend(options.paths.iter().map(|p| p.as_os_str()));
        }
        Diff::from_json(&self.run_json(&args)?)
    }

    /// The git-style unified diff as text, uncoloured.
    pub fn diff_text(&self, id: &str) -> Result<String, Error> {
        let out = self.run(&["diff".as_ref(), id.as_ref(), "--color=never".as_ref()])?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Applies a pending session. Refused, changing nothing, if a target changed since
    /// the session recorded it; with `options.force` (`--force`) applied over such
    /// changes, and a later restore returns the files to what they were just before.
    pub fn accept(&self, id: &str, options: ForceOptions) -> Result<(), Error> {
        self.run_forced("accept", id, options)
    }

    /// Drops a pending session; its diff stays available.
    pub fn discard(&self, id: &str) -> Result<(), Error> {
        self.run(&["discard".as_ref(), id.as_ref()]).map(drop)
    }

    /// Puts the files an accepted session changed back to its baseline. Refused if a
    /// target changed since, unless `options.force` (`--force`). The restore is itself a
    /// session, so it can be undone.
    pub fn restore(&self, id: &str, options: ForceOptions) -> Result<(), Error> {
        self.run_forced("restore", id, options)
    }

    fn run_forced(&self, verb: &str, id: &str, options: ForceOptions) -> Result<(), Error> {
        let mut args: Vec<&OsStr> = vec![verb.as_ref(), id.as_ref()];
        if options.force {
            args.push("--force".as_ref());
        }
        self.run(&args).map(drop)
    }

    /// Removes sessions older than `days` days and their blobs; `running` and
    /// `pending` sessions are always kept.
    pub fn clean(&self, older_than_days: u32) -> Result<(), Error> {
        let arg = format!("--older-than={older_than_days}");
        self.run(&["clean".as_ref(), arg.as_ref()]).map(drop)
    }
}

fn opt_string(v: &Json) -> Option<String> {
    v.as_str().map(str::to_string)
}

/// A path from `obj[key]`, or from `obj[key_b64]` when the name is not UTF-8.
fn path_field(obj: &Json, key: &str) -> Result<Option<PathBuf>, Error> {
    if let Some(s) = obj[key].as_str() {
        return Ok(Some(PathBuf::from(s)));
    }
    match obj[format!("{key}_b64").as_str()].as_str() {
        None => Ok(None),
        Some(b) => match base64_decode(b) {
            Some(bytes) => Ok(Some(PathBuf::from(OsString::from_vec(bytes)))),
            None => Err(Error::Protocol(format!("{key}_b64 is not base64: {b:?}"))),
        },
    }
}

impl SessionRecord {
    fn from_json(v: &Json) -> Result<SessionRecord, Error> {
        let id = v["id"].as_str().ok_or_else(|| Error::Protocol(format!("session without an id: {v}")))?;
        let state = v["state"].as_str().ok_or_else(|| Error::Protocol(format!("session {id} without a state")))?;
        let strings = |k: &str| -> Vec<String> {
            v[k].as_array().unwrap_or(&[]).iter().filter_map(|s| s.as_str().map(str::to_string)).collect()
        };
        Ok(SessionRecord {
            id: id.to_string(),
            state: SessionState::parse(state),
            mode: opt_string(&v["mode"]).unwrap_or_default(),
            kind: opt_string(&v["kind"]).unwrap_or_default(),
            changes: v["changes"].as_u64().unwrap_or(0),
            command: strings("command"),
            cwd: v["cwd"].as_str().map(PathBuf::from),
            tracked: strings("tracked").into_iter().map(PathBuf::from).collect(),
            exit_code: v["exit_code"].as_i64(),
            signal: v["signal"].as_i64(),
            parent: opt_string(&v["parent"]),
            created_at: opt_string(&v["created_at"]),
            raw: v.clone(),
        })
    }
}

impl Diff {
    fn from_json(v: &Json) -> Result<Diff, Error> {
        let session = v["session"].as_str().ok_or_else(|| Error::Protocol("diff without a session".into()))?;
        let list = v["changes"].as_array().ok_or_else(|| Error::Protocol("diff without changes".into()))?;
        let mut changes = Vec::with_capacity(list.len());
        for c in list {
            let path = path_field(c, "path")?.ok_or_else(|| Error::Protocol(format!("change without a path: {c}")))?;
            let kind = c["kind"].as_str().ok_or_else(|| Error::Protocol(format!("change without a kind: {c}")))?;
            let mode = |k: &str| c[k].as_u64().and_then(|m| u32::try_from(m).ok());
            changes.push(Change {
                path,
                kind: ChangeKind::parse(kind),
                old_type: opt_string(&c["old_type"]),
                new_type: opt_string(&c["new_type"]),
                old_mode: mode("old_mode"),
                new_mode: mode("new_mode"),
                old_size: c["old_size"].as_u64(),
                new_size: c["new_size"].as_u64(),
                old_link: path_field(c, "old_link")?,
                new_link: path_field(c, "new_link")?,
                raw: c.clone(),
            });
        }
        Ok(Diff { session: session.to_string(), changes })
    }
}

/// Standard base64 (RFC 4648 §4), padding optional; `None` if malformed.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    fn val(c: u8) -> Option<u32> {
        match c {
            b'A'..=b'Z' => Some(u32::from(c - b'A')),
            b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
            b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    }
    let body = s.trim_end_matches('=').as_bytes();
    let pad = s.len() - body.len();
    if pad > 2 || (pad > 0 && s.len() % 4 != 0) || body.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    for chunk in body.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= val(c)? << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
        // Bits past the last whole byte must be zero, or the text is not canonical.
        let used_bits = 8 * (chunk.len() - 1);
        if n & ((1 << (24 - used_bits)) - 1) != 0 {
            return None;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64() {
        for (enc, dec) in [
            ("", ""),
            ("Zg==", "f"),
            ("Zm8=", "fo"),
            ("Zm9v", "foo"),
            ("Zm9vYg==", "foob"),
            ("Zm9vYmE=", "fooba"),
            ("Zm9vYmFy", "foobar"),
            ("Zm9vYmE", "fooba"),
        ] {
            assert_eq!(base64_decode(enc).as_deref(), Some(dec.as_bytes()), "{enc}");
        }
        assert_eq!(base64_decode("/w==").unwrap(), [0xff]);
        assert_eq!(base64_decode("+/+/").unwrap(), [0xfb, 0xff, 0xbf]);
        for bad in ["Z", "Zg=", "Zg===", "Z===", "Zh==", "Zm9v!", "Zm=v"] {
            assert_eq!(base64_decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn diff_from_json() {
        let v = Json::parse(
            r#"{"session":"e7","changes":[
              {"path":"/w/f","kind":"modified","old_type":"file","new_type":"file","old_mode":420,
               "new_mode":420,"old_size":7,"new_size":6,"old_link":null,"new_link":null,
               "old_mtime_ns":1795956314745996147,"new_mtime_ns":1795956314757256260},
              {"path_b64":"L3cv/w==","kind":"added","old_type":null,"new_type":"symlink",
               "old_mode":null,"new_mode":511,"old_size":null,"new_size":1,"old_link":null,"new_link_b64":"/w=="},
              {"path":"/w/x","kind":"whiteout"}]}"#,
        )
        .unwrap();
        let d = Diff::from_json(&v).unwrap();
        assert_eq!(d.session, "e7");
        let c = &d.changes[0];
        assert_eq!((c.path.as_path(), &c.kind), (Path::new("/w/f"), &ChangeKind::Modified));
        assert_eq!((c.old_size, c.new_size, c.new_mode), (Some(7), Some(6), Some(0o644)));
        assert_eq!(c.raw["new_mtime_ns"].as_i64(), Some(1795956314757256260));
        let c = &d.changes[1];
        assert_eq!(c.path, PathBuf::from(OsString::from_vec(b"/w/\xff".to_vec())));
        assert_eq!(c.kind, ChangeKind::Added);
        assert_eq!((c.old_type.as_deref(), c.new_type.as_deref()), (None, Some("symlink")));
        assert_eq!(c.new_link, Some(PathBuf::from(OsString::from_vec(vec![0xff]))));
        assert_eq!(d.changes[2].kind, ChangeKind::Other("whiteout".into()));
        assert!(Diff::from_json(&Json::parse(r#"{"session":"x","changes":[{"kind":"added"}]}"#).unwrap()).is_err());
    }

    #[test]
    fn session_from_json() {
        let v = Json::parse(
            r#"{"id":"50e5","state":"accepted","mode":"snapshot","kind":"restore","changes":2,
                "command":["zerobox","snapshot"],"cwd":"/w","tracked":["/w"],"exit_code":null,
                "signal":null,"parent":"e73c","created_at":"2026-11-29T12:45:14Z"}"#,
        )
        .unwrap();
        let s = SessionRecord::from_json(&v).unwrap();
        assert_eq!((s.id.as_str(), &s.state, s.kind.as_str()), ("50e5", &SessionState::Accepted, "restore"));
        assert_eq!((s.changes, s.exit_code, s.parent.as_deref()), (2, None, Some("e73c")));
        assert_eq!(s.command, ["zerobox", "snapshot"]);
        assert_eq!(s.tracked, [PathBuf::from("/w")]);
        assert!(SessionRecord::from_json(&Json::parse(r#"{"state":"x"}"#).unwrap()).is_err());
    }
}
