#include "util/fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <memory>
#include <string_view>

#include "util/fd.hpp"
#include "util/log.hpp"

namespace zb::util {

Result<std::string> read_link_at(int dirfd, const char* name, const std::string& shown) {
  std::string buf(256, '\0');
  for (;;) {
    ssize_t n = ::readlinkat(dirfd, name, buf.data(), buf.size());
    if (n < 0) return fail("readlinkat " + shown);
    auto len = static_cast<std::size_t>(n);
    if (len < buf.size()) {
      buf.resize(len);
      return buf;
    }
    buf.resize(buf.size() * 2);
  }
}

std::int64_t mtime_ns(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + static_cast<std::int64_t>(st.st_mtim.tv_nsec);
}

Result<std::vector<std::string>> list_names(int dir_fd, const std::string& shown) {
  // A duplicate shares the offset: rewind it, so that a listed fd can be listed again.
  UniqueFd dup_fd(::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dup_fd) return fail("open " + shown);
  std::unique_ptr<DIR, int (*)(DIR*)> d(::fdopendir(dup_fd.get()), ::closedir);
  if (!d) return fail("opendir " + shown);
  dup_fd.release();
  std::vector<std::string> names;
  errno = 0;
  while (dirent* e = ::readdir(d.get())) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..") names.emplace_back(n);
  }
  if (errno != 0) return fail("readdir " + shown);
  return names;
}

Result<void> remove_tree_at(int parent, const std::string& name, const std::string& shown) {
  struct stat st{};
  if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return errno == ENOENT ? Result<void>{} : fail("stat " + log::quote(shown));
  }
  if (S_ISDIR(st.st_mode)) {
    int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    UniqueFd fd(::openat(parent, name.c_str(), flags));
    if (!fd && errno == EACCES && ::fchmodat(parent, name.c_str(), 0700, 0) == 0) {
      fd.reset(::openat(parent, name.c_str(), flags));
    }
    if (!fd) return fail("open " + log::quote(shown));
    if ((st.st_mode & 0700) != 0700) (void)::fchmod(fd.get(), 0700);
    auto names = list_names(fd.get(), log::quote(shown));
    if (!names) return std::unexpected(names.error());
    for (const auto& n : *names) {
      if (auto r = remove_tree_at(fd.get(), n, shown + "/" + n); !r) return r;
    }
    if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
      return fail("rmdir " + log::quote(shown));
    return {};
  }
  if (::unlinkat(parent, name.c_str(), 0) != 0 && errno != ENOENT) return fail("unlink " + log::quote(shown));
  return {};
}

Result<void> remove_tree(const std::string& path) { return remove_tree_at(AT_FDCWD, path, path); }

bool raise_nofile_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return true;
  rl.rlim_cur = rl.rlim_max;
  return ::setrlimit(RLIMIT_NOFILE, &rl) == 0;
}

}  // namespace zb::util
