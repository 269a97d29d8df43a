// The create guard: protected and denied paths that do not exist yet have no inode for
// the mount plan to cover, so the kernel alone cannot refuse their creation. The command
// runs under a second seccomp filter (build_guard_filter) that turns every system call
// able to give a path a new name (open with O_CREAT, mkdir, mknod, symlink, link,
// rename) into a user notification for init, which does the call itself, unless its
// result would be one of those paths, or anything but a new empty directory in place of
// one of their ancestors: a directory or symlink moved there would bring the path along,
// and a file there (".git" as a gitfile) can point elsewhere. Those get EACCES.
//
// init does the call, rather than checking and letting the kernel go on
// (SECCOMP_USER_NOTIF_FLAG_CONTINUE), because the kernel would read the path again from
// the command's memory, which another of its threads may have changed meanwhile. init
// reads each string once, resolves the parent directory to an fd, checks the real path
// of that fd, and acts on the fd. It serves one call at a time, and every call that can
// move a directory comes through it, so nothing in the sandbox can rename a checked
// parent between the check and the act. The one exception: the command's Landlock
// domain has a layer more than init's, which refuses it every new regular file
// (forbid_making_files), so an open() whose name exists by then (init may just have made
// it) goes on as the command's own: it can open only what it could without O_CREAT.
// With the depth rule only a read-only one does: the filter then also traps opens of
// existing files for writing (O_WRONLY, O_RDWR, O_TRUNC without O_CREAT) and truncate(),
// which init serves the same way, so that an existing protected file deep in a writable
// tree (a nested repository's .git/config) is not rewritten.
//
// init runs with the command's uid, mounts, the rest of its Landlock domain, umask (read per call) and
// no capability but CAP_SYS_PTRACE (to read the memory of a command that made itself
// non-dumpable). It resolves paths without following /proc magic links, after putting
// the command's own /proc/self, /proc/thread-self, /dev/fd and /dev/std* in place, and
// refuses /proc directories of other processes, so the command cannot borrow init's
// identity (init's own fds or memory).
//
// Like init, this runs in a copy of a multi-threaded process: no allocation, no throw.
// The code is in exec/guard/ (its internal.hpp says which file holds what).
#pragma once

#include <linux/filter.h>

#include <cstddef>
#include <cstdint>

namespace zb::exec {

// Absolute, canonical paths that must not come into being; and protected names that
// hold at any depth (the depth rule, guard_depth_check).
struct GuardList {
  const char* const* paths;
  std::size_t count;
  // Relative names (".git/hooks", ".envrc"; policy's protected_write_names) that nothing
  // may make, at any depth below one of `roots` (the writable paths; "/" when everything
  // is) and not below one of `exempt` (private scratch directories, thrown away at exit).
  const char* const* names = nullptr;
  std::size_t n_names = 0;
  const char* const* roots = nullptr;
  std::size_t n_roots = 0;
  const char* const* exempt = nullptr;
  std::size_t n_exempt = 0;
  // Paths named in --allow-write. One lifts the rule for what lies below it when it lies
  // at or below the protected name's first directory (--allow-write=sub/.git lets git make
  // sub/.git/hooks; --allow-write=sub does not). A directory is not renamed out of one
  // (EXDEV: tools copy instead, and the copy is checked).
  const char* const* lifted = nullptr;
  std::size_t n_lifted = 0;
  // Of those, the ones that did not exist at start (inside another writable path): they
  // lift the rule for everything below them.
  const char* const* new_trees = nullptr;
  std::size_t n_new_trees = 0;
};

// What init serves the guard with: the paths, every name that appears in them (a call
// whose last name is none of these can make nothing guarded, wherever it lands), and the
// command's umask while nothing has changed it.
struct GuardState {
  GuardList list;
  // Open-addressing hash sets (a power of two of slots, nullptr for empty): every name,
  // and the last names.
  const char* const* names;
  std::size_t names_mask;
  const char* const* leaves;
  std::size_t leaves_mask;
  unsigned umask;        // init's own at start, which the command inherits
  bool umask_changed;    // a process in the sandbox called umask()
  bool umask_unsettled;  // one's new umask did not show in /proc: read it every time
  unsigned umask_calls;  // how many times: what was read of a thread before is stale
  // What /proc/TID/status said (tgid, umask), per thread, while it lives (its pidfd), runs
  // the same program (the 16 random bytes of its auxv's AT_RANDOM: a thread that execs
  // takes the leader's tid and pidfd) and nothing called umask() since. Reading it costs
  // more than the rest of a call. A new program can forge the bytes (write the old ones
  // at the old address); it then gets the old program's umask for its own new files,
  // which it could chmod anyway.
  struct Seen {
    int tid;
    int pidfd;
    int tgid;
    unsigned umask;
    unsigned umask_calls;
    unsigned long random_at;
    unsigned char random[16];
  } seen[32];
  unsigned next_seen;
  unsigned char* reported;  // per path: a refusal was reported on report_fd
  // Hashes of the paths the depth rule refused and reported (k_msg_guard_depth_refused).
  int report_fd;
  std::uint32_t depth_reported[64];
  unsigned n_depth_reported;
  // The command's Landlock domain refuses it every new regular file (forbid_making_files):
  // an open() it goes on with cannot make one, wherever its path leads by then.
  bool command_makes_no_files;
};

// Copies `in` into a private mapping of init's (the caller's memory may go), with the
// names, folded (guard_fold). Refusals are reported on `report_fd` (k_msg_guard_refused,
// index = the path's; k_msg_guard_depth_refused with the path), once per path. false when
// the mapping fails.
bool prepare_guard(const GuardList& in, int report_fd, GuardState& out);

// Loads `filter` with a new listener, killable-only waits once a call is taken, on the
// calling thread (the command's, before execve). The listener fd, or -1 with errno.
int install_guard(const sock_filter* filter, std::size_t n);

// Takes one notification from `listener` and answers it. umask() is let through
// (SECCOMP_USER_NOTIF_FLAG_CONTINUE: its argument is a register, not memory), and from
// then on the umask of each caller is read from /proc. Calls that would block (opening
// a FIFO with no peer) are finished by a short-lived child process of init, which init's
// reaping loop collects. false when the listener has no more targets.
bool serve_guard(int listener, GuardState& state);

// Names are compared folded, as a case-insensitive file system would compare them (vfat,
// exfat, a casefolded ext4 or tmpfs directory), so that .ENVRC or .baſhrc cannot stand
// for .envrc or .bashrc there: ASCII letters lower-cased, and the few characters whose
// Unicode case folding gives ASCII letters (ſ, ß, ẞ, the Kelvin sign, the ff..st
// ligatures) replaced by them, and Unicode's default-ignorable code points (zero-width
// space, soft hyphen, ...) dropped, as Linux's casefolding drops them; invalid UTF-8 is
// kept as it is. On other file systems this refuses a few more names, which nothing
// needs. Writes the folded form of in[0..n) to `out` (at most n bytes,
// then a NUL; `out` may be `in`) and returns its length.
std::size_t guard_fold(const char* in, std::size_t n, char* out);

// The decision alone, for tests: 0 to allow making `full` (a canonical path), EACCES to
// refuse. `is_mkdir`: the new entry is an empty directory made by mkdir, which may stand
// where a guarded path's ancestor belongs. `which`: the index of the path refused for.
int guard_check(const GuardList& list, const char* full, bool is_mkdir, std::size_t* which = nullptr);

// What a call would put at a path, for the depth rule.
enum class GuardMade {
  new_dir,  // an empty directory, by mkdir
  dir,      // a directory that may hold anything (rename)
  symlink,
  other,  // a file, device, FIFO or socket
};

// The depth rule alone, for tests: 0 to allow making `full` (canonical, folded), EACCES
// to refuse. The list's names, roots, exempt, lifted and new_trees entries as
// prepare_guard leaves them (folded). Refused, unless lifted: `full` at or below a
// protected name; and where a name's leading directories belong (the ".git" of
// ".git/hooks"), a directory moved there or a symlink (they bring or point to what would
// lie below), and a file only for ".git" (a gitfile says where the repository is).
// `refused_len`: how much of `full` names the path refused for.
int guard_depth_check(const GuardList& list, const char* full, GuardMade made, std::size_t* refused_len = nullptr);

}  // namespace zb::exec
