// compute_fs(): the filesystem view of a finalized Policy, one step a function, and what
// is derived from that view (the store mask, the writable roots, the --allow-write hint).
#include <dirent.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <optional>

#include "policy/internal.hpp"
#include "policy/policy.hpp"
#include "util/env.hpp"
#include "util/path.hpp"

namespace zb::policy {

using zerobox::Policy;
using zerobox::SnapshotMode;

namespace {

using namespace internal;

// The top of the git work tree that contains dir, if any.
std::string git_toplevel(std::string dir) {
  for (;;) {
    if (lexists(path::join(dir, ".git"))) return dir;
    if (dir == "/") return {};
    dir = path::parent(dir);
  }
}

// In the sandbox's view at all (under --allow-read, inside a readable root).
bool visible(const FsRules& fs, const std::string& x) { return !fs.read_restricted || under_any(x, fs.readable); }

// Where the command could write, before any mask or read-only view is applied.
bool in_writable_area(const FsRules& fs, const std::string& x) {
  return fs.write_all ? visible(fs, x) : under_any(x, fs.writable);
}

// Writable in the view: in the writable area and not masked.
bool writable_at(const FsRules& fs, const std::string& x) {
  if (under_any(x, fs.masked)) return false;
  return in_writable_area(fs, x);
}

// A denied path that does not exist has no inode to mount over. Where the command could
// create it (a writable directory holds its parent), zerobox creates an empty anchor
// for the run and masks that (true); a deeper missing path is moved aside at exit.
bool absent_denied(FsRules& fs, const std::string& d) {
  if (!in_writable_area(fs, d)) return false;
  if (path::kind_of(path::parent(d)) == path::Kind::Directory) {
    fs.mask_anchors.push_back(d);
    return true;
  }
  fs.absent_protected.push_back(d);
  return false;
}

// The command's binary, found on PATH as execvp would (the --env PATH wins).
void command_binary(FsRules& fs, const Policy& p, const Caller& c) {
  auto path_it = c.env.find("PATH");
  std::string path_env = path_it != c.env.end() ? path_it->second : std::string(env::k_default_path);
  for (const auto& kv : p.env_set) {
    if (kv.first == "PATH") path_env = kv.second;
  }
  if (p.argv.empty()) return;
  std::string bin = resolve_command(p.argv[0], path_env, p.cwd);
  if (bin.empty()) return;
  fs.command_path = bin;
  auto canon = path::canonicalize(bin);
  fs.binary = canon ? canon->path : bin;
}

// The --allow-write paths; deny lists win over allow lists.
void writable_paths(FsRules& fs, const Policy& p) {
  for (const auto& w : p.allow_write) {
    if (under_any(w, p.deny_write) || under_any(w, p.deny_read)) continue;
    fs.writable.push_back(w);
  }
  sort_unique(fs.writable);
}

// Under --allow-read: the system paths, the named ones, the writable ones and the binary.
void readable_roots(FsRules& fs, const Policy& p) {
  if (!fs.read_restricted) return;
  for (const auto& sp : system_read_paths()) {
    struct stat st{};
    if (::lstat(sp.c_str(), &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      fs.system_links.push_back(sp);
      auto canon = path::canonicalize(sp);
      if (canon && canon->exists) fs.readable.push_back(canon->path);
    } else {
      fs.readable.push_back(sp);
    }
  }
  for (const auto& r : p.allow_read) {
    if (lexists(r)) fs.readable.push_back(r);
  }
  for (const auto& w : fs.writable) fs.readable.push_back(w);
  if (!fs.binary.empty()) fs.readable.push_back(fs.binary);
  drop_nested(fs.readable);
  fs.scratch_host_content = under_any("/tmp", fs.readable);
}

// The scratch space with a bare --allow-write. With --allow-read, only what is readable
// becomes writable: the host's /tmp is bound in only when /tmp is readable, otherwise it
// stays a private scratch directory.
void scratch_space(FsRules& fs) {
  if (!fs.write_all) return;
  fs.tmp_writable = visible(fs, "/tmp");
  fs.var_tmp_writable = visible(fs, "/var/tmp");
  fs.shm_writable = visible(fs, "/dev/shm");
}

// Masks: --deny-read, then the protected secrets (protected_read_paths).
void masks(FsRules& fs, const Policy& p, const Caller& c) {
  for (const auto& d : p.deny_read) {
    if (lexists(d) ? visible(fs, d) : absent_denied(fs, d)) fs.masked.push_back(d);
    if (visible(fs, d)) fs.deny_read_all.push_back(d);
  }
  if (p.protect) {
    for (const auto& raw : protected_read_paths()) {
      std::string abs = path::absolute(raw, c.cwd, c.home);
      std::vector<std::string> matches;
      if (abs.find('*') != std::string::npos) {
        glob_t g{};
        if (::glob(abs.c_str(), GLOB_NOSORT, nullptr, &g) == 0) {
          for (size_t i = 0; i < g.gl_pathc; ++i) matches.emplace_back(g.gl_pathv[i]);
        }
        ::globfree(&g);
      } else {
        matches.push_back(abs);
      }
      for (auto& m : matches) {
        struct stat st{};
        if (::stat(m.c_str(), &st) != 0 && errno == ENOENT) continue;  // most are absent: skip the walk
        auto canon = path::canonicalize(m);
        if (!canon || !canon->exists) continue;
        if (named(canon->path, p.allow_read) || named(canon->path, p.allow_write)) continue;
        if (visible(fs, canon->path)) fs.masked.push_back(canon->path);
      }
    }
  }
  drop_nested(fs.masked);
}

// Read-only views of --deny-write paths (anchors for absent ones, as for masks).
void denied_writes(FsRules& fs, const Policy& p) {
  for (const auto& d : p.deny_write) {
    if (!writable_at(fs, d)) continue;
    if (lexists(d) || absent_denied(fs, d)) fs.read_only.push_back(d);
  }
}

// The names in each directory, read once: most protected names are absent, and one
// listing says so for all of them where ~40 lstat() calls would (nullopt: unreadable).
class Listings {
 public:
  using Listing = std::map<std::string, unsigned char>;  // name -> d_type
  const std::optional<Listing>& of(const std::string& dir) {
    auto it = m_listings.find(dir);
    if (it != m_listings.end()) return it->second;
    auto& out = m_listings[dir];
    if (DIR* d = ::opendir(dir.c_str())) {
      out.emplace();
      while (dirent* e = ::readdir(d)) out->emplace(e->d_name, e->d_type);
      ::closedir(d);
    }
    return out;
  }

 private:
  std::map<std::string, std::optional<Listing>> m_listings;
};

// The directories protected names are guarded in: each writable directory and the git
// work trees one level below it, the home, and every writable directory from the working
// directory up (noting a .git that would be taken below the git top-level). The roots
// inside writable paths keep their place (pinned_dirs).
std::vector<std::string> protected_roots(FsRules& fs, const Policy& p, const Caller& c, Listings& listings) {
  std::vector<std::string> roots;
  for (const auto& w : fs.writable) {
    if (path::kind_of(w) != path::Kind::Directory) continue;
    roots.push_back(w);
    // Git work trees one level down (a writable ~/src holding repositories) get the
    // same protection. One directory read per writable root; deeper trees are not
    // searched (docs/security.md).
    if (const auto& names = listings.of(w)) {
      for (const auto& [name, type] : *names) {
        if (name == "." || name == "..") continue;
        std::string child = path::join(w, name);
        // Directories only: a symlink to a repository elsewhere is not a root here
        // (roots are canonical), nor writable through this directory.
        struct stat cst{};
        if (type != DT_DIR && (type != DT_UNKNOWN || ::lstat(child.c_str(), &cst) != 0 || !S_ISDIR(cst.st_mode)))
          continue;
        if (lexists(path::join(child, ".git"))) roots.push_back(child);
      }
    }
  }
  auto canonical_dir = [](const std::string& d) {
    auto canon = d.empty() ? Result<path::Canonical>(path::Canonical{}) : path::canonicalize(d);
    return canon && canon->exists ? canon->path : std::string();
  };
  std::string home = canonical_dir(c.home);
  if (!home.empty() && writable_at(fs, home)) roots.push_back(home);
  // Every writable directory from the working directory up: git and direnv look upward
  // from where they start and take the nearest .git or .envrc. Below the git top-level,
  // a new .git would be a repository of the command's making over the user's: .git
  // itself is guarded there.
  std::string cwd = canonical_dir(p.cwd);
  std::string toplevel = git_toplevel(cwd);
  for (std::string d = cwd; !d.empty() && writable_at(fs, d); d = path::parent(d)) {
    roots.push_back(d);
    if (!toplevel.empty() && d != toplevel && path::is_under(d, toplevel) && !lexists(path::join(d, ".git")) &&
        !named(path::join(d, ".git"), p.allow_write)) {
      fs.absent_protected.push_back(path::join(d, ".git"));
    }
    if (d == "/") break;
  }
  if (!toplevel.empty() && writable_at(fs, toplevel)) roots.push_back(toplevel);
  sort_unique(roots);
  // A root renamed away takes the user's shell (whose cwd it is) along to where the
  // guarded names are free: roots inside writable paths keep their place.
  for (const auto& root : roots) {
    bool inside = std::any_of(fs.writable.begin(), fs.writable.end(),
                              [&](const std::string& w) { return root != w && path::is_under(root, w); });
    if (inside || (fs.write_all && root != "/")) fs.pinned_dirs.push_back(root);
  }
  return roots;
}

// The writable links of a chain (protected_links), its dangling end (guarded), and the
// directories it steps out of with ".." (pinned_dirs).
void guard_link_chain(FsRules& fs, const path::LinkWalk& walk) {
  for (const auto& l : walk.links) {
    if (writable_at(fs, l)) fs.protected_links.push_back(l);
  }
  if (!walk.open_end.empty() && writable_at(fs, walk.open_end)) fs.absent_protected.push_back(walk.open_end);
  for (const auto& d : walk.left) {
    if (writable_at(fs, d)) fs.pinned_dirs.push_back(d);
  }
}

// One protected name in one root: read-only when it exists, guarded when it does not.
void protect_name(FsRules& fs, const Policy& p, const std::string& root, const std::string& name, Listings& listings) {
  const auto& present = listings.of(root);
  std::string literal = path::join(root, name);
  // Named in --allow-write, itself or its top directory (--allow-write=DIR/.git lets
  // git init or clone make .git/hooks and .git/config).
  std::string top = path::join(root, name.substr(0, name.find('/')));
  if (named(literal, p.allow_write) || named(top, p.allow_write)) return;
  if (present && present->count(name.substr(0, name.find('/'))) == 0) {
    // Absent, and so is the first directory of a name like .git/hooks.
    if (writable_at(fs, literal)) fs.absent_protected.push_back(literal);
    return;
  }
  // A dotfile kept as a symlink (~/.bashrc -> dotfiles/bashrc, a .git symlinked
  // elsewhere): protect what the chain of links leads to, where that is writable (or
  // guard it, if absent: a dangling link would otherwise be filled in), and pin every
  // link met on the way that the command could replace (~/.bashrc -> mid ->
  // dotfiles/bashrc; a symlinked directory in the target's path).
  // Roots are canonical, so only a symlink in the name itself (the entry, or its
  // parent for names like .git/hooks) starts a chain; two lstat() calls decide.
  std::string full = literal;
  struct stat st{};
  bool exists = ::lstat(literal.c_str(), &st) == 0;
  bool linked = exists && S_ISLNK(st.st_mode);
  if (!linked && name.find('/') != std::string::npos) {
    linked = ::lstat(path::parent(literal).c_str(), &st) == 0 && S_ISLNK(st.st_mode);
  }
  if (linked) {
    auto walk = path::walk_links(literal);
    guard_link_chain(fs, walk);
    if (walk.loop) return;  // nothing to protect at the end; the links are pinned
    full = walk.target;
    exists = walk.exists;
    if (named(full, p.allow_write)) return;
  }
  if (!writable_at(fs, full)) return;
  if (exists) {
    fs.read_only.push_back(full);
    fs.protected_existing.push_back(full);
  } else if (name.find('/') != std::string::npos && ::lstat(path::parent(full).c_str(), &st) == 0 &&
             S_ISREG(st.st_mode)) {
    // ".git/config" below a ".git" that is a file: a worktree's or submodule's gitfile
    // ("gitdir: ..."), which says where git looks; rewriting it would point git at a
    // config of the command's. It is protected itself, and nothing can appear below it.
    fs.read_only.push_back(path::parent(full));
    fs.protected_existing.push_back(path::parent(full));
  } else {
    fs.absent_protected.push_back(full);
  }
}

// Protected names (protected_write_names) in every protected root.
void protected_names(FsRules& fs, const Policy& p, const Caller& c) {
  if (!p.protect) return;
  Listings listings;
  for (const auto& root : protected_roots(fs, p, c, listings)) {
    for (const auto& name : protected_write_names()) protect_name(fs, p, root, name, listings);
  }
}

// zerobox's own profiles, whatever --allow-write or --no-protect say: a profile rewritten
// to `no-sandbox = true` would hand the next `--profile NAME` run the host. Each
// directory that is there becomes a read-only view (its place pinned by the plan, like
// every read-only path inside a writable one); one that is not is guarded, so the
// command cannot make it, nor move a directory of its own there. Symlinks on the way
// are kept from being replaced, as a protected name's are.
void protected_profiles(FsRules& fs, const Caller& c) {
  for (const auto& dir : own_profile_dirs(c)) {
    auto walk = path::walk_links(dir);
    guard_link_chain(fs, walk);
    if (walk.loop || !writable_at(fs, walk.target)) continue;
    if (walk.exists) {
      fs.read_only.push_back(walk.target);
    } else {
      fs.absent_protected.push_back(walk.target);
    }
  }
}

// The create guard's depth rule: protected names hold at any depth below every writable
// path, in directories made during the run too (exec/guard.hpp). Not in the private
// scratch space, which the host never sees.
void depth_rule(FsRules& fs, const Policy& p, const Resolved& r) {
  if (!p.protect) return;
  if (fs.write_all) {
    fs.depth_roots = {"/"};
    if (!fs.tmp_writable) fs.depth_exempt.emplace_back("/tmp");
    if (!fs.var_tmp_writable) fs.depth_exempt.emplace_back("/var/tmp");
    if (!fs.shm_writable) fs.depth_exempt.emplace_back("/dev/shm");
  } else {
    fs.depth_roots = fs.writable;
    drop_nested(fs.depth_roots);
  }
  for (const auto& w : p.allow_write) {
    if (under_any(w, p.deny_write) || under_any(w, p.deny_read) || !writable_at(fs, w)) continue;
    fs.lifted.push_back(w);
    if (named(w, r.allow_write_new)) fs.new_trees.push_back(w);
  }
}

// A writable path inside another, with nothing read-only or masked between them, needs
// no mount of its own: git renames config.lock over .git/config, which a file bound on
// its own refuses (EBUSY). One that does not exist has nothing to mount.
void own_mounts(FsRules& fs) {
  std::vector<std::string> fixed = fs.read_only;
  fixed.insert(fixed.end(), fs.masked.begin(), fs.masked.end());
  std::vector<std::string> own;
  for (const auto& w : fs.writable) {
    if (!lexists(w)) continue;
    bool covered = std::any_of(fs.writable.begin(), fs.writable.end(), [&](const std::string& r) {
      if (r == w || !path::is_under(w, r) || !lexists(r)) return false;
      return std::none_of(fixed.begin(), fixed.end(),
                          [&](const std::string& x) { return x != r && path::is_under(w, x) && path::is_under(x, r); });
    });
    if (!covered) own.push_back(w);
  }
  fs.writable = std::move(own);
}

// Writable paths are plain binds, where connect() to a host socket works. Cover the
// usual socket directories that fall inside them with read-only overlay views.
void socket_dirs(FsRules& fs, const Policy& p, const Caller& c) {
  std::vector<std::string> cands = {"/run", "/var/run"};
  auto env = [&](const char* k) {
    auto it = c.env.find(k);
    return it == c.env.end() ? std::string() : it->second;
  };
  if (!env("XDG_RUNTIME_DIR").empty()) cands.push_back(env("XDG_RUNTIME_DIR"));
  if (!env("SSH_AUTH_SOCK").empty()) cands.push_back(path::parent(path::absolute(env("SSH_AUTH_SOCK"), c.cwd, c.home)));
  std::string tmux = env("TMUX");
  if (!tmux.empty()) cands.push_back(path::parent(tmux.substr(0, tmux.find(','))));
  bool tmp_open = fs.tmp_writable || under_any("/tmp", fs.writable) ||
                  std::any_of(fs.writable.begin(), fs.writable.end(),
                              [](const std::string& w) { return path::is_under(w, "/tmp"); });
  if (tmp_open) {
    for (const char* pattern : {"/tmp/.X11-unix", "/tmp/.ICE-unix", "/tmp/.XIM-unix", "/tmp/.font-unix", "/tmp/ssh-*",
                                "/tmp/tmux-*", "/tmp/vscode-*", "/tmp/dbus-*", "/tmp/.com.google.Chrome*"}) {
      glob_t g{};
      if (::glob(pattern, GLOB_NOSORT, nullptr, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; ++i) cands.emplace_back(g.gl_pathv[i]);
      }
      ::globfree(&g);
    }
  }
  for (const auto& d : cands) {
    auto canon = path::canonicalize(d);
    if (!canon || !canon->exists || path::kind_of(canon->path) != path::Kind::Directory) continue;
    if (named(canon->path, p.allow_write) || under_any(canon->path, fs.masked)) continue;
    bool writable = fs.write_all ? visible(fs, canon->path) : under_any(canon->path, fs.writable);
    if (writable) fs.socket_dirs.push_back(canon->path);
  }
  drop_nested(fs.socket_dirs);
}

// Any other socket bound in this network namespace that falls inside a plain writable
// bind: /proc/net/unix names them (its length follows the number of sockets, not the size
// of any tree), and each gets the mask file bound over it, so connect() and sendto() are
// refused. Tracked paths are overlays, which refuse them already.
void masked_sockets(FsRules& fs, const Policy& p) {
  std::vector<std::string> sockets;
  if (fs.write_all || !fs.writable.empty()) sockets = bound_unix_sockets();
  for (const auto& sock : sockets) {
    bool writable = fs.write_all ? visible(fs, sock) : under_any(sock, fs.writable);
    if (!writable || under_any(sock, fs.tracked) || under_any(sock, fs.socket_dirs) || under_any(sock, fs.masked) ||
        named(sock, p.allow_write))
      continue;
    struct stat st{};
    if (::lstat(sock.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) fs.masked_sockets.push_back(sock);
  }
  sort_unique(fs.masked_sockets);
}

}  // namespace

FsRules compute_fs(const Policy& p, const Resolved& r, const Caller& c) {
  FsRules fs;
  fs.write_all = p.write_all;
  fs.read_restricted = p.read_restricted;
  fs.tmpfs_size = p.tmpfs_size;
  if (p.snapshot != SnapshotMode::Off) fs.tracked = p.snapshot_paths;  // tracked: the overlays
  command_binary(fs, p, c);
  writable_paths(fs, p);
  readable_roots(fs, p);
  scratch_space(fs);
  masks(fs, p, c);            // --deny-read, protected secrets
  denied_writes(fs, p);       // --deny-write
  protected_names(fs, p, c);  // protected names, their links and pinned roots
  protected_profiles(fs, c);  // zerobox's profiles, whatever the flags say
  drop_nested(fs.read_only);
  sort_unique(fs.protected_existing);
  depth_rule(fs, p, r);
  own_mounts(fs);
  sort_unique(fs.absent_protected);
  sort_unique(fs.protected_links);
  sort_unique(fs.pinned_dirs);
  sort_unique(fs.mask_anchors);
  socket_dirs(fs, p, c);
  masked_sockets(fs, p);
  return fs;
}

void mask_where_shown(FsRules& fs, const std::string& dir) {
  if (fs.read_restricted && !under_any(dir, fs.readable)) return;
  if (under_any(dir, fs.masked)) return;
  fs.masked.push_back(dir);
}

std::vector<std::string> writable_roots(const FsRules& fs) {
  if (fs.write_all) return fs.read_restricted ? fs.readable : std::vector<std::string>{"/"};
  std::vector<std::string> out = fs.writable;
  out.insert(out.end(), fs.tracked.begin(), fs.tracked.end());
  if (fs.tmp_writable) out.emplace_back("/tmp");
  if (fs.var_tmp_writable) out.emplace_back("/var/tmp");
  if (fs.shm_writable) out.emplace_back("/dev/shm");
  sort_unique(out);
  return out;
}

std::string allow_write_hint(const std::string& refused, const FsRules& fs) {
  // The protected name's first directory: `refused` ends with the whole name or with its
  // leading directories (a gitfile ".git").
  std::string top = refused;
  for (const auto& name : protected_write_names()) {
    std::vector<std::string> parts;
    for (std::size_t at = 0; at <= name.size();) {
      std::size_t slash = std::min(name.find('/', at), name.size());
      parts.push_back(name.substr(at, slash - at));
      at = slash + 1;
    }
    std::string tail;
    bool found = false;
    for (std::size_t k = 1; k <= parts.size() && !found; ++k) {
      tail += "/" + parts[k - 1];
      if (refused.size() > tail.size() && refused.compare(refused.size() - tail.size(), tail.size(), tail) == 0) {
        top = refused.substr(0, refused.size() - tail.size()) + "/" + parts[0];
        found = true;
      }
    }
    if (found) break;
  }
  bool hooks = refused == top + "/hooks" && top.size() > 5 && top.compare(top.size() - 5, 5, "/.git") == 0;
  std::string name_this = hooks ? top : refused;
  auto in_root = [&](const std::string& d) {
    return std::any_of(fs.depth_roots.begin(), fs.depth_roots.end(),
                       [&](const std::string& r) { return d != r && path::is_under(d, r); });
  };
  std::string missing;
  for (std::string d = path::parent(top); in_root(d) && !lexists(d); d = path::parent(d)) missing = d;
  return missing.empty() ? name_this : missing;
}

}  // namespace zb::policy
