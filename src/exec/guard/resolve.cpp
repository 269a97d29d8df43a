// Where a path of the create guard's caller puts its last component (Loc, resolve): its
// parent directory opened as the caller's own call would find it, with the caller's
// /proc/self, /proc/thread-self, /dev/fd and /dev/std* in place of init's, no other /proc
// magic link followed, and the parent's real path, which the decision is made on.
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "exec/guard/internal.hpp"
#include "util/beneath.hpp"

namespace zb::exec::guard_detail {
namespace {

// What follows "/proc/TID", "/proc/TGID" or "/proc/TGID/task/TID" in p, if it starts so.
const char* own_proc(Target& t, const char* p) {
  Buf a, b;
  a.add("/proc/").num(static_cast<unsigned long>(t.tgid()));
  b.add("/proc/").num(static_cast<unsigned long>(t.tid));
  if (const char* r = after(p, a.s)) {
    Buf task;
    task.add("/task/").num(static_cast<unsigned long>(t.tid));
    if (const char* r2 = after(r, task.s)) return r2;
    return r;
  }
  return after(p, b.s);
}

}  // namespace

int open_path_at(int base, const char* path, int flags) {
  int fd = util::openat2_fd(base, path, static_cast<std::uint64_t>(static_cast<unsigned>(flags | O_PATH)),
                            RESOLVE_NO_MAGICLINKS);
  return fd < 0 ? -errno : fd;
}

int open_parent(int at, const char* path, const char* slash, UniqueFd& holder) {
  if (slash == nullptr) return at;
  Buf d;
  d.add(path, static_cast<std::size_t>(slash - path) + 1);
  if (!d.ok) return -1;
  int fd = open_path_at(at, d.s, O_DIRECTORY);
  if (fd < 0) return -1;
  holder.reset(fd);
  return fd;
}

int resolve(Target& t, int dirfd, int base, const char* path, Loc& loc) {
  if (path[0] == '\0') return -ENOENT;
  UniqueFd owned;
  int at = base;
  Buf tr;
  const char* rel = path;
  if (path[0] == '/') {
    at = AT_FDCWD;
    const char* r;
    if ((r = after(path, "/proc/self")) != nullptr) {
      tr.add("/proc/").num(static_cast<unsigned long>(t.tgid())).add(r);
    } else if ((r = after(path, "/proc/thread-self")) != nullptr) {
      tr.add("/proc/")
          .num(static_cast<unsigned long>(t.tgid()))
          .add("/task/")
          .num(static_cast<unsigned long>(t.tid))
          .add(r);
    } else if ((r = after(path, "/dev/fd")) != nullptr) {
      tr.add("/proc/").num(static_cast<unsigned long>(t.tgid())).add("/fd").add(r);
    } else if (std::strcmp(path, "/dev/stdin") == 0 || std::strcmp(path, "/dev/stdout") == 0 ||
               std::strcmp(path, "/dev/stderr") == 0) {
      tr.add("/proc/")
          .num(static_cast<unsigned long>(t.tgid()))
          .add("/fd/")
          .num(path[8] == 'i'   ? 0
               : path[8] == 'o' ? 1
                                : 2);
    } else {
      tr.add(path);
    }
    if (!tr.ok) return -ENAMETOOLONG;
    rel = tr.s;
    if (const char* own = own_proc(t, tr.s)) {
      std::size_t head = static_cast<std::size_t>(own - tr.s);
      if (const char* f = after(own, "/fd"); f != nullptr && f[0] == '/' && f[1] >= '0' && f[1] <= '9') {
        const char* e = f + 1;
        long n = 0;
        while (*e >= '0' && *e <= '9' && n < 1L << 30) n = n * 10 + (*e++ - '0');
        if (*e != '\0' && *e != '/') return -ENOENT;
        bool slash = *e == '/';
        while (*e == '/') ++e;
        if (*e == '\0') {
          loc.whole_fd = static_cast<int>(n);
          loc.whole_slash = slash;
          return 0;
        }
        int fd = take_fd(t, static_cast<int>(n));
        if (fd < 0) return fd == -EBADF ? -ENOENT : fd;
        owned.reset(fd);
        at = fd;
        rel = e;
      } else if (const char* c = after(own, "/cwd")) {
        Buf cwd;
        cwd.add(tr.s, head).add("/cwd");
        owned.reset(::open(cwd.s, O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!owned) return -errno;
        at = owned.get();
        while (*c == '/') ++c;
        rel = *c == '\0' ? "." : c;
      } else if (const char* rt = after(own, "/root")) {
        rel = *rt == '\0' ? "/" : rt;
      }
    }
  } else if (at < 0) {
    int fd = open_dirfd(t, dirfd);
    if (fd < 0) return fd;
    owned.reset(fd);
    at = fd;
  }

  std::size_t len = std::strlen(rel);
  std::size_t end = len;
  while (end > 1 && rel[end - 1] == '/') --end;
  Buf dir;
  if (end == 1 && rel[0] == '/') {  // "/" itself: "." in "/"
    dir.add("/");
    std::memcpy(loc.bare, ".", 2);
    std::memcpy(loc.name, ".", 2);
  } else {
    std::size_t slash = end;
    while (slash > 0 && rel[slash - 1] != '/') --slash;
    std::size_t name_len = end - slash;
    if (slash == 0) {
      dir.add(".");
    } else {
      dir.add(rel, slash);
    }
    if (name_len > NAME_MAX) return -ENAMETOOLONG;
    std::memcpy(loc.bare, rel + slash, name_len);
    loc.bare[name_len] = '\0';
    // As given, with one trailing slash if it had any (the kernel reads one as many).
    std::size_t given = name_len + (end < len ? 1 : 0);
    std::memcpy(loc.name, rel + slash, given);
    loc.name[given] = '\0';
  }
  if (!dir.ok) return -ENAMETOOLONG;

  int parent = open_path_at(at, dir.s, O_DIRECTORY);
  if (parent < 0) return parent;
  loc.parent.reset(parent);
  if (!t.alive()) return -ESRCH;  // the /proc/TID paths above may have named another thread
  struct statfs sfs{};
  bool proc = ::fstatfs(parent, &sfs) == 0 && sfs.f_type == PROC_SUPER_MAGIC;
  ssize_t n = ::readlink(SelfFd(parent).s, loc.real, sizeof loc.real - 1);
  if (n <= 0 || static_cast<std::size_t>(n) >= sizeof loc.real - 1) {
    // Deeper than PATH_MAX (the kernel allows that, relative to a deep directory): longer
    // than any guarded path, so nothing below it is guarded.
    if (n > 0 || errno == ENAMETOOLONG) {
      loc.too_deep = true;
      return proc ? -EACCES : 0;
    }
    return -errno;
  }
  loc.real[n] = '\0';
  if (proc && own_proc(t, loc.real) == nullptr) return -EACCES;
  return 0;
}

bool refused(Target& t, const Loc& loc, GuardMade made) {
  Buf full;
  // Longer than any guarded path; but see deep_first_name.
  if (!loc.full(full)) return deep_first_name(*t.state, loc.bare);
  return refused_path(*t.state, full.s, made);
}

}  // namespace zb::exec::guard_detail
