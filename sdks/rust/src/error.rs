//! The one error type of the crate.

use std::fmt;
use std::io;
use std::time::Duration;

use crate::json::JsonError;

/// Everything that can go wrong between calling the SDK and getting a command's result.
///
/// A command that *ran* and failed is not an error: its exit code or signal is in
/// [`Output`](crate::Output). These variants are about zerobox itself, the SDK, or the
/// run being cut short.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// No usable zerobox executable. `tried` names every place that was looked at.
    BinaryNotFound {
        /// Each candidate and why it was rejected, in lookup order.
        tried: Vec<String>,
    },
    /// zerobox did not run the command: a `setup_error` event (exit 125), a usage
    /// error (exit 2), or zerobox ending without starting the command.
    Sandbox {
        /// zerobox's own message, e.g. `--allow-write /x: neither it nor its parent exists: …`.
        message: String,
        /// zerobox's exit status (`None` when it was killed by a signal).
        exit_code: Option<i32>,
        /// Everything zerobox wrote to stderr.
        stderr: Vec<u8>,
    },
    /// A `zerobox snapshot …` subcommand refused or failed (exit status 1 or 2).
    Snapshot {
        /// zerobox's stderr, trimmed (one `zerobox: error:` line per problem).
        message: String,
        /// The subcommand's exit status (`None` when it was killed by a signal).
        exit_code: Option<i32>,
        /// Everything the subcommand wrote to stderr.
        stderr: Vec<u8>,
    },
    /// The timeout expired; the whole sandbox was killed. Holds what was read until then.
    Timeout {
        /// The timeout that expired.
        timeout: Duration,
        /// Output read before the kill.
        stdout: Vec<u8>,
        /// Output read before the kill.
        stderr: Vec<u8>,
    },
    /// The run was cancelled with [`Process::kill`](crate::Process::kill) or a
    /// [`Killer`](crate::Killer) before the command finished.
    Killed {
        /// Output read before the kill.
        stdout: Vec<u8>,
        /// Output read before the kill.
        stderr: Vec<u8>,
    },
    /// The policy cannot be expressed on zerobox's command line (e.g. an `env` key with `=`).
    InvalidArgument(String),
    /// An operating-system call failed; `context` says which and on what.
    Io {
        /// What the SDK was doing, e.g. `spawn /usr/bin/zerobox`.
        context: String,
        /// The underlying error; `source.raw_os_error()` gives errno.
        source: io::Error,
    },
    /// Text that should be JSON is not (a command's stdout in [`Output::json`](crate::Output::json)).
    Json(JsonError),
    /// zerobox's machine-readable output did not have the expected shape.
    Protocol(String),
}

/// Which failure an [`Error`] is ([`Error::kind`]). The first six are the names the
/// Python and TypeScript SDKs use too (`docs/sdk.md`); the last three are failures
/// those SDKs report with their language's own errors (`ValueError`, `OSError`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::BinaryNotFound`].
    BinaryNotFound,
    /// [`Error::Sandbox`]: zerobox did not run the command.
    SetupFailed,
    /// [`Error::Snapshot`].
    SnapshotFailed,
    /// [`Error::Timeout`].
    Timeout,
    /// [`Error::Killed`]: the run was cancelled.
    Cancelled,
    /// [`Error::Protocol`].
    Protocol,
    /// [`Error::InvalidArgument`].
    InvalidArgument,
    /// [`Error::Io`].
    Io,
    /// [`Error::Json`].
    Json,
}

impl ErrorKind {
    /// The kind's name as all three SDKs spell it: `binary_not_found`, `setup_failed`,
    /// `snapshot_failed`, `timeout`, `cancelled`, `protocol` (then `invalid_argument`,
    /// `io`, `json`).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::BinaryNotFound => "binary_not_found",
            ErrorKind::SetupFailed => "setup_failed",
            ErrorKind::SnapshotFailed => "snapshot_failed",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Protocol => "protocol",
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::Io => "io",
            ErrorKind::Json => "json",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Error {
    /// Which failure this is, in the taxonomy the three SDKs share.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::BinaryNotFound { .. } => ErrorKind::BinaryNotFound,
            Error::Sandbox { .. } => ErrorKind::SetupFailed,
            Error::Snapshot { .. } => ErrorKind::SnapshotFailed,
            Error::Timeout { .. } => ErrorKind::Timeout,
            Error::Killed { .. } => ErrorKind::Cancelled,
            Error::Protocol(_) => ErrorKind::Protocol,
            Error::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Error::Io { .. } => ErrorKind::Io,
            Error::Json(_) => ErrorKind::Json,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BinaryNotFound { tried } => {
                write!(f, "zerobox binary not found; tried: {}", tried.join("; "))
            }
            Error::Sandbox { message, .. } | Error::Snapshot { message, .. } => f.write_str(message),
            Error::Timeout { timeout, .. } => {
                write!(f, "command timed out after {:.3} s; the sandbox was killed", timeout.as_secs_f64())
            }
            Error::Killed { .. } => f.write_str("the sandbox was killed before the command finished"),
            Error::InvalidArgument(m) => write!(f, "invalid argument: {m}"),
            Error::Io { context, source } => write!(f, "{context}: {source}"),
            Error::Json(e) => e.fmt(f),
            Error::Protocol(m) => write!(f, "unexpected output from zerobox: {m}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Json(e) => Some(e),
            _ => None,
        }
    }
}

impl From<JsonError> for Error {
    fn from(e: JsonError) -> Self {
        Error::Json(e)
    }
}

pub(crate) fn io_error(context: impl Into<String>) -> impl FnOnce(io::Error) -> Error {
    let context = context.into();
    move |source| Error::Io { context, source }
}
