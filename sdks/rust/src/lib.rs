//! Rust SDK for zerobox, a Linux sandbox for untrusted commands (see `docs/usage.md`
//! and `docs/sdk-rust.md` in the zerobox repository).
//!
//! It drives the `zerobox` binary (found with [`find_binary`]: an explicit path, then
//! `$ZEROBOX_BIN`, then `PATH`) and depends on nothing but std.
//!
//! ```no_run
//! use std::time::Duration;
//! use zerobox::{DiffOptions, Error, ForceOptions, Sandbox, SnapshotMode};
//!
//! let sb = Sandbox::new().allow_write(["/var/tmp/out"]).env("A", "1");
//! let out = sb.run("sh", ["-c", "echo hi; exit 3"])?;
//! assert_eq!((out.exit_code, out.signal, out.text().as_str()), (Some(3), None, "hi\n"));
//!
//! // Streaming, with a timeout that kills the whole sandbox.
//! let mut p = sb.command("sh").args(["-c", "echo a; sleep 1; echo b"]).timeout(Duration::from_secs(30)).spawn()?;
//! let mut line = String::new();
//! std::io::BufRead::read_line(p.stdout.as_mut().unwrap(), &mut line).unwrap();
//! let rest = p.wait()?;
//!
//! // Review mode: nothing lands until it is accepted.
//! let sb = Sandbox::new()
//!     .allow_write(["/src"])
//!     .cwd("/src")
//!     .snapshot(SnapshotMode::Review)
//!     .host_env("ZEROBOX_HOME", "/var/tmp/store");
//! let out = sb.run("make", ["-s"])?;
//! let id = out.session.expect("review runs create a session").id;
//! for change in sb.snapshots().diff(&id, DiffOptions::default())?.changes {
//!     println!("{} {}", change.kind.as_str(), change.path.display());
//! }
//! sb.snapshots().accept(&id, ForceOptions::default())?;
//!
//! // zerobox failing to set up is an error; the command's own 125 is not.
//! match Sandbox::new().allow_write(["/nonexistent/x/y"]).command("true").run() {
//!     Err(Error::Sandbox { message, .. }) => eprintln!("{message}"),
//!     other => panic!("{other:?}"),
//! }
//! # Ok::<(), zerobox::Error>(())
//! ```
//!
//! Every run passes `--status-fd`: zerobox reports on a socket pair whether the
//! command started, how it ended and which session it recorded. That is how a
//! [`Error::Sandbox`] (zerobox did not run the command) is told apart from a command
//! that exits 125 itself, and how a command killed by a signal (`signal: Some(15)`)
//! is told apart from one that exits 143.

#![deny(missing_docs)]

mod binary;
mod error;
pub mod json;
mod process;
mod sandbox;
mod snapshots;
mod sys;

pub use binary::find_binary;
pub use error::{Error, ErrorKind};
pub use json::Json;
pub use process::{Killer, Output, Process, Session, SessionState};
pub use sandbox::{Command, Sandbox, SnapshotMode};
pub use snapshots::{Change, ChangeKind, Diff, DiffOptions, ForceOptions, SessionRecord, Snapshots};

#[cfg(test)]
mod tests {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}

    /// A policy is shared between threads, a kill handle given to another one.
    #[test]
    fn thread_safety() {
        send_sync::<crate::Sandbox>();
        send_sync::<crate::Command>();
        send_sync::<crate::Snapshots>();
        send_sync::<crate::Killer>();
        send_sync::<crate::Output>();
        send_sync::<crate::Error>();
        send::<crate::Process>();
    }
}
