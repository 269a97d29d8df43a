#include "exec/blocked.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/fd.hpp"
#include "util/log.hpp"
#include "util/path.hpp"

namespace zb::exec {

std::vector<std::string> move_created_aside(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    std::string parent = path::parent(p);
    std::string name = p.substr(p.find_last_of('/') + 1);
    // The command may have replaced a directory on the way with a symlink: refuse to
    // follow any, so the rename stays where the policy meant it.
    open_how how{};
    how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    UniqueFd dir(static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, parent.c_str(), &how, sizeof how)));
    if (!dir) continue;
    struct stat st {};
    if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    std::string target;
    int rc = -1;
    for (int n = 1; n < 100 && rc != 0; ++n) {
      target = name + ".zerobox-blocked" + (n == 1 ? std::string() : "-" + std::to_string(n));
      rc = static_cast<int>(::syscall(SYS_renameat2, dir.get(), name.c_str(), dir.get(), target.c_str(), RENAME_NOREPLACE));
      if (rc != 0 && errno != EEXIST) break;
    }
    if (rc == 0) {
      out.push_back("the command created denied path " + log::quote(p) + "; moved it to " +
                    log::quote(path::join(parent, target)) + " (name it in --allow-write to allow it)");
    } else {
      out.push_back("the command created denied path " + log::quote(p) + " and it could not be moved aside: " +
                    std::strerror(errno));
    }
  }
  return out;
}

}  // namespace zb::exec
