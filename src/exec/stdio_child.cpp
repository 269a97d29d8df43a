// The child's side of the stdio relay (exec/stdio.hpp): which of fds 0-2 must not reach
// the command as they are, and the pipes that replace them, sent to the supervisor. Runs
// after clone(): no allocation (zb_child).
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "exec/stdio.hpp"

namespace zb::exec {

bool std_fd_needs_relay(int fd) {
  if (::fcntl(fd, F_GETFL) < 0) return false;  // closed: stays closed
  struct stat st{};
  if (::fstat(fd, &st) != 0) return true;
  if (S_ISSOCK(st.st_mode)) return false;
  if (S_ISFIFO(st.st_mode)) {
    struct statfs sfs{};
    return ::fstatfs(fd, &sfs) != 0 || sfs.f_type != PIPEFS_MAGIC;  // a named FIFO is a host inode
  }
  return true;
}

int relay_std_fds(int channel, unsigned reopened, bool keep_devices) {
  struct stat st[3] = {};
  bool relay[3] = {};
  for (int fd = 0; fd <= 2; ++fd) {
    relay[fd] = (reopened & (1U << fd)) == 0 && std_fd_needs_relay(fd);
    if (relay[fd]) ::fstat(fd, &st[fd]);
    if (relay[fd] && keep_devices && (S_ISCHR(st[fd].st_mode) || S_ISBLK(st[fd].st_mode))) relay[fd] = false;
  }
  int theirs[4];
  // How many fds, then the std fd each one serves; k_stdin_peek marks a second read end
  // of stdin's pipe, through which the supervisor sees what the command left unread.
  unsigned char data[5] = {0, 0, 0, 0, 0};
  int n = 0;
  for (int fd = 0; fd <= 2; ++fd) {
    if (!relay[fd]) continue;
    int cloexec = (::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0 ? O_CLOEXEC : 0;
    // stdout and stderr on one file (2>&1) share one pipe, so their order is kept.
    if (fd == 2 && relay[1] && st[1].st_dev == st[2].st_dev && st[1].st_ino == st[2].st_ino) {
      if (::dup3(1, 2, cloexec) < 0) return -1;
      continue;
    }
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return -1;
    int mine = fd == 0 ? p[0] : p[1];
    theirs[n] = fd == 0 ? p[1] : p[0];
    if (::dup3(mine, fd, cloexec) < 0) return -1;
    ::close(mine);
    data[1 + n] = static_cast<unsigned char>(fd);
    ++n;
    if (fd == 0) {
      theirs[n] = ::fcntl(0, F_DUPFD_CLOEXEC, 3);
      if (theirs[n] < 0) return -1;
      data[1 + n] = k_stdin_peek;
      ++n;
    }
  }
  data[0] = static_cast<unsigned char>(n);
  iovec iov{data, sizeof data};
  alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (n > 0) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(static_cast<std::size_t>(n) * sizeof(int));
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(static_cast<std::size_t>(n) * sizeof(int));
    std::memcpy(CMSG_DATA(c), theirs, static_cast<std::size_t>(n) * sizeof(int));
  }
  ssize_t sent;
  do {
    sent = ::sendmsg(channel, &msg, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  int err = errno;
  for (int i = 0; i < n; ++i) ::close(theirs[i]);
  errno = err;
  return sent == static_cast<ssize_t>(sizeof data) ? 0 : -1;
}

}  // namespace zb::exec
