// What the files of the create guard (exec/guard.hpp) share. Internal to src/exec/guard:
//   fold.cpp     names folded as a case-insensitive file system compares them
//   check.cpp    the decision (the list, the depth rule, the name sets) and its reports
//   target.cpp   the calling thread of a notification: its ids, umask, memory and fds
//   resolve.cpp  where a path of the caller's puts its last component
//   calls.cpp    answering a call, and one handler per system call (the full way)
//   serve.cpp    the fast ways, the dispatch, and the listener
// All of it runs in init, a copy of a multi-threaded process: no allocation, no throw
// (the zb_child library, compiled with -fno-exceptions and checked by lint.child_alloc).
#pragma once

#include <fcntl.h>
#include <limits.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "exec/guard.hpp"
#include "util/fd.hpp"

namespace zb::exec::guard_detail {

constexpr int k_max_hops = 40;  // symlinks followed for O_CREAT, as the kernel's MAXSYMLINKS
constexpr int k_replied = INT_MIN;
constexpr int k_tmpfile_flag = O_TMPFILE;  // with O_DIRECTORY

// Room for a parent's real path (shorter than PATH_MAX, else too deep to be guarded), a
// slash, a name and the NUL.
constexpr std::size_t k_path_buf = PATH_MAX + NAME_MAX + 2;

// A bounded string builder on the stack (no allocation here: see guard.hpp).
struct Buf {
  char s[k_path_buf];
  std::size_t n = 0;
  bool ok = true;
  Buf() { s[0] = '\0'; }
  Buf& add(const char* p, std::size_t len) {
    if (!ok || n + len >= sizeof s) {
      ok = false;
      return *this;
    }
    std::memcpy(s + n, p, len);
    n += len;
    s[n] = '\0';
    return *this;
  }
  Buf& add(const char* p) { return add(p, std::strlen(p)); }
  Buf& num(unsigned long v) {
    char d[24];
    int i = 0;
    do {
      d[i++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    char r[24];
    for (int j = 0; j < i; ++j) r[j] = d[i - 1 - j];
    return add(r, static_cast<std::size_t>(i));
  }
};

// "/proc/self/fd/N" of ours for an fd of ours.
struct SelfFd : Buf {
  explicit SelfFd(int fd) { add("/proc/self/fd/").num(static_cast<unsigned long>(fd)); }
};

// p if it starts with `prefix` as whole path components: what follows ("" or "/..."),
// else nullptr.
inline const char* after(const char* p, const char* prefix) {
  std::size_t n = std::strlen(prefix);
  if (std::strncmp(p, prefix, n) != 0) return nullptr;
  return (p[n] == '\0' || p[n] == '/') ? p + n : nullptr;
}

// ---- check.cpp

// Whether making `full` (canonical) is refused, by the list or by the depth rule; a
// refusal is reported to the supervisor once per path, so that the user learns why (say,
// git init's "Permission denied" on .git/hooks).
bool refused_path(GuardState& st, const char* full, GuardMade made);

// The depth rule alone, reported as refused_path does.
bool depth_refused(GuardState& st, const char* full, GuardMade made);

// Whether `name` is the first name of a protected name (".git", ".envrc"), which the
// depth rule does not let come into being in a directory deeper than PATH_MAX, where it
// is not checked: else a tree made there with .git/hooks inside could be renamed up to
// where it is checked no more (a rename checks the name it makes, not what it moves).
bool deep_first_name(const GuardState& st, const char* name);

// rename() of a directory out of a lifted path, or of one that holds a lifted path: what
// the lift let the command make there must not land where it is protected. EXDEV makes
// mv and the like copy instead, one checked call at a time.
bool leaves_lift(const GuardState& st, const char* from, const char* to);

// Whether `name` (as the command gave it, `len` bytes) folds to one of a set's names.
bool among(const char* const* set, std::size_t mask, const char* name, std::size_t len);

// ---- target.cpp

// The calling thread of a notification. Its memory is read with process_vm_readv and its
// fds taken with pidfd_getfd: both need only ptrace access (init's CAP_SYS_PTRACE in the
// sandbox's namespace covers a non-dumpable command), where /proc/PID/mem and fd/ also
// need the file owner, which for a non-dumpable process of an unprivileged run is the
// host's root.
struct Target {
  pid_t tid = 0;
  GuardState* state = nullptr;
  int listener = -1;
  std::uint64_t id = 0;

  // Whether the caller still waits for this call. A tid names the caller only while it
  // does: a thread killed in the call may pass its tid on at once (execve() in another
  // thread gives that thread the leader's tid), so whatever was looked up by tid is
  // checked with this afterwards, before it is used.
  bool alive() const { return ::ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0; }

  pid_t tgid() {
    load_status();
    return m_tgid;
  }
  // The initial umask, unless a process of the sandbox has called umask() since.
  mode_t umask() {
    if (!state->umask_changed) return state->umask;
    load_status();
    return m_umask;
  }
  int pidfd() {
    if (m_pidfd < 0) {
      // The thread's own fd table (it may have unshared it); the process's before Linux 6.9.
      m_owned.reset(static_cast<int>(::syscall(SYS_pidfd_open, tid, k_pidfd_thread)));
      if (!m_owned && tgid() > 0) m_owned.reset(static_cast<int>(::syscall(SYS_pidfd_open, m_tgid, 0U)));
      m_pidfd = m_owned.get();
    }
    return m_pidfd;
  }

 private:
  static constexpr unsigned k_pidfd_thread = O_EXCL;  // PIDFD_THREAD, Linux 6.9
  void load_status();
  bool m_loaded = false;
  pid_t m_tgid = 0;
  mode_t m_umask = 022;
  int m_pidfd = -1;
  UniqueFd m_owned;
};

// The tgid and umask /proc/TID/status shows; false if it cannot be read.
bool read_status(pid_t tid, pid_t& tgid, mode_t& umask);

// A NUL-terminated string at `addr` in the target, of at most PATH_MAX bytes with the NUL.
int read_str(Target& t, std::uint64_t addr, char* out);

// One of the target's fds, as an fd of ours.
int take_fd(Target& t, int fd);

// The target's dirfd argument (AT_FDCWD: its working directory) as an fd of ours.
int open_dirfd(Target& t, int dirfd);

// ---- resolve.cpp

// An O_PATH fd of base/path resolved as the target's own call would resolve it (symlinks
// followed, an absolute path from the root), except that no /proc magic link is followed.
// Not confined below base: unlike util::open_beneath. The fd, or -errno.
int open_path_at(int base, const char* path, int flags);

// The directory in which `path` (relative to `at`) names its last component: `at` itself
// when the path has no slash (`slash`, its last one), else that directory opened O_PATH,
// its fd then owned by `holder`. -1 when it cannot be opened. No allocation.
int open_parent(int at, const char* path, const char* slash, UniqueFd& holder);

// Where a path of the target's puts its last component.
struct Loc {
  UniqueFd parent;               // O_PATH directory
  char name[NAME_MAX + 2] = {};  // the last component as given (with its trailing '/', if any)
  char bare[NAME_MAX + 1] = {};  // without it
  char real[PATH_MAX] = {};      // the parent's canonical path
  bool too_deep = false;         // ... which is longer than that
  int whole_fd = -1;             // set instead when the whole path is one of the target's fds: N of /proc/self/fd/N
  bool whole_slash = false;      // ... written with a trailing slash

  bool dot() const { return std::strcmp(bare, ".") == 0 || std::strcmp(bare, "..") == 0; }
  // parent's path + "/" + bare
  bool full(Buf& b) const {
    if (too_deep) return false;
    b.add(real);
    if (std::strcmp(real, "/") != 0) b.add("/");
    b.add(bare);
    return b.ok;
  }
};

// Resolves the parent of `path` as the target would: relative to its `dirfd` (or, if
// base >= 0, to that directory of ours, for a symlink's target), with the target's own
// /proc/self, /proc/thread-self, /dev/fd and /dev/std* in place, without following any
// other magic link, and refusing other processes' /proc directories.
int resolve(Target& t, int dirfd, int base, const char* path, Loc& loc);

// Whether making what `loc` names is refused (refused_path on its full path).
bool refused(Target& t, const Loc& loc, GuardMade made);

// ---- calls.cpp

// init's umask, for the kernel to apply as it would have for the caller.
void set_umask(mode_t m);

// Answers the call: 0, or the errno it fails with.
void reply(int listener, std::uint64_t id, int err);

// Hands `fd` over as the call's result: 0, or why the command was not given it, the call
// then not answered yet: it could not take it (EMFILE, say), or ENOENT when the caller no
// longer waits (killed; a tid looked up before may then have named another thread).
int hand_over(int listener, std::uint64_t id, int fd, bool cloexec);

// The same for a file made new for the call: if the command cannot have it, it is removed
// (as the kernel makes nothing then) before the command learns why.
template <class Undo>
void hand_over_new(int listener, std::uint64_t id, int fd, bool cloexec, Undo undo) {
  int err = hand_over(listener, id, fd, cloexec);
  if (err == 0) return;
  undo();
  if (err != ENOENT) reply(listener, id, err);
}

// Lets the caller's system call go on as it was made: true, or false when the caller no
// longer waits.
bool go_on(int listener, std::uint64_t id);

// Whether the owner of a file init just made (init's fsuid, which is the command's) may
// open it with `flags`: the kernel does not ask that of an open that made the file, but
// the command's own open of it does.
bool owner_may(int fd, int flags);

// Removes a file made new (O_EXCL) as `path` relative to `at` for a call that did not get
// it, if the name still holds it. Nothing in the sandbox can rename a directory
// meanwhile: every call that could waits for this one.
void undo_new(int fd, int at, const char* path);

// `fd` (-1: errno), opened by init for the command, as the command's own open() would
// have left it: the command has no controlling terminal (it runs in a session of its
// own); init, in the caller's session, has one, and /dev/tty must not open init's. So
// init's terminal is ENXIO; O_NONBLOCK, which init opens with, is cleared unless asked.
// The fd, or -errno.
int finish_open(int fd, int flags);

// A file init made new for a call, to be removed if the command cannot be given it
// (EMFILE), as the kernel would not have left it.
struct Made {
  UniqueFd dir;
  char name[NAME_MAX + 1] = {};
  void set(int parent, const char* n) {
    dir.reset(::fcntl(parent, F_DUPFD_CLOEXEC, 0));
    std::size_t len = ::strnlen(n, NAME_MAX);
    std::memcpy(name, n, len);
    name[len] = '\0';
  }
  void undo(int fd) const {
    if (dir) undo_new(fd, dir.get(), name);
  }
};

// Whether an open with `flags` may change the file: write access, or O_TRUNC.
inline bool writes(int flags) { return (flags & (O_ACCMODE | O_TRUNC)) != 0; }

// open, openat, creat: an fd of ours to hand over, -errno, or k_replied. Without O_CREAT
// (a write open, with the depth rule), it opens an existing file only.
int do_open(Target& t, int listener, std::uint64_t id, int dirfd, char* path, int flags, mode_t mode, Made& made);

// truncate(): the file the path leads to, found as an open without O_CREAT finds it
// (each symlink followed by hand, each name checked), truncated through init's fd of it.
int do_truncate(Target& t, char* path, off_t length);

// mkdir, mknod, symlink: 0 or -errno.
int do_make(Target& t, long nr, int dirfd, const char* path, mode_t mode, dev_t dev, const char* target);

// link, linkat: 0 or -errno.
int do_link(Target& t, int olddirfd, const char* oldpath, int newdirfd, const char* newpath, int flags);

// rename, renameat, renameat2: 0 or -errno.
int do_rename(Target& t, int olddirfd, const char* oldpath, int newdirfd, const char* newpath, unsigned flags);

// bind(): a unix socket's path is a new name like any other; init binds the command's
// socket (the same socket, taken with pidfd_getfd) itself. Other addresses are bound as
// read, once.
int do_bind(Target& t, int sockfd, std::uint64_t addr, std::uint64_t len);

}  // namespace zb::exec::guard_detail
