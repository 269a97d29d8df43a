#include "snapshot/apply.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "snapshot/changeset.hpp"
#include "snapshot/journal.hpp"
#include "util/beneath.hpp"
#include "util/copy.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"
#include "util/path.hpp"
#include "util/random.hpp"

namespace zb::snapshot {

using store::Change;
using store::FileMeta;
using store::FileType;
using store::type_of;

void crash_point() {
  static long remaining = [] {
    const char* v = std::getenv("ZEROBOX_TEST_CRASH_AFTER");
    return v != nullptr ? std::atol(v) : 0L;
  }();
  if (remaining <= 0) return;
  if (--remaining == 0) ::kill(::getpid(), SIGKILL);
}

namespace {

// What accept writes: setuid and setgid are never carried onto the real filesystem.
// The journal never holds a setuid or setgid bit made by a sandboxed command (the journal
// strips them), so what it says is what is written: a restore puts back the host's own
// files exactly as they were.
std::uint32_t written_mode(const FileMeta& s) { return s.mode.value_or(0) & 07777u; }

// The tracked roots of a session, opened once, and the parent directory of each target
// resolved beneath its root.
class Tree {
 public:
  explicit Tree(std::vector<std::string> roots) : m_roots(std::move(roots)) {}

  // The root that holds path (the longest), or an error for a journal row outside all.
  Result<std::size_t> root_of(const std::string& p) const {
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < m_roots.size(); ++i) {
      if (path::is_under(p, m_roots[i]) && p != m_roots[i] && (!best || m_roots[i].size() > m_roots[*best].size())) best = i;
    }
    if (!best) return fail_msg("journal: " + log::quote(p) + " lies outside the session's tracked paths");
    return *best;
  }

  Result<int> root_fd(std::size_t i) {
    auto it = m_fds.find(i);
    if (it != m_fds.end()) return it->second.get();
    int fd = util::openat2_fd(AT_FDCWD, m_roots[i].c_str(), O_PATH | O_DIRECTORY, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    if (fd < 0) return fail("open tracked root " + log::quote(m_roots[i]));
    return m_fds.emplace(i, UniqueFd(fd)).first->second.get();
  }

  // The parent directory of p (O_PATH) and p's last name. ENOENT/ENOTDIR when a parent
  // is missing or not a directory; ELOOP/EXDEV when a symlink would have to be followed.
  struct Parent {
    int fd = -1;
    std::string name;
  };
  Result<Parent> parent(const std::string& p) {
    auto r = root_of(p);
    if (!r) return std::unexpected(r.error());
    const std::string& root = m_roots[*r];
    std::string rel = root == "/" ? p.substr(1) : p.substr(root.size() + 1);
    auto slash = rel.rfind('/');
    std::string dir = slash == std::string::npos ? "" : rel.substr(0, slash);
    std::string name = slash == std::string::npos ? rel : rel.substr(slash + 1);
    auto rfd = root_fd(*r);
    if (!rfd) return std::unexpected(rfd.error());
    if (dir.empty()) return Parent{*rfd, name};
    std::string key = std::to_string(*r) + "/" + dir;
    if (key != m_cached_key) {
      auto fd = util::open_beneath(*rfd, dir, O_PATH | O_DIRECTORY, path::join(root, dir));
      if (!fd) return std::unexpected(fd.error());
      m_cached = std::move(*fd);
      m_cached_key = key;
    }
    return Parent{m_cached.get(), name};
  }
  void forget() {
    m_cached.reset();
    m_cached_key.clear();
  }

  // The parent of p as an fd of its own (the cached one is replaced by the next parent()).
  struct OwnedParent {
    UniqueFd fd;
    std::string name;
  };
  Result<OwnedParent> open_parent(const std::string& p) {
    auto par = parent(p);
    if (!par) return std::unexpected(par.error());
    UniqueFd fd(::fcntl(par->fd, F_DUPFD_CLOEXEC, 0));
    if (!fd) return fail("dup");
    return OwnedParent{std::move(fd), par->name};
  }

  // The directory p itself (a tracked root or below one), for listing. ENOENT/ENOTDIR/
  // ELOOP when it is not a directory reached without symlinks.
  Result<UniqueFd> open_dir(const std::string& p) {
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
  const std::vector<std::string>& roots() const { return m_roots; }

 private:
  std::vector<std::string> m_roots;
  std::map<std::size_t, UniqueFd> m_fds;
  UniqueFd m_cached;
  std::string m_cached_key;
};

// What is at a target now.
struct Observed {
  bool exists = false;
  struct stat st {};
  std::optional<FileType> type;
};

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

// The user.* xattrs recorded for a side (those a command may set, util::XattrScope::Carried);
// nullopt when the side is absent or none were recorded.
std::optional<util::Xattrs> carried_of(const std::optional<FileMeta>& side) {
  if (!side || !side->xattrs) return std::nullopt;
  auto x = store::decode_xattrs(*side->xattrs);
  if (!x) return std::nullopt;
  std::erase_if(*x, [](const auto& kv) { return !kv.first.starts_with("user.") || kv.first.starts_with("user.overlay."); });
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

enum class Where { Before, After, Conflict };

struct Checked {
  Where where = Where::Conflict;
  Observed now;
};

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

struct DirMeta {
  std::string path;
  FileMeta s;
};

// Where new contents come from: a blob, or (excluded paths) a file of the upper layer.
using OpenContent = std::function<Result<UniqueFd>(const FileMeta&)>;

bool is_root() { return ::geteuid() == 0; }

// Puts a state's recorded xattrs on dirfd/name. `replace`: an inode that exists already,
// whose user.* xattrs become exactly the recorded ones. After a chown (which drops
// security.capability) and before a chmod that may take away the owner's write permission
// (user.* needs it).
Result<void> set_xattrs_at(int dirfd, const std::string& name, const FileMeta& s, const std::string& shown, bool replace) {
  if (!s.xattrs) return {};  // not recorded (a journal of schema version 1)
  auto x = store::decode_xattrs(*s.xattrs);
  if (!x) return fail_msg("journal: the xattrs recorded for " + log::quote(shown) + " are malformed");
  if (x->empty() && !replace) return {};
  std::vector<std::string> refused;
  if (auto r = util::write_xattrs(dirfd, name, *x, replace, refused); !r) {
    return std::unexpected(SysError{r.error().what + " (" + log::quote(shown) + ")", r.error().err});
  }
  if (!refused.empty()) {
    std::string names;
    for (const auto& n : refused) names += (names.empty() ? "" : ", ") + log::quote(n);
    log::warning("could not set the xattr " + names + " of " + log::quote(shown) + ": not permitted here");
  }
  return {};
}

Result<void> set_meta_at(int dirfd, const std::string& name, const FileMeta& s, const std::string& shown, bool chmod_it,
                         bool replace_xattrs = false) {
  if (is_root() && s.uid) {
    if (::fchownat(dirfd, name.c_str(), *s.uid, s.gid.value_or(0), AT_SYMLINK_NOFOLLOW) != 0) return fail("chown " + log::quote(shown));
  }
  if (chmod_it && !is_root() && s.xattrs) (void)::fchmodat(dirfd, name.c_str(), written_mode(s) | 0700, 0);
  if (auto r = set_xattrs_at(dirfd, name, s, shown, replace_xattrs); !r) return r;
  if (chmod_it && ::fchmodat(dirfd, name.c_str(), written_mode(s), AT_SYMLINK_NOFOLLOW) != 0) return fail("chmod " + log::quote(shown));
  struct timespec ts[2];
  ts[0].tv_sec = s.mtime_ns.value_or(0) / 1000000000;
  ts[0].tv_nsec = s.mtime_ns.value_or(0) % 1000000000;
  ts[1] = ts[0];
  if (::utimensat(dirfd, name.c_str(), ts, AT_SYMLINK_NOFOLLOW) != 0) return fail("set mtime of " + log::quote(shown));
  return {};
}

// Puts tmp in place of name, removing an (empty) directory that is there first.
Result<void> replace_with(int dirfd, const std::string& tmp, const std::string& name, const std::string& shown) {
  struct stat st {};
  if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
    if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0) return fail("rmdir " + log::quote(shown));
    crash_point();
  }
  if (::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0) return fail("rename into " + log::quote(shown));
  crash_point();
  return {};
}

// An unprivileged caller's own read-only directory (a Go module cache, a `chmod 555`)
// is made writable for one change and given its mode back; root needs no such help.
class WritableParent {
 public:
  WritableParent(Tree& tree, const std::string& target) {
    if (::geteuid() == 0) return;
    std::string dir = path::parent(target);
    auto r = tree.root_of(target);
    if (!r || dir == tree.roots()[*r] || !path::is_under(dir, tree.roots()[*r])) return;
    auto root = tree.root_fd(*r);
    if (!root) return;
    const std::string& rp = tree.roots()[*r];
    std::string rel = rp == "/" ? dir.substr(1) : dir.substr(rp.size() + 1);
    auto slash = rel.rfind('/');
    std::string pdir = slash == std::string::npos ? "." : rel.substr(0, slash);
    m_name = slash == std::string::npos ? rel : rel.substr(slash + 1);
    int fd = pdir == "." ? ::fcntl(*root, F_DUPFD_CLOEXEC, 0) : util::openat2_fd(*root, pdir.c_str(), O_PATH | O_DIRECTORY, util::k_resolve_beneath);
    if (fd < 0) return;
    m_fd.reset(fd);
    struct stat st {};
    if (::fstatat(m_fd.get(), m_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) return;
    if ((st.st_mode & 0300) == 0300 || st.st_uid != ::geteuid()) return;
    if (::fchmodat(m_fd.get(), m_name.c_str(), (st.st_mode & 07777) | 0300, 0) == 0) m_mode = st.st_mode & 07777;
  }
  ~WritableParent() {
    if (m_mode) ::fchmodat(m_fd.get(), m_name.c_str(), *m_mode, 0);
  }
  WritableParent(const WritableParent&) = delete;
  WritableParent& operator=(const WritableParent&) = delete;

 private:
  UniqueFd m_fd;
  std::string m_name;
  std::optional<mode_t> m_mode;
};

// Moves one target to its after-state. Directory metadata is queued in `dirs`.
Result<void> materialize(Tree& tree, const Change& c, const std::string& tmp_tag, const OpenContent& open_content,
                         std::vector<DirMeta>& dirs, const std::string* link_from = nullptr) {
  WritableParent writable(tree, c.path);
  auto par_r = tree.parent(c.path);
  if (!par_r) return std::unexpected(par_r.error());
  auto par = *par_r;
  const char* name = par.name.c_str();
  struct stat st {};
  bool exists = ::fstatat(par.fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
  // The full session id: the command cannot know it (the store is masked), so it cannot
  // plant a file under this name for accept to remove.
  std::string tmp = ".zerobox-tmp-" + std::to_string(c.seq) + "-" + tmp_tag;
  ::unlinkat(par.fd, tmp.c_str(), 0);  // left by an interrupted run (never a directory)

  if (!c.after) {
    if (!exists) return {};
    if (S_ISDIR(st.st_mode)) {
      if (::unlinkat(par.fd, name, AT_REMOVEDIR) != 0) {
        if (errno == ENOTEMPTY || errno == EEXIST) {
          log::warning("left " + log::quote(c.path) + " in place: the directory is not empty");
          return {};
        }
        return fail("rmdir " + log::quote(c.path));
      }
    } else if (::unlinkat(par.fd, name, 0) != 0) {
      return fail("unlink " + log::quote(c.path));
    }
    crash_point();
    return {};
  }

  const FileMeta& s = *c.after;
  // A change of mode or owner alone keeps the inode.
  bool same_type = exists && store::file_type_of(st.st_mode) == s.type && type_of(c.before) == s.type;
  // A file with other hard links (perhaps outside the tracked tree) gets a new inode
  // rather than a chmod that the other names would share.
  bool shared = exists && S_ISREG(st.st_mode) && st.st_nlink > 1;
  if (same_type && !shared && c.kind == store::ChangeKind::ModeChanged && s.type != FileType::Directory) {
    if (s.type == FileType::Symlink) return {};
    if (is_root() && s.uid && ::fchownat(par.fd, name, *s.uid, s.gid.value_or(0), AT_SYMLINK_NOFOLLOW) != 0) {
      return fail("chown " + log::quote(c.path));
    }
    if (!is_root() && s.xattrs) (void)::fchmodat(par.fd, name, written_mode(s) | 0600, 0);
    if (auto r = set_xattrs_at(par.fd, par.name, s, c.path, true); !r) return r;
    if (::fchmodat(par.fd, name, written_mode(s), AT_SYMLINK_NOFOLLOW) != 0) return fail("chmod " + log::quote(c.path));
    crash_point();
    return {};
  }

  switch (s.type) {
    case FileType::Directory: {
      if (exists && !S_ISDIR(st.st_mode)) {
        if (::unlinkat(par.fd, name, 0) != 0) return fail("unlink " + log::quote(c.path));
        crash_point();
        exists = false;
      }
      if (!exists) {
        if (::mkdirat(par.fd, name, 0700) != 0 && errno != EEXIST) return fail("mkdir " + log::quote(c.path));
        crash_point();
      }
      dirs.push_back({c.path, s});
      return {};
    }
    case FileType::Regular: {
      // Another name of the same inode, already in place: a hard link again, as recorded.
      if (link_from != nullptr) {
        auto from = tree.open_parent(*link_from);
        auto again = tree.parent(c.path);
        if (from && again && ::linkat(from->fd.get(), from->name.c_str(), again->fd, tmp.c_str(), 0) == 0) {
          crash_point();
          return replace_with(again->fd, tmp, name, c.path);
        }
        par_r = tree.parent(c.path);
        if (!par_r) return std::unexpected(par_r.error());
        par = *par_r;
        name = par.name.c_str();
      }
      auto src = open_content(s);
      if (!src) return std::unexpected(src.error());
      UniqueFd out(::openat(par.fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
      if (!out) return fail("create " + log::quote(path::join(path::parent(c.path), tmp)));
      // The temporary file goes on any failure: on a full disk it holds the space that
      // undoing the rest needs.
      auto written = [&]() -> Result<void> {
        auto n = util::copy_sparse(src->get(), out.get());
        if (!n) return std::unexpected(SysError{n.error().what + " (writing " + log::quote(c.path) + ")", n.error().err});
        if (is_root() && s.uid && ::fchown(out.get(), *s.uid, s.gid.value_or(0)) != 0) return fail("chown " + log::quote(c.path));
        if (auto r = set_xattrs_at(par.fd, tmp, s, c.path, false); !r) return r;
        if (::fchmod(out.get(), written_mode(s)) != 0) return fail("chmod " + log::quote(c.path));
        struct timespec ts[2];
        ts[0].tv_sec = s.mtime_ns.value_or(0) / 1000000000;
        ts[0].tv_nsec = s.mtime_ns.value_or(0) % 1000000000;
        ts[1] = ts[0];
        if (::futimens(out.get(), ts) != 0) return fail("set mtime of " + log::quote(c.path));
        return {};
      }();
      out.reset();
      if (!written) {
        ::unlinkat(par.fd, tmp.c_str(), 0);
        return written;
      }
      crash_point();
      return replace_with(par.fd, tmp, name, c.path);
    }
    case FileType::Symlink: {
      if (::symlinkat(s.link.value_or("").c_str(), par.fd, tmp.c_str()) != 0) return fail("symlink " + log::quote(c.path));
      if (auto r = set_meta_at(par.fd, tmp, s, c.path, false); !r) return r;
      crash_point();
      return replace_with(par.fd, tmp, name, c.path);
    }
    case FileType::Fifo: {
      if (::mknodat(par.fd, tmp.c_str(), S_IFIFO | 0600, 0) != 0) return fail("mkfifo " + log::quote(c.path));
      if (auto r = set_meta_at(par.fd, tmp, s, c.path, true); !r) return r;
      crash_point();
      return replace_with(par.fd, tmp, name, c.path);
    }
    case FileType::Socket:
      log::warning("skipped the unix socket " + log::quote(c.path) + ": sockets are not recreated");
      return {};
    case FileType::CharDevice:
    case FileType::BlockDevice:
      log::warning("skipped the device node " + log::quote(c.path) + ": device nodes are never created");
      return {};
  }
  return {};
}

Result<void> settle_dirs(Tree& tree, std::vector<DirMeta>& dirs) {
  // Deepest first, so a parent's mtime is set after its children are final.
  std::sort(dirs.begin(), dirs.end(), [](const DirMeta& a, const DirMeta& b) { return a.path > b.path; });
  for (const auto& d : dirs) {
    auto par = tree.parent(d.path);
    if (!par) return std::unexpected(par.error());
    struct stat st {};
    if (::fstatat(par->fd, par->name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (auto r = set_meta_at(par->fd, par->name, d.s, d.path, true, true); !r) return r;
  }
  return {};
}

class Progress {
 public:
  Progress(bool on, std::string verb, std::size_t total) : m_on(on && total >= 200 && ::isatty(2)), m_verb(std::move(verb)), m_total(total) {}
  void tick(std::size_t done) {
    if (!m_on) return;
    auto now = std::chrono::steady_clock::now();
    if (now - m_last < std::chrono::milliseconds(100) && done != m_total) return;
    m_last = now;
    std::fprintf(stderr, "\rzerobox: %s: %zu/%zu changes (%zu%%)", m_verb.c_str(), done, m_total, m_total ? done * 100 / m_total : 100);
    m_shown = true;
  }
  ~Progress() {
    if (m_shown) std::fprintf(stderr, "\r\x1b[K");
  }

 private:
  bool m_on;
  std::string m_verb;
  std::size_t m_total;
  bool m_shown = false;
  std::chrono::steady_clock::time_point m_last{};
};


// What an intent records: the session a restore undoes, and whether it was forced (a
// resumed operation must make the same choice).
std::string intent_data(const std::string& restores, bool force, const std::string& tag) {
  nlohmann::json j;
  if (!restores.empty()) j["restores"] = restores;
  j["force"] = force;
  j["tag"] = tag;
  return j.dump();
}

// The `begin` of an accept or restore: records the intent (its id in `intent`) with a
// fresh tag for the temporary names.
std::function<Result<std::string>()> intent_recorder(store::Store& store, const std::string& session, const char* op,
                                                     const std::string& restores, bool force, std::int64_t& intent) {
  return [&store, session, op, restores, force, &intent]() -> Result<std::string> {
    auto tag = util::random_hex(16);
    if (!tag) return tag;
    auto id = store.add_intent(session, op, intent_data(restores, force, *tag));
    if (!id) return std::unexpected(id.error());
    intent = *id;
    crash_point();
    return tag;
  };
}

Change inverse(const Change& c) {
  Change r = c;
  std::swap(r.before, r.after);
  if (c.kind == store::ChangeKind::Added) r.kind = store::ChangeKind::Deleted;
  if (c.kind == store::ChangeKind::Deleted) r.kind = store::ChangeKind::Added;
  return r;
}

// A host entry in a directory that the session removes or replaces as a whole, which the
// session does not account for: added (or changed) on the host after the command saw the
// directory. `before_seq`: the change removing the directory (0: the directory stays).
struct Unseen {
  std::string path;
  std::int64_t before_seq = 0;
};

std::string last_name(const std::string& p) {
  auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

Result<std::vector<Unseen>> find_unseen(store::Store& store, Tree& tree, const store::Session& s, const std::vector<Change>& changes,
                                        const std::vector<bool>& skip, const SessionPolicy& policy) {
  // Every name the session knows, by directory: its changes, and what its opaque
  // directories held.
  std::map<std::string, std::set<std::string>> known;
  for (const auto& c : changes) known[path::parent(c.path)].insert(last_name(c.path));
  std::vector<std::pair<std::string, std::int64_t>> claimed;
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const Change& c = changes[i];
    if (!skip[i] && type_of(c.before) == FileType::Directory && type_of(c.after) != FileType::Directory) claimed.emplace_back(c.path, c.seq);
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

// Records the host entry p and everything below it as deletions (children first) with
// their pre-images, so that undoing the operation brings them back.
Result<void> capture_tree(store::Store& store, Tree& tree, const std::string& p, std::vector<Change>& out, std::size_t depth = 0) {
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
                  std::any_of(s.roots.begin(), s.roots.end(), [&](const std::string& r) { return c.path != r && path::is_under(c.path, r); });
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
        return fail_msg(where + "its blobs: change " + std::to_string(c.seq) + " (" + log::quote(c.path) + ") names blob " +
                        log::quote(b) + ", which the store does not hold" + tail);
      }
    }
  }
  return {};
}

// Check, optionally capture, then apply every change of a session. The caller holds the
// session's lock and records the outcome.
// `begin` runs once the checks passed, right before the first write: it records the
// intent and returns the tag of this operation's temporary names (random, so the command
// cannot plant a file under one). on_rolled_back runs when a failure was undone
// completely (the intent is then obsolete).
Result<ApplyReport> apply_changes(store::Store& store, const store::Session& s, const std::string& verb, const ApplyOptions& opts,
                                  const std::function<Result<std::string>()>& begin,
                                  const std::function<void()>& on_rolled_back = {}) {
  ApplyReport report;
  auto changes = store.changes(s.id);
  if (!changes) return std::unexpected(changes.error());
  if (auto r = validate_journal(store, s, *changes); !r) return std::unexpected(r.error());
  SessionPolicy policy = SessionPolicy::from_json(s.policy.value_or(""));
  Tree tree(s.roots);
  std::vector<Checked> checked;
  std::vector<bool> skip;
  auto check_all = [&]() -> Result<void> {
    report.conflicts.clear();
    checked.clear();
    checked.reserve(changes->size());
    skip.assign(changes->size(), false);
    Progress progress(opts.progress, "checking", changes->size());
    for (std::size_t i = 0; i < changes->size(); ++i) {
      const Change& c = (*changes)[i];
      progress.tick(i + 1);
      if (protected_change(c.path, c, policy.protected_paths)) {
        skip[i] = true;
        checked.push_back({});
        continue;
      }
      auto ch = check(store, tree, c);
      if (!ch) return std::unexpected(ch.error());
      if (ch->where == Where::Conflict) report.conflicts.push_back(describe_conflict(c, ch->now));
      checked.push_back(std::move(*ch));
    }
    return {};
  };
  if (auto r = check_all(); !r) return std::unexpected(r.error());
  for (std::size_t i = 0; i < changes->size(); ++i) {
    if (skip[i]) log::warning("not applied: " + log::quote((*changes)[i].path) + " is protected");
  }
  auto unseen = find_unseen(store, tree, s, *changes, skip, policy);
  if (!unseen) return std::unexpected(unseen.error());
  for (const auto& u : *unseen) {
    report.conflicts.push_back(log::quote(u.path) + " is not part of the session: it was added or changed on the host after the command saw its directory");
  }
  if (!report.conflicts.empty() && !opts.force) return report;

  // Every content about to be written is checked against its hash first: a blob changed
  // in the store is refused before anything is written.
  {
    std::set<std::string> verified;
    for (std::size_t i = 0; i < changes->size(); ++i) {
      const Change& c = (*changes)[i];
      if (skip[i] || checked[i].where == Where::After || type_of(c.after) != FileType::Regular || !c.after->blob ||
          c.after->blob->empty()) {
        continue;
      }
      const std::string& blob = *c.after->blob;
      if (verified.count(blob) != 0) continue;
      auto ok = store.verify_blob(blob);
      if (!ok) {
        return fail_msg("session " + shown_session(s) + ": the stored content of " + log::quote(c.path) + " (blob " + blob +
                        ") cannot be read: " + ok.error().message() + "; nothing was changed");
      }
      if (!*ok) {
        return fail_msg("session " + shown_session(s) + ": the stored content of " + log::quote(c.path) + " does not match its hash (blob " +
                        blob + "): the store was changed outside zerobox; nothing was changed");
      }
      verified.insert(blob);
    }
  }

  auto begun = begin();
  if (!begun) return std::unexpected(begun.error());
  std::string tag = *begun;

  // Forced: what is really there becomes the before-state, so an undo returns to it.
  auto capture_conflicts = [&]() -> Result<void> {
    for (std::size_t i = 0; i < changes->size(); ++i) {
      if (skip[i] || checked[i].where != Where::Conflict) continue;
      Change& c = (*changes)[i];
      if (auto r = capture(store, tree, c, checked[i].now); !r) return r;
      if (auto r = store.set_change_old(s.id, c); !r) return r;
      crash_point();
      checked[i].where = Where::Before;
    }
    return {};
  };
  if (auto r = capture_conflicts(); !r) return std::unexpected(r.error());
  // Forced over host entries the session never saw: recorded as deletions (with their
  // pre-images) before the change that removes their directory, or at the end when the
  // directory stays; nothing is removed that the journal does not hold.
  if (!unseen->empty()) {
    std::map<std::int64_t, std::vector<Change>, std::greater<>> groups;
    for (const auto& u : *unseen) {
      auto& rows = groups[u.before_seq == 0 ? std::numeric_limits<std::int64_t>::max() : u.before_seq];
      if (auto r = capture_tree(store, tree, u.path, rows); !r) return std::unexpected(r.error());
    }
    // From the last position to the first, so that each insert leaves the next one's seq
    // where it was.
    for (auto& [seq, rows] : groups) {
      auto at = seq == std::numeric_limits<std::int64_t>::max() ? 0 : seq;
      if (auto r = store.insert_changes(s.id, at, rows); !r) return std::unexpected(r.error());
      crash_point();
    }
    changes = store.changes(s.id);
    if (!changes) return std::unexpected(changes.error());
    std::vector<std::string> forced = std::move(report.conflicts);
    if (auto r = check_all(); !r) return std::unexpected(r.error());
    if (auto r = capture_conflicts(); !r) return std::unexpected(r.error());
    report.conflicts.insert(report.conflicts.begin(), forced.begin(), forced.end());
  }
  if (!report.conflicts.empty()) {
    if (auto r = store.sync(); !r) return std::unexpected(r.error());
  }
  for (const auto& c : report.conflicts) log::warning("overwriting (--force): " + c);
  report.conflicts.clear();

  OpenContent from_blob = [&](const FileMeta& st) -> Result<UniqueFd> {
    std::string blob = st.blob.value_or("");
    auto b = store.open_blob(blob);
    if (!b) return fail("the content of a change is missing from the store (blob " + blob + ")", b.error().err);
    return b;
  };
  // The first name in place of each recorded inode: the others become hard links of it.
  std::map<std::int64_t, std::pair<std::string, FileMeta>> first_name;
  auto same_file = [](const FileMeta& a, const FileMeta& b) {
    return a.blob.value_or("") == b.blob.value_or("") && a.mode.value_or(0) == b.mode.value_or(0) && a.uid == b.uid &&
           a.gid.value_or(0) == b.gid.value_or(0) && a.mtime_ns.value_or(0) == b.mtime_ns.value_or(0) && a.xattrs == b.xattrs &&
           a.size.value_or(0) == b.size.value_or(0);
  };
  std::vector<DirMeta> dirs;
  Progress progress(opts.progress, verb, changes->size());
  for (std::size_t i = 0; i < changes->size(); ++i) {
    progress.tick(i + 1);
    if (skip[i]) continue;
    const Change& c = (*changes)[i];
    bool linkable = type_of(c.after) == FileType::Regular && c.after->inode;
    if (checked[i].where == Where::After) {
      if (type_of(c.after) == FileType::Directory) dirs.push_back({c.path, *c.after});
      if (linkable) first_name.try_emplace(*c.after->inode, c.path, *c.after);
      continue;
    }
    const std::string* link_from = nullptr;
    if (linkable) {
      auto it = first_name.find(*c.after->inode);
      if (it != first_name.end() && same_file(it->second.second, *c.after)) link_from = &it->second.first;
    }
    // A directory replaced or removed invalidates the cached parent fd.
    if (type_of(c.before) == FileType::Directory || type_of(c.after) == FileType::Directory ||
        type_of(c.before) == FileType::Symlink) {
      tree.forget();
    }
    if (auto r = materialize(tree, c, tag, from_blob, dirs, link_from); !r) {
      // A failure (a full disk, a permission) rather than a crash: put back what was
      // already changed, newest first, so the tree is as it was before the operation.
      std::vector<DirMeta> undo_dirs;
      bool undone = true;
      tree.forget();
      for (std::size_t j = i + 1; j-- > 0;) {
        if (skip[j] || checked[j].where == Where::After) continue;
        Change back = inverse((*changes)[j]);
        auto where = check(store, tree, back);
        if (where && where->where == Where::After) continue;  // never got that far
        if (auto u = materialize(tree, back, tag, from_blob, undo_dirs); !u) {
          undone = false;
          log::error("could not undo " + log::quote(back.path) + ": " + u.error().message());
        }
      }
      if (undone && settle_dirs(tree, undo_dirs)) {
        if (on_rolled_back) on_rolled_back();
        return std::unexpected(SysError{r.error().what + "; nothing was changed", r.error().err});
      }
      return std::unexpected(r.error());
    }
    if (linkable) first_name.try_emplace(*c.after->inode, c.path, *c.after);
    ++report.applied;
  }
  if (auto r = settle_dirs(tree, dirs); !r) return std::unexpected(r.error());
  // Durable once, at the end, rather than an fsync per file.
  for (std::size_t i = 0; report.applied > 0 && i < tree.roots().size(); ++i) {
    if (auto fd = tree.root_fd(i); fd) {
      UniqueFd f(::openat(*fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (f) ::syncfs(f.get());
    }
  }
  return report;
}

Result<void> finish_accept(store::Store& store, const std::string& id, std::int64_t intent) {
  if (auto r = store.set_state(id, store::SessionState::Accepted); !r) return r;
  if (auto r = store.mark_applied(id); !r) return r;
  crash_point();
  if (auto r = store.remove_intent(intent); !r) return r;
  crash_point();
  return {};
}

Result<void> finish_restore(store::Store& store, const std::string& restore_id, const std::string& restored, std::int64_t intent) {
  if (auto r = store.finish(restore_id, {.state = store::SessionState::Accepted}); !r) return r;
  if (auto r = store.mark_applied(restore_id); !r) return r;
  crash_point();
  if (auto r = store.set_state(restored, store::SessionState::Restored); !r) return r;
  crash_point();
  if (auto r = store.remove_intent(intent); !r) return r;
  crash_point();
  return {};
}

std::string state_name(store::SessionState s) { return std::string(store::to_string(s)); }


}  // namespace

Result<ApplyReport> apply_locked(store::Store& store, const store::Session& s, const ApplyOptions& opts) {
  // The check runs first and writes nothing; the intent is recorded before the first write.
  std::int64_t intent = -1;
  auto begin = intent_recorder(store, s.id, "accept", "", opts.force, intent);
  auto report = apply_changes(store, s, "accepting", opts, begin, [&] { (void)store.remove_intent(intent); });
  if (!report || !report->conflicts.empty()) return report;
  if (auto r = finish_accept(store, s.id, intent); !r) return std::unexpected(r.error());
  return report;
}

namespace {

// A pending session, locked for as long as the result lives.
struct PendingSession {
  store::SessionLock lock;
  store::Session session;
};

Result<PendingSession> lock_pending(store::Store& store, const std::string& id, const char* verb) {
  auto lock = store.lock_session(id);
  if (!lock) return std::unexpected(lock.error());
  auto s = store.get_session(id);
  if (!s) return std::unexpected(s.error());
  if (!*s) return fail_msg("no session " + id);
  if ((*s)->state != store::SessionState::Pending) {
    return fail_msg("session " + id.substr(0, 12) + " is " + state_name((*s)->state) + ", not pending: only a pending session can be " + verb);
  }
  return PendingSession{std::move(*lock), std::move(**s)};
}

}  // namespace

Result<ApplyReport> accept_session(store::Store& store, const std::string& id, const ApplyOptions& opts) {
  auto p = lock_pending(store, id, "accepted");
  if (!p) return std::unexpected(p.error());
  return apply_locked(store, p->session, opts);
}

Result<ApplyReport> restore_session(store::Store& store, const std::string& id, const ApplyOptions& opts) {
  auto lock = store.lock_session(id);
  if (!lock) return std::unexpected(lock.error());
  auto got = store.get_session(id);
  if (!got) return std::unexpected(got.error());
  if (!*got) return fail_msg("no session " + id);
  const store::Session& s = **got;
  std::string short_id = id.substr(0, 12);
  switch (s.state) {
    case store::SessionState::Accepted: break;
    case store::SessionState::Restored:
      return fail_msg("session " + short_id + " is already restored");
    case store::SessionState::Pending:
      return fail_msg("session " + short_id + " is pending: nothing was applied (use `zerobox snapshot discard " + short_id + "`)");
    default:
      return fail_msg("session " + short_id + " is " + state_name(s.state) + ": nothing to restore");
  }
  auto changes = store.changes(id);
  if (!changes) return std::unexpected(changes.error());
  if (auto r = validate_journal(store, s, *changes); !r) return std::unexpected(r.error());

  store::NewSession ns;
  ns.kind = store::SessionKind::Restore;
  ns.mode = store::SessionMode::Snapshot;
  ns.command = {"zerobox", "snapshot", "restore", id};
  ns.cwd = s.cwd;
  ns.roots = s.roots;
  ns.policy = s.policy;
  ns.parent = id;
  auto r_session = store.create_session(ns);
  if (!r_session) return std::unexpected(r_session.error());
  auto r_lock = store.lock_session(r_session->id);
  if (!r_lock) return std::unexpected(r_lock.error());
  std::vector<Change> inv;
  std::vector<std::string> refs;
  inv.reserve(changes->size());
  for (auto it = changes->rbegin(); it != changes->rend(); ++it) {
    Change c = inverse(*it);
    for (const auto* side : {&c.before, &c.after}) {
      if (*side && (*side)->blob && !(*side)->blob->empty()) refs.push_back(*(*side)->blob);
    }
    inv.push_back(std::move(c));
  }
  if (auto r = store.retain_blobs(refs); !r) return std::unexpected(r.error());
  if (auto r = store.add_changes(r_session->id, inv); !r) return std::unexpected(r.error());
  auto fresh = store.get_session(r_session->id);
  if (!fresh || !*fresh) return std::unexpected(fresh ? SysError{"journal: restore session vanished", 0} : fresh.error());
  std::int64_t intent = -1;
  auto begin = intent_recorder(store, r_session->id, "restore", id, opts.force, intent);
  bool rolled_back = false;
  auto report = apply_changes(store, **fresh, "restoring", opts, begin, [&] {
    (void)store.remove_intent(intent);
    rolled_back = true;
  });
  if (!report || !report->conflicts.empty()) {
    // Refused, failed before any write, or rolled back: the new session was never
    // applied and is not kept. Failed half-way: kept, with its intent, for recovery.
    if (intent < 0 || rolled_back) (void)store.remove_session(std::move(*r_lock));
    return report;
  }
  if (auto r = finish_restore(store, r_session->id, id, intent); !r) return std::unexpected(r.error());
  report->session = r_session->id;
  return report;
}

Result<void> discard_session(store::Store& store, const std::string& id) {
  auto p = lock_pending(store, id, "discarded");
  if (!p) return std::unexpected(p.error());
  return store.set_state(id, store::SessionState::Discarded);
}

namespace {

// A session still `running` whose zerobox is gone (killed: its sandbox died with it,
// PR_SET_PDEATHSIG) still has its upper layers. They are journaled as a pending session,
// so what the command wrote can be reviewed rather than lost. Only sessions whose lock
// file holds a pid are considered: one that is being created has none yet.
Result<void> recover_abandoned(store::Store& store, std::vector<std::string>& done) {
  // Every zerobox that opens the store comes here: read only the running sessions.
  auto sessions = store.list_sessions(store::SessionState::Running);
  if (!sessions) return std::unexpected(sessions.error());
  for (const auto& s : *sessions) {
    if (s.state != store::SessionState::Running || s.kind != store::SessionKind::Run) continue;
    std::string lockfile = store.session_dir(s.id) + "/lock";
    struct stat st {};
    if (::stat(lockfile.c_str(), &st) != 0 || st.st_size == 0) continue;
    auto lock = store.lock_session(s.id);
    if (!lock) continue;  // its zerobox is alive
    auto again = store.get_session(s.id);
    if (!again || !*again || (*again)->state != store::SessionState::Running) continue;
    auto js = journal_session(store, s, SessionPolicy::from_json(s.policy.value_or("")));
    if (!js) {
      (void)store.finish(s.id, {.state = store::SessionState::Failed});
      done.push_back("warning: session " + s.id.substr(0, 12) + " was left running by a zerobox that was killed; its layers could not be read: " +
                     js.error().message());
      continue;
    }
    auto state = s.mode == store::SessionMode::Restore ? store::SessionState::Restored : store::SessionState::Pending;
    if (auto r = store.finish(s.id, {.state = state}); !r) return r;
    done.push_back("session " + s.id.substr(0, 12) + " was left running by a zerobox that was killed: " + std::to_string(js->changes) +
                   (js->changes == 1 ? " change" : " changes") + " recorded, " + std::string(store::to_string(state)));
  }
  return {};
}

}  // namespace

Result<void> recover_interrupted(store::Store& store) {
  std::vector<std::string> done;
  if (auto r = recover_abandoned(store, done); !r) return std::unexpected(r.error());
  auto intents = store.intents();
  if (!intents) return std::unexpected(intents.error());
  for (const auto& in : *intents) {
    auto lock = store.lock_session(in.session);
    if (!lock) {
      if (lock.error().err == ENOENT) {
        (void)store.remove_intent(in.id);
        continue;
      }
      continue;  // in use: its owner is still working on it
    }
    auto s = store.get_session(in.session);
    if (!s) return std::unexpected(s.error());
    if (!*s) {
      (void)store.remove_intent(in.id);
      continue;
    }
    // A failure here is reported and left for later: it must not make the rest of the
    // store unusable.
    auto data = nlohmann::json::parse(in.data, nullptr, false);
    ApplyOptions opts;
    std::string restored, tag;
    if (data.is_object()) {
      opts.force = data.value("force", false);
      restored = data.value("restores", std::string());
      tag = data.value("tag", std::string());
    }
    if (in.op == "accept" && (*s)->state != store::SessionState::Pending) {
      (void)store.remove_intent(in.id);  // already finished, or given up
      continue;
    }
    if (tag.empty()) {
      auto t = util::random_hex(16);
      if (!t) return std::unexpected(t.error());
      tag = *t;
    }
    // The user knows a restore by the session it restores.
    const std::string& shown_id = in.op == "restore" && !restored.empty() ? restored : in.session;
    auto report = apply_changes(store, **s, "finishing", opts, [&]() -> Result<std::string> { return tag; });
    if (!report) {
      done.push_back("warning: cannot finish the interrupted " + in.op + " of session " + shown_id.substr(0, 12) + " yet: " +
                     report.error().message());
      continue;
    }
    if (!report->conflicts.empty()) {
      std::string msg = "warning: cannot finish the interrupted " + in.op + " of session " + shown_id.substr(0, 12) + ": ";
      msg += report->conflicts.front();
      if (report->conflicts.size() > 1) msg += " (and " + std::to_string(report->conflicts.size() - 1) + " more)";
      done.push_back(msg);
      continue;
    }
    if (in.op == "restore") {
      if (auto r = finish_restore(store, in.session, restored, in.id); !r) return std::unexpected(r.error());
      done.push_back("finished the interrupted restore of session " + restored.substr(0, 12));
    } else {
      if (auto r = finish_accept(store, in.session, in.id); !r) return std::unexpected(r.error());
      done.push_back("finished the interrupted accept of session " + in.session.substr(0, 12));
    }
  }
  for (const auto& line : done) {
    if (line.rfind("warning: ", 0) == 0) {
      log::warning(line.substr(9));
    } else {
      log::info(line);
    }
  }
  return {};
}

Result<void> apply_from_file(const std::string& root, const Change& change, const std::string& content_path) {
  Tree tree({root});
  // Directories needed by an excluded file are created (they may be pending in the journal).
  std::string rel = root == "/" ? change.path.substr(1) : change.path.substr(root.size() + 1);
  std::string built = root;
  for (std::size_t pos = rel.find('/'); pos != std::string::npos; pos = rel.find('/', pos + 1)) {
    std::string dir = path::join(root, rel.substr(0, pos));
    auto par = tree.parent(dir);
    if (!par) return std::unexpected(par.error());
    if (::mkdirat(par->fd, par->name.c_str(), 0755) != 0 && errno != EEXIST) return fail("mkdir " + log::quote(dir));
    tree.forget();
  }
  std::vector<DirMeta> dirs;
  OpenContent from_file = [&](const FileMeta&) -> Result<UniqueFd> {
    UniqueFd f(::open(content_path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!f) return fail("open " + log::quote(content_path));
    return f;
  };
  if (auto r = materialize(tree, change, "excluded", from_file, dirs); !r) return r;
  return settle_dirs(tree, dirs);
}

}  // namespace zb::snapshot
