// UniqueFd: the single owner of a file descriptor. Move-only; closes on destruction.
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <utility>

#include "util/error.hpp"

namespace zb {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : m_fd(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& other) noexcept : m_fd(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  ~UniqueFd() { reset(); }

  int get() const { return m_fd; }
  explicit operator bool() const { return m_fd >= 0; }
  int release() { return std::exchange(m_fd, -1); }
  // Keeps errno: `f.reset(::open(...)); if (!f && errno == ENOENT)` reads open's errno
  // even when an old descriptor was closed after the open.
  void reset(int fd = -1) {
    if (m_fd >= 0) {
      int saved = errno;
      ::close(m_fd);
      errno = saved;
    }
    m_fd = fd;
  }

 private:
  int m_fd = -1;
};

// A pipe whose two ends are owned separately.
struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

// pipe2(2) into its two owners. The error allocates: not for the child after clone(),
// which calls pipe2 itself.
inline Result<Pipe> make_pipe(int flags = O_CLOEXEC) {
  int fds[2];
  if (::pipe2(fds, flags) != 0) return fail("pipe2");
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

}  // namespace zb
