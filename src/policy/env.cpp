// Environment helpers shared by the CLI and the runner.
#include <string>
#include <vector>

#include "policy/policy.hpp"
#include "util/path.hpp"

namespace zb::policy {

// A variable name as POSIX shells accept it: [A-Za-z_][A-Za-z0-9_]*.
bool valid_env_name(const std::string& k) {
  if (k.empty()) return false;
  auto alpha = [](char ch) { return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_'; };
  if (!alpha(k[0])) return false;
  for (char ch : k) {
    if (!alpha(ch) && !(ch >= '0' && ch <= '9')) return false;
  }
  return true;
}

std::optional<std::string> find_env(const std::vector<std::string>& environ, std::string_view key) {
  for (const auto& kv : environ) {
    if (kv.size() > key.size() && kv.compare(0, key.size(), key) == 0 && kv[key.size()] == '=') {
      return kv.substr(key.size() + 1);
    }
  }
  return std::nullopt;
}

std::string profile_lookup_dir(const std::string& home, const std::string& xdg_config_home) {
  // The XDG base directory rules: a relative XDG_CONFIG_HOME is invalid and ignored.
  if (!xdg_config_home.empty() && xdg_config_home.front() == '/') return path::join(path::normalize(xdg_config_home), "zerobox");
  return path::join(path::join(home.empty() || home.front() != '/' ? "/" : path::normalize(home), ".config"), "zerobox");
}

std::vector<std::string> profile_dirs(const std::string& home, const std::string& xdg_config_home) {
  std::vector<std::string> out = {profile_lookup_dir(home, "")};
  std::string xdg = profile_lookup_dir(home, xdg_config_home);
  if (xdg != out.front()) out.push_back(xdg);
  return out;
}

}  // namespace zb::policy
