// Resolving targets beneath a session's tracked roots; the contract is in tree.hpp.
#include "snapshot/tree.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <optional>

#include "util/beneath.hpp"
#include "util/log.hpp"
#include "util/path.hpp"

namespace zb::snapshot {

Result<std::size_t> Tree::root_of(const std::string& p) const {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < m_roots.size(); ++i) {
    if (path::is_under(p, m_roots[i]) && p != m_roots[i] && (!best || m_roots[i].size() > m_roots[*best].size()))
      best = i;
  }
  if (!best) return fail_msg("journal: " + log::quote(p) + " lies outside the session's tracked paths");
  return *best;
}

Result<int> Tree::root_fd(std::size_t i) {
  auto it = m_fds.find(i);
  if (it != m_fds.end()) return it->second.get();
  int fd =
      util::openat2_fd(AT_FDCWD, m_roots[i].c_str(), O_PATH | O_DIRECTORY, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  if (fd < 0) return fail("open tracked root " + log::quote(m_roots[i]));
  return m_fds.emplace(i, UniqueFd(fd)).first->second.get();
}

Result<Tree::Split> Tree::split(const std::string& p) const {
  auto r = root_of(p);
  if (!r) return std::unexpected(r.error());
  const std::string& root = m_roots[*r];
  std::string rel = root == "/" ? p.substr(1) : p.substr(root.size() + 1);
  auto slash = rel.rfind('/');
  Split s;
  s.root = *r;
  s.dir = slash == std::string::npos ? "" : rel.substr(0, slash);
  s.name = slash == std::string::npos ? rel : rel.substr(slash + 1);
  // The last name is used with the parent's fd as it is, so `..` there would name the
  // directory above the parent, and above the root when the parent is the root.
  if (s.name.empty() || s.name == "." || s.name == "..") {
    return fail("journal: " + log::quote(p) + " does not end in a name", EXDEV);
  }
  return s;
}

Result<UniqueFd> Tree::open_beneath_root(std::size_t root, const std::string& dir) {
  auto rfd = root_fd(root);
  if (!rfd) return std::unexpected(rfd.error());
  if (dir.empty()) {
    UniqueFd fd(::fcntl(*rfd, F_DUPFD_CLOEXEC, 0));
    if (!fd) return fail("dup");
    return fd;
  }
  return util::open_beneath(*rfd, dir, O_PATH | O_DIRECTORY, path::join(m_roots[root], dir));
}

Result<Tree::Parent> Tree::parent(const std::string& p) {
  auto s = split(p);
  if (!s) return std::unexpected(s.error());
  if (s->dir.empty()) {
    auto rfd = root_fd(s->root);
    if (!rfd) return std::unexpected(rfd.error());
    return Parent{*rfd, std::move(s->name)};
  }
  std::string key = std::to_string(s->root) + "/" + s->dir;
  if (key != m_cached_key) {
    auto fd = open_beneath_root(s->root, s->dir);
    if (!fd) return std::unexpected(fd.error());
    m_cached = std::move(*fd);
    m_cached_key = key;
  }
  return Parent{m_cached.get(), std::move(s->name)};
}

void Tree::forget() {
  m_cached.reset();
  m_cached_key.clear();
}

Result<Tree::OwnedParent> Tree::open_parent(const std::string& p) {
  auto s = split(p);
  if (!s) return std::unexpected(s.error());
  auto fd = open_beneath_root(s->root, s->dir);
  if (!fd) return std::unexpected(fd.error());
  return OwnedParent{std::move(*fd), std::move(s->name)};
}

Result<UniqueFd> Tree::open_dir(const std::string& p) {
  for (std::size_t i = 0; i < m_roots.size(); ++i) {
    if (m_roots[i] != p) continue;
    auto rfd = root_fd(i);
    if (!rfd) return std::unexpected(rfd.error());
    UniqueFd fd(::openat(*rfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return fail("open " + log::quote(p));
    return fd;
  }
  auto par = parent(p);
  if (!par) return std::unexpected(par.error());
  UniqueFd fd(::openat(par->fd, par->name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return fail("open " + log::quote(p));
  return fd;
}

}  // namespace zb::snapshot
