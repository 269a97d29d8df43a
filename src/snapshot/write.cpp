// Step 3 of accept and restore (apply.hpp): moving one target to its after-state through
// a temporary name and a rename, with its mode, owner, xattrs and mtime, and the
// directories' metadata last.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include "snapshot/apply_internal.hpp"
#include "util/copy.hpp"
#include "util/log.hpp"
#include "util/path.hpp"

namespace zb::snapshot::detail {

using store::Change;
using store::FileMeta;
using store::FileType;
using store::type_of;

namespace {

// What accept writes: setuid and setgid are never carried onto the real filesystem.
// The journal never holds a setuid or setgid bit made by a sandboxed command (the journal
// strips them), so what it says is what is written: a restore puts back the host's own
// files exactly as they were.
std::uint32_t written_mode(const FileMeta& s) { return s.mode.value_or(0) & 07777u; }

bool is_root() { return ::geteuid() == 0; }

// Puts a state's recorded xattrs on dirfd/name. `replace`: an inode that exists already,
// whose user.* xattrs become exactly the recorded ones. After a chown (which drops
// security.capability) and before a chmod that may take away the owner's write permission
// (user.* needs it).
Result<void> set_xattrs_at(int dirfd, const std::string& name, const FileMeta& s, const std::string& shown,
                           bool replace) {
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
    if (::fchownat(dirfd, name.c_str(), *s.uid, s.gid.value_or(0), AT_SYMLINK_NOFOLLOW) != 0)
      return fail("chown " + log::quote(shown));
  }
  if (chmod_it && !is_root() && s.xattrs) (void)::fchmodat(dirfd, name.c_str(), written_mode(s) | 0700, 0);
  if (auto r = set_xattrs_at(dirfd, name, s, shown, replace_xattrs); !r) return r;
  if (chmod_it && ::fchmodat(dirfd, name.c_str(), written_mode(s), AT_SYMLINK_NOFOLLOW) != 0)
    return fail("chmod " + log::quote(shown));
  struct timespec ts[2];
  ts[0].tv_sec = s.mtime_ns.value_or(0) / 1000000000;
  ts[0].tv_nsec = s.mtime_ns.value_or(0) % 1000000000;
  ts[1] = ts[0];
  if (::utimensat(dirfd, name.c_str(), ts, AT_SYMLINK_NOFOLLOW) != 0) return fail("set mtime of " + log::quote(shown));
  return {};
}

// Puts tmp in place of name, removing an (empty) directory that is there first.
Result<void> replace_with(int dirfd, const std::string& tmp, const std::string& name, const std::string& shown) {
  struct stat st{};
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
    auto par = tree.open_parent(dir);
    if (!par) return;
    m_fd = std::move(par->fd);
    m_name = std::move(par->name);
    struct stat st{};
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

}  // namespace

Result<void> materialize(Tree& tree, const Change& c, const std::string& tmp_tag, const OpenContent& open_content,
                         std::vector<DirMeta>& dirs, const std::string* link_from) {
  WritableParent writable(tree, c.path);
  auto par_r = tree.parent(c.path);
  if (!par_r) return std::unexpected(par_r.error());
  auto par = *par_r;
  const char* name = par.name.c_str();
  struct stat st{};
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
        if (!n)
          return std::unexpected(SysError{n.error().what + " (writing " + log::quote(c.path) + ")", n.error().err});
        if (is_root() && s.uid && ::fchown(out.get(), *s.uid, s.gid.value_or(0)) != 0)
          return fail("chown " + log::quote(c.path));
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
      if (::symlinkat(s.link.value_or("").c_str(), par.fd, tmp.c_str()) != 0)
        return fail("symlink " + log::quote(c.path));
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
    struct stat st{};
    if (::fstatat(par->fd, par->name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (auto r = set_meta_at(par->fd, par->name, d.s, d.path, true, true); !r) return r;
  }
  return {};
}

}  // namespace zb::snapshot::detail
