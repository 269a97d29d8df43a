// The create guard's full way: answering a call (an errno, an fd handed over, or the call
// let go on), and one handler per system call the guard's filter traps. Each resolves
// its paths as the caller would (resolve.cpp), asks the decision (check.cpp), and makes
// the new name itself, through the parent directory it checked.
#include <fcntl.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>  // RENAME_EXCHANGE
#include <cstring>
#include <utility>

#include "exec/guard/internal.hpp"

namespace zb::exec::guard_detail {
namespace {

// What lies at `name` in `dir`, for the depth rule: what a rename moves.
GuardMade made_of(int dir, const char* name) {
  struct stat st{};
  if (::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return GuardMade::other;
  return S_ISDIR(st.st_mode) ? GuardMade::dir : S_ISLNK(st.st_mode) ? GuardMade::symlink : GuardMade::other;
}

bool is_ctty(int fd) {
  struct stat st{};
  return ::fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(5, 0);
}

// Opening a FIFO blocks until the other end opens, and a file with a lease until the
// lease is broken: a child of init does it and answers.
//
// The child reopens the very file init checked, through an O_PATH fd of it (`file`), and
// creates nothing: init goes on serving calls meanwhile, and a rename could put another
// file (a symlink to a protected name) under the name by the time the child runs.
void open_in_child(int listener, std::uint64_t id, int file, int flags) {
  long pid = ::syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (pid < 0) {
    reply(listener, id, errno);
    return;
  }
  if (pid == 0) {
    int fd = ::open(SelfFd(file).s, (flags & ~(O_CREAT | O_EXCL)) | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
      reply(listener, id, errno);
    } else {
      int err = hand_over(listener, id, fd, (flags & O_CLOEXEC) != 0);
      if (err != 0 && err != ENOENT) reply(listener, id, err);
    }
    ::_exit(0);
  }
}

// fs.protected_symlinks (Documentation/admin-guide/sysctl/fs.rst): init follows a final
// symlink by hand, so it applies the rule itself. `dir` holds the link `link`.
bool may_follow(int dir, const struct stat& link) {
  static const int enabled = [] {
    char c = '0';
    UniqueFd f(::open("/proc/sys/fs/protected_symlinks", O_RDONLY | O_CLOEXEC));
    if (f) (void)!::read(f.get(), &c, 1);
    return c != '0';
  }();
  if (!enabled) return true;
  struct stat d{};
  if (::fstat(dir, &d) != 0) return false;
  if ((d.st_mode & (S_ISVTX | S_IWOTH)) != (S_ISVTX | S_IWOTH)) return true;
  return link.st_uid == ::geteuid() || link.st_uid == d.st_uid;
}

// One hop of a symlink followed by hand: the link `st` at loc (if may_follow allows it)
// becomes the next path to resolve, from its directory (kept in link_dir). 0, or the
// errno to answer with.
int step_into_link(Loc& loc, const struct stat& st, char* path, UniqueFd& link_dir) {
  if (!may_follow(loc.parent.get(), st)) return -EACCES;
  ssize_t n = ::readlinkat(loc.parent.get(), loc.bare, path, PATH_MAX - 1);
  if (n < 0) return -errno;
  if (n == 0) return -ENOENT;
  path[n] = '\0';
  link_dir = std::move(loc.parent);
  return 0;
}

// Whether the file `fd` (of ours) is one the depth rule protects, by its real path.
bool fd_refused(Target& t, int fd) {
  if (t.state->list.n_names == 0) return false;
  char real[PATH_MAX];
  ssize_t n = ::readlink(SelfFd(fd).s, real, sizeof real - 1);
  if (n <= 0 || static_cast<std::size_t>(n) >= sizeof real - 1 || real[0] != '/')
    return false;  // deeper than PATH_MAX, or not a path
  real[n] = '\0';
  return depth_refused(*t.state, real, GuardMade::other);
}

}  // namespace

void set_umask(mode_t m) {
  static mode_t current = 01000;  // none yet
  if (m != current) ::umask(m);
  current = m;
}

void reply(int listener, std::uint64_t id, int err) {
  seccomp_notif_resp r{};
  r.id = id;
  r.error = err == 0 ? 0 : -err;
  r.val = 0;
  ::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &r);
}

int hand_over(int listener, std::uint64_t id, int fd, bool cloexec) {
  seccomp_notif_addfd a{};
  a.id = id;
  a.flags = SECCOMP_ADDFD_FLAG_SEND;
  a.srcfd = static_cast<std::uint32_t>(fd);
  a.newfd_flags = cloexec ? O_CLOEXEC : 0;
  return ::ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a) >= 0 ? 0 : errno;
}

bool go_on(int listener, std::uint64_t id) {
  seccomp_notif_resp r{};
  r.id = id;
  r.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  return ::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &r) == 0;
}

bool owner_may(int fd, int flags) {
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  int acc = flags & O_ACCMODE;
  mode_t need = acc == O_RDONLY ? S_IRUSR : acc == O_WRONLY ? S_IWUSR : S_IRUSR | S_IWUSR;
  return (st.st_mode & need) == need;
}

void undo_new(int fd, int at, const char* path) {
  struct stat made{}, now{};
  if (::fstat(fd, &made) == 0 && ::fstatat(at, path, &now, AT_SYMLINK_NOFOLLOW) == 0 && made.st_ino == now.st_ino &&
      made.st_dev == now.st_dev) {
    ::unlinkat(at, path, 0);
  }
}

int finish_open(int fd, int flags) {
  if (fd < 0) return -errno;
  if (is_ctty(fd)) {
    ::close(fd);
    return -ENXIO;
  }
  if ((flags & O_NONBLOCK) == 0) {
    int fl = ::fcntl(fd, F_GETFL);
    if (fl >= 0 && (fl & O_NONBLOCK) != 0) ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  }
  return fd;
}

int do_open(Target& t, int listener, std::uint64_t id, int dirfd, char* path, int flags, mode_t mode, Made& made) {
  constexpr int k_ours = O_CLOEXEC | O_NOCTTY;
  // As Linux 6.4 and later answer before looking at the path: O_CREAT goes with neither
  // O_DIRECTORY nor the kernel's __O_TMPFILE bit (glibc's includes O_DIRECTORY).
  constexpr int k_tmpfile_bit = 020000000;
  bool creating = (flags & O_CREAT) != 0;
  if (creating && (flags & (O_DIRECTORY | k_tmpfile_bit)) != 0) return -EINVAL;
  UniqueFd link_dir;  // the directory of the last symlink followed
  for (int hop = 0; hop <= k_max_hops; ++hop) {
    Loc loc;
    if (int r = resolve(t, dirfd, link_dir.get(), path, loc); r < 0) return r;
    if (loc.whole_fd >= 0) {  // open("/dev/stdout"): the same file, opened anew
      int fd = take_fd(t, loc.whole_fd);
      if (fd < 0) return fd == -EBADF ? -ENOENT : fd;
      UniqueFd same(fd);
      struct stat st{};
      if (::fstat(fd, &st) != 0) return -errno;
      if (loc.whole_slash && !S_ISDIR(st.st_mode)) return -ENOTDIR;
      // Opened anew for writing, the command's fd of a protected file (an O_PATH one, or
      // one opened before a directory was renamed) is the protected file.
      if (writes(flags) && fd_refused(t, fd)) return -EACCES;
      if (S_ISFIFO(st.st_mode) && (flags & O_NONBLOCK) == 0) {  // a pipe: may wait for a reader
        open_in_child(listener, id, fd, flags);
        return k_replied;
      }
      int got = ::open(SelfFd(fd).s, flags | k_ours | O_NONBLOCK, mode);
      if (got < 0 && errno == EWOULDBLOCK && (flags & O_NONBLOCK) == 0) {  // a lease: may wait
        open_in_child(listener, id, fd, flags);
        return k_replied;
      }
      return finish_open(got, flags);
    }
    if (loc.dot() || std::strcmp(loc.name, loc.bare) != 0) {
      // "dir/", ".", "..": nothing can be created there, the kernel says what it says.
      return finish_open(::openat(loc.parent.get(), loc.name, flags | k_ours, mode), flags);
    }
    struct stat st{};
    bool exists = ::fstatat(loc.parent.get(), loc.bare, &st, AT_SYMLINK_NOFOLLOW) == 0;
    // A directory makes nothing: the kernel's answer, not a refusal of what it stands for.
    if (exists && S_ISDIR(st.st_mode)) return (flags & O_EXCL) != 0 && creating ? -EEXIST : -EISDIR;
    if (!exists && !creating) return -ENOENT;
    if (refused(t, loc, GuardMade::other)) return -EACCES;
    if (exists && S_ISLNK(st.st_mode) && (flags & O_NOFOLLOW) == 0 && !(creating && (flags & O_EXCL) != 0)) {
      if (int r = step_into_link(loc, st, path, link_dir); r < 0) return r;
      continue;
    }
    if (exists && creating && (flags & O_EXCL) != 0) return -EEXIST;
    if (exists && S_ISFIFO(st.st_mode) && (flags & O_NONBLOCK) == 0) {
      UniqueFd file(::openat(loc.parent.get(), loc.bare, O_PATH | O_NOFOLLOW | O_CLOEXEC));
      struct stat now{};
      if (!file || ::fstat(file.get(), &now) != 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev) continue;
      open_in_child(listener, id, file.get(), flags);
      return k_replied;
    }
    // Only a process on the host can turn the name into a symlink meanwhile: every call
    // of the sandbox's that could waits for this one. A new file is made with O_EXCL, so
    // it is new (and init knows to remove it if the command cannot have it).
    set_umask(t.umask());
    int fd = ::openat(loc.parent.get(), loc.bare, flags | (exists ? 0 : O_EXCL) | O_NONBLOCK | k_ours, mode);
    if (fd < 0 && errno == EEXIST && !exists && (flags & O_EXCL) == 0) continue;  // made meanwhile
    if (fd < 0 && errno == EWOULDBLOCK && (flags & O_NONBLOCK) == 0) {            // a lease: may wait
      UniqueFd file(::openat(loc.parent.get(), loc.bare, O_PATH | O_NOFOLLOW | O_CLOEXEC));
      struct stat now{};
      if (!file || ::fstat(file.get(), &now) != 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev) continue;
      open_in_child(listener, id, file.get(), flags);
      return k_replied;
    }
    if (fd >= 0 && !exists) made.set(loc.parent.get(), loc.bare);
    return finish_open(fd, flags);
  }
  return -ELOOP;
}

int do_truncate(Target& t, char* path, off_t length) {
  UniqueFd link_dir;
  for (int hop = 0; hop <= k_max_hops; ++hop) {
    Loc loc;
    if (int r = resolve(t, AT_FDCWD, link_dir.get(), path, loc); r < 0) return r;
    int fd = -1;
    if (loc.whole_fd >= 0) {
      fd = take_fd(t, loc.whole_fd);
      if (fd < 0) return fd == -EBADF ? -ENOENT : fd;
      UniqueFd same(fd);
      if (fd_refused(t, fd)) return -EACCES;
      return ::truncate(SelfFd(fd).s, length) == 0 ? 0 : -errno;
    }
    struct stat st{};
    bool plain = !loc.dot() && std::strcmp(loc.name, loc.bare) == 0;
    if (plain && ::fstatat(loc.parent.get(), loc.bare, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      if (S_ISDIR(st.st_mode)) return -EISDIR;
      if (refused(t, loc, GuardMade::other)) return -EACCES;
      if (S_ISLNK(st.st_mode)) {
        if (int r = step_into_link(loc, st, path, link_dir); r < 0) return r;
        continue;
      }
    }
    // "dir/", ".", "..", or a name gone: the kernel's answer.
    fd = ::openat(loc.parent.get(), loc.name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -errno;
    UniqueFd file(fd);
    return ::truncate(SelfFd(fd).s, length) == 0 ? 0 : -errno;
  }
  return -ELOOP;
}

int do_make(Target& t, long nr, int dirfd, const char* path, mode_t mode, dev_t dev, const char* target) {
  Loc loc;
  if (int r = resolve(t, dirfd, -1, path, loc); r < 0) return r;
  if (loc.whole_fd >= 0) return -EEXIST;
  GuardMade made = (nr == SYS_mkdir || nr == SYS_mkdirat)       ? GuardMade::new_dir
                   : (nr == SYS_symlink || nr == SYS_symlinkat) ? GuardMade::symlink
                                                                : GuardMade::other;
  if (!loc.dot() && refused(t, loc, made)) return -EACCES;
  int rc;
  if (nr == SYS_mkdir || nr == SYS_mkdirat) {
    set_umask(t.umask());
    rc = ::mkdirat(loc.parent.get(), loc.name, mode);
  } else if (nr == SYS_mknod || nr == SYS_mknodat) {
    set_umask(t.umask());
    // The system call's dev is 32 bits; glibc's wrapper refuses what does not fit.
    rc = static_cast<int>(::syscall(SYS_mknodat, loc.parent.get(), loc.name, mode, static_cast<unsigned>(dev)));
  } else {
    rc = ::symlinkat(target, loc.parent.get(), loc.name);
  }
  return rc == 0 ? 0 : -errno;
}

int do_link(Target& t, int olddirfd, const char* oldpath, int newdirfd, const char* newpath, int flags) {
  if ((flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH)) != 0) return -EINVAL;
  UniqueFd src;
  if ((flags & AT_EMPTY_PATH) != 0 && oldpath[0] == '\0') {
    int fd = open_dirfd(t, olddirfd);
    if (fd < 0) return fd;
    src.reset(fd);
  } else {
    Loc from;
    if (int r = resolve(t, olddirfd, -1, oldpath, from); r < 0) return r;
    int fd;
    if (from.whole_fd >= 0) {
      // Without AT_SYMLINK_FOLLOW the kernel would link /proc's own symlink: EXDEV.
      if ((flags & AT_SYMLINK_FOLLOW) == 0) return -EXDEV;
      fd = take_fd(t, from.whole_fd);
    } else {
      fd = open_path_at(from.parent.get(), from.name, (flags & AT_SYMLINK_FOLLOW) != 0 ? 0 : O_NOFOLLOW);
    }
    if (fd < 0) return fd;
    src.reset(fd);
  }
  struct stat st{};
  if (::fstat(src.get(), &st) != 0) return -errno;
  // A second name for a protected file would let it be opened for writing by that name.
  if (fd_refused(t, src.get())) return -EACCES;
  Loc to;
  if (int r = resolve(t, newdirfd, -1, newpath, to); r < 0) return r;
  if (to.whole_fd >= 0) return -EEXIST;
  if (!to.dot() && refused(t, to, GuardMade::other)) return -EACCES;
  return ::linkat(AT_FDCWD, SelfFd(src.get()).s, to.parent.get(), to.name, AT_SYMLINK_FOLLOW) == 0 ? 0 : -errno;
}

int do_rename(Target& t, int olddirfd, const char* oldpath, int newdirfd, const char* newpath, unsigned flags) {
  Loc from, to;
  if (int r = resolve(t, olddirfd, -1, oldpath, from); r < 0) return r;
  if (int r = resolve(t, newdirfd, -1, newpath, to); r < 0) return r;
  if (from.whole_fd >= 0 || to.whole_fd >= 0) return -EXDEV;
  GuardMade moved = made_of(from.parent.get(), from.name);
  if (!to.dot() && refused(t, to, moved)) return -EACCES;
  // EXCHANGE puts `to`'s entry at `from`, WHITEOUT a device node: both make `from` anew.
  if ((flags & (RENAME_EXCHANGE | RENAME_WHITEOUT)) != 0 && !from.dot()) {
    GuardMade back = (flags & RENAME_EXCHANGE) != 0 ? made_of(to.parent.get(), to.name) : GuardMade::other;
    if (refused(t, from, back)) return -EACCES;
  }
  const GuardState& st = *t.state;
  if (st.list.n_lifted + st.list.n_new_trees != 0 && !from.dot() && !to.dot()) {
    Buf f, d;
    if (from.full(f) && to.full(d)) {
      if (moved == GuardMade::dir && leaves_lift(st, f.s, d.s)) return -EXDEV;
      if ((flags & RENAME_EXCHANGE) != 0 && made_of(to.parent.get(), to.name) == GuardMade::dir &&
          leaves_lift(st, d.s, f.s)) {
        return -EXDEV;
      }
    }
  }
  if (::syscall(SYS_renameat2, from.parent.get(), from.name, to.parent.get(), to.name, flags) != 0) return -errno;
  return 0;
}

int do_bind(Target& t, int sockfd, std::uint64_t addr, std::uint64_t len) {
  sockaddr_storage sa{};
  if (len > sizeof sa) return -EINVAL;
  if (len > 0) {
    iovec local{&sa, static_cast<std::size_t>(len)};
    iovec remote{reinterpret_cast<void*>(addr), static_cast<std::size_t>(len)};
    if (::process_vm_readv(t.tid, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(len)) return -EFAULT;
  }
  int fd = take_fd(t, sockfd);
  if (fd < 0) return fd;
  UniqueFd sock(fd);
  auto socklen = static_cast<socklen_t>(len);
  constexpr std::size_t k_path_at = offsetof(sockaddr_un, sun_path);
  auto* un = reinterpret_cast<sockaddr_un*>(&sa);
  if (sa.ss_family != AF_UNIX || len <= k_path_at || un->sun_path[0] == '\0') {
    return ::bind(fd, reinterpret_cast<sockaddr*>(&sa), socklen) == 0 ? 0 : -errno;
  }
  if (len > sizeof(sockaddr_un)) return -EINVAL;
  char path[sizeof un->sun_path + 1] = {};
  std::memcpy(path, un->sun_path, len - k_path_at);  // at most sizeof sun_path: len checked
  // The working directory is taken once, for the check and for the bind: another thread
  // sharing it may chdir() meanwhile (chdir is not trapped).
  UniqueFd cwd;
  if (path[0] != '/') {
    int c = open_dirfd(t, AT_FDCWD);
    if (c < 0) return c;
    cwd.reset(c);
  }
  Loc loc;
  if (int r = resolve(t, AT_FDCWD, cwd.get(), path, loc); r < 0) return r;
  if (loc.whole_fd >= 0) return -EADDRINUSE;
  if (!loc.dot() && refused(t, loc, GuardMade::other)) return -EACCES;
  // bind() has no *at form. The command's own string, from its working directory, so that
  // the socket's address (getsockname, /proc/net/unix) is what it asked for: every call
  // that could move a directory or make a symlink on the way waits for this one, and
  // resolve() went the same way without a magic link. Paths through the command's own
  // /proc/self or /dev/fd are bound from the parent directory, by their last name.
  bool own_string = std::strncmp(path, "/proc/", 6) != 0 && std::strncmp(path, "/dev/", 5) != 0;
  sockaddr_un by_name{};
  const sockaddr* addr_used = reinterpret_cast<sockaddr*>(&sa);
  if (!own_string) {
    by_name.sun_family = AF_UNIX;
    std::size_t n = std::strlen(loc.name);
    if (n >= sizeof by_name.sun_path) return -ENAMETOOLONG;
    std::memcpy(by_name.sun_path, loc.name, n);
    addr_used = reinterpret_cast<sockaddr*>(&by_name);
    socklen = static_cast<socklen_t>(k_path_at + n + 1);
  }
  int dir = own_string ? (cwd ? cwd.get() : -1) : loc.parent.get();
  if (dir >= 0 && ::fchdir(dir) != 0) return -errno;
  set_umask(t.umask());
  int rc = ::bind(fd, addr_used, socklen);
  int err = errno;
  if (dir >= 0) (void)!::chdir("/");
  return rc == 0 ? 0 : -err;
}

}  // namespace zb::exec::guard_detail
