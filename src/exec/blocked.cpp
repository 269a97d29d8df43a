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
namespace {

// The parent directory of p, opened without following any symlink on the way.
UniqueFd open_parent(const std::string& p) {
  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return UniqueFd(static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path::parent(p).c_str(), &how, sizeof how)));
}

std::string base_name(const std::string& p) { return p.substr(p.find_last_of('/') + 1); }

}  // namespace

Result<void> Placeholders::create(const std::vector<std::string>& paths) {
  for (const auto& p : paths) {
    UniqueFd dir = open_parent(p);
    if (!dir) return fail("placeholder for denied path " + log::quote(p) + ": open its parent");
    std::string name = base_name(p);
    int fd = ::openat(dir.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      if (errno == EEXIST) continue;  // appeared meanwhile: the plan masks what is there
      return fail("placeholder for denied path " + log::quote(p));
    }
    struct stat st {};
    ::fstat(fd, &st);
    ::close(fd);
    m_made.push_back({p, st.st_dev, st.st_ino});
  }
  return {};
}

Placeholders::~Placeholders() {
  for (const auto& m : m_made) {
    UniqueFd dir = open_parent(m.path);
    if (!dir) continue;
    std::string name = base_name(m.path);
    struct stat st {};
    if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (st.st_dev == m.dev && st.st_ino == m.ino && S_ISREG(st.st_mode) && st.st_size == 0) {
      ::unlinkat(dir.get(), name.c_str(), 0);
    } else {
      log::warning("left " + log::quote(m.path) + " in place: it is no longer the empty placeholder zerobox made");
    }
  }
}

std::vector<std::string> move_created_aside(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    std::string parent = path::parent(p);
    std::string name = base_name(p);
    // The command may have replaced a directory on the way with a symlink: refuse to
    // follow any, so the rename stays where the policy meant it.
    UniqueFd dir = open_parent(p);
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
