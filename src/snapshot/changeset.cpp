// Reading an overlayfs upper layer back into changes; the contract is in changeset.hpp.
#include "snapshot/changeset.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

#include "util/copy.hpp"
#include "util/fd.hpp"
#include "util/fs.hpp"

namespace zb::snapshot {

constexpr std::size_t k_max_depth = 2000;
namespace {

using store::ChangeKind;
using store::FileType;

struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};
using DirPtr = std::unique_ptr<DIR, DirCloser>;

std::string shown(const std::string& rel) { return rel.empty() ? "." : rel; }

std::string child_path(const std::string& rel, const char* name) {
  return rel.empty() ? std::string(name) : rel + "/" + name;
}

// A stream over the entries of `dir_fd` (which stays open and owned by the caller).
Result<DirPtr> open_listing(int dir_fd, const std::string& what) {
  int fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fail("openat " + what);
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    int err = errno;
    ::close(fd);
    return fail("fdopendir " + what, err);
  }
  return DirPtr(d);
}

// The next entry other than "." and ".."; nullptr at the end.
Result<const dirent*> next_entry(DIR* d, const std::string& what) {
  for (;;) {
    errno = 0;
    const dirent* e = ::readdir(d);
    if (e == nullptr) {
      if (errno != 0) return fail("readdir " + what);
      return nullptr;
    }
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    return e;
  }
}

// "Missing" is not "failed": nullopt when the entry does not exist.
Result<std::optional<struct stat>> stat_at(int dir_fd, const char* name, const std::string& what) {
  struct stat st{};
  if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) return st;
  // ENOTDIR: a lower parent replaced by a file while we scan; the entry is absent.
  if (errno == ENOENT || errno == ENOTDIR) return std::optional<struct stat>{};
  return fail("fstatat " + what);
}

Result<UniqueFd> open_dir_at(int dir_fd, const char* name, const std::string& what) {
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  // An unprivileged command may leave a directory of the upper layer unreadable (mode
  // 000): the layer is zerobox's own, and the mode was read before this open, so make it
  // searchable. Never done to the lower (host) tree.
  if (!fd && errno == EACCES && ::geteuid() != 0 && what.rfind("upper ", 0) == 0) {
    struct stat st{};
    if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid()) {
      ::fchmodat(dir_fd, name, (st.st_mode & 07777) | 0700, 0);
      fd.reset(::openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    }
  }
  if (!fd) return fail("openat " + what);
  return fd;
}

using util::mtime_ns;
using util::read_link_at;

std::uint32_t perm_bits(const struct stat& st) { return st.st_mode & 07777U; }

bool same_attrs(const struct stat& a, const struct stat& b) {
  return perm_bits(a) == perm_bits(b) && a.st_uid == b.st_uid && a.st_gid == b.st_gid;
}

FileType type_of(const struct stat& st) {
  // Linux has no other types; a stat that reports one is treated as a regular file.
  return store::file_type_of(st.st_mode).value_or(FileType::Regular);
}

bool sized(FileType t) { return t == FileType::Regular || t == FileType::Symlink; }

Result<std::string> xattrs_of(int dir_fd, const char* name, util::XattrScope scope, const std::string& what) {
  auto x = util::read_xattrs(dir_fd, name, scope);
  if (!x) return std::unexpected(SysError{x.error().what + " (" + what + ")", x.error().err});
  return store::encode_xattrs(*x);
}

// Whether the xattrs a command may set (XattrScope::Carried) differ between the two: a
// setfattr changes neither content, mode nor owner, and is a change all the same.
Result<bool> carried_xattrs_differ(int upper, int lower, const char* name, const std::string& path) {
  auto u = util::read_xattrs(upper, name, util::XattrScope::Carried);
  if (!u) return std::unexpected(SysError{u.error().what + " (upper " + path + ")", u.error().err});
  auto l = util::read_xattrs(lower, name, util::XattrScope::Carried);
  if (!l) return std::unexpected(SysError{l.error().what + " (lower " + path + ")", l.error().err});
  return *u != *l;
}

std::int64_t ctime_ns(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + static_cast<std::int64_t>(st.st_ctim.tv_nsec);
}

// One side of a change from the entry's stat: every reported side carries its xattrs of
// `scope` (changeset.hpp).
Result<store::FileMeta> meta_of(int dir_fd, const char* name, const std::string& what, const struct stat& st,
                                std::optional<std::string> link, util::XattrScope scope) {
  store::FileMeta m;
  m.type = type_of(st);
  m.mode = perm_bits(st);
  if (sized(m.type)) m.size = static_cast<std::int64_t>(st.st_size);
  m.mtime_ns = mtime_ns(st);
  m.uid = st.st_uid;
  m.gid = st.st_gid;
  m.link = std::move(link);
  auto x = xattrs_of(dir_fd, name, scope, what);
  if (!x) return std::unexpected(x.error());
  m.xattrs = std::move(*x);
  return m;
}

// The lower entry, as the change's before side: every readable xattr, and an inode label
// for a regular file with other hard links.
Result<void> fill_old(store::Change& c, int dir_fd, const char* name, const std::string& what, const struct stat& st,
                      std::optional<std::string> link) {
  auto m = meta_of(dir_fd, name, what, st, std::move(link), util::XattrScope::All);
  if (!m) return std::unexpected(m.error());
  if (m->type == FileType::Regular && st.st_nlink > 1) m->inode = inode_label(st);
  c.before = std::move(*m);
  return {};
}

// The upper entry, as the change's after side: the xattrs a command may set.
Result<void> fill_new(ScannedChange& sc, int dir_fd, const char* name, const std::string& what, const struct stat& st,
                      std::optional<std::string> link) {
  auto m = meta_of(dir_fd, name, what, st, std::move(link), util::XattrScope::Carried);
  if (!m) return std::unexpected(m.error());
  sc.change.after = std::move(*m);
  sc.new_nlink = static_cast<std::uint64_t>(st.st_nlink);
  sc.new_ino = static_cast<std::uint64_t>(st.st_ino);
  return {};
}

// The value of xattr `name` if it is exactly "y" (or the other one-letter value asked for).
bool xattr_is(int fd, const std::string& name, char value) {
  std::array<char, 2> buf{};
  ssize_t n = ::fgetxattr(fd, name.c_str(), buf.data(), buf.size());
  return n == 1 && buf[0] == value;
}

// Overlay's second whiteout form: a zero-size regular file carrying overlay.whiteout (any
// value). Looked up through /proc/self/fd when the file cannot be opened for reading (an
// unprivileged scan of a mode-000 file): lgetxattr needs no permission on the file itself.
Result<bool> is_xattr_whiteout(int dir_fd, const char* name, const std::string& attr, const std::string& what) {
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  ssize_t n = -1;
  if (fd) {
    n = ::fgetxattr(fd.get(), attr.c_str(), nullptr, 0);
  } else if (errno == EACCES) {
    std::string proc = "/proc/self/fd/" + std::to_string(dir_fd) + "/" + name;
    n = ::lgetxattr(proc.c_str(), attr.c_str(), nullptr, 0);
  } else {
    return fail("openat " + what);
  }
  if (n >= 0) return true;
  if (errno == ENODATA || errno == ENOTSUP) return false;
  return fail("getxattr " + attr + " " + what);
}

class Walker {
 public:
  Walker(const ChangeSink& sink, const ScanOptions& options)
      : m_sink(sink), m_since(options.since_ns), m_on_opaque(options.on_opaque) {
    std::string prefix = options.xattrs == OverlayXattrs::User ? "user.overlay." : "trusted.overlay.";
    m_opaque = prefix + "opaque";
    m_whiteout = prefix + "whiteout";
  }

  bool is_opaque(int dir_fd) const { return xattr_is(dir_fd, m_opaque, 'y'); }

  // Compares the upper directory `upper` with `lower` (-1: none). `hidden`: the merged
  // view does not show the lower directory (opacity), so lower entries without an upper
  // counterpart are deleted.
  Result<void> walk_dir(int upper, int lower, bool hidden, const std::string& rel) {
    // The walk recurses (about 2 KiB of stack a level): a command that nests thousands of
    // directories gets a clear error, not a crash of zerobox.
    if (static_cast<std::size_t>(std::count(rel.begin(), rel.end(), '/')) >= k_max_depth) {
      return fail_msg("upper " + shown(rel) + ": more than " + std::to_string(k_max_depth) + " nested directories");
    }
    if (lower >= 0 && hidden) {
      if (auto r = delete_hidden(upper, lower, rel); !r) return r;
    }
    auto listing = open_listing(upper, "upper " + shown(rel));
    if (!listing) return std::unexpected(listing.error());
    // The baseline of a directory that hides its lower one: what the command left in it.
    bool baseline = lower >= 0 && hidden && m_on_opaque;
    std::vector<std::string> names;
    for (;;) {
      auto e = next_entry(listing->get(), "upper " + shown(rel));
      if (!e) return std::unexpected(e.error());
      if (*e == nullptr) break;
      auto kept = visit(upper, lower, hidden, rel, (*e)->d_name);
      if (!kept) return std::unexpected(kept.error());
      if (baseline && *kept) names.emplace_back((*e)->d_name);
    }
    if (baseline) return m_on_opaque(rel, names);
    return {};
  }

 private:
  Result<void> emit(ScannedChange&& sc) { return m_sink(sc); }

  // Lower entries of an opaque directory that have no upper entry of the same name.
  Result<void> delete_hidden(int upper, int lower, const std::string& rel) {
    auto listing = open_listing(lower, "lower " + shown(rel));
    if (!listing) return std::unexpected(listing.error());
    for (;;) {
      auto e = next_entry(listing->get(), "lower " + shown(rel));
      if (!e) return std::unexpected(e.error());
      if (*e == nullptr) return {};
      const char* name = (*e)->d_name;
      std::string path = child_path(rel, name);
      auto ust = stat_at(upper, name, "upper " + path);
      if (!ust) return std::unexpected(ust.error());
      if (ust->has_value()) continue;  // the upper entry decides (visit)
      auto lst = stat_at(lower, name, "lower " + path);
      if (!lst) return std::unexpected(lst.error());
      if (!lst->has_value()) continue;  // vanished meanwhile
      if (unseen(**lst)) continue;
      if (auto r = report_deleted(lower, name, **lst, path); !r) return r;
    }
  }

  // A lower entry hidden wholesale that the host added or changed during the run.
  bool unseen(const struct stat& st) const { return m_since > 0 && !S_ISDIR(st.st_mode) && ctime_ns(st) >= m_since; }

  // A lower entry is gone: its subtree first (post-order), then the entry.
  Result<void> report_deleted(int lower, const char* name, const struct stat& lst, const std::string& path) {
    if (S_ISDIR(lst.st_mode)) {
      if (auto r = delete_contents(lower, name, path); !r) return r;
    }
    ScannedChange sc;
    sc.change.path = path;
    sc.change.kind = ChangeKind::Deleted;
    std::optional<std::string> link;
    if (S_ISLNK(lst.st_mode)) {
      auto l = read_link_at(lower, name, "lower " + path);
      if (!l) return std::unexpected(l.error());
      link = std::move(*l);
    }
    if (auto r = fill_old(sc.change, lower, name, "lower " + path, lst, std::move(link)); !r) return r;
    return emit(std::move(sc));
  }

  // Every entry below the lower directory `name`, reported deleted.
  Result<void> delete_contents(int lower, const char* name, const std::string& path) {
    UniqueFd dir(::openat(lower, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) {
      if (errno == ENOENT || errno == ENOTDIR) return {};  // vanished or replaced meanwhile
      return fail("openat lower " + path);
    }
    auto listing = open_listing(dir.get(), "lower " + path);
    if (!listing) return std::unexpected(listing.error());
    for (;;) {
      auto e = next_entry(listing->get(), "lower " + path);
      if (!e) return std::unexpected(e.error());
      if (*e == nullptr) return {};
      std::string sub = child_path(path, (*e)->d_name);
      auto st = stat_at(dir.get(), (*e)->d_name, "lower " + sub);
      if (!st) return std::unexpected(st.error());
      if (!st->has_value()) continue;
      if (unseen(**st)) continue;
      if (auto r = report_deleted(dir.get(), (*e)->d_name, **st, sub); !r) return r;
    }
  }

  // True when the entry is part of the merged view (not a whiteout).
  Result<bool> visit(int upper, int lower, bool hidden, const std::string& rel, const char* name) {
    std::string path = child_path(rel, name);
    auto ust_r = stat_at(upper, name, "upper " + path);
    if (!ust_r) return std::unexpected(ust_r.error());
    if (!ust_r->has_value()) return false;  // cannot happen once the sandbox is gone
    const struct stat ust = **ust_r;

    std::optional<struct stat> lst;
    if (lower >= 0) {
      auto l = stat_at(lower, name, "lower " + path);
      if (!l) return std::unexpected(l.error());
      lst = *l;
    }

    bool whiteout = S_ISCHR(ust.st_mode) && ust.st_rdev == makedev(0, 0);
    if (!whiteout && S_ISREG(ust.st_mode) && ust.st_size == 0) {
      auto w = is_xattr_whiteout(upper, name, m_whiteout, "upper " + path);
      if (!w) return std::unexpected(w.error());
      whiteout = *w;
    }
    if (whiteout) {
      if (!lst) return false;  // a whiteout over nothing (created, then deleted)
      if (auto r = report_deleted(lower, name, *lst, path); !r) return std::unexpected(r.error());
      return false;
    }

    if (S_ISDIR(ust.st_mode)) {
      if (auto r = visit_dir(upper, lower, hidden, name, path, ust, lst); !r) return std::unexpected(r.error());
      return true;
    }

    std::optional<std::string> new_link;
    if (S_ISLNK(ust.st_mode)) {
      auto l = read_link_at(upper, name, "upper " + path);
      if (!l) return std::unexpected(l.error());
      new_link = std::move(*l);
    }
    ScannedChange sc;
    sc.change.path = path;
    if (!lst) {
      sc.change.kind = ChangeKind::Added;
      if (auto r = fill_new(sc, upper, name, "upper " + path, ust, std::move(new_link)); !r)
        return std::unexpected(r.error());
      if (auto r = emit(std::move(sc)); !r) return std::unexpected(r.error());
      return true;
    }
    std::optional<std::string> old_link;
    if (S_ISLNK(lst->st_mode)) {
      auto l = read_link_at(lower, name, "lower " + path);
      if (!l) return std::unexpected(l.error());
      old_link = std::move(*l);
    }
    if ((ust.st_mode & S_IFMT) != (lst->st_mode & S_IFMT)) {
      // The lower directory's contents go before the entry replacing it.
      if (S_ISDIR(lst->st_mode)) {
        if (auto r = delete_contents(lower, name, path); !r) return std::unexpected(r.error());
      }
      sc.change.kind = ChangeKind::TypeChanged;
    } else {
      auto differs = content_differs(upper, lower, name, path, ust, *lst, new_link, old_link);
      if (!differs) return std::unexpected(differs.error());
      if (*differs) {
        sc.change.kind = ChangeKind::Modified;
      } else if (!same_attrs(ust, *lst)) {
        sc.change.kind = ChangeKind::ModeChanged;
      } else {
        auto x = carried_xattrs_differ(upper, lower, name, path);
        if (!x) return std::unexpected(x.error());
        if (!*x) return true;  // a copy-up that changed nothing visible
        sc.change.kind = ChangeKind::ModeChanged;
      }
    }
    if (auto r = fill_old(sc.change, lower, name, "lower " + path, *lst, std::move(old_link)); !r)
      return std::unexpected(r.error());
    if (auto r = fill_new(sc, upper, name, "upper " + path, ust, std::move(new_link)); !r)
      return std::unexpected(r.error());
    if (auto r = emit(std::move(sc)); !r) return std::unexpected(r.error());
    return true;
  }

  Result<void> visit_dir(int upper, int lower, bool hidden, const char* name, const std::string& path,
                         const struct stat& ust, const std::optional<struct stat>& lst) {
    auto udir = open_dir_at(upper, name, "upper " + path);
    if (!udir) return std::unexpected(udir.error());
    ScannedChange sc;
    sc.change.path = path;
    if (lst && S_ISDIR(lst->st_mode)) {
      bool changed = !same_attrs(ust, *lst);
      if (!changed) {
        auto x = carried_xattrs_differ(upper, lower, name, path);
        if (!x) return std::unexpected(x.error());
        changed = *x;
      }
      if (changed) {
        sc.change.kind = ChangeKind::ModeChanged;
        if (auto r = fill_old(sc.change, lower, name, "lower " + path, *lst, std::nullopt); !r) return r;
        if (auto r = fill_new(sc, upper, name, "upper " + path, ust, std::nullopt); !r) return r;
        if (auto r = emit(std::move(sc)); !r) return r;
      }
      UniqueFd ldir(::openat(lower, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!ldir && errno != ENOENT && errno != ENOTDIR) return fail("openat lower " + path);
      return walk_dir(udir->get(), ldir.get(), hidden || is_opaque(udir->get()), path);
    }
    if (lst) {
      std::optional<std::string> old_link;
      if (S_ISLNK(lst->st_mode)) {
        auto l = read_link_at(lower, name, "lower " + path);
        if (!l) return std::unexpected(l.error());
        old_link = std::move(*l);
      }
      sc.change.kind = ChangeKind::TypeChanged;
      if (auto r = fill_old(sc.change, lower, name, "lower " + path, *lst, std::move(old_link)); !r) return r;
    } else {
      sc.change.kind = ChangeKind::Added;
    }
    if (auto r = fill_new(sc, upper, name, "upper " + path, ust, std::nullopt); !r) return r;
    if (auto r = emit(std::move(sc)); !r) return r;
    return walk_dir(udir->get(), -1, false, path);
  }

  // Same-type entries: regular files by size then bytes, symlinks by target, devices by
  // number. FIFOs and sockets have no content.
  static Result<bool> content_differs(int upper, int lower, const char* name, const std::string& path,
                                      const struct stat& ust, const struct stat& lst,
                                      const std::optional<std::string>& new_link,
                                      const std::optional<std::string>& old_link) {
    switch (ust.st_mode & S_IFMT) {
      case S_IFREG: {
        if (ust.st_size != lst.st_size) return true;
        if (ust.st_size == 0) return false;
        constexpr int k_flags = O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC;
        UniqueFd a(::openat(upper, name, k_flags));
        if (!a) return fail("openat upper " + path);
        UniqueFd b(::openat(lower, name, k_flags));
        if (!b) return fail("openat lower " + path);
        auto same = same_content(a.get(), b.get(), static_cast<std::int64_t>(ust.st_size));
        if (!same) return std::unexpected(same.error());
        return !*same;
      }
      case S_IFLNK: return new_link != old_link;
      case S_IFCHR:
      case S_IFBLK: return ust.st_rdev != lst.st_rdev;
      default: return false;
    }
  }

  const ChangeSink& m_sink;
  std::int64_t m_since = 0;
  const OpaqueSink& m_on_opaque;
  std::string m_opaque;
  std::string m_whiteout;
};

// The offset of the next data at or after `off` (SEEK_DATA), `size` when only a hole
// remains. Filesystems without SEEK_DATA have data everywhere.
off_t next_data(int fd, off_t off, off_t size) {
  off_t r = ::lseek(fd, off, SEEK_DATA);
  if (r >= 0) return std::min(r, size);
  return errno == ENXIO ? size : off;
}

off_t next_hole(int fd, off_t off, off_t size) {
  off_t r = ::lseek(fd, off, SEEK_HOLE);
  if (r >= 0) return std::min(r, size);
  return size;
}

Result<std::size_t> pread_full(int fd, char* buf, std::size_t len, off_t off) {
  std::size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd, buf + done, len - done, off + static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("pread");
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

}  // namespace

std::int64_t inode_label(const struct stat& st) {
  // Only compared within one session: a mix of both numbers is enough.
  auto dev = static_cast<std::uint64_t>(st.st_dev);
  auto ino = static_cast<std::uint64_t>(st.st_ino);
  return static_cast<std::int64_t>((ino ^ (dev * 0x9E3779B97F4A7C15ULL)) & 0x7fffffffffffffffULL);
}

Result<bool> same_content(int a, int b, std::int64_t size_in) {
  constexpr std::size_t k_chunk = std::size_t{64} * 1024;
  auto buf = std::make_unique<char[]>(2 * k_chunk);
  char* ba = buf.get();
  char* bb = buf.get() + k_chunk;
  const auto size = static_cast<off_t>(size_in);
  off_t off = 0;
  while (off < size) {
    // Ranges that are holes in both files read as zeros in both: skip them.
    off = std::min(next_data(a, off, size), next_data(b, off, size));
    if (off >= size) break;
    off_t end = std::max(next_hole(a, off, size), next_hole(b, off, size));
    if (end <= off) end = size;  // defensive: never loop without progress
    while (off < end) {
      auto want = static_cast<std::size_t>(std::min<off_t>(static_cast<off_t>(k_chunk), end - off));
      auto na = pread_full(a, ba, want, off);
      if (!na) return std::unexpected(na.error());
      auto nb = pread_full(b, bb, want, off);
      if (!nb) return std::unexpected(nb.error());
      if (*na != *nb || std::memcmp(ba, bb, *na) != 0) return false;
      if (*na < want) return true;  // both ended early (shrunk meanwhile), equally
      off += static_cast<off_t>(want);
    }
  }
  return true;
}

Result<void> for_each_change(int upper_dir, int lower_dir, const ChangeSink& sink, const ScanOptions& options) {
  Walker walker(sink, options);
  return walker.walk_dir(upper_dir, lower_dir, walker.is_opaque(upper_dir), "");
}

Result<void> for_each_change(const std::string& upper_dir, const std::string& lower_dir, const ChangeSink& sink,
                             const ScanOptions& options) {
  UniqueFd upper(::open(upper_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!upper) return fail("open " + upper_dir);
  UniqueFd lower(::open(lower_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!lower) return fail("open " + lower_dir);
  return for_each_change(upper.get(), lower.get(), sink, options);
}

Result<std::vector<ScannedChange>> collect_changes(const std::string& upper_dir, const std::string& lower_dir,
                                                   const ScanOptions& options) {
  std::vector<ScannedChange> out;
  auto r = for_each_change(
      upper_dir, lower_dir,
      [&out](const ScannedChange& c) -> Result<void> {
        out.push_back(c);
        return {};
      },
      options);
  if (!r) return std::unexpected(r.error());
  return out;
}

}  // namespace zb::snapshot
