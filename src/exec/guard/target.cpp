// The calling thread of a create-guard notification (Target, exec/guard/internal.hpp):
// its tgid and umask from /proc/TID/status, remembered per thread while it runs the same
// program; its memory, read with process_vm_readv; its fds, taken with pidfd_getfd.
#include <fcntl.h>
#include <linux/seccomp.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "exec/guard/internal.hpp"

namespace zb::exec::guard_detail {
namespace {

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

}  // namespace

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

int take_fd(Target& t, int fd) {
  if (fd < 0) return -EBADF;
  return if_alive(t, static_cast<int>(::syscall(SYS_pidfd_getfd, t.pidfd(), fd, 0U)));
}

int open_dirfd(Target& t, int dirfd) {
  if (dirfd != AT_FDCWD) return take_fd(t, dirfd);
  Buf p;
  p.add("/proc/").num(static_cast<unsigned long>(t.tid)).add("/cwd");
  return if_alive(t, ::open(p.s, O_PATH | O_CLOEXEC));
}

}  // namespace zb::exec::guard_detail
