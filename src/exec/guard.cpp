#include "exec/guard.hpp"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <climits>
#include <cstdint>
#include <cstdio>  // RENAME_EXCHANGE
#include <cstdlib>
#include <cstring>
#include <strings.h>
#include <utility>

#include "exec/init.hpp"
#include "util/beneath.hpp"
#include "util/fd.hpp"

namespace zb::exec {
namespace {

constexpr int k_max_hops = 40;  // symlinks followed for O_CREAT, as the kernel's MAXSYMLINKS
constexpr int k_replied = INT_MIN;
constexpr std::uint64_t k_tmpfile_flag = O_TMPFILE;  // with O_DIRECTORY

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

// init's umask, for the kernel to apply as it would have for the caller.
void set_umask(mode_t m) {
  static mode_t current = 01000;  // none yet
  if (m != current) ::umask(m);
  current = m;
}

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

// p if it starts with `prefix` as whole path components: what follows ("" or "/..."),
// else nullptr.
const char* after(const char* p, const char* prefix) {
  std::size_t n = std::strlen(prefix);
  if (std::strncmp(p, prefix, n) != 0) return nullptr;
  return (p[n] == '\0' || p[n] == '/') ? p + n : nullptr;
}

// FNV-1a of a folded name, for the guard's sets of names.
std::size_t name_hash(const char* p, std::size_t n) {
  std::uint32_t h = 2166136261U;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 16777619U;
  return h;
}

// `name` (folded, NUL-terminated, `len` bytes) into a set of folded names.
void set_insert(const char** set, std::size_t mask, const char* name, std::size_t len) {
  for (std::size_t i = name_hash(name, len) & mask;; i = (i + 1) & mask) {
    if (set[i] == nullptr) {
      set[i] = name;
      return;
    }
    if (std::strncmp(set[i], name, len) == 0 && set[i][len] == '\0') return;
  }
}

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

// The tgid and umask /proc/TID/status shows; false if it cannot be read.
bool read_status(pid_t tid, pid_t& tgid, mode_t& umask) {
  Buf path;
  path.add("/proc/").num(static_cast<unsigned long>(tid)).add("/status");
  UniqueFd fd(::open(path.s, O_RDONLY | O_CLOEXEC));
  if (!fd) return false;
  char buf[2048];
  ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* u = std::strstr(buf, "\nUmask:\t");
  const char* g = std::strstr(buf, "\nTgid:\t");
  if (u == nullptr || g == nullptr) return false;
  umask = static_cast<mode_t>(std::strtoul(u + 8, nullptr, 8)) & 0777;
  tgid = static_cast<pid_t>(std::strtol(g + 7, nullptr, 10));
  return true;
}

// Reads the 16 bytes at `at` into `bytes` (compare: whether they equal `bytes`).
bool same_random(pid_t tid, unsigned long at, unsigned char (&bytes)[16], bool compare) {
  unsigned char now[16];
  iovec local{now, sizeof now};
  iovec remote{reinterpret_cast<void*>(at), sizeof now};
  if (::process_vm_readv(tid, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(sizeof now)) return false;
  if (compare) return std::memcmp(now, bytes, sizeof now) == 0;
  std::memcpy(bytes, now, sizeof now);
  return true;
}

// The address of the 16 random bytes the kernel put on the thread's stack at execve
// (AT_RANDOM in /proc/TID/auxv), and those bytes; false if they cannot be read.
bool read_random(pid_t tid, unsigned long& at, unsigned char (&bytes)[16]) {
  Buf path;
  path.add("/proc/").num(static_cast<unsigned long>(tid)).add("/auxv");
  UniqueFd fd(::open(path.s, O_RDONLY | O_CLOEXEC));
  if (!fd) return false;
  unsigned long aux[128];
  ssize_t n = ::read(fd.get(), aux, sizeof aux);
  if (n <= 0) return false;
  at = 0;
  for (std::size_t i = 0; i + 1 < static_cast<std::size_t>(n) / sizeof aux[0] && aux[i] != AT_NULL; i += 2) {
    if (aux[i] == AT_RANDOM) at = aux[i + 1];
  }
  return at != 0 && same_random(tid, at, bytes, false);
}

void Target::load_status() {
  if (m_loaded) return;
  m_loaded = true;
  m_umask = state->umask;
  GuardState& st = *state;
  for (auto& e : st.seen) {
    if (e.tid != tid || e.pidfd < 0) continue;
    // Still the same thread (a pidfd outlives a reused tid) running the same program, and
    // no umask() since.
    if (e.umask_calls == st.umask_calls && ::syscall(SYS_pidfd_send_signal, e.pidfd, 0, nullptr, 0U) == 0 &&
        same_random(tid, e.random_at, e.random, true)) {
      m_tgid = e.tgid;
      m_umask = e.umask;
      m_pidfd = e.pidfd;
      return;
    }
    ::close(e.pidfd);
    e.pidfd = -1;
    e.tid = 0;
  }
  if (!read_status(tid, m_tgid, m_umask) || st.umask_unsettled) return;
  // Remembered with a pidfd taken after the read, if the caller still waits then: the
  // tid was its own throughout.
  unsigned long random_at = 0;
  unsigned char random[16];
  if (!read_random(tid, random_at, random)) return;
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, tid, k_pidfd_thread));
  if (pidfd < 0) return;
  if (!alive()) {
    ::close(pidfd);
    return;
  }
  auto& e = st.seen[st.next_seen++ % (sizeof st.seen / sizeof st.seen[0])];
  if (e.pidfd >= 0) ::close(e.pidfd);
  e = {tid, pidfd, m_tgid, m_umask, st.umask_calls, random_at, {}};
  std::memcpy(e.random, random, sizeof random);
  m_pidfd = pidfd;
}

// A NUL-terminated string at `addr` in the target, of at most PATH_MAX bytes with the NUL.
int read_str(Target& t, std::uint64_t addr, char* out) {
  if (addr == 0) return -EFAULT;
  std::size_t got = 0;
  while (got < PATH_MAX) {
    std::uint64_t at = addr + got;
    // Page by page, so that a string ending just before unmapped memory is read whole;
    // most paths are short, so 256 bytes first.
    std::size_t chunk = 4096 - static_cast<std::size_t>(at & 4095);
    if (got == 0 && chunk > 256) chunk = 256;
    if (chunk > PATH_MAX - got) chunk = PATH_MAX - got;
    iovec local{out + got, chunk};
    iovec remote{reinterpret_cast<void*>(at), chunk};
    ssize_t r = ::process_vm_readv(t.tid, &local, 1, &remote, 1, 0);
    if (r <= 0) return -EFAULT;
    if (std::memchr(out + got, '\0', static_cast<std::size_t>(r)) != nullptr) return 0;
    got += static_cast<std::size_t>(r);
  }
  return -ENAMETOOLONG;
}

// `fd` (-1: errno), looked up by the target's tid, if the target still waits: else the
// tid may have named another thread.
int if_alive(const Target& t, int fd) {
  if (fd < 0) return -errno;
  if (!t.alive()) {
    ::close(fd);
    return -ESRCH;
  }
  return fd;
}

// One of the target's fds, as an fd of ours.
int take_fd(Target& t, int fd) {
  if (fd < 0) return -EBADF;
  return if_alive(t, static_cast<int>(::syscall(SYS_pidfd_getfd, t.pidfd(), fd, 0U)));
}

// The target's dirfd argument (AT_FDCWD: its working directory) as an fd of ours.
int open_dirfd(Target& t, int dirfd) {
  if (dirfd != AT_FDCWD) return take_fd(t, dirfd);
  Buf p;
  p.add("/proc/").num(static_cast<unsigned long>(t.tid)).add("/cwd");
  return if_alive(t, ::open(p.s, O_PATH | O_CLOEXEC));
}

// "/proc/self/fd/N" of ours for an fd of ours.
struct SelfFd : Buf {
  explicit SelfFd(int fd) { add("/proc/self/fd/").num(static_cast<unsigned long>(fd)); }
};

// An O_PATH fd of base/path resolved as the target's own call would resolve it (symlinks
// followed, an absolute path from the root), except that no /proc magic link is followed.
// Not confined below base: unlike util::open_beneath. The fd, or -errno.
int open_path_at(int base, const char* path, int flags) {
  int fd = util::openat2_fd(base, path, static_cast<std::uint64_t>(static_cast<unsigned>(flags | O_PATH)), RESOLVE_NO_MAGICLINKS);
  return fd < 0 ? -errno : fd;
}

// The directory in which `path` (relative to `at`) names its last component: `at` itself
// when the path has no slash (`slash`, its last one), else that directory opened O_PATH,
// its fd then owned by `holder`. -1 when it cannot be opened. No allocation.
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

// Where a path of the target's puts its last component.
struct Loc {
  UniqueFd parent;       // O_PATH directory
  char name[NAME_MAX + 2] = {};   // the last component as given (with its trailing '/', if any)
  char bare[NAME_MAX + 1] = {};   // without it
  char real[PATH_MAX] = {};       // the parent's canonical path
  bool too_deep = false;          // ... which is longer than that
  int whole_fd = -1;  // set instead when the whole path is one of the target's fds: N of /proc/self/fd/N
  bool whole_slash = false;  // ... written with a trailing slash

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
      tr.add("/proc/").num(static_cast<unsigned long>(t.tgid())).add("/task/").num(static_cast<unsigned long>(t.tid)).add(r);
    } else if ((r = after(path, "/dev/fd")) != nullptr) {
      tr.add("/proc/").num(static_cast<unsigned long>(t.tgid())).add("/fd").add(r);
    } else if (std::strcmp(path, "/dev/stdin") == 0 || std::strcmp(path, "/dev/stdout") == 0 ||
               std::strcmp(path, "/dev/stderr") == 0) {
      tr.add("/proc/").num(static_cast<unsigned long>(t.tgid())).add("/fd/").num(path[8] == 'i' ? 0 : path[8] == 'o' ? 1 : 2);
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
  struct statfs sfs {};
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

// Whether `p` is `r` or lies below it.
bool under(const char* p, const char* r) {
  if (r[0] == '/' && r[1] == '\0') return p[0] == '/';
  return after(p, r) != nullptr;
}

bool under_any(const char* p, const char* const* list, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (under(p, list[i])) return true;
  }
  return false;
}

// Reports a path the depth rule refused (its first `len` bytes), once: the message and the
// path in one write, which a pipe keeps whole up to PIPE_BUF bytes.
void report_depth(GuardState& st, const char* path, std::size_t len) {
  if (st.report_fd < 0) return;
  auto h = static_cast<std::uint32_t>(name_hash(path, len));
  for (unsigned i = 0; i < st.n_depth_reported; ++i) {
    if (st.depth_reported[i] == h) return;
  }
  if (st.n_depth_reported < sizeof st.depth_reported / sizeof st.depth_reported[0]) {
    st.depth_reported[st.n_depth_reported++] = h;
  }
  char buf[PIPE_BUF];
  ChildMsg m{k_msg_guard_depth_refused, 0, 0, EACCES, 0};
  if (len > sizeof buf - sizeof m) return;
  m.value = static_cast<int32_t>(len);
  std::memcpy(buf, &m, sizeof m);
  std::memcpy(buf + sizeof m, path, len);
  while (::write(st.report_fd, buf, sizeof m + len) < 0 && errno == EINTR) {
  }
}

// Whether making `full` (canonical) is refused, by the list or by the depth rule; a
// refusal is reported to the supervisor once per path, so that the user learns why (say,
// git init's "Permission denied" on .git/hooks).
bool depth_refused(GuardState& st, const char* full, GuardMade made);

bool refused_path(GuardState& st, const char* full, GuardMade made) {
  std::size_t which = 0;
  if (guard_check(st.list, full, made == GuardMade::new_dir, &which) != 0) {
    if (st.reported != nullptr && st.reported[which] == 0) {
      st.reported[which] = 1;
      send_msg(st.report_fd, k_msg_guard_refused, 0, static_cast<int32_t>(which), EACCES, 0);
    }
    return true;
  }
  return depth_refused(st, full, made);
}

// The depth rule alone, reported as refused_path does.
bool depth_refused(GuardState& st, const char* full, GuardMade made) {
  if (st.list.n_names == 0) return false;
  char want[k_path_buf];
  std::size_t n = std::strlen(full);
  if (n >= sizeof want) return false;
  guard_fold(full, n, want);
  std::size_t len = 0;
  if (guard_depth_check(st.list, want, made, &len) == 0) return false;
  // As many components of the path as given as the folded prefix has (folding keeps '/').
  std::size_t slashes = 0;
  for (std::size_t i = 0; i < len; ++i) slashes += want[i] == '/' ? 1 : 0;
  std::size_t end = 0;
  for (std::size_t seen = 0; full[end] != '\0'; ++end) {
    if (full[end] == '/' && ++seen > slashes) break;
  }
  report_depth(st, full, end);
  return true;
}

// Whether `name` is the first name of a protected name (".git", ".envrc"), which the
// depth rule does not let come into being in a directory deeper than PATH_MAX, where it
// is not checked: else a tree made there with .git/hooks inside could be renamed up to
// where it is checked no more (a rename checks the name it makes, not what it moves).
bool deep_first_name(const GuardState& st, const char* name) {
  if (st.list.n_names == 0) return false;
  char folded[NAME_MAX + 1];
  std::size_t n = ::strnlen(name, NAME_MAX + 1);
  if (n > NAME_MAX) return false;
  n = guard_fold(name, n, folded);
  for (std::size_t i = 0; i < st.list.n_names; ++i) {
    const char* p = st.list.names[i];
    if (std::strncmp(p, folded, n) == 0 && (p[n] == '\0' || p[n] == '/')) return true;
  }
  return false;
}

// rename() of a directory out of a lifted path, or of one that holds a lifted path: what
// the lift let the command make there must not land where it is protected. EXDEV makes
// mv and the like copy instead, one checked call at a time.
bool leaves_lift(const GuardState& st, const char* from, const char* to) {
  const GuardList& g = st.list;
  char f[k_path_buf], d[k_path_buf];
  std::size_t nf = std::strlen(from), nd = std::strlen(to);
  if (nf >= sizeof f || nd >= sizeof d) return false;
  guard_fold(from, nf, f);
  guard_fold(to, nd, d);
  for (const auto& [list, count] : {std::pair{g.lifted, g.n_lifted}, std::pair{g.new_trees, g.n_new_trees}}) {
    for (std::size_t i = 0; i < count; ++i) {
      if ((under(f, list[i]) && !under(d, list[i])) || under(list[i], f)) return true;
    }
  }
  return false;
}

// What lies at `name` in `dir`, for the depth rule: what a rename moves.
GuardMade made_of(int dir, const char* name) {
  struct stat st {};
  if (::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return GuardMade::other;
  return S_ISDIR(st.st_mode) ? GuardMade::dir : S_ISLNK(st.st_mode) ? GuardMade::symlink : GuardMade::other;
}

bool refused(Target& t, const Loc& loc, GuardMade made) {
  Buf full;
  // Longer than any guarded path; but see deep_first_name.
  if (!loc.full(full)) return deep_first_name(*t.state, loc.bare);
  return refused_path(*t.state, full.s, made);
}

void reply(int listener, std::uint64_t id, int err) {
  seccomp_notif_resp r{};
  r.id = id;
  r.error = err == 0 ? 0 : -err;
  r.val = 0;
  ::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &r);
}

// Hands `fd` over as the call's result: 0, or why the command was not given it, the call
// then not answered yet: it could not take it (EMFILE, say), or ENOENT when the caller no
// longer waits (killed; a tid looked up before may then have named another thread).
int hand_over(int listener, std::uint64_t id, int fd, bool cloexec) {
  seccomp_notif_addfd a{};
  a.id = id;
  a.flags = SECCOMP_ADDFD_FLAG_SEND;
  a.srcfd = static_cast<std::uint32_t>(fd);
  a.newfd_flags = cloexec ? O_CLOEXEC : 0;
  return ::ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a) >= 0 ? 0 : errno;
}

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
bool go_on(int listener, std::uint64_t id) {
  seccomp_notif_resp r{};
  r.id = id;
  r.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  return ::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &r) == 0;
}

// Whether the owner of a file init just made (init's fsuid, which is the command's) may
// open it with `flags`: the kernel does not ask that of an open that made the file, but
// the command's own open of it does.
bool owner_may(int fd, int flags) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  int acc = flags & O_ACCMODE;
  mode_t need = acc == O_RDONLY ? S_IRUSR : acc == O_WRONLY ? S_IWUSR : S_IRUSR | S_IWUSR;
  return (st.st_mode & need) == need;
}

// Removes a file made new (O_EXCL) as `path` relative to `at` for a call that did not get
// it, if the name still holds it. Nothing in the sandbox can rename a directory
// meanwhile: every call that could waits for this one.
void undo_new(int fd, int at, const char* path) {
  struct stat made {}, now {};
  if (::fstat(fd, &made) == 0 && ::fstatat(at, path, &now, AT_SYMLINK_NOFOLLOW) == 0 && made.st_ino == now.st_ino &&
      made.st_dev == now.st_dev) {
    ::unlinkat(at, path, 0);
  }
}

bool is_ctty(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(5, 0);
}

// The command has no controlling terminal (it runs in a session of its own); init, in the
// caller's session, has one. /dev/tty must not open init's.
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
  struct stat d {};
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

// Whether an open with `flags` may change the file: write access, or O_TRUNC.
bool writes(int flags) { return (flags & (O_ACCMODE | O_TRUNC)) != 0; }

// Whether the file `fd` (of ours) is one the depth rule protects, by its real path.
bool fd_refused(Target& t, int fd) {
  if (t.state->list.n_names == 0) return false;
  char real[PATH_MAX];
  ssize_t n = ::readlink(SelfFd(fd).s, real, sizeof real - 1);
  if (n <= 0 || static_cast<std::size_t>(n) >= sizeof real - 1 || real[0] != '/') return false;  // deeper than PATH_MAX, or not a path
  real[n] = '\0';
  return depth_refused(*t.state, real, GuardMade::other);
}

// open, openat, creat: an fd of ours to hand over, -errno, or k_replied. Without O_CREAT
// (a write open, with the depth rule), it opens an existing file only.
int do_open(Target& t, int listener, std::uint64_t id, int dirfd, char* path, int flags,
            mode_t mode, Made& made) {
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
      struct stat st {};
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
    struct stat st {};
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
      struct stat now {};
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
    if (fd < 0 && errno == EWOULDBLOCK && (flags & O_NONBLOCK) == 0) {  // a lease: may wait
      UniqueFd file(::openat(loc.parent.get(), loc.bare, O_PATH | O_NOFOLLOW | O_CLOEXEC));
      struct stat now {};
      if (!file || ::fstat(file.get(), &now) != 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev) continue;
      open_in_child(listener, id, file.get(), flags);
      return k_replied;
    }
    if (fd >= 0 && !exists) made.set(loc.parent.get(), loc.bare);
    return finish_open(fd, flags);
  }
  return -ELOOP;
}

// truncate(): the file the path leads to, found as an open without O_CREAT finds it
// (each symlink followed by hand, each name checked), truncated through init's fd of it.
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
    struct stat st {};
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

// mkdir, mknod, symlink: 0 or -errno.
int do_make(Target& t, long nr, int dirfd, const char* path, mode_t mode, dev_t dev,
            const char* target) {
  Loc loc;
  if (int r = resolve(t, dirfd, -1, path, loc); r < 0) return r;
  if (loc.whole_fd >= 0) return -EEXIST;
  GuardMade made = (nr == SYS_mkdir || nr == SYS_mkdirat) ? GuardMade::new_dir
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

int do_link(Target& t, int olddirfd, const char* oldpath, int newdirfd, const char* newpath,
            int flags) {
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
  struct stat st {};
  if (::fstat(src.get(), &st) != 0) return -errno;
  // A second name for a protected file would let it be opened for writing by that name.
  if (fd_refused(t, src.get())) return -EACCES;
  Loc to;
  if (int r = resolve(t, newdirfd, -1, newpath, to); r < 0) return r;
  if (to.whole_fd >= 0) return -EEXIST;
  if (!to.dot() && refused(t, to, GuardMade::other)) return -EACCES;
  return ::linkat(AT_FDCWD, SelfFd(src.get()).s, to.parent.get(), to.name, AT_SYMLINK_FOLLOW) == 0 ? 0 : -errno;
}

int do_rename(Target& t, int olddirfd, const char* oldpath, int newdirfd,
              const char* newpath, unsigned flags) {
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
      if ((flags & RENAME_EXCHANGE) != 0 && made_of(to.parent.get(), to.name) == GuardMade::dir && leaves_lift(st, d.s, f.s)) {
        return -EXDEV;
      }
    }
  }
  if (::syscall(SYS_renameat2, from.parent.get(), from.name, to.parent.get(), to.name, flags) != 0) return -errno;
  return 0;
}

// bind(): a unix socket's path is a new name like any other; init binds the command's
// socket (the same socket, taken with pidfd_getfd) itself. Other addresses are bound as
// read, once.
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

int as_fd(std::uint64_t arg) { return static_cast<int>(static_cast<std::uint32_t>(arg)); }

// Whether `name` (as the command gave it, `len` bytes) folds to one of a set's names.
bool among(const char* const* set, std::size_t mask, const char* name, std::size_t len) {
  char folded[NAME_MAX + 1];
  if (len > NAME_MAX) return false;  // longer than any name the kernel takes
  len = guard_fold(name, len, folded);
  for (std::size_t i = name_hash(folded, len) & mask;; i = (i + 1) & mask) {
    if (set[i] == nullptr) return false;
    if (std::strncmp(set[i], folded, len) == 0 && set[i][len] == '\0') return true;
  }
}

// Opens the existing regular file or character device `name` in `dir` (checked) for a
// call and hands it over: true, or false for the full way (a symlink, a FIFO, gone, a
// lease, /proc). Only a process on the host can put a symlink or a FIFO there meanwhile: every
// call of the sandbox's that could waits for this one. O_NONBLOCK: a lease may wait.
bool open_existing(int listener, std::uint64_t id, int dir, const char* name, int flags) {
  // /proc (reached through a symlink, say to /proc/1): the full way lets the command have
  // only its own processes' files there, never init's.
  struct statfs sfs {};
  if (::fstatfs(dir, &sfs) != 0 || sfs.f_type == PROC_SUPER_MAGIC) return false;
  struct stat st {};
  if (::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode))) return false;
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
bool fast_path(int listener, Target& t, const seccomp_notif& req, const char* path) {
  long nr = req.data.nr;
  const auto& a = req.data.args;
  bool is_open = nr == SYS_open || nr == SYS_openat || nr == SYS_creat;
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
  // call saved about 2 us, but then nothing could check that, and a file made for a
  // thread killed meanwhile could not always be found again to remove it.
  UniqueFd base;
  int at = AT_FDCWD;
  if (path[0] != '/') {
    int fd = open_dirfd(t, (nr == SYS_openat || nr == SYS_mkdirat) ? as_fd(a[0]) : AT_FDCWD);
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
    // The getcwd system call after fchdir(): a quarter of what readlink() of
    // /proc/self/fd/N costs (0.8 against 3.3 us here). Nothing of init's resolves a path
    // relative to its working directory. Not glibc's getcwd(), which past PATH_MAX walks
    // up the tree itself, with malloc().
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
    int flags = nr == SYS_open ? static_cast<int>(a[1]) : nr == SYS_openat ? static_cast<int>(a[2]) : (O_CREAT | O_WRONLY | O_TRUNC);
    auto mode = static_cast<mode_t>(nr == SYS_open ? a[2] : nr == SYS_openat ? a[3] : a[1]);
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
      struct stat there {};
      if (may_go_on(st, flags) && ::fstatat(at, path, &there, AT_SYMLINK_NOFOLLOW) == 0 &&
          !S_ISLNK(there.st_mode)) {
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
bool write_fast_path(int listener, Target& t, const seccomp_notif& req, const char* path) {
  long nr = req.data.nr;
  const auto& a = req.data.args;
  int flags = static_cast<int>(nr == SYS_open ? a[1] : a[2]);
  if ((flags & O_DIRECTORY) != 0) return false;
  PlainPath pp;
  if (!plain_path(path, pp)) return false;
  const char* slash = pp.slash;
  const char* name = pp.name;
  std::size_t len = pp.len;
  UniqueFd base, parent_fd;
  int at = AT_FDCWD;
  if (path[0] != '/') {
    int fd = open_dirfd(t, nr == SYS_openat ? as_fd(a[0]) : AT_FDCWD);
    if (fd < 0) return false;
    base.reset(fd);
    at = fd;
  }
  int dir = open_parent(at, path, slash, parent_fd);
  if (dir == -1 || dir == AT_FDCWD) return false;
  struct stat st {};
  if (::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode))) return false;
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
  bool no_create = (nr == SYS_open && (a[1] & O_CREAT) == 0) || (nr == SYS_openat && (a[2] & O_CREAT) == 0);
  if (no_create && ((nr == SYS_open ? a[1] : a[2]) & k_tmpfile_flag) == k_tmpfile_flag) {
    go_on(listener, req.id);
    return;
  }
  if (no_create ? write_fast_path(listener, t, req, p1) : fast_path(listener, t, req, p1)) return;

  int res = 0;
  switch (nr) {
    case SYS_open:
    case SYS_creat:
    case SYS_openat: {
      int dirfd = nr == SYS_openat ? as_fd(a[0]) : AT_FDCWD;
      int flags = nr == SYS_open ? static_cast<int>(a[1]) : nr == SYS_openat ? static_cast<int>(a[2]) : (O_CREAT | O_WRONLY | O_TRUNC);
      auto mode = static_cast<mode_t>(nr == SYS_open ? a[2] : nr == SYS_openat ? a[3] : a[1]);
      Made made;
      int fd = do_open(t, listener, req.id, dirfd, p1, flags, mode, made);
      if (fd == k_replied) return;
      if (fd < 0) return reply(listener, req.id, -fd);
      hand_over_new(listener, req.id, fd, (flags & O_CLOEXEC) != 0, [&] { made.undo(fd); });
      ::close(fd);
      return;
    }
    case SYS_truncate: res = do_truncate(t, p1, static_cast<off_t>(a[1])); break;
    case SYS_mkdir: res = do_make(t, nr, AT_FDCWD, p1, static_cast<mode_t>(a[1]), 0, nullptr); break;
    case SYS_mkdirat: res = do_make(t, nr, as_fd(a[0]), p1, static_cast<mode_t>(a[2]), 0, nullptr); break;
    case SYS_mknod: res = do_make(t, nr, AT_FDCWD, p1, static_cast<mode_t>(a[1]), static_cast<dev_t>(a[2]), nullptr); break;
    case SYS_mknodat:
      res = do_make(t, nr, as_fd(a[0]), p1, static_cast<mode_t>(a[2]), static_cast<dev_t>(a[3]), nullptr);
      break;
    case SYS_symlink: res = do_make(t, nr, AT_FDCWD, p2, 0, 0, p1); break;
    case SYS_symlinkat: res = do_make(t, nr, as_fd(a[1]), p2, 0, 0, p1); break;
    case SYS_link: res = do_link(t, AT_FDCWD, p1, AT_FDCWD, p2, 0); break;
    case SYS_linkat: res = do_link(t, as_fd(a[0]), p1, as_fd(a[2]), p2, static_cast<int>(a[4])); break;
    case SYS_rename: res = do_rename(t, AT_FDCWD, p1, AT_FDCWD, p2, 0); break;
    case SYS_renameat: res = do_rename(t, as_fd(a[0]), p1, as_fd(a[2]), p2, 0); break;
    case SYS_renameat2:
      res = do_rename(t, as_fd(a[0]), p1, as_fd(a[2]), p2, static_cast<unsigned>(a[4]));
      break;
    case SYS_bind: res = do_bind(t, as_fd(a[0]), a[1], a[2]); break;
    default: res = -ENOSYS;
  }
  reply(listener, req.id, -res);
}

}  // namespace

namespace {

// The code point of the valid, shortest-form UTF-8 sequence at in[i..n), and its length
// in `len`; -1 for anything else (an invalid sequence is opaque to Linux's casefolding).
long utf8_at(const char* in, std::size_t i, std::size_t n, std::size_t& len) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(in[i + k]); };
  auto cont = [&](std::size_t k) { return i + k < n && (b(k) & 0xC0) == 0x80; };
  unsigned char c = b(0);
  if (c >= 0xC2 && c <= 0xDF && cont(1)) {
    len = 2;
    return static_cast<long>(((c & 0x1FU) << 6) | (b(1) & 0x3FU));
  }
  if (c >= 0xE0 && c <= 0xEF && cont(1) && cont(2) && !(c == 0xE0 && b(1) < 0xA0) && !(c == 0xED && b(1) >= 0xA0)) {
    len = 3;
    return static_cast<long>(((c & 0x0FU) << 12) | ((b(1) & 0x3FU) << 6) | (b(2) & 0x3FU));
  }
  if (c >= 0xF0 && c <= 0xF4 && cont(1) && cont(2) && cont(3) && !(c == 0xF0 && b(1) < 0x90) &&
      !(c == 0xF4 && b(1) >= 0x90)) {
    len = 4;
    return static_cast<long>(((c & 0x07U) << 18) | ((b(1) & 0x3FU) << 12) | ((b(2) & 0x3FU) << 6) | (b(3) & 0x3FU));
  }
  return -1;
}

// Unicode's Default_Ignorable_Code_Point, which Linux's casefolding drops from names.
bool ignorable(long cp) {
  static constexpr long k_ranges[][2] = {
      {0x00AD, 0x00AD},   {0x034F, 0x034F},   {0x061C, 0x061C},   {0x115F, 0x1160}, {0x17B4, 0x17B5},
      {0x180B, 0x180F},   {0x200B, 0x200F},   {0x202A, 0x202E},   {0x2060, 0x206F}, {0x3164, 0x3164},
      {0xFE00, 0xFE0F},   {0xFEFF, 0xFEFF},   {0xFFA0, 0xFFA0},   {0xFFF0, 0xFFF8}, {0x1BCA0, 0x1BCA3},
      {0x1D173, 0x1D17A}, {0xE0000, 0xE0FFF},
  };
  for (const auto& r : k_ranges) {
    if (cp >= r[0] && cp <= r[1]) return true;
  }
  return false;
}

// The characters whose full case folding (after canonical decomposition) is ASCII.
const char* folds_to_ascii(long cp) {
  switch (cp) {
    case 0x017F: return "s";    // long s
    case 0x00DF: return "ss";   // sharp s
    case 0x1E9E: return "ss";   // capital sharp s
    case 0x212A: return "k";    // Kelvin sign
    case 0xFB00: return "ff";   // the Latin ligatures
    case 0xFB01: return "fi";
    case 0xFB02: return "fl";
    case 0xFB03: return "ffi";
    case 0xFB04: return "ffl";
    case 0xFB05: return "st";
    case 0xFB06: return "st";
    default: return nullptr;
  }
}

}  // namespace

std::size_t guard_fold(const char* in, std::size_t n, char* out) {
  std::size_t o = 0;
  for (std::size_t i = 0; i < n;) {
    auto c = static_cast<unsigned char>(in[i]);
    std::size_t len = 1;
    long cp = c >= 0x80 ? utf8_at(in, i, n, len) : -1;
    if (cp >= 0 && ignorable(cp)) {
      i += len;
      continue;
    }
    if (const char* to = cp >= 0 ? folds_to_ascii(cp) : nullptr) {
      for (; *to != '\0'; ++to) out[o++] = *to;  // never longer than the sequence it replaces
      i += len;
      continue;
    }
    if (cp >= 0) {
      std::memmove(out + o, in + i, len);  // `out` may be `in`, at or behind it
      o += len;
      i += len;
      continue;
    }
    out[o++] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : static_cast<char>(c);
    ++i;
  }
  out[o] = '\0';
  return o;
}

int guard_check(const GuardList& list, const char* full, bool is_mkdir, std::size_t* which) {
  // Folded first: a path longer than a guarded one may fold to it.
  char want[k_path_buf], have[k_path_buf];
  std::size_t n = std::strlen(full);
  if (n >= sizeof want) return 0;  // the caller's Buf holds no more
  n = guard_fold(full, n, want);
  for (std::size_t i = 0; i < list.count; ++i) {
    std::size_t len = std::strlen(list.paths[i]);
    if (len >= sizeof have) continue;
    guard_fold(list.paths[i], len, have);
    if (std::strcmp(have, want) == 0 || (!is_mkdir && std::strncmp(have, want, n) == 0 && have[n] == '/')) {
      if (which != nullptr) *which = i;
      return EACCES;
    }
  }
  return 0;
}

int guard_depth_check(const GuardList& g, const char* want, GuardMade made, std::size_t* refused_len) {
  if (g.n_names == 0 || !under_any(want, g.roots, g.n_roots) || under_any(want, g.exempt, g.n_exempt)) return 0;
  std::size_t n = std::strlen(want);
  // Every component that starts a protected name (each starts with a dot), against each
  // name: the path at or below all of it, or ending inside it at a '/'.
  for (std::size_t i = 0; i < n; ++i) {
    if (want[i] != '/' || want[i + 1] != '.') continue;
    const char* rest = want + i + 1;
    std::size_t m = n - i - 1;
    for (std::size_t k = 0; k < g.n_names; ++k) {
      const char* name = g.names[k];
      std::size_t len = std::strlen(name);
      bool whole = std::strncmp(rest, name, len) == 0 && (rest[len] == '\0' || rest[len] == '/');
      bool leading = !whole && m < len && std::strncmp(rest, name, m) == 0 && name[m] == '/';
      if (!whole && !leading) continue;
      if (leading) {
        bool gitfile = made == GuardMade::other && std::strncmp(name, ".git/", 5) == 0;
        if (made == GuardMade::new_dir || (made == GuardMade::other && !gitfile)) continue;
      }
      // Lifted: by a path named in --allow-write at or below the name's first directory
      // that holds `want`, or by a new tree that holds it.
      const char* first_end = std::strchr(name, '/');
      std::size_t top = i + 1 + (first_end != nullptr ? static_cast<std::size_t>(first_end - name) : len);
      bool lifted = under_any(want, g.new_trees, g.n_new_trees);
      for (std::size_t l = 0; !lifted && l < g.n_lifted; ++l) {
        const char* lift = g.lifted[l];
        lifted = under(want, lift) && std::strncmp(lift, want, top) == 0 && (lift[top] == '\0' || lift[top] == '/');
      }
      if (lifted) continue;
      if (refused_len != nullptr) *refused_len = whole ? i + 1 + len : n;
      return EACCES;
    }
  }
  return 0;
}

int install_guard(const sock_filter* filter, std::size_t n) {
  sock_fprog prog{static_cast<unsigned short>(n), const_cast<sock_filter*>(filter)};
  return static_cast<int>(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                                    SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &prog));
}

bool serve_guard(int listener, GuardState& state) {
  seccomp_notif req;
  std::memset(&req, 0, sizeof req);
  if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) return errno == EINTR || errno == ENOENT;
  handle(listener, state, req);
  return true;
}

bool prepare_guard(const GuardList& in, int report_fd, GuardState& out) {
  // The paths, a second copy cut into names, and two hash sets with at least twice as
  // many slots as there can be names (one per byte at most); then the depth rule's lists,
  // folded.
  const std::pair<const char* const*, std::size_t> extra[] = {
      {in.names, in.n_names}, {in.roots, in.n_roots}, {in.exempt, in.n_exempt},
      {in.lifted, in.n_lifted}, {in.new_trees, in.n_new_trees}};
  std::size_t text = 0, extra_text = 0, extra_count = 0;
  for (std::size_t i = 0; i < in.count; ++i) text += std::strlen(in.paths[i]) + 1;
  for (std::size_t i = 0; i < in.n_names; ++i) text += std::strlen(in.names[i]) + 1;  // into the sets too
  for (const auto& [list, count] : extra) {
    extra_count += count;
    for (std::size_t i = 0; i < count; ++i) extra_text += std::strlen(list[i]) + 1;
  }
  std::size_t slots = 16;
  while (slots < 2 * text) slots *= 2;
  std::size_t bytes = (in.count + extra_count + 2 * slots) * sizeof(char*) + 2 * text + extra_text + in.count;
  void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return false;  // mmap'd memory is zeroed: every slot empty
  auto** paths = static_cast<const char**>(m);
  auto** names = paths + in.count;
  auto** leaves = names + slots;
  auto** lists = leaves + slots;
  char* pool = reinterpret_cast<char*>(lists + extra_count);
  // Every name of `path` into the sets, from a copy cut in place.
  auto add_names = [&](const char* path) {
    std::size_t len = std::strlen(path);
    char* copy = pool;
    std::memcpy(copy, path, len + 1);
    pool += len + 1;
    char* last = nullptr;
    for (char* c = copy; *c != '\0';) {
      if (*c == '/') {
        *c++ = '\0';
        continue;
      }
      char* start = c;
      while (*c != '\0' && *c != '/') ++c;
      std::size_t n = static_cast<std::size_t>(c - start);
      if (*c != '\0') *c++ = '\0';
      n = guard_fold(start, n, start);  // in place: never longer
      set_insert(names, slots - 1, start, n);
      last = start;
    }
    if (last != nullptr) set_insert(leaves, slots - 1, last, std::strlen(last));
  };
  for (std::size_t i = 0; i < in.count; ++i) {
    std::size_t len = std::strlen(in.paths[i]);
    std::memcpy(pool, in.paths[i], len + 1);
    paths[i] = pool;
    pool += len + 1;
    add_names(in.paths[i]);
  }
  for (std::size_t i = 0; i < in.n_names; ++i) add_names(in.names[i]);
  const char* const* copied[5];
  std::size_t k = 0, at = 0;
  for (const auto& [list, count] : extra) {
    copied[k++] = lists + at;
    for (std::size_t i = 0; i < count; ++i) {
      std::size_t len = std::strlen(list[i]);
      guard_fold(list[i], len, pool);
      lists[at++] = pool;
      pool += len + 1;
    }
  }
  mode_t um = ::umask(022);
  ::umask(um);
  auto* reported = reinterpret_cast<unsigned char*>(pool);
  GuardList list{paths, in.count, copied[0], in.n_names, copied[1], in.n_roots, copied[2], in.n_exempt,
                 copied[3], in.n_lifted, copied[4], in.n_new_trees};
  out = GuardState{list, names, slots - 1, leaves, slots - 1, um, false, false, 0, {}, 0, reported, report_fd, {}, 0, false};
  for (auto& e : out.seen) e = {0, -1, 0, 0, 0};
  return true;
}

}  // namespace zb::exec
