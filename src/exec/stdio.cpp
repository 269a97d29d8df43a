// The supervisor's side of the stdio relay (exec/stdio.hpp): the copy loops between the
// child's pipes and the caller's fds, the terminal modes put back, and the pipes lent to
// root's own ids.
#include "exec/stdio.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "exec/signals.hpp"

namespace zb::exec {
namespace {

constexpr std::size_t k_chunk = 1 << 16;

// Writes all of buf, waiting on a non-blocking fd; `stop` (or -1) ends the wait early.
// false when the write failed or was stopped.
bool write_all(int fd, const char* buf, std::size_t len, int stop) {
  while (len > 0) {
    ssize_t n = ::write(fd, buf, len);
    if (n > 0) {
      buf += n;
      len -= static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return false;
    pollfd p[2] = {{fd, POLLOUT, 0}, {stop, POLLIN, 0}};
    if (::poll(p, stop >= 0 ? 2 : 1, -1) < 0 && errno != EINTR) return false;
    if (stop >= 0 && (p[1].revents & POLLIN) != 0) return false;
  }
  return true;
}

}  // namespace

struct StdioRelay::Pipe {
  UniqueFd end;                // ours: the read end of stdout's or stderr's pipe, the write end of stdin's
  UniqueFd peek;               // stdin: a read end never read from, to count what the command left
  int target = -1;             // the caller's fd: 0, 1 or 2
  off_t start = -1;            // stdin: the caller's offset before the copy, when it is seekable
  unsigned long long fed = 0;  // stdin: bytes written into the pipe
  std::thread thread;
};

void StdioRelay::start(int channel) {
  unsigned char data[5] = {};
  iovec iov{data, sizeof data};
  alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t got;
  do {
    got = ::recvmsg(channel, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  if (got != static_cast<ssize_t>(sizeof data)) return;
  int fds[4] = {-1, -1, -1, -1};
  std::size_t n_fds = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    n_fds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    if (n_fds > 4) n_fds = 4;
    std::memcpy(fds, CMSG_DATA(c), n_fds * sizeof(int));
  }
  if (n_fds == 0) return;
  UniqueFd peek;
  for (std::size_t i = 0; i < n_fds; ++i) {
    if (data[0] == n_fds && data[1 + i] == k_stdin_peek) {
      peek.reset(fds[i]);
      fds[i] = -1;
    }
  }
  m_stop.reset(::eventfd(0, EFD_CLOEXEC));
  AllSignalsBlocked blocked;  // signals are the main thread's business
  for (std::size_t i = 0; i < n_fds; ++i) {
    if (fds[i] < 0) continue;
    auto p = std::make_unique<Pipe>();
    p->end.reset(fds[i]);
    p->target = data[0] == n_fds && data[1 + i] <= 2 ? data[1 + i] : -1;
    if (p->target < 0) continue;
    Pipe* raw = p.get();
    int stop = m_stop.get();
    if (raw->target == 0) {
      raw->start = ::lseek(0, 0, SEEK_CUR);
      raw->peek.reset(peek.release());  // to the one stdin pipe; a second would get none
      ::fcntl(raw->end.get(), F_SETFL, O_NONBLOCK);
      raw->thread = std::thread([raw, stop] {
        char buf[k_chunk];
        for (;;) {
          pollfd w[2] = {{0, POLLIN, 0}, {stop, POLLIN, 0}};
          if (::poll(w, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
          }
          if ((w[1].revents & POLLIN) != 0) break;
          ssize_t n = ::read(0, buf, sizeof buf);
          if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
          if (n == 0) {
            raw->end.reset();  // EOF for the command
            break;
          }
          if (n < 0 || !write_all(raw->end.get(), buf, static_cast<std::size_t>(n), stop)) break;
          raw->fed += static_cast<unsigned long long>(n);
        }
        // Stopped, or the command closed its end (the peek end keeps the pipe, so a
        // full pipe waits here for the stop).
      });
    } else {
      raw->thread = std::thread([raw] {
        // read() and write(), not splice(): a splice into the caller's file takes its
        // offset when it starts and puts it back when it returns, without the lock that
        // write() holds, so zerobox's own lines written to the same file (stderr) while a
        // splice waited for the pipe were overwritten.
        int in = raw->end.get(), out = raw->target;
        char buf[k_chunk];
        for (;;) {
          ssize_t n = ::read(in, buf, sizeof buf);
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0 || !write_all(out, buf, static_cast<std::size_t>(n), -1)) break;
        }
        // A write that failed (a FIFO's reader gone) closes the pipe: the command's next
        // write gets EPIPE, as it would have on the caller's file.
        raw->end.reset();
      });
    }
    m_pipes.push_back(std::move(p));
  }
}

void StdioRelay::finish() {
  if (m_stop) {
    uint64_t one = 1;
    (void)!::write(m_stop.get(), &one, sizeof one);
  }
  for (auto& p : m_pipes) {
    if (p->thread.joinable()) p->thread.join();
    if (p->target == 0 && p->start >= 0) {
      // What the command did not read goes back to the caller: the offset ends after
      // the bytes it consumed, as it would have without the pipe.
      int left = 0;
      if (!p->peek || ::ioctl(p->peek.get(), FIONREAD, &left) != 0) left = 0;
      ::lseek(0, p->start + static_cast<off_t>(p->fed) - left, SEEK_SET);
    }
  }
  m_pipes.clear();
  m_stop.reset();
}

StdioRelay::StdioRelay() = default;
StdioRelay::~StdioRelay() { finish(); }

TerminalModes::TerminalModes() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::isatty(fd) && ::tcgetattr(fd, &m_saved) == 0) {
      m_fd = fd;
      return;
    }
  }
}

TerminalModes::~TerminalModes() {
  if (m_fd < 0) return;
  termios now{};
  if (::tcgetattr(m_fd, &now) != 0) return;
  bool same = now.c_iflag == m_saved.c_iflag && now.c_oflag == m_saved.c_oflag && now.c_cflag == m_saved.c_cflag &&
              now.c_lflag == m_saved.c_lflag && std::memcmp(now.c_cc, m_saved.c_cc, sizeof now.c_cc) == 0;
  // Only from the foreground: a background process that sets them is stopped (SIGTTOU).
  if (!same && ::tcgetpgrp(m_fd) == ::getpgrp()) ::tcsetattr(m_fd, TCSADRAIN, &m_saved);
}

void LentPipes::lend(uid_t uid, gid_t gid) {
  for (int fd = 0; fd <= 2; ++fd) {
    struct stat st{};
    struct statfs sfs{};
    if (::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode) || ::fstatfs(fd, &sfs) != 0 || sfs.f_type != PIPEFS_MAGIC)
      continue;
    bool seen = false;
    for (const auto& s : m_saved) seen = seen || (s.dev == st.st_dev && s.ino == st.st_ino);
    if (seen || (st.st_uid == uid && st.st_gid == gid)) continue;
    if (::fchown(fd, uid, gid) == 0) m_saved.push_back({fd, st.st_dev, st.st_ino, st.st_uid, st.st_gid});
  }
}

LentPipes::~LentPipes() {
  for (const auto& s : m_saved) {
    struct stat st{};
    if (::fstat(s.fd, &st) == 0 && st.st_dev == s.dev && st.st_ino == s.ino) (void)!::fchown(s.fd, s.uid, s.gid);
  }
}

}  // namespace zb::exec
