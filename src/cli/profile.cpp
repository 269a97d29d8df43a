// TOML profiles (toml++): the same names as the long flags, without the dashes.
//
//   allow-write = ["~/project", "/tmp/out"]   # or true for everything
//   allow-net = true                          # or ["example.com"]
//   deny-read = ["~/project/.env"]
//   env = { RUST_LOG = "debug" }               # or ["RUST_LOG=debug"]
//   allow-env = ["CARGO_HOME"]
//   strict-sandbox = true
#include <sys/stat.h>
#include <unistd.h>

#include <toml++/toml.h>

#include <algorithm>
#include <cstdio>

#include "cli/cli.hpp"
#include "policy/policy.hpp"
#include "util/env.hpp"
#include "util/error.hpp"
#include "util/path.hpp"

namespace zb::cli {
namespace {

std::string where(const toml::node& n) {
  const auto& src = n.source();
  return "line " + std::to_string(src.begin.line);
}

// A string or an array of strings.
std::vector<std::string> strings(const toml::node& n, const std::string& key, const std::string& file) {
  std::vector<std::string> out;
  if (auto s = n.value<std::string>()) {
    out.push_back(*s);
    return out;
  }
  if (const auto* arr = n.as_array()) {
    for (const auto& el : *arr) {
      auto s = el.value<std::string>();
      if (!s) throw UsageError{file + ": " + key + " (" + where(el) + "): expected a string"};
      out.push_back(*s);
    }
    return out;
  }
  throw UsageError{file + ": " + key + " (" + where(n) + "): expected a string or an array of strings"};
}

bool boolean(const toml::node& n, const std::string& key, const std::string& file) {
  auto b = n.value<bool>();
  if (!b) throw UsageError{file + ": " + key + " (" + where(n) + "): expected true or false"};
  return *b;
}

// What makes `p` (lstat'ed into st) a place others could change, or empty. A symlink's
// own mode means nothing; a sticky directory (/tmp) may be writable by all, since only
// an entry's owner can rename or remove it there.
std::string unsafe(const std::string& p, const struct stat& st, unsigned uid) {
  if (st.st_uid != uid && st.st_uid != 0) return p + " belongs to uid " + std::to_string(st.st_uid);
  if (S_ISLNK(st.st_mode) || (st.st_mode & 022) == 0 || (S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) != 0)) return {};
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return p + " is writable by " + ((st.st_mode & 002) != 0 ? "others" : "its group") + " (mode " + mode + ")";
}

// A profile decides how strong the sandbox is (one line turns it off), so one that
// someone other than the caller or root could have changed is refused, as ssh refuses
// a config file others can write: the file, each symlink on the way to it, and every
// directory above the file or such a link. Returns the file's canonical path.
std::string check_owner(const std::string& flag, const std::string& abs) {
  auto canon = path::canonicalize(abs);
  if (!canon || !canon->exists) throw SetupError{flag + ": " + abs + ": No such file"};
  std::vector<std::string> chain = {canon->path};
  for (const auto& link : path::walk_links(abs).links) {
    chain.push_back(link);
    auto dir = path::canonicalize(path::parent(link));
    if (dir && dir->exists) chain.push_back(dir->path);
  }
  unsigned uid = ::getuid();
  std::vector<std::string> seen;
  for (const auto& start : chain) {
    for (std::string p = start;; p = path::parent(p)) {
      if (std::find(seen.begin(), seen.end(), p) != seen.end()) break;
      seen.push_back(p);
      struct stat st{};
      if (::lstat(p.c_str(), &st) != 0) throw SetupError{flag + ": " + p + ": cannot be checked"};
      if (std::string why = unsafe(p, st, uid); !why.empty()) {
        throw SetupError{flag + ": " + why +
                         ": a profile others can change is refused (keep it and the directories above it the caller's "
                         "or root's, and not writable by group or others)"};
      }
      if (p == "/") break;
    }
  }
  return canon->path;
}

}  // namespace

void apply_profile(const std::string& name_or_file, zerobox::Policy& p, zerobox::RunOptions& options,
                   const std::vector<std::string>& environ) {
  std::string home = env::find(environ, "HOME").value_or("");
  std::string file = name_or_file;
  bool is_name = name_or_file.find('/') == std::string::npos && !name_or_file.ends_with(".toml");
  if (is_name) {
    std::string dir = policy::profile_lookup_dir(home, env::find(environ, "XDG_CONFIG_HOME").value_or(""));
    file = path::join(dir, name_or_file + ".toml");
  } else {
    std::string cwd = "/";
    if (char buf[4096]; ::getcwd(buf, sizeof buf) != nullptr) cwd = buf;
    file = path::absolute(file, cwd, home.empty() ? "/" : home);
  }
  std::string flag = "--profile " + name_or_file;
  if (path::kind_of(file) != path::Kind::File) throw SetupError{flag + ": " + file + ": No such file"};
  // The profile directories are never writable inside (policy::compute_fs); a profile
  // file kept anywhere else is read-only for the runs that load it.
  p.deny_write.push_back(check_owner(flag, file));
  toml::table t;
  try {
    t = toml::parse_file(file);
  } catch (const toml::parse_error& e) {
    throw UsageError{file + ": line " + std::to_string(e.source().begin.line) + ": " + std::string(e.description())};
  }
  auto list_or_all = [&](const toml::node& n, const std::string& key, std::vector<std::string>& list, bool& all) {
    if (n.is_boolean()) {
      all = boolean(n, key, file);
    } else {
      for (auto& s : strings(n, key, file)) {
        for (auto& part : path::split_list(s)) list.push_back(part);
      }
    }
  };
  for (const auto& [k, node] : t) {
    std::string key(k.str());
    if (key == "allow-read") {
      p.read_restricted = true;
      for (auto& s : strings(node, key, file)) p.allow_read.push_back(s);
    } else if (key == "deny-read") {
      for (auto& s : strings(node, key, file)) p.deny_read.push_back(s);
    } else if (key == "allow-write") {
      list_or_all(node, key, p.allow_write, p.write_all);
    } else if (key == "deny-write") {
      for (auto& s : strings(node, key, file)) p.deny_write.push_back(s);
    } else if (key == "allow-net") {
      bool all = false;
      list_or_all(node, key, p.allow_net, all);
      if (all) p.net = zerobox::NetMode::Host;
    } else if (key == "deny-net") {
      for (auto& s : strings(node, key, file)) p.deny_net.push_back(s);
    } else if (key == "allow-env") {
      list_or_all(node, key, p.allow_env, p.env_all);
    } else if (key == "deny-env") {
      for (auto& s : strings(node, key, file)) p.deny_env.push_back(s);
    } else if (key == "env") {
      if (const auto* tab = node.as_table()) {
        for (const auto& [ek, ev] : *tab) {
          auto v = ev.value<std::string>();
          if (!v) throw UsageError{file + ": env." + std::string(ek.str()) + ": expected a string"};
          p.env_set.emplace_back(std::string(ek.str()), *v);
        }
      } else {
        for (auto& s : strings(node, key, file)) {
          auto eq = s.find('=');
          if (eq == std::string::npos || !env::valid_name(s.substr(0, eq))) {
            throw UsageError{file + ": env: expected KEY=VALUE, got '" + s + "'"};
          }
          p.env_set.emplace_back(s.substr(0, eq), s.substr(eq + 1));
        }
      }
    } else if (key == "allow-all") {
      p.allow_all = boolean(node, key, file);
    } else if (key == "no-sandbox") {
      p.no_sandbox = boolean(node, key, file);
    } else if (key == "strict-sandbox") {
      p.strict = boolean(node, key, file);
    } else if (key == "no-protect") {
      p.protect = !boolean(node, key, file);
    } else if (key == "debug") {
      options.debug = boolean(node, key, file);
    } else if (key == "quiet") {
      options.quiet = boolean(node, key, file);
    } else if (key == "cwd") {
      auto v = node.value<std::string>();
      if (!v) throw UsageError{file + ": cwd: expected a string"};
      p.cwd = *v;
    } else if (key == "upstream-ca") {
      for (auto& s : strings(node, key, file)) p.upstream_ca.push_back(s);
    } else if (key == "snapshot-path") {
      for (auto& s : strings(node, key, file)) p.snapshot_paths.push_back(s);
    } else if (key == "snapshot-exclude") {
      for (auto& s : strings(node, key, file)) p.snapshot_exclude.push_back(s);
    } else if (key == "snapshot" || key == "restore" || key == "review") {
      if (boolean(node, key, file)) {
        p.snapshot = key == "snapshot"  ? zerobox::SnapshotMode::Snapshot
                     : key == "restore" ? zerobox::SnapshotMode::Restore
                                        : zerobox::SnapshotMode::Review;
      }
    } else {
      throw UsageError{file + ": unknown key '" + key + "' (" + where(node) + ")"};
    }
  }
}

}  // namespace zb::cli
