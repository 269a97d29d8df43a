// Serving the create guard: its seccomp listener (install_guard, serve_guard), the
// dispatch of one notification (handle), and the fast ways most calls take: a call whose
// last name is in no guarded path is made at once, without the full way's resolution
// (calls.cpp).
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "exec/guard.hpp"
#include "exec/guard/internal.hpp"
#include "util/beneath.hpp"

namespace zb::exec {
namespace guard_detail {
namespace {

int as_fd(std::uint64_t arg) { return static_cast<int>(static_cast<std::uint32_t>(arg)); }

// The arguments of an open, openat or creat call, which is open(path, O_CREAT | O_WRONLY
// | O_TRUNC, mode). `is_open`: the call is one of them (else the rest is unset).
struct OpenCall {
  bool is_open = false;
  int dirfd = AT_FDCWD;
  int flags = 0;
  mode_t mode = 0;
};

OpenCall decode_open(const seccomp_data& d) {
  const auto& a = d.args;
  switch (d.nr) {
    case SYS_open: return {true, AT_FDCWD, static_cast<int>(a[1]), static_cast<mode_t>(a[2])};
    case SYS_openat: return {true, as_fd(a[0]), static_cast<int>(a[2]), static_cast<mode_t>(a[3])};
    case SYS_creat: return {true, AT_FDCWD, O_CREAT | O_WRONLY | O_TRUNC, static_cast<mode_t>(a[1])};
    default: return {};
  }
}

// Opens the existing regular file or character device `name` in `dir` (checked) for a
// call and hands it over: true, or false for the full way (a symlink, a FIFO, gone, a
// lease, /proc). Only a process on the host can put a symlink or a FIFO there meanwhile: every
// call of the sandbox's that could waits for this one. O_NONBLOCK: a lease may wait.
bool open_existing(int listener, std::uint64_t id, int dir, const char* name, int flags) {
  // /proc (reached through a symlink, say to /proc/1): the full way lets the command have
  // only its own processes' files there, never init's.
  struct statfs sfs{};
  if (::fstatfs(dir, &sfs) != 0 || sfs.f_type == PROC_SUPER_MAGIC) return false;
  struct stat st{};
  if (::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode)))
    return false;
  int fd = ::openat(dir, name, (flags & ~(O_CREAT | O_EXCL)) | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ELOOP || errno == EWOULDBLOCK || errno == ENOENT || errno == ENXIO) return false;
    reply(listener, id, errno);
    return true;
  }
  fd = finish_open(fd, flags);
  if (fd < 0) {
    reply(listener, id, -fd);
    return true;
  }
  int err = hand_over(listener, id, fd, (flags & O_CLOEXEC) != 0);
  if (err != 0 && err != ENOENT) reply(listener, id, err);
  ::close(fd);
  return true;
}

// Whether an open with O_CREAT that init found or made a file for may go on as the
// command's own: only where the command can make no file itself, and, with the depth
// rule, only to read: the kernel reads the path again, and another thread may have
// pointed it at an existing protected file by then.
bool may_go_on(const GuardState& st, int flags) {
  return st.command_makes_no_files && (st.list.n_names == 0 || !writes(flags));
}

// A path the fast ways take: not empty, not ending in '/', its last name neither "." nor
// "..", and none of the command's own /proc/self, /dev/fd and /dev/std*, which the full
// way puts in place. `slash` is its last '/' (nullptr for a bare name).
struct PlainPath {
  const char* slash;
  const char* name;
  std::size_t len;
};

bool plain_path(const char* path, PlainPath& out) {
  if (path[0] == '\0' || after(path, "/proc") != nullptr || after(path, "/dev/fd") != nullptr ||
      std::strncmp(path, "/dev/std", 8) == 0) {
    return false;
  }
  std::size_t n = std::strlen(path);
  if (path[n - 1] == '/') return false;
  out.slash = std::strrchr(path, '/');
  out.name = out.slash != nullptr ? out.slash + 1 : path;
  out.len = static_cast<std::size_t>(path + n - out.name);
  const char* m = out.name;
  return !((out.len == 1 && m[0] == '.') || (out.len == 2 && m[0] == '.' && m[1] == '.'));
}

// Calls whose last name appears in no guarded path cannot make one, wherever they land,
// so they skip the real path and the symlink walk: a new file is one openat2() (it never
// follows a symlink or a magic link, and O_EXCL makes it new: an existing name may be a
// FIFO or a terminal, for the full way), a directory one mkdirat(). Any failure takes the
// full way too, for the kernel's answer there. true: answered.
bool fast_path(int listener, Target& t, const seccomp_notif& req, const OpenCall& open, const char* path) {
  long nr = req.data.nr;
  const auto& a = req.data.args;
  bool is_open = open.is_open;
  bool is_mkdir = nr == SYS_mkdir || nr == SYS_mkdirat;
  if (!is_open && !is_mkdir) return false;
  PlainPath pp;
  if (!plain_path(path, pp)) return false;
  const char* slash = pp.slash;
  const char* name = pp.name;
  std::size_t len = pp.len;
  const GuardState& st = *t.state;
  if (is_open ? among(st.names, st.names_mask, name, len) : among(st.leaves, st.leaves_mask, name, len)) return false;

  // The directory a relative path starts from, as an fd of ours: looked up by the
  // caller's tid, so open_dirfd checks that the caller still waits (else the tid may
  // have passed to another thread). Making the file through /proc/TID/cwd/NAME in one
  // call would save a system call, but then nothing could check that, and a file made
  // for a thread killed meanwhile could not always be found again to remove it.
  UniqueFd base;
  int at = AT_FDCWD;
  if (path[0] != '/') {
    int fd = open_dirfd(t, is_open ? open.dirfd : nr == SYS_mkdirat ? as_fd(a[0]) : AT_FDCWD);
    if (fd < 0) return false;
    base.reset(fd);
    at = fd;
  }
  // The depth rule looks at the real path of the directory the name goes in: the string
  // may lead through symlinks, or start from a directory below a protected name.
  UniqueFd parent_fd;
  if (st.list.n_names != 0) {
    int dir = open_parent(at, path, slash, parent_fd);
    if (dir == -1) return false;  // the full way says why
    // The getcwd system call after fchdir(), which costs much less than a readlink() of
    // /proc/self/fd/N. Nothing of init's resolves a path relative to its working
    // directory. Not glibc's getcwd(), which past PATH_MAX walks up the tree itself, with
    // malloc().
    // Deeper than PATH_MAX, as the full way finds too (resolve's too_deep), nothing is
    // checked: that walk would cost as much again.
    char real[PATH_MAX];
    if (::fchdir(dir) != 0) return false;
    if (::syscall(SYS_getcwd, real, sizeof real) > 0 && real[0] == '/') {
      Buf full;
      full.add(real);
      if (std::strcmp(real, "/") != 0) full.add("/");
      full.add(name, len);
      // The list cannot refuse it (its last name is in none of the list's paths).
      if (full.ok && depth_refused(*t.state, full.s, is_open ? GuardMade::other : GuardMade::new_dir)) {
        reply(listener, req.id, EACCES);
        return true;
      }
    } else if ((errno != ENAMETOOLONG && errno != ERANGE) || deep_first_name(st, name)) {
      return false;  // the full way refuses a first name there
    }
    at = dir;
    path = name;
    slash = nullptr;
  }
  if (is_open) {
    int flags = open.flags;
    mode_t mode = open.mode;
    // O_EXCL: a new file, and never through a symlink (F_GETFL does not show it, where it
    // would show O_NOFOLLOW).
    auto how_flags = static_cast<std::uint64_t>(static_cast<unsigned>(flags | O_EXCL | O_NOCTTY));
    set_umask(t.umask());
    int fd = util::openat2_fd(at, path, how_flags, RESOLVE_NO_MAGICLINKS, mode & 07777);
    if (fd < 0) {
      if (errno != EEXIST) return false;  // the full way says what the kernel would have
      if ((flags & O_EXCL) != 0) {
        reply(listener, req.id, EEXIST);
        return true;
      }
      // An existing name that is not a symlink: the command's own open() finds it and
      // makes nothing, as it would have without O_CREAT (see below).
      struct stat there{};
      if (may_go_on(st, flags) && ::fstatat(at, path, &there, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISLNK(there.st_mode)) {
        go_on(listener, req.id);
        return true;
      }
      // With the depth rule `path` is a name in the directory just checked: open what is
      // there (the kernel would not have made it) and hand it over.
      if (st.list.n_names != 0 && open_existing(listener, req.id, at, path, flags)) return true;
      // A symlink or magic link on the way, an fd of init's where the command's was meant
      // (/dev/fd/N through a symlink): the full way says what the kernel would have.
      return false;
    }
    // Handing the file over costs two wake-ups more than an answer does (the command
    // installs the fd while init waits). Where the command can make no regular file
    // itself, its own open() may go on instead and open the file init made: whatever its
    // path leads to by then (another thread may rewrite the string or move a directory),
    // it can only open what it could open without O_CREAT, or fail. Not with O_EXCL (the
    // file is there now); not when the new file's mode would refuse the command the access
    // it asked for, which the kernel gives a file's creator; and not with O_TRUNC, which
    // on a file the open did not make truncates it: on ext4 and XFS a file truncated,
    // written and closed is flushed at close (the rename-over-truncate heuristic), which
    // costs more than the wake-ups.
    if (!may_go_on(st, flags) || (flags & (O_EXCL | O_TRUNC)) != 0 || !owner_may(fd, flags)) {
      hand_over_new(listener, req.id, fd, (flags & O_CLOEXEC) != 0, [&] { undo_new(fd, at, path); });
    } else if (!go_on(listener, req.id)) {
      undo_new(fd, at, path);  // the caller is gone
    }
    ::close(fd);
    return true;
  }
  int parent = -1;
  UniqueFd p;
  if (slash == nullptr && path[0] != '/') {
    parent = at;  // the caller's cwd or dirfd (a file's fd gives mkdirat's ENOTDIR), or the parent opened above
  } else {
    Buf dir;
    dir.add(path, static_cast<std::size_t>(slash - path) + 1);
    if (!dir.ok) return false;
    parent = open_path_at(at, dir.s, O_DIRECTORY);
    if (parent < 0) return false;  // the full way says why
    p.reset(parent);
  }
  set_umask(t.umask());
  int rc = ::mkdirat(parent, name, static_cast<mode_t>(nr == SYS_mkdir ? a[1] : a[2]));
  reply(listener, req.id, rc == 0 ? 0 : errno);
  return true;
}

// An open for writing without O_CREAT (the depth rule's) of a plain name: a regular file
// or a character device (/dev/null, which most programs open O_RDWR at start) whose
// directory's real path, taken as fast_path takes it, and name are not refused, opened
// with O_NOFOLLOW and handed over. A symlink, a FIFO, anything odd in the path or any
// failure takes the full way (do_open), for the kernel's answer there. true: answered.
bool write_fast_path(int listener, Target& t, const seccomp_notif& req, const OpenCall& open, const char* path) {
  int flags = open.flags;
  if ((flags & O_DIRECTORY) != 0) return false;
  PlainPath pp;
  if (!plain_path(path, pp)) return false;
  const char* slash = pp.slash;
  const char* name = pp.name;
  std::size_t len = pp.len;
  UniqueFd base, parent_fd;
  int at = AT_FDCWD;
  if (path[0] != '/') {
    int fd = open_dirfd(t, open.dirfd);
    if (fd < 0) return false;
    base.reset(fd);
    at = fd;
  }
  int dir = open_parent(at, path, slash, parent_fd);
  if (dir == -1 || dir == AT_FDCWD) return false;
  struct stat st{};
  if (::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode)))
    return false;
  char real[PATH_MAX];
  if (::fchdir(dir) != 0 || ::syscall(SYS_getcwd, real, sizeof real) <= 0 || real[0] != '/') return false;
  Buf full;
  full.add(real);
  if (std::strcmp(real, "/") != 0) full.add("/");
  full.add(name, len);
  if (!full.ok) return false;
  if (refused_path(*t.state, full.s, GuardMade::other)) {
    reply(listener, req.id, EACCES);
    return true;
  }
  return open_existing(listener, req.id, dir, name, flags);
}

void handle(int listener, GuardState& state, const seccomp_notif& req) {
  const auto& a = req.data.args;
  long nr = req.data.nr;
  if (req.data.arch != AUDIT_ARCH_X86_64) return reply(listener, req.id, ENOSYS);
  if (nr == SYS_umask) {
    state.umask_changed = true;
    go_on(listener, req.id);
    // The kernel sets the new umask after this answer. Until /proc shows it, another
    // thread sharing it could be read with the old one: wait (serving nothing else), then
    // forget every umask read so far. If it does not show, none is remembered again.
    auto want = static_cast<mode_t>(a[0] & 0777);
    bool shown = false;
    for (int i = 0; i < 1000 && !shown; ++i) {
      pid_t g = 0;
      mode_t now = 0;
      if (!read_status(static_cast<pid_t>(req.pid), g, now)) break;  // gone
      shown = now == want;
      if (!shown) ::sched_yield();
    }
    if (!shown) state.umask_unsettled = true;
    ++state.umask_calls;
    return;
  }
  Target t;
  t.tid = static_cast<pid_t>(req.pid);
  t.state = &state;
  t.listener = listener;
  t.id = req.id;
  // Every string is read once, into our memory, before anything is decided.
  char p1[PATH_MAX], p2[PATH_MAX];
  int r = 0;
  switch (nr) {
    case SYS_open:
    case SYS_creat:
    case SYS_truncate:
    case SYS_mkdir:
    case SYS_mknod: r = read_str(t, a[0], p1); break;
    case SYS_openat:
    case SYS_mkdirat:
    case SYS_mknodat: r = read_str(t, a[1], p1); break;
    case SYS_symlink:
    case SYS_link:
    case SYS_rename:
      r = read_str(t, a[0], p1);
      if (r == 0) r = read_str(t, a[1], p2);
      break;
    case SYS_symlinkat:
      r = read_str(t, a[0], p1);
      if (r == 0) r = read_str(t, a[2], p2);
      break;
    case SYS_linkat:
    case SYS_renameat:
    case SYS_renameat2:
      r = read_str(t, a[1], p1);
      if (r == 0) r = read_str(t, a[3], p2);
      break;
    case SYS_bind: break;  // reads its address itself
    default: return reply(listener, req.id, ENOSYS);
  }
  // The strings came from the caller if it still waits now. What is looked up by its tid
  // from here on is checked again (Target::alive).
  if (!t.alive()) return;
  if (r < 0) return reply(listener, req.id, -r);
  // An open without O_CREAT (the depth rule's write opens) makes nothing: it opens an
  // existing file the full way, which checks the real path of every name it goes through.
  // O_TMPFILE makes a file without a name (linkat() gives it one, through the guard): its
  // directory is the kernel's business.
  OpenCall open = decode_open(req.data);
  bool no_create = open.is_open && (open.flags & O_CREAT) == 0;
  if (no_create && (open.flags & k_tmpfile_flag) == k_tmpfile_flag) {
    go_on(listener, req.id);
    return;
  }
  if (no_create ? write_fast_path(listener, t, req, open, p1) : fast_path(listener, t, req, open, p1)) return;

  int res = 0;
  switch (nr) {
    case SYS_open:
    case SYS_creat:
    case SYS_openat: {
      Made made;
      int fd = do_open(t, listener, req.id, open.dirfd, p1, open.flags, open.mode, made);
      if (fd == k_replied) return;
      if (fd < 0) return reply(listener, req.id, -fd);
      hand_over_new(listener, req.id, fd, (open.flags & O_CLOEXEC) != 0, [&] { made.undo(fd); });
      ::close(fd);
      return;
    }
    case SYS_truncate: res = do_truncate(t, p1, static_cast<off_t>(a[1])); break;
    case SYS_mkdir: res = do_make(t, nr, AT_FDCWD, p1, static_cast<mode_t>(a[1]), 0, nullptr); break;
    case SYS_mkdirat: res = do_make(t, nr, as_fd(a[0]), p1, static_cast<mode_t>(a[2]), 0, nullptr); break;
    case SYS_mknod:
      res = do_make(t, nr, AT_FDCWD, p1, static_cast<mode_t>(a[1]), static_cast<dev_t>(a[2]), nullptr);
      break;
    case SYS_mknodat:
      res = do_make(t, nr, as_fd(a[0]), p1, static_cast<mode_t>(a[2]), static_cast<dev_t>(a[3]), nullptr);
      break;
    case SYS_symlink: res = do_make(t, nr, AT_FDCWD, p2, 0, 0, p1); break;
    case SYS_symlinkat: res = do_make(t, nr, as_fd(a[1]), p2, 0, 0, p1); break;
    case SYS_link: res = do_link(t, AT_FDCWD, p1, AT_FDCWD, p2, 0); break;
    case SYS_linkat: res = do_link(t, as_fd(a[0]), p1, as_fd(a[2]), p2, static_cast<int>(a[4])); break;
    case SYS_rename: res = do_rename(t, AT_FDCWD, p1, AT_FDCWD, p2, 0); break;
    case SYS_renameat: res = do_rename(t, as_fd(a[0]), p1, as_fd(a[2]), p2, 0); break;
    case SYS_renameat2: res = do_rename(t, as_fd(a[0]), p1, as_fd(a[2]), p2, static_cast<unsigned>(a[4])); break;
    case SYS_bind: res = do_bind(t, as_fd(a[0]), a[1], a[2]); break;
    default: res = -ENOSYS;
  }
  reply(listener, req.id, -res);
}

}  // namespace
}  // namespace guard_detail

int install_guard(const sock_filter* filter, std::size_t n) {
  sock_fprog prog{static_cast<unsigned short>(n), const_cast<sock_filter*>(filter)};
  return static_cast<int>(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                                    SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &prog));
}

bool serve_guard(int listener, GuardState& state) {
  seccomp_notif req;
  std::memset(&req, 0, sizeof req);
  if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) return errno == EINTR || errno == ENOENT;
  guard_detail::handle(listener, state, req);
  return true;
}

}  // namespace zb::exec
