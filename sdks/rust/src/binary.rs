//! Finding the zerobox executable.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::Error;

/// Returns the zerobox executable: `explicit` if given, else `$ZEROBOX_BIN`, else a
/// `zerobox` in the directory of the running program (where an application that ships
/// the binary with itself puts it, as the npm and pip packages put theirs beside the
/// SDK), else `zerobox` on `PATH`.
///
/// An explicit path that is not an executable file is an error at once (the caller
/// asked for that one). An unusable `$ZEROBOX_BIN` falls through to `PATH`, and the
/// error lists it, so a typo there is visible. The error is
/// [`Error::BinaryNotFound`], naming every place that was looked at.
pub fn find_binary(explicit: Option<&Path>) -> Result<PathBuf, Error> {
    let beside = std::env::current_exe().ok().and_then(|exe| exe.parent().map(Path::to_path_buf));
    locate(explicit, std::env::var_os("ZEROBOX_BIN"), beside.as_deref(), std::env::var_os("PATH"))
}

/// [`find_binary`] with the environment passed in, so it can be tested without
/// touching the process environment.
pub(crate) fn locate(
    explicit: Option<&Path>,
    zerobox_bin: Option<OsString>,
    beside: Option<&Path>,
    path: Option<OsString>,
) -> Result<PathBuf, Error> {
    if let Some(p) = explicit {
        return match check(p) {
            Ok(()) => Ok(p.to_path_buf()),
            Err(why) => Err(Error::BinaryNotFound { tried: vec![format!("{} ({why})", p.display())] }),
        };
    }
    let mut tried = Vec::new();
    match zerobox_bin.filter(|v| !v.is_empty()) {
        Some(v) => {
            let p = PathBuf::from(&v);
            match check(&p) {
                Ok(()) => return Ok(p),
                Err(why) => tried.push(format!("$ZEROBOX_BIN={} ({why})", p.display())),
            }
        }
        None => tried.push("$ZEROBOX_BIN (unset)".to_string()),
    }
    if let Some(dir) = beside {
        let candidate = dir.join("zerobox");
        if check(&candidate).is_ok() {
            return Ok(candidate);
        }
        tried.push(format!("{} (beside the program)", candidate.display()));
    }
    let path = path.unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        // An empty PATH entry means the current directory, as in execvp.
        let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
        let candidate = dir.join("zerobox");
        if check(&candidate).is_ok() {
            return Ok(candidate);
        }
    }
    tried.push(format!("zerobox on PATH={}", OsStr::new(&path).to_string_lossy()));
    Err(Error::BinaryNotFound { tried })
}

/// Whether `p` is a regular file with an execute bit, and if not, why.
fn check(p: &Path) -> Result<(), &'static str> {
    match std::fs::metadata(p) {
        Err(_) => Err("does not exist"),
        Ok(m) if !m.is_file() => Err("not a regular file"),
        Ok(m) if m.permissions().mode() & 0o111 == 0 => Err("not executable"),
        Ok(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(r: Result<PathBuf, Error>) -> String {
        r.expect_err("lookup should fail").to_string()
    }

    #[test]
    fn explicit_path_wins_and_is_named() {
        assert_eq!(locate(Some(Path::new("/bin/sh")), None, None, None).unwrap(), Path::new("/bin/sh"));
        let m = message(locate(Some(Path::new("/nonexistent/zerobox")), Some("/bin/sh".into()), None, None));
        assert_eq!(m, "zerobox binary not found; tried: /nonexistent/zerobox (does not exist)");
        let m = message(locate(Some(Path::new("/etc/passwd")), None, None, None));
        assert!(m.contains("/etc/passwd (not executable)"), "{m}");
        let m = message(locate(Some(Path::new("/usr")), None, None, None));
        assert!(m.contains("/usr (not a regular file)"), "{m}");
    }

    #[test]
    fn env_then_path() {
        assert_eq!(locate(None, Some("/bin/sh".into()), None, None).unwrap(), Path::new("/bin/sh"));
        let m = message(locate(None, Some("/nonexistent/zb".into()), None, Some("/nonexistent-dir:/also-not".into())));
        assert_eq!(
            m,
            "zerobox binary not found; tried: $ZEROBOX_BIN=/nonexistent/zb (does not exist); \
             zerobox on PATH=/nonexistent-dir:/also-not"
        );
        let m = message(locate(None, None, None, None));
        assert!(m.contains("$ZEROBOX_BIN (unset)"), "{m}");
        let m = message(locate(None, Some("".into()), None, Some("/x".into())));
        assert!(m.contains("$ZEROBOX_BIN (unset); zerobox on PATH=/x"), "{m}");
    }

    #[test]
    fn beside_the_program_before_path() {
        let dir = std::env::temp_dir().join(format!("zerobox-sdk-beside-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let m = message(locate(None, None, Some(&dir), Some("/x".into())));
        assert!(m.contains(&format!("{} (beside the program)", dir.join("zerobox").display())), "{m}");
        let exe = dir.join("zerobox");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let found = locate(None, Some("/nonexistent/zb".into()), Some(&dir), Some("/bin".into()));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(found.unwrap(), exe);
    }

    #[test]
    fn found_on_path() {
        let dir = std::env::temp_dir().join(format!("zerobox-sdk-binary-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("zerobox");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = std::env::join_paths(["/nonexistent-dir".as_ref(), dir.as_os_str()]).unwrap();
        let found = locate(None, Some("/nonexistent/zb".into()), None, Some(path));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(found.unwrap(), exe);
    }
}
