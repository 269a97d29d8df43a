// Step 1 of accept and restore (apply.hpp): where each target is relative to the two
// sides of its change, how a conflict reads, what a forced operation records in place of
// the before-state, the host entries a session never saw, and whether a journal fits its
// session at all.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include "snapshot/apply_internal.hpp"
#include "snapshot/changeset.hpp"
#include "util/copy.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"
#include "util/path.hpp"

namespace zb::snapshot::detail {

using store::Change;
using store::FileMeta;
using store::FileType;
using store::type_of;

namespace {

// The user.* xattrs recorded for a side (those a command may set, util::XattrScope::Carried);
// nullopt when the side is absent or none were recorded.
std::optional<util::Xattrs> carried_of(const std::optional<FileMeta>& side) {
  if (!side || !side->xattrs) return std::nullopt;
  auto x = store::decode_xattrs(*side->xattrs);
  if (!x) return std::nullopt;
  std::erase_if(*x,
                [](const auto& kv) { return !kv.first.starts_with("user.") || kv.first.starts_with("user.overlay."); });
  return x;
}

// True when the change's two sides differ in their user.* xattrs: then a target is at a
// side only when its xattrs are too (a setfattr alone changes nothing else).
bool xattrs_distinguish(const std::optional<FileMeta>& before, const std::optional<FileMeta>& after) {
  auto b = carried_of(before);
  auto a = carried_of(after);
  return b && a && *b != *a;
}

Result<bool> at_state_stat(store::Store& store, Tree& tree, const std::string& p, const Observed& o,
                           const std::optional<FileMeta>& side) {
  if (!side) return !o.exists;
  const FileMeta& s = *side;
  if (!o.exists || o.type != s.type) return false;
  std::uint32_t want = s.mode.value_or(0) & 07777u;
  std::uint32_t have = o.st.st_mode & 07777u;
  switch (s.type) {
    case FileType::Directory: return true;  // modes of directories are settled last
    case FileType::Symlink: {
      auto par = tree.parent(p);
      if (!par) return std::unexpected(par.error());
      auto l = util::read_link_at(par->fd, par->name.c_str(), log::quote(p));
      if (!l) return std::unexpected(l.error());
      return *l == s.link.value_or("");
    }
    case FileType::Regular: {
      std::int64_t size = s.size.value_or(0);
      if (have != want || o.st.st_size != size) return false;
      if (util::mtime_ns(o.st) == s.mtime_ns.value_or(0)) return true;
      if (!s.blob || s.blob->empty()) return false;
      auto par = tree.parent(p);
      if (!par) return std::unexpected(par.error());
      UniqueFd f(::openat(par->fd, par->name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
      if (!f) return fail("open " + log::quote(p));
      auto b = store.open_blob(*s.blob);
      if (!b) return false;  // the content is not kept: only the stat could tell
      return same_content(f.get(), b->get(), size);
    }
    default: return have == want;
  }
}

// True when the target is at side s (absent: nothing there); `with_xattrs`: its user.*
// xattrs must match too.
Result<bool> at_state(store::Store& store, Tree& tree, const std::string& p, const Observed& o,
                      const std::optional<FileMeta>& s, bool with_xattrs) {
  auto at = at_state_stat(store, tree, p, o, s);
  if (!at || !*at || !with_xattrs || !s) return at;
  auto want = carried_of(s);
  if (!want) return at;
  auto par = tree.parent(p);
  if (!par) return std::unexpected(par.error());
  auto have = util::read_xattrs(par->fd, par->name, util::XattrScope::Carried);
  if (!have) return std::unexpected(SysError{have.error().what + " (" + log::quote(p) + ")", have.error().err});
  return *have == *want;
}

std::string last_name(const std::string& p) {
  auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

}  // namespace

Result<Observed> observe(Tree& tree, const std::string& p) {
  Observed o;
  auto par = tree.parent(p);
  if (!par) {
    // A parent that is missing, not a directory, or a symlink (which is never followed):
    // nothing is at p as far as this tree is concerned.
    int e = par.error().err;
    if (e == ENOENT || e == ENOTDIR || e == ELOOP || e == EXDEV) return o;
    return std::unexpected(par.error());
  }
  if (::fstatat(par->fd, par->name.c_str(), &o.st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return o;
    return fail("stat " + log::quote(p));
  }
  o.exists = true;
  o.type = store::file_type_of(o.st.st_mode);
  return o;
}

std::string describe_conflict(const Change& c, const Observed& o) {
  const auto& before = c.before;
  std::string what;
  if (!before && o.exists) {
    what = "exists, but the session expected it absent";
  } else if (before && !o.exists) {
    what = "is missing";
  } else if (before && o.type != before->type) {
    what = "changed type";
  } else {
    what = "changed since the session recorded it";
  }
  return log::quote(c.path) + " " + what;
}

Result<Checked> check(store::Store& store, Tree& tree, const Change& c) {
  Checked ch;
  auto o = observe(tree, c.path);
  if (!o) return std::unexpected(o.error());
  ch.now = *o;
  const auto& after = c.after;
  const auto& before = c.before;
  bool with_xattrs = xattrs_distinguish(before, after);
  auto is_after = at_state(store, tree, c.path, *o, after, with_xattrs);
  if (!is_after) return std::unexpected(is_after.error());
  if (*is_after) {
    // A mode-only change of a directory is "after" only once the mode is right.
    if (type_of(after) == FileType::Directory && type_of(before) == FileType::Directory && o->exists &&
        (o->st.st_mode & 07777u) != after->mode.value_or(0) && (o->st.st_mode & 07777u) == before->mode.value_or(0)) {
      ch.where = Where::Before;
      return ch;
    }
    ch.where = Where::After;
    return ch;
  }
  auto is_before = at_state(store, tree, c.path, *o, before, with_xattrs);
  if (!is_before) return std::unexpected(is_before.error());
  if (*is_before) {
    ch.where = Where::Before;
  } else if (!o->exists && before && after && before->type != after->type) {
    ch.where = Where::Before;  // a type change interrupted between removal and creation
  } else {
    ch.where = Where::Conflict;
  }
  return ch;
}

// The current state of a target, as a change's before-state (forced accepts).
Result<void> capture(store::Store& store, Tree& tree, Change& c, const Observed& o) {
  c.before.reset();
  if (!o.exists || !o.type) return {};
  FileMeta& m = c.before.emplace();
  m.type = *o.type;
  m.mode = o.st.st_mode & 07777u;
  m.mtime_ns = util::mtime_ns(o.st);
  m.uid = o.st.st_uid;
  m.gid = o.st.st_gid;
  auto par = tree.parent(c.path);
  if (!par) return std::unexpected(par.error());
  if (o.type == FileType::Regular) {
    m.size = o.st.st_size;
    UniqueFd f(::openat(par->fd, par->name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!f) return fail("open " + log::quote(c.path));
    auto b = store.put_blob_from_fd(f.get());
    if (!b) return std::unexpected(b.error());
    m.blob = b->hash;
  } else if (o.type == FileType::Symlink) {
    auto l = util::read_link_at(par->fd, par->name.c_str(), log::quote(c.path));
    if (!l) return std::unexpected(l.error());
    m.size = static_cast<std::int64_t>(l->size());
    m.link = *l;
  }
  if (o.type == FileType::Regular && o.st.st_nlink > 1) m.inode = inode_label(o.st);
  auto x = util::read_xattrs(par->fd, par->name, util::XattrScope::All);
  if (!x) return std::unexpected(SysError{x.error().what + " (" + log::quote(c.path) + ")", x.error().err});
  m.xattrs = store::encode_xattrs(*x);
  return {};
}

Result<std::vector<Unseen>> find_unseen(store::Store& store, Tree& tree, const store::Session& s,
                                        const std::vector<Change>& changes, const std::vector<bool>& skip,
                                        const SessionPolicy& policy) {
  // Every name the session knows, by directory: its changes, and what its opaque
  // directories held.
  std::map<std::string, std::set<std::string>> known;
  for (const auto& c : changes) known[path::parent(c.path)].insert(last_name(c.path));
  std::vector<std::pair<std::string, std::int64_t>> claimed;
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const Change& c = changes[i];
    if (!skip[i] && type_of(c.before) == FileType::Directory && type_of(c.after) != FileType::Directory)
      claimed.emplace_back(c.path, c.seq);
  }
  // A restore only removes what the session made: an opaque directory is the session's
  // claim, not its undo's.
  if (s.kind == store::SessionKind::Run) {
    auto opaque = store.opaque_dirs(s.id);
    if (!opaque) return std::unexpected(opaque.error());
    for (const auto& d : *opaque) {
      auto& names = known[d.path];
      names.insert(d.names.begin(), d.names.end());
      claimed.emplace_back(d.path, 0);
    }
  }
  std::vector<Unseen> out;
  for (const auto& [dir, seq] : claimed) {
    auto fd = tree.open_dir(dir);
    if (!fd) {
      int e = fd.error().err;
      if (e == ENOENT || e == ENOTDIR || e == ELOOP || e == EXDEV) continue;  // gone already, or not a directory here
      return std::unexpected(fd.error());
    }
    DIR* d = ::fdopendir(fd->release());
    if (d == nullptr) return fail("opendir " + log::quote(dir));
    std::vector<std::string> names;
    errno = 0;
    while (dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
    }
    int err = errno;
    ::closedir(d);
    if (err != 0) return fail("readdir " + log::quote(dir), err);
    const auto& have = known[dir];
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
      if (have.count(n) != 0 || n.rfind(".zerobox-tmp-", 0) == 0) continue;
      std::string p = path::join(dir, n);
      if (protected_change(p, Change{}, policy.protected_paths)) continue;  // never touched anyway
      out.push_back({p, seq});
    }
  }
  return out;
}

Result<void> capture_tree(store::Store& store, Tree& tree, const std::string& p, std::vector<Change>& out,
                          std::size_t depth) {
  if (depth > 2000) return fail_msg(log::quote(p) + ": more than 2000 nested directories");
  auto o = observe(tree, p);
  if (!o) return std::unexpected(o.error());
  if (!o->exists) return {};
  if (o->type == FileType::Directory) {
    auto fd = tree.open_dir(p);
    if (!fd) return std::unexpected(fd.error());
    DIR* d = ::fdopendir(fd->release());
    if (d == nullptr) return fail("opendir " + log::quote(p));
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
      if (auto r = capture_tree(store, tree, path::join(p, n), out, depth + 1); !r) return r;
    }
    o = observe(tree, p);
    if (!o) return std::unexpected(o.error());
    if (!o->exists) return {};
  }
  Change c;
  c.path = p;
  c.kind = store::ChangeKind::Deleted;
  if (auto r = capture(store, tree, c, *o); !r) return r;
  out.push_back(std::move(c));
  return {};
}

// The session a user knows an operation by: a restore by the session it restores.
std::string shown_session(const store::Session& s) {
  return (s.kind == store::SessionKind::Restore && s.parent ? *s.parent : s.id).substr(0, 12);
}

// A journal is only applied when its rows fit its session: every tracked root is an
// absolute normalised path, every row's path a normalised path strictly inside one of
// them, and every blob a row names is in the store. A store rewritten outside zerobox
// (a sandbox that could write it) fails here, before anything is written; the blobs'
// contents are checked against their hashes later, right before the writes.
Result<void> validate_journal(store::Store& store, const store::Session& s, const std::vector<Change>& changes) {
  std::string where = "session " + shown_session(s) + ": the journal does not match ";
  const std::string tail = ", so it was changed outside zerobox; nothing was changed";
  for (const auto& r : s.roots) {
    if (r.empty() || r.front() != '/' || path::normalize(r) != r) {
      return fail_msg(where + "its tracked paths: " + log::quote(r) + " is not an absolute normalised path" + tail);
    }
  }
  std::set<std::string> seen_blobs;
  for (const auto& c : changes) {
    bool inside = c.path.size() > 1 && c.path.front() == '/' && path::normalize(c.path) == c.path &&
                  std::any_of(s.roots.begin(), s.roots.end(),
                              [&](const std::string& r) { return c.path != r && path::is_under(c.path, r); });
    if (!inside) {
      return fail_msg(where + "its tracked paths: change " + std::to_string(c.seq) + " is for " + log::quote(c.path) +
                      ", outside every tracked path of the session" + tail);
    }
    for (const auto* side : {&c.before, &c.after}) {
      if (!*side || !(*side)->blob) continue;
      const std::string& b = *(*side)->blob;
      if (b.empty() || !seen_blobs.insert(b).second) continue;
      bool present = store::valid_id(b);
      if (present) {
        auto info = store.blob_info(b);
        if (!info) return std::unexpected(info.error());
        present = info->has_value();
      }
      if (present) {
        auto fd = store.open_blob(b);
        if (!fd && fd.error().err != ENOENT) return std::unexpected(fd.error());
        present = fd.has_value();
      }
      if (!present) {
        return fail_msg(where + "its blobs: change " + std::to_string(c.seq) + " (" + log::quote(c.path) +
                        ") names blob " + log::quote(b) + ", which the store does not hold" + tail);
      }
    }
  }
  return {};
}

}  // namespace zb::snapshot::detail
