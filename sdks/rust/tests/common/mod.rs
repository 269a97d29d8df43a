//! Helpers shared by the integration tests, which run the real zerobox binary
//! (`$ZEROBOX_BIN`, else `zerobox` on `PATH`).
//!
//! Temporary directories live under /var/tmp, which the sandbox can read (it shows
//! the host's files) but not write unless a test allows it.

#![allow(dead_code)] // each test file uses a different part

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use zerobox::Sandbox;

/// A fresh directory per test case, removed on drop, with a store for snapshots.
pub struct TempDir {
    pub path: PathBuf,
}

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().subsec_nanos();
        let name =
            format!("zerobox-sdk-rust-{tag}-{}-{}-{nanos}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed));
        let path = PathBuf::from("/var/tmp").join(name);
        std::fs::create_dir(&path).unwrap_or_else(|e| panic!("mkdir {}: {e}", path.display()));
        std::fs::create_dir(path.join("store")).unwrap();
        TempDir { path }
    }

    pub fn join(&self, p: impl AsRef<Path>) -> PathBuf {
        self.path.join(p)
    }

    /// The snapshot store of this test.
    pub fn store(&self) -> PathBuf {
        self.path.join("store")
    }

    /// zerobox's default policy, with this test's store.
    pub fn sandbox(&self) -> Sandbox {
        Sandbox::new().host_env("ZEROBOX_HOME", self.store())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Polls `f` until it returns `Some`, or panics after `limit` naming `what`.
pub fn wait_for<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Host pids of live (non-zombie) processes whose argv[0] is `exe`, with their pid
/// in the innermost pid namespace (the last `NSpid` field).
pub fn processes_running(exe: &Path) -> Vec<(u32, u32)> {
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return found };
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let argv0 = cmdline.split(|&b| b == 0).next().unwrap_or(&[]);
        if argv0 != exe.as_os_str().as_bytes() {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else { continue };
        if status.lines().any(|l| l.starts_with("State:") && l.contains('Z')) {
            continue;
        }
        let ns_pid = status
            .lines()
            .find_map(|l| l.strip_prefix("NSpid:"))
            .and_then(|l| l.split_whitespace().last())
            .and_then(|p| p.parse().ok())
            .unwrap_or(pid);
        found.push((pid, ns_pid));
    }
    found
}
