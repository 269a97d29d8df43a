//! The two libc calls std does not wrap: `dup2` (in the child, before exec) and
//! `kill` (to a process group). Declared by hand because the crate takes no
//! dependencies; both signatures are the same on every Linux target.

use std::io;
use std::os::raw::c_int;

/// SIGKILL on Linux (every architecture).
pub(crate) const SIGKILL: c_int = 9;

extern "C" {
    #[link_name = "dup2"]
    fn libc_dup2(oldfd: c_int, newfd: c_int) -> c_int;
    #[link_name = "kill"]
    fn libc_kill(pid: c_int, sig: c_int) -> c_int;
}

/// `dup2(old, new)`. Async-signal-safe and allocation-free, so it may run in a
/// `pre_exec` closure between fork and exec.
pub(crate) fn dup2(old: c_int, new: c_int) -> io::Result<()> {
    // SAFETY: dup2 only manipulates the calling process's fd table; it touches no
    // Rust-owned memory. Closing whatever was at `new` is what the caller asks for:
    // it runs in the forked child, where no Rust object owns that fd any more.
    let r = unsafe { libc_dup2(old, new) };
    if r < 0 {
        // last_os_error reads errno without allocating, so this is fork-safe too.
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `kill(pid, sig)`: a negative `pid` is a process group.
///
/// The caller must know that `pid` (or the group) is still ours: a child that has
/// not been reaped yet keeps its pid, and so its group id, from being reused.
pub(crate) fn kill(pid: c_int, sig: c_int) -> io::Result<()> {
    // SAFETY: kill(2) takes two integers and touches no memory of this process.
    let r = unsafe { libc_kill(pid, sig) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}
