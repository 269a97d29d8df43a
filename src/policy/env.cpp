// Where profiles are looked up.
#include <string>
#include <vector>

#include "policy/policy.hpp"
#include "util/path.hpp"

namespace zb::policy {

std::string profile_lookup_dir(const std::string& home, const std::string& xdg_config_home) {
  // The XDG base directory rules: a relative XDG_CONFIG_HOME is invalid and ignored.
  if (!xdg_config_home.empty() && xdg_config_home.front() == '/')
    return path::join(path::normalize(xdg_config_home), "zerobox");
  return path::join(path::join(home.empty() || home.front() != '/' ? "/" : path::normalize(home), ".config"),
                    "zerobox");
}

std::vector<std::string> profile_dirs(const std::string& home, const std::string& xdg_config_home) {
  std::vector<std::string> out = {profile_lookup_dir(home, "")};
  std::string xdg = profile_lookup_dir(home, xdg_config_home);
  if (xdg != out.front()) out.push_back(xdg);
  return out;
}

}  // namespace zb::policy
