#include "util/beneath.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/log.hpp"

namespace zb::util {

int openat2_fd(int dirfd, const char* path, std::uint64_t flags, std::uint64_t resolve, mode_t mode) {
  open_how how{};
  how.flags = flags | static_cast<std::uint64_t>(O_CLOEXEC);
  how.mode = mode;
  how.resolve = resolve;
  return static_cast<int>(::syscall(SYS_openat2, dirfd, path, &how, sizeof how));
}

Result<UniqueFd> open_beneath(int dirfd, const std::string& rel, int flags, const std::string& shown) {
  int fd = openat2_fd(dirfd, rel.c_str(), static_cast<std::uint64_t>(static_cast<unsigned>(flags)), k_resolve_beneath);
  if (fd < 0) return fail("open " + log::quote(shown));
  return UniqueFd(fd);
}

}  // namespace zb::util
