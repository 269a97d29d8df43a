// TOML profiles (toml++): the same names as the long flags, without the dashes.
//
//   allow-write = ["~/project", "/tmp/out"]   # or true for everything
//   allow-net = true                          # or ["example.com"]
//   deny-read = ["~/project/.env"]
//   env = { RUST_LOG = "debug" }               # or ["RUST_LOG=debug"]
//   allow-env = ["CARGO_HOME"]
//   strict-sandbox = true
#include <toml++/toml.h>

#include "cli/cli.hpp"
#include "policy/policy.hpp"
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

}  // namespace

void apply_profile(const std::string& name_or_file, zerobox::Policy& p, const std::vector<std::string>& environ) {
  std::string file = name_or_file;
  bool is_name = name_or_file.find('/') == std::string::npos && !name_or_file.ends_with(".toml");
  if (is_name) {
    std::string cfg = policy::find_env(environ, "XDG_CONFIG_HOME").value_or("");
    if (cfg.empty()) cfg = path::join(policy::find_env(environ, "HOME").value_or("/"), ".config");
    file = path::join(path::join(cfg, "zerobox"), name_or_file + ".toml");
  }
  if (path::kind_of(file) != path::Kind::File) throw SetupError{"--profile " + name_or_file + ": " + file + ": No such file"};
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
          if (eq == std::string::npos || !policy::valid_env_name(s.substr(0, eq))) {
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
      p.debug = boolean(node, key, file);
    } else if (key == "quiet") {
      p.quiet = boolean(node, key, file);
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
        p.snapshot = key == "snapshot" ? zerobox::SnapshotMode::Snapshot
                     : key == "restore" ? zerobox::SnapshotMode::Restore
                                        : zerobox::SnapshotMode::Review;
      }
    } else {
      throw UsageError{file + ": unknown key '" + key + "' (" + where(node) + ")"};
    }
  }
}

}  // namespace zb::cli
