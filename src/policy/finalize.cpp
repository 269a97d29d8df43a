// finalize(): a Policy checked against the machine and made canonical (absolute paths,
// secrets read and given placeholders, the tracked roots of a snapshot run).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <set>
#include <sstream>

#include "policy/internal.hpp"
#include "policy/policy.hpp"
#include "policy/secrets.hpp"
#include "util/log.hpp"
#include "util/path.hpp"

namespace zb::policy {

using zerobox::NetMode;
using zerobox::Policy;
using zerobox::SnapshotMode;

namespace {

using namespace internal;

// Canonicalises each path of a list in place. `must_exist`: a missing path is an error
// unless its parent exists. `create_dirs`: such a path is created as a directory.
// `refused`: paths (canonical) that the list may not name, nor anything below them.
Result<void> canonical_list(std::vector<std::string>& list, const char* flag, const Caller& c, bool must_exist,
                            bool create_dirs, const std::vector<std::string>& refused = {}) {
  std::vector<std::string> out;
  for (const auto& raw : list) {
    if (raw.empty()) return fail_msg(std::string(flag) + ": empty path");
    if (raw.find('\0') != std::string::npos) return fail_msg(std::string(flag) + ": path contains a NUL byte");
    std::string abs = path::absolute(raw, c.cwd, c.home);
    auto canon = path::canonicalize(abs);
    if (!canon) return fail(std::string(flag) + " " + log::quote(raw), canon.error().err);
    for (const auto& r : refused) {
      if (path::is_under(canon->path, r)) {
        return fail_msg(std::string(flag) + " " + log::quote(raw) + ": " + log::quote(r) +
                        " holds zerobox's profiles, which are never writable inside a sandbox");
      }
    }
    if (!canon->exists && must_exist) {
      std::string parent = path::parent(canon->path);
      if (path::kind_of(parent) != path::Kind::Directory) {
        return fail(std::string(flag) + " " + log::quote(raw) + ": neither it nor its parent exists", ENOENT);
      }
      if (create_dirs) {
        if (::mkdir(canon->path.c_str(), 0777) != 0 && errno != EEXIST) {
          return fail(std::string(flag) + " " + log::quote(raw) + ": cannot create it");
        }
        log::debug("created " + log::quote(canon->path) + " for " + flag);
      }
    }
    out.push_back(canon->path);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  list = std::move(out);
  return {};
}

// --allow-write: canonical_list's rules, except for a missing path inside another
// writable path (docs/usage.md "Protected paths"). zerobox does not create that one, whether its
// parent exists or not: `--allow-write=.,dest/.git` is how `git clone URL dest` gets a
// repository of its own, and a dest/.git made beforehand would make git refuse the
// destination as not empty (a .gitmodules made beforehand would be a directory).
Result<void> canonical_allow_write(Policy& p, Resolved& res, const Caller& c,
                                   const std::vector<std::string>& profiles) {
  std::vector<std::string> all = p.allow_write;
  if (auto r = canonical_list(all, "--allow-write", c, false, false, profiles); !r) return r;
  bool everything = std::find(all.begin(), all.end(), "/") != all.end() || p.write_all;
  auto inside_other = [&](const std::string& w) {
    if (everything) return true;
    return std::any_of(all.begin(), all.end(), [&](const std::string& o) {
      // o exists, or is made below (its parent exists)
      return o != w && path::is_under(w, o) && (lexists(o) || path::kind_of(path::parent(o)) == path::Kind::Directory);
    });
  };
  std::vector<std::string> rest;
  for (const auto& raw : p.allow_write) {
    if (raw.empty() || raw.find('\0') != std::string::npos) continue;  // refused above
    auto canon = path::canonicalize(path::absolute(raw, c.cwd, c.home));
    if (canon && !canon->exists && inside_other(canon->path)) {
      res.allow_write_new.push_back(canon->path);
    } else {
      rest.push_back(raw);
    }
  }
  if (auto r = canonical_list(rest, "--allow-write", c, true, true, profiles); !r) return r;
  rest.insert(rest.end(), res.allow_write_new.begin(), res.allow_write_new.end());
  sort_unique(rest);
  sort_unique(res.allow_write_new);
  p.allow_write = std::move(rest);
  return {};
}

// The tracked roots of a snapshot run (docs/cli-reference.md --snapshot-path): canonical, writable,
// none inside another. Default: the working directory when it is writable, else every
// --allow-write path inside it, else every --allow-write directory (the contract leaves that
// case open; tracking nothing would make --snapshot silently useless); with a bare
// --allow-write, the whole root. Single files named in --allow-write are not tracked: an
// overlay needs a directory.
Result<void> tracked_roots(Policy& p, Resolved& res, const Caller& c) {
  if (p.no_sandbox)
    return fail_msg("--snapshot, --restore and --review need the sandbox; they cannot be used with --no-sandbox");
  auto writable = [&](const std::string& x) {
    if (under_any(x, p.deny_write) || under_any(x, p.deny_read)) return false;
    return p.write_all || under_any(x, p.allow_write);
  };
  std::vector<std::string> roots;
  if (!p.snapshot_paths.empty()) {
    for (const auto& raw : p.snapshot_paths) {
      std::string abs = path::absolute(raw, c.cwd, c.home);
      auto canon = path::canonicalize(abs);
      if (!canon) return fail("--snapshot-path " + log::quote(abs), canon.error().err);
      if (!canon->exists) return fail("--snapshot-path " + log::quote(abs), ENOENT);
      if (path::kind_of(canon->path) != path::Kind::Directory)
        return fail("--snapshot-path " + log::quote(abs), ENOTDIR);
      if (!writable(canon->path)) {
        return fail_msg("--snapshot-path " + log::quote(canon->path) +
                        " is not writable: name it (or a directory above it) in --allow-write");
      }
      for (const char* k : {"/proc", "/sys", "/dev"}) {
        if (path::is_under(canon->path, k))
          return fail_msg("--snapshot-path " + log::quote(canon->path) + ": kernel interfaces cannot be tracked");
      }
      roots.push_back(canon->path);
    }
  } else if (p.write_all && c.uid != 0) {
    // An ordinary user's overlay lives in a user namespace, where overlayfs cannot copy
    // up a directory owned by an id outside it (EOVERFLOW): a tracked / would refuse
    // writes below any directory not owned by the caller. Track the places such a user
    // writes to instead, and nothing else is writable.
    p.write_all = false;
    p.allow_write.clear();
    res.snapshot_everything = true;
    for (const auto& d : {p.cwd, c.home, std::string("/tmp"), std::string("/var/tmp")}) {
      if (d.empty() || d == "/" || path::kind_of(d) != path::Kind::Directory || ::access(d.c_str(), W_OK) != 0)
        continue;
      auto canon = path::canonicalize(d);
      if (!canon || !canon->exists || under_any(canon->path, p.deny_write) || under_any(canon->path, p.deny_read))
        continue;
      roots.push_back(canon->path);
      p.allow_write.push_back(canon->path);
    }
  } else if (p.write_all) {
    roots.push_back("/");
    res.snapshot_everything = true;
  } else if (writable(p.cwd)) {
    roots.push_back(p.cwd);
  } else {
    for (const auto& w : p.allow_write) {
      if (path::is_under(w, p.cwd) && writable(w) && path::kind_of(w) == path::Kind::Directory) roots.push_back(w);
    }
    // Started from elsewhere: rather than track nothing, track every writable directory.
    if (roots.empty()) {
      for (const auto& w : p.allow_write) {
        if (writable(w) && path::kind_of(w) == path::Kind::Directory) roots.push_back(w);
      }
    }
  }
  sort_unique(roots);
  std::vector<std::string> out;
  for (const auto& r : roots) {
    if (!out.empty() && path::is_under(r, out.back())) continue;
    out.push_back(r);
  }
  p.snapshot_paths = std::move(out);
  return {};
}

// Secrets (docs/usage.md "Secrets"): values read from their files, checked, given placeholders; each
// --secret-file is masked in the sandbox (added to --deny-read).
Result<void> finalize_secrets(Policy& p, Resolved& res, const Caller& c) {
  if (p.secrets.empty()) return {};
  if (p.no_sandbox) return fail_msg("secrets need the sandbox's proxy; they cannot be used with --no-sandbox");
  std::set<std::string> keys;
  for (auto& s : p.secrets) {
    std::string flag = s.file.empty() ? "--secret " + s.key : "--secret-file " + s.key;
    if (!keys.insert(s.key).second) return fail_msg(flag + ": " + s.key + " is given more than once");
    for (const auto& [k, v] : p.env_set) {
      if (k == s.key) return fail_msg(flag + ": --env " + k + " sets the same variable");
    }
    if (!s.file.empty()) {
      std::string abs = path::absolute(s.file, c.cwd, c.home);
      // A regular file, and not one the command is handed anyway: /dev/stdin, /proc/self/fd/0
      // or any path to the file that is zerobox's stdin, stdout or stderr would give the
      // command an open descriptor on the value, which no mask can take back.
      if (path::is_under(abs, "/dev") || path::is_under(abs, "/proc"))
        return fail_msg(flag + "=" + log::quote(abs) + ": must be a regular file, not a device or /proc path");
      struct stat st{};
      if (::stat(abs.c_str(), &st) != 0) return fail(flag + "=" + log::quote(abs));
      if (!S_ISREG(st.st_mode)) return fail_msg(flag + "=" + log::quote(abs) + ": not a regular file");
      if (st.st_nlink > 1) {
        log::warning(flag + "=" + log::quote(abs) + ": the file has " + std::to_string(st.st_nlink) +
                     " hard links; only this path is masked in the sandbox");
      }
      for (int fd : {0, 1, 2}) {
        struct stat io{};
        if (::fstat(fd, &io) == 0 && io.st_dev == st.st_dev && io.st_ino == st.st_ino)
          return fail_msg(flag + "=" + log::quote(abs) + ": it is zerobox's standard " +
                          (fd == 0   ? "input"
                           : fd == 1 ? "output"
                                     : "error") +
                          ", which the command inherits; pass the file by its path only");
      }
      std::ifstream in(abs, std::ios::binary);
      if (!in) return fail(flag + "=" + log::quote(abs));
      std::ostringstream ss;
      ss << in.rdbuf();
      if (in.bad()) return fail(flag + "=" + log::quote(abs));
      s.value = ss.str();
      if (!s.value.empty() && s.value.back() == '\n') s.value.pop_back();
      p.deny_read.push_back(abs);
    }
    std::string bad = invalid_secret_value(s.value);
    if (!bad.empty()) return fail_msg(flag + ": " + bad);
    auto placeholder = make_placeholder();
    if (!placeholder) return std::unexpected(placeholder.error());
    res.placeholders.push_back(std::move(*placeholder));
  }
  return {};
}

}  // namespace

Result<Resolved> finalize(Policy& p, const Caller& c) {
  Resolved out;
  if (p.argv.empty()) return fail_msg("no command given");
  // -C
  std::string cwd = p.cwd.empty() ? c.cwd : path::absolute(p.cwd, c.cwd, c.home);
  auto canon_cwd = path::canonicalize(cwd);
  if (!canon_cwd) return fail("working directory " + log::quote(cwd), canon_cwd.error().err);
  if (!canon_cwd->exists) return fail("working directory " + log::quote(cwd), ENOENT);
  if (path::kind_of(canon_cwd->path) != path::Kind::Directory)
    return fail("working directory " + log::quote(cwd), ENOTDIR);
  p.cwd = canon_cwd->path;
  const Caller& at_cwd = c;  // relative paths are relative to the caller's directory, not -C

  if (p.allow_all) {
    p.write_all = true;
    p.read_restricted = false;
    p.allow_read.clear();
    if (p.net == NetMode::None) p.net = NetMode::Host;
  }
  if (auto r = canonical_list(p.allow_read, "--allow-read", at_cwd, true, false); !r) return std::unexpected(r.error());
  // A profile can turn the sandbox off for the next run: naming a profile directory in
  // --allow-write is an error rather than a quiet read-only view (compute_fs keeps them
  // read-only under anything wider).
  std::vector<std::string> profiles;
  for (const auto& d : own_profile_dirs(c)) {
    if (auto canon = path::canonicalize(d); canon) profiles.push_back(canon->path);
  }
  if (auto r = canonical_allow_write(p, out, at_cwd, profiles); !r) return std::unexpected(r.error());
  // "/" is the bare flag. The kernel's own file systems are never bound in from the host
  // (that would undo the fresh /proc, the read-only /sys and the minimal /dev).
  if (std::erase(p.allow_write, std::string("/")) > 0) p.write_all = true;
  for (const auto& w : p.allow_write) {
    bool kernel = path::is_under(w, "/proc") || path::is_under(w, "/sys") ||
                  (path::is_under(w, "/dev") && !path::is_under(w, "/dev/shm"));
    if (kernel)
      return fail_msg("--allow-write " + log::quote(w) +
                      ": kernel interfaces (/proc, /sys, /dev) cannot be made writable");
  }
  if (auto r = finalize_secrets(p, out, at_cwd); !r) return std::unexpected(r.error());
  for (auto& f : p.upstream_ca) {
    f = path::absolute(f, at_cwd.cwd, at_cwd.home);
    if (::access(f.c_str(), R_OK) != 0) return fail("--upstream-ca " + log::quote(f));
  }
  if (auto r = canonical_list(p.deny_read, "--deny-read", at_cwd, false, false); !r) return std::unexpected(r.error());
  if (auto r = canonical_list(p.deny_write, "--deny-write", at_cwd, false, false); !r)
    return std::unexpected(r.error());

  for (const auto& d : p.deny_read) {
    if (path::is_under(p.cwd, d)) {
      return fail_msg("working directory " + log::quote(p.cwd) + " is inside denied path " + log::quote(d));
    }
  }
  if (p.net == NetMode::Host && (!p.deny_net.empty() || !p.secrets.empty())) out.allow_net_all = true;
  if (!p.allow_net.empty() || !p.deny_net.empty() || !p.secrets.empty()) p.net = NetMode::Filtered;
  if (p.snapshot != SnapshotMode::Off) {
    if (auto r = tracked_roots(p, out, at_cwd); !r) return std::unexpected(r.error());
  } else if (!p.snapshot_paths.empty() || !p.snapshot_exclude.empty()) {
    return fail_msg("--snapshot-path and --snapshot-exclude need --snapshot, --restore or --review");
  }
  return out;
}

}  // namespace zb::policy
