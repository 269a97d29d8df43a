#include "policy/policy.hpp"

#include <dirent.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "policy/secrets.hpp"
#include "util/ca_bundle.hpp"
#include "util/env.hpp"
#include "util/log.hpp"
#include "util/path.hpp"

namespace zb::policy {

using zerobox::NetMode;
using zerobox::Policy;
using zerobox::SnapshotMode;

const std::vector<std::string>& protected_write_names() {
  static const std::vector<std::string> names = {
      ".git/hooks", ".git/config", ".gitmodules",
      // Other ways to point git at a config or hooks it would run: a shared repository
      // (commondir), per-worktree config, and the git directories of submodules and
      // linked worktrees, which have their own config and hooks.
      ".git/commondir", ".git/config.worktree", ".git/modules", ".git/worktrees",
      // Shell start-up files run by the next interactive shell.
      ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc",
      ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".kshrc",
      ".config/fish", ".envrc",
      // Editor and agent configuration that can execute code.
      ".vscode", ".idea", ".mcp.json", ".claude", ".codex", ".agents", ".cursor",
      ".npmrc", ".gitconfig",
      // git's other user config (XDG), and what a desktop session starts at login.
      ".config/git", ".config/systemd", ".config/autostart"};
  return names;
}

const std::vector<std::string>& protected_read_paths() {
  // docs/security.md lists them with what each holds. Each one that exists costs a mount
  // at start-up; the others a stat() (docs/performance.md).
  static const std::vector<std::string> paths = {
      // Keys and credentials: ssh and gpg, cloud and container tools, package registries,
      // password stores and keyrings.
      "~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.gcloud", "~/.oci", "~/.kube",
      "~/.minikube", "~/.docker", "~/.config/containers/auth.json", "~/.vault-token", "~/.terraform.d",
      "~/.terraformrc", "~/.config/doctl", "~/.config/hcloud", "~/.fly", "~/.s3cfg", "~/.boto",
      "~/.databrickscfg", "~/.netrc", "~/.git-credentials", "~/.config/git/credentials", "~/.config/gh",
      "~/.config/hub", "~/.config/glab-cli", "~/.subversion/auth", "~/.pypirc", "~/.npmrc", "~/.yarnrc.yml",
      "~/.cargo/credentials.toml", "~/.cargo/credentials", "~/.gem/credentials", "~/.m2/settings-security.xml",
      "~/.cache/huggingface/token", "~/.huggingface/token", "~/.config/rclone", "~/.config/sops",
      "~/.config/borg", "~/.config/op", "~/.op", "~/.config/Bitwarden CLI", "~/.password-store", "~/.pki",
      "~/.local/share/keyrings", "~/.local/share/kwalletd", "~/.msmtprc", "~/.fetchmailrc",
      // Shell and REPL history: commands typed with passwords and tokens in them.
      "~/.bash_history", "~/.zsh_history", "~/.zhistory", "~/.histfile", "~/.sh_history",
      "~/.local/share/fish/fish_history", "~/.python_history", "~/.ipython/profile_default/history.sqlite",
      "~/.node_repl_history", "~/.irb_history", "~/.pry_history", "~/.psql_history", "~/.mysql_history",
      "~/.sqlite_history", "~/.rediscli_history", "~/.dbshell", "~/.mongosh", "~/.scala_history",
      "~/.julia/logs/repl_history.jl", "~/.lesshst",
      // Browser, mail and chat profiles: cookies, sessions and saved passwords.
      "~/.mozilla", "~/.thunderbird", "~/.librewolf", "~/.config/google-chrome", "~/.config/google-chrome-beta",
      "~/.config/google-chrome-unstable", "~/.config/chromium", "~/.config/BraveSoftware",
      "~/.config/microsoft-edge", "~/.config/vivaldi", "~/.config/opera", "~/snap/firefox/common/.mozilla",
      "~/snap/chromium/common/chromium", "~/.var/app/org.mozilla.firefox", "~/.var/app/com.google.Chrome",
      "~/.var/app/org.chromium.Chromium", "~/.var/app/com.brave.Browser", "~/.var/app/org.mozilla.Thunderbird",
      "~/.config/Slack", "~/.config/discord", "~/.config/Signal",
      // The system's.
      "/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/ssh/*key*", "/etc/ssl/private"};
  return paths;
}

const std::vector<std::string>& system_read_paths() {
  static const std::vector<std::string> paths = {"/usr", "/bin", "/sbin", "/lib", "/lib32",
                                                 "/lib64", "/libx32", "/etc", "/opt"};
  return paths;
}

Caller current_caller(const std::vector<std::string>& environ) {
  Caller c;
  for (const auto& kv : environ) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    c.env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  char buf[4096];
  if (::getcwd(buf, sizeof buf) != nullptr) c.cwd = buf;
  if (c.cwd.empty()) c.cwd = "/";
  auto home = c.env.find("HOME");
  c.home = home != c.env.end() && !home->second.empty() ? home->second : "/";
  c.uid = ::getuid();
  c.gid = ::getgid();
  return c;
}

namespace {

bool lexists(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

void sort_unique(std::vector<std::string>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// Drops paths that lie under another path of the same list.
void drop_nested(std::vector<std::string>& v) {
  sort_unique(v);
  std::vector<std::string> out;
  for (const auto& p : v) {
    if (!out.empty() && path::is_under(p, out.back())) continue;
    out.push_back(p);
  }
  v = std::move(out);
}

bool under_any(const std::string& p, const std::vector<std::string>& roots) {
  return std::any_of(roots.begin(), roots.end(), [&](const std::string& r) { return path::is_under(p, r); });
}

bool named(const std::string& p, const std::vector<std::string>& list) {
  return std::find(list.begin(), list.end(), p) != list.end();
}

// The top of the git work tree that contains dir, if any.
std::string git_toplevel(std::string dir) {
  for (;;) {
    if (lexists(path::join(dir, ".git"))) return dir;
    if (dir == "/") return {};
    dir = path::parent(dir);
  }
}


// Canonicalises each path of a list in place. `must_exist`: a missing path is an error
// unless its parent exists. `create_dirs`: such a path is created as a directory.
// `refused`: paths (canonical) that the list may not name, nor anything below them.
Result<void> canonical_list(std::vector<std::string>& list, const char* flag, const Caller& c,
                            bool must_exist, bool create_dirs, const std::vector<std::string>& refused = {}) {
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
Result<void> canonical_allow_write(Policy& p, const Caller& c, const std::vector<std::string>& profiles) {
  std::vector<std::string> all = p.allow_write;
  if (auto r = canonical_list(all, "--allow-write", c, false, false, profiles); !r) return r;
  bool everything = std::find(all.begin(), all.end(), "/") != all.end() || p.write_all;
  auto inside_other = [&](const std::string& w) {
    if (everything) return true;
    return std::any_of(all.begin(), all.end(),
                       [&](const std::string& o) {
                         // o exists, or is made below (its parent exists)
                         return o != w && path::is_under(w, o) &&
                                (lexists(o) || path::kind_of(path::parent(o)) == path::Kind::Directory);
                       });
  };
  std::vector<std::string> rest;
  for (const auto& raw : p.allow_write) {
    if (raw.empty() || raw.find('\0') != std::string::npos) continue;  // refused above
    auto canon = path::canonicalize(path::absolute(raw, c.cwd, c.home));
    if (canon && !canon->exists && inside_other(canon->path)) {
      p.allow_write_new.push_back(canon->path);
    } else {
      rest.push_back(raw);
    }
  }
  if (auto r = canonical_list(rest, "--allow-write", c, true, true, profiles); !r) return r;
  rest.insert(rest.end(), p.allow_write_new.begin(), p.allow_write_new.end());
  sort_unique(rest);
  sort_unique(p.allow_write_new);
  p.allow_write = std::move(rest);
  return {};
}

std::vector<std::string> own_profile_dirs(const Caller& c) {
  auto xdg = c.env.find("XDG_CONFIG_HOME");
  return profile_dirs(c.home, xdg == c.env.end() ? std::string() : xdg->second);
}

// The tracked roots of a snapshot run (docs/cli-reference.md --snapshot-path): canonical, writable,
// none inside another. Default: the working directory when it is writable, else every
// --allow-write path inside it, else every --allow-write directory (the contract leaves that
// case open; tracking nothing would make --snapshot silently useless); with a bare
// --allow-write, the whole root. Single files named in --allow-write are not tracked: an
// overlay needs a directory.
Result<void> tracked_roots(Policy& p, const Caller& c) {
  if (p.no_sandbox) return fail_msg("--snapshot, --restore and --review need the sandbox; they cannot be used with --no-sandbox");
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
      if (path::kind_of(canon->path) != path::Kind::Directory) return fail("--snapshot-path " + log::quote(abs), ENOTDIR);
      if (!writable(canon->path)) {
        return fail_msg("--snapshot-path " + log::quote(canon->path) + " is not writable: name it (or a directory above it) in --allow-write");
      }
      for (const char* k : {"/proc", "/sys", "/dev"}) {
        if (path::is_under(canon->path, k)) return fail_msg("--snapshot-path " + log::quote(canon->path) + ": kernel interfaces cannot be tracked");
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
    p.snapshot_everything = true;
    for (const auto& d : {p.cwd, c.home, std::string("/tmp"), std::string("/var/tmp")}) {
      if (d.empty() || d == "/" || path::kind_of(d) != path::Kind::Directory || ::access(d.c_str(), W_OK) != 0) continue;
      auto canon = path::canonicalize(d);
      if (!canon || !canon->exists || under_any(canon->path, p.deny_write) || under_any(canon->path, p.deny_read)) continue;
      roots.push_back(canon->path);
      p.allow_write.push_back(canon->path);
    }
  } else if (p.write_all) {
    roots.push_back("/");
    p.snapshot_everything = true;
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
Result<void> finalize_secrets(Policy& p, const Caller& c) {
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
                          (fd == 0 ? "input" : fd == 1 ? "output" : "error") +
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
    s.placeholder = std::move(*placeholder);
  }
  return {};
}

}  // namespace

Result<void> finalize(Policy& p, const Caller& c) {
  if (p.argv.empty()) return fail_msg("no command given");
  // -C
  std::string cwd = p.cwd.empty() ? c.cwd : path::absolute(p.cwd, c.cwd, c.home);
  auto canon_cwd = path::canonicalize(cwd);
  if (!canon_cwd) return fail("working directory " + log::quote(cwd), canon_cwd.error().err);
  if (!canon_cwd->exists) return fail("working directory " + log::quote(cwd), ENOENT);
  if (path::kind_of(canon_cwd->path) != path::Kind::Directory) return fail("working directory " + log::quote(cwd), ENOTDIR);
  p.cwd = canon_cwd->path;
  Caller at_cwd = c;  // relative paths are relative to the caller's directory, not -C

  if (p.allow_all) {
    p.write_all = true;
    p.read_restricted = false;
    p.allow_read.clear();
    if (p.net == NetMode::None) p.net = NetMode::Host;
  }
  if (auto r = canonical_list(p.allow_read, "--allow-read", at_cwd, true, false); !r) return r;
  // A profile can turn the sandbox off for the next run: naming a profile directory in
  // --allow-write is an error rather than a quiet read-only view (compute_fs keeps them
  // read-only under anything wider).
  std::vector<std::string> profiles;
  for (const auto& d : own_profile_dirs(c)) {
    if (auto canon = path::canonicalize(d); canon) profiles.push_back(canon->path);
  }
  if (auto r = canonical_allow_write(p, at_cwd, profiles); !r) return r;
  // "/" is the bare flag. The kernel's own file systems are never bound in from the host
  // (that would undo the fresh /proc, the read-only /sys and the minimal /dev).
  if (std::erase(p.allow_write, std::string("/")) > 0) p.write_all = true;
  for (const auto& w : p.allow_write) {
    bool kernel = path::is_under(w, "/proc") || path::is_under(w, "/sys") ||
                  (path::is_under(w, "/dev") && !path::is_under(w, "/dev/shm"));
    if (kernel) return fail_msg("--allow-write " + log::quote(w) + ": kernel interfaces (/proc, /sys, /dev) cannot be made writable");
  }
  if (auto r = finalize_secrets(p, at_cwd); !r) return r;
  for (auto& f : p.upstream_ca) {
    f = path::absolute(f, at_cwd.cwd, at_cwd.home);
    if (::access(f.c_str(), R_OK) != 0) return fail("--upstream-ca " + log::quote(f));
  }
  if (auto r = canonical_list(p.deny_read, "--deny-read", at_cwd, false, false); !r) return r;
  if (auto r = canonical_list(p.deny_write, "--deny-write", at_cwd, false, false); !r) return r;

  for (const auto& d : p.deny_read) {
    if (path::is_under(p.cwd, d)) {
      return fail_msg("working directory " + log::quote(p.cwd) + " is inside denied path " + log::quote(d));
    }
  }
  if (p.net == NetMode::Host && (!p.deny_net.empty() || !p.secrets.empty())) p.allow_net_all = true;
  if (!p.allow_net.empty() || !p.deny_net.empty() || !p.secrets.empty()) p.net = NetMode::Filtered;
  if (p.snapshot != SnapshotMode::Off) {
    if (auto r = tracked_roots(p, at_cwd); !r) return r;
  } else if (!p.snapshot_paths.empty() || !p.snapshot_exclude.empty()) {
    return fail_msg("--snapshot-path and --snapshot-exclude need --snapshot, --restore or --review");
  }
  return {};
}


std::string resolve_command(const std::string& name, const std::string& path_env, const std::string& cwd) {
  auto usable = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  };
  if (name.find('/') != std::string::npos) {
    std::string abs = path::absolute(name, cwd, "/");
    return usable(abs) ? abs : std::string();
  }
  for (const auto& dir : env::path_dirs(path_env)) {
    std::string cand = path::absolute(path::join(dir.empty() ? cwd : dir, name), cwd, "/");
    if (usable(cand) && ::access(cand.c_str(), X_OK) == 0) return cand;
  }
  return {};
}

FsRules compute_fs(const Policy& p, const Caller& c) {
  FsRules fs;
  fs.write_all = p.write_all;
  fs.read_restricted = p.read_restricted;
  fs.tmpfs_size = p.tmpfs_size;
  if (p.snapshot != SnapshotMode::Off) fs.tracked = p.snapshot_paths;

  auto path_it = c.env.find("PATH");
  std::string path_env = path_it != c.env.end() ? path_it->second : std::string(env::k_default_path);
  for (const auto& kv : p.env_set) {
    if (kv.first == "PATH") path_env = kv.second;
  }
  if (!p.argv.empty()) {
    std::string bin = resolve_command(p.argv[0], path_env, p.cwd);
    if (!bin.empty()) {
      fs.command_path = bin;
      auto canon = path::canonicalize(bin);
      fs.binary = canon ? canon->path : bin;
    }
  }

  // Deny lists win over allow lists.
  std::vector<std::string> deny_read = p.deny_read;
  std::vector<std::string> deny_write = p.deny_write;
  for (const auto& w : p.allow_write) {
    if (under_any(w, deny_write) || under_any(w, deny_read)) continue;
    fs.writable.push_back(w);
  }
  sort_unique(fs.writable);

  if (fs.read_restricted) {
    for (const auto& sp : system_read_paths()) {
      struct stat st {};
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
  auto visible = [&](const std::string& x) { return !fs.read_restricted || under_any(x, fs.readable); };

  if (fs.write_all) {
    // With --allow-read, only what is readable becomes writable: the host's /tmp is bound
    // in only when /tmp is readable, otherwise it stays a private scratch directory.
    fs.tmp_writable = visible("/tmp");
    fs.var_tmp_writable = visible("/var/tmp");
    fs.shm_writable = visible("/dev/shm");
  }

  // Masks: --deny-read, then the protected secrets.
  // A denied path that does not exist has no inode to mount over. Where the command
  // could create it (a writable directory holds its parent), zerobox creates an empty
  // placeholder for the run and masks that; a deeper missing path is moved aside at exit.
  auto in_writable_area = [&](const std::string& x) { return fs.write_all ? visible(x) : under_any(x, fs.writable); };
  auto absent_denied = [&](const std::string& d) {
    if (!in_writable_area(d)) return false;
    if (path::kind_of(path::parent(d)) == path::Kind::Directory) {
      fs.placeholders.push_back(d);
      return true;
    }
    fs.absent_protected.push_back(d);
    return false;
  };
  std::vector<std::string> masked;
  for (const auto& d : deny_read) {
    if (lexists(d) ? visible(d) : absent_denied(d)) masked.push_back(d);
    if (visible(d)) fs.deny_read_all.push_back(d);
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
        struct stat st {};
        if (::stat(m.c_str(), &st) != 0 && errno == ENOENT) continue;  // most are absent: skip the walk
        auto canon = path::canonicalize(m);
        if (!canon || !canon->exists) continue;
        if (named(canon->path, p.allow_read) || named(canon->path, p.allow_write)) continue;
        if (visible(canon->path)) masked.push_back(canon->path);
      }
    }
  }
  drop_nested(masked);
  fs.masked = masked;

  // Read-only views: --deny-write, then protected names inside writable roots.
  std::vector<std::string> ro;
  auto writable_at = [&](const std::string& x) {
    if (under_any(x, fs.masked)) return false;
    if (fs.write_all) return visible(x);
    return under_any(x, fs.writable);
  };
  for (const auto& d : deny_write) {
    if (!writable_at(d)) continue;
    if (lexists(d) || absent_denied(d)) ro.push_back(d);
  }
  if (p.protect) {
    // The names in each root, read once: most protected names are absent, and one
    // listing says so for all of them where ~40 lstat() calls would (nullopt: unreadable).
    using Listing = std::map<std::string, unsigned char>;  // name -> d_type
    std::map<std::string, std::optional<Listing>> listings;
    auto names_in = [&](const std::string& dir) -> const std::optional<Listing>& {
      auto it = listings.find(dir);
      if (it != listings.end()) return it->second;
      auto& out = listings[dir];
      if (DIR* d = ::opendir(dir.c_str())) {
        out.emplace();
        while (dirent* e = ::readdir(d)) out->emplace(e->d_name, e->d_type);
        ::closedir(d);
      }
      return out;
    };
    std::vector<std::string> roots;
    for (const auto& w : fs.writable) {
      if (path::kind_of(w) != path::Kind::Directory) continue;
      roots.push_back(w);
      // Git work trees one level down (a writable ~/src holding repositories) get the
      // same protection. One directory read per writable root; deeper trees are not
      // searched (docs/security.md).
      if (const auto& names = names_in(w)) {
        for (const auto& [name, type] : *names) {
          if (name == "." || name == "..") continue;
          std::string child = path::join(w, name);
          // Directories only: a symlink to a repository elsewhere is not a root here
          // (roots are canonical), nor writable through this directory.
          struct stat cst {};
          if (type != DT_DIR && (type != DT_UNKNOWN || ::lstat(child.c_str(), &cst) != 0 || !S_ISDIR(cst.st_mode))) continue;
          if (lexists(path::join(child, ".git"))) roots.push_back(child);
        }
      }
    }
    auto canonical_dir = [](const std::string& d) {
      auto canon = d.empty() ? Result<path::Canonical>(path::Canonical{}) : path::canonicalize(d);
      return canon && canon->exists ? canon->path : std::string();
    };
    std::string home = canonical_dir(c.home);
    if (!home.empty() && writable_at(home)) roots.push_back(home);
    // Every writable directory from the working directory up: git and direnv look upward
    // from where they start and take the nearest .git or .envrc. Below the git top-level,
    // a new .git would be a repository of the command's making over the user's: .git
    // itself is guarded there.
    std::string cwd = canonical_dir(p.cwd);
    std::string toplevel = git_toplevel(cwd);
    for (std::string d = cwd; !d.empty() && writable_at(d); d = path::parent(d)) {
      roots.push_back(d);
      if (!toplevel.empty() && d != toplevel && path::is_under(d, toplevel) && !lexists(path::join(d, ".git")) &&
          !named(path::join(d, ".git"), p.allow_write)) {
        fs.absent_protected.push_back(path::join(d, ".git"));
      }
      if (d == "/") break;
    }
    if (!toplevel.empty() && writable_at(toplevel)) roots.push_back(toplevel);
    sort_unique(roots);
    // A root renamed away takes the user's shell (whose cwd it is) along to where the
    // guarded names are free: roots inside writable paths keep their place.
    for (const auto& root : roots) {
      bool inside = std::any_of(fs.writable.begin(), fs.writable.end(),
                                [&](const std::string& w) { return root != w && path::is_under(root, w); });
      if (inside || (fs.write_all && root != "/")) fs.pinned_dirs.push_back(root);
    }
    for (const auto& root : roots) {
      const auto& present = names_in(root);
      for (const auto& name : protected_write_names()) {
        std::string literal = path::join(root, name);
        // Named in --allow-write, itself or its top directory (--allow-write=DIR/.git lets
        // git init or clone make .git/hooks and .git/config).
        std::string top = path::join(root, name.substr(0, name.find('/')));
        if (named(literal, p.allow_write) || named(top, p.allow_write)) continue;
        if (present && present->count(name.substr(0, name.find('/'))) == 0) {
          // Absent, and so is the first directory of a name like .git/hooks.
          if (writable_at(literal)) fs.absent_protected.push_back(literal);
          continue;
        }
        // A dotfile kept as a symlink (~/.bashrc -> dotfiles/bashrc, a .git symlinked
        // elsewhere): protect what the chain of links leads to, where that is writable (or
        // guard it, if absent: a dangling link would otherwise be filled in), and pin every
        // link met on the way that the command could replace (~/.bashrc -> mid ->
        // dotfiles/bashrc; a symlinked directory in the target's path).
        // Roots are canonical, so only a symlink in the name itself (the entry, or its
        // parent for names like .git/hooks) starts a chain; two lstat() calls decide.
        std::string full = literal;
        struct stat st {};
        bool exists = ::lstat(literal.c_str(), &st) == 0;
        bool linked = exists && S_ISLNK(st.st_mode);
        if (!linked && name.find('/') != std::string::npos) {
          linked = ::lstat(path::parent(literal).c_str(), &st) == 0 && S_ISLNK(st.st_mode);
        }
        if (linked) {
          auto walk = path::walk_links(literal);
          for (const auto& l : walk.links) {
            if (writable_at(l)) fs.protected_links.push_back(l);
          }
          if (!walk.open_end.empty() && writable_at(walk.open_end)) fs.absent_protected.push_back(walk.open_end);
          for (const auto& d : walk.left) {
            if (writable_at(d)) fs.pinned_dirs.push_back(d);
          }
          if (walk.loop) continue;  // nothing to protect at the end; the links are pinned
          full = walk.target;
          exists = walk.exists;
          if (named(full, p.allow_write)) continue;
        }
        if (!writable_at(full)) continue;
        if (exists) {
          ro.push_back(full);
          fs.protected_existing.push_back(full);
        } else if (name.find('/') != std::string::npos && ::lstat(path::parent(full).c_str(), &st) == 0 &&
                   S_ISREG(st.st_mode)) {
          // ".git/config" below a ".git" that is a file: a worktree's or submodule's gitfile
          // ("gitdir: ..."), which says where git looks; rewriting it would point git at a
          // config of the command's. It is protected itself, and nothing can appear below it.
          ro.push_back(path::parent(full));
          fs.protected_existing.push_back(path::parent(full));
        } else {
          fs.absent_protected.push_back(full);
        }
      }
    }
  }
  // zerobox's own profiles, whatever --allow-write or --no-protect say: a profile rewritten
  // to `no-sandbox = true` would hand the next `--profile NAME` run the host. Each
  // directory that is there becomes a read-only view (its place pinned by the plan, like
  // every read-only path inside a writable one); one that is not is guarded, so the
  // command cannot make it, nor move a directory of its own there. Symlinks on the way
  // are kept from being replaced, as a protected name's are.
  for (const auto& dir : own_profile_dirs(c)) {
    auto walk = path::walk_links(dir);
    for (const auto& l : walk.links) {
      if (writable_at(l)) fs.protected_links.push_back(l);
    }
    if (!walk.open_end.empty() && writable_at(walk.open_end)) fs.absent_protected.push_back(walk.open_end);
    for (const auto& d : walk.left) {
      if (writable_at(d)) fs.pinned_dirs.push_back(d);
    }
    if (walk.loop || !writable_at(walk.target)) continue;
    if (walk.exists) {
      ro.push_back(walk.target);
    } else {
      fs.absent_protected.push_back(walk.target);
    }
  }
  drop_nested(ro);
  fs.read_only = ro;
  sort_unique(fs.protected_existing);
  if (p.protect) {
    // Protected names hold at any depth below every writable path, in directories made
    // during the run too (exec/guard.hpp). Not in the private scratch space, which the
    // host never sees.
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
      if (under_any(w, deny_write) || under_any(w, deny_read) || !writable_at(w)) continue;
      fs.lifted.push_back(w);
      if (named(w, p.allow_write_new)) fs.new_trees.push_back(w);
    }
  }
  // A writable path inside another, with nothing read-only or masked between them, needs
  // no mount of its own: git renames config.lock over .git/config, which a file bound on
  // its own refuses (EBUSY). One that does not exist has nothing to mount.
  {
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
  sort_unique(fs.absent_protected);
  sort_unique(fs.protected_links);
  sort_unique(fs.pinned_dirs);
  sort_unique(fs.placeholders);

  // Writable paths are plain binds, where connect() to a host socket works. Cover the
  // usual socket directories that fall inside them with read-only overlay views.
  {
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
                    std::any_of(fs.writable.begin(), fs.writable.end(), [](const std::string& w) { return path::is_under(w, "/tmp"); });
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
      bool writable = fs.write_all ? visible(canon->path) : under_any(canon->path, fs.writable);
      if (writable) fs.socket_dirs.push_back(canon->path);
    }
    drop_nested(fs.socket_dirs);
  }

  // Any other socket bound in this network namespace that falls inside a plain writable
  // bind: /proc/net/unix names them (its length follows the number of sockets, not the size
  // of any tree), and each gets the mask file bound over it, so connect() and sendto() are
  // refused. Tracked paths are overlays, which refuse them already.
  std::vector<std::string> sockets;
  if (fs.write_all || !fs.writable.empty()) sockets = bound_unix_sockets();
  for (const auto& sock : sockets) {
    bool writable = fs.write_all ? visible(sock) : under_any(sock, fs.writable);
    if (!writable || under_any(sock, fs.tracked) || under_any(sock, fs.socket_dirs) || under_any(sock, fs.masked) ||
        named(sock, p.allow_write))
      continue;
    struct stat st{};
    if (::lstat(sock.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) fs.masked_sockets.push_back(sock);
  }
  sort_unique(fs.masked_sockets);
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

std::vector<std::string> bound_unix_sockets(const std::string& proc_net_unix) {
  // "Num RefCount Protocol Flags Type St Inode Path": the path, when there is one, is the
  // rest of the line after the seventh field. Abstract names start with '@', and paths
  // bound relative to some process's directory cannot be placed: only absolute ones count.
  std::vector<std::string> out;
  std::ifstream in(proc_net_unix);
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::size_t pos = 0;
    for (int field = 0; field < 7 && pos != std::string::npos; ++field) {
      pos = line.find_first_not_of(' ', pos);
      if (pos != std::string::npos) pos = line.find(' ', pos);
    }
    if (pos == std::string::npos || pos + 1 >= line.size() || line[pos + 1] != '/') continue;
    out.push_back(line.substr(pos + 1));
  }
  sort_unique(out);
  return out;
}

std::vector<std::string> build_env(const Policy& p, const Caller& c) {
  static const char* const k_default[] = {"PATH", "HOME", "USER", "SHELL", "TERM", "LANG"};
  std::map<std::string, std::string> env;
  if (p.env_all) {
    env = c.env;
  } else {
    for (const char* k : k_default) {
      auto it = c.env.find(k);
      if (it != c.env.end()) env.insert(*it);
    }
    for (const auto& k : p.allow_env) {
      auto it = c.env.find(k);
      if (it != c.env.end()) env.insert(*it);
    }
  }
  for (const auto& k : p.deny_env) env.erase(k);
  if (p.net == NetMode::Filtered && !p.no_sandbox) {
    // Every client that honours proxy variables goes through zerobox's proxy; the rest
    // reach nothing (the namespace has only lo). Node 20's fetch ignores them; Node 24
    // honours them with NODE_USE_ENV_PROXY=1.
    std::string url = "http://127.0.0.1:" + std::to_string(k_proxy_port);
    for (const char* k : {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}) env[k] = url;
    env["NO_PROXY"] = "";
    env["no_proxy"] = "";
    env["NODE_USE_ENV_PROXY"] = "1";
  }
  for (const auto& kv : p.env_set) env[kv.first] = kv.second;
  if (!p.secrets.empty() && !p.no_sandbox) {
    for (const auto& s : p.secrets) env[s.key] = s.placeholder;
    // The trust bundle with the run's CA is shown at the system bundle's path (run/run.cpp); the
    // usual variables name it too, for clients that look nowhere else.
    auto bundles = ca_bundle::present_paths();
    if (!bundles.empty()) {
      for (const char* k : {"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
                            "GIT_SSL_CAINFO", "PIP_CERT"})
        env[k] = bundles.front();
    }
  }
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& kv : env) out.push_back(kv.first + "=" + kv.second);
  return out;
}

std::optional<std::uint64_t> parse_size(std::string_view s) {
  std::uint64_t n = 0;
  size_t i = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    if (n > (UINT64_MAX - 9) / 10) return std::nullopt;
    n = n * 10 + static_cast<std::uint64_t>(s[i] - '0');
  }
  if (i == 0 || n == 0 || s.size() - i > 1) return std::nullopt;
  unsigned shift = 0;
  if (i < s.size()) {
    switch (s[i]) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      case 't': case 'T': shift = 40; break;
      default: return std::nullopt;
    }
  }
  if (n > (UINT64_MAX >> shift)) return std::nullopt;
  return n << shift;
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

std::vector<std::string> describe(const Policy& p, const FsRules& fs) {
  std::vector<std::string> out;
  auto list = [](const std::vector<std::string>& v) {
    if (v.empty()) return std::string("(none)");
    std::string s;
    for (const auto& x : v) {
      if (!s.empty()) s += ", ";
      s += log::quote(x);
    }
    return s;
  };
  out.push_back("policy: command " + list(p.argv) + " in " + log::quote(p.cwd));
  out.push_back(std::string("policy: read ") + (fs.read_restricted ? "restricted to " + list(fs.readable) : "everything"));
  out.push_back(std::string("policy: write ") + (fs.write_all ? "everything" : list(fs.writable)));
  out.push_back("policy: read-only inside writable: " + list(fs.read_only));
  out.push_back("policy: unreadable: " + list(fs.masked));
  if (!fs.absent_protected.empty()) out.push_back("policy: protected but absent: " + list(fs.absent_protected));
  if (!fs.protected_links.empty()) out.push_back("policy: protected symlinks: " + list(fs.protected_links));
  out.push_back("policy: scratch space (/tmp, /var/tmp, /dev/shm) up to " +
                (p.tmpfs_size == 0 ? std::string("half the RAM") : std::to_string(p.tmpfs_size) + " bytes"));
  const char* net = p.net == NetMode::None ? "none (loopback only)" : p.net == NetMode::Host ? "host network" : "filtered";
  out.push_back(std::string("policy: network ") + net);
  for (const auto& sec : p.secrets) {  // names and hosts; never a value
    out.push_back("policy: secret " + sec.key + (sec.file.empty() ? "" : " (from " + log::quote(sec.file) + ")") +
                  " for " + (sec.hosts.empty() ? std::string("every host --allow-net allows") : list(sec.hosts)));
  }
  out.push_back(std::string("policy: environment ") + (p.env_all ? "all inherited" : "PATH HOME USER SHELL TERM LANG") +
                (p.allow_env.empty() ? "" : " + " + list(p.allow_env)) +
                (p.deny_env.empty() ? "" : " - " + list(p.deny_env)));
  return out;
}

}  // namespace zb::policy
