// The boundary of accept and restore: the tracked roots of a session, and every target
// path resolved beneath the root that holds it (ARCHITECTURE.md: accept and restore never
// leave the tracked roots). Each root is opened once without following a symlink; every
// directory below it is opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
// RESOLVE_NO_MAGICLINKS) (util::k_resolve_beneath), so a symlink or `..` planted by a
// sandboxed command never takes a write elsewhere, and the last name of a target is only
// ever used relative to its parent's fd (with AT_SYMLINK_NOFOLLOW / O_NOFOLLOW by the
// caller).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace zb::snapshot {

class Tree {
 public:
  // roots: absolute normalised paths (a session's tracked roots).
  explicit Tree(std::vector<std::string> roots) : m_roots(std::move(roots)) {}

  // The root that holds path p strictly (the longest), or an error for a journal row
  // outside all of them.
  Result<std::size_t> root_of(const std::string& p) const;

  // Root i, opened O_PATH once (no symlink or magic link on the way: ELOOP).
  Result<int> root_fd(std::size_t i);

  // The parent directory of p (O_PATH) and p's last name. ENOENT/ENOTDIR when a parent
  // is missing or not a directory; ELOOP/EXDEV when a symlink would have to be followed
  // or the path would leave its root. The fd is the tree's own, valid until the next
  // call of parent() or forget().
  struct Parent {
    int fd = -1;
    std::string name;
  };
  Result<Parent> parent(const std::string& p);
  // Drops the cached parent fd: after a directory on the way was replaced or removed.
  void forget();

  // The parent of p as an fd of its own, resolved as parent() does; the cache of parent()
  // is left as it is.
  struct OwnedParent {
    UniqueFd fd;
    std::string name;
  };
  Result<OwnedParent> open_parent(const std::string& p);

  // The directory p itself (a tracked root or below one), for listing. ENOENT/ENOTDIR/
  // ELOOP when it is not a directory reached without symlinks.
  Result<UniqueFd> open_dir(const std::string& p);

  const std::vector<std::string>& roots() const { return m_roots; }

 private:
  // p as its root, the directory below the root ("" for the root itself) and the name.
  struct Split {
    std::size_t root = 0;
    std::string dir, name;
  };
  Result<Split> split(const std::string& p) const;
  // root/dir opened beneath the root (O_PATH); the root's own fd duplicated for "".
  Result<UniqueFd> open_beneath_root(std::size_t root, const std::string& dir);

  std::vector<std::string> m_roots;
  std::map<std::size_t, UniqueFd> m_fds;
  UniqueFd m_cached;
  std::string m_cached_key;
};

}  // namespace zb::snapshot
