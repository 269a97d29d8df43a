// Small helpers shared by policy/*.cpp (not used outside src/policy/): path-list set
// operations and the caller's profile directories.
#pragma once

#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <vector>

#include "policy/policy.hpp"
#include "util/path.hpp"

namespace zb::policy::internal {

inline bool lexists(const std::string& p) {
  struct stat st{};
  return ::lstat(p.c_str(), &st) == 0;
}

inline void sort_unique(std::vector<std::string>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// Drops paths that lie under another path of the same list.
inline void drop_nested(std::vector<std::string>& v) {
  sort_unique(v);
  std::vector<std::string> out;
  for (const auto& p : v) {
    if (!out.empty() && path::is_under(p, out.back())) continue;
    out.push_back(p);
  }
  v = std::move(out);
}

inline bool under_any(const std::string& p, const std::vector<std::string>& roots) {
  return std::any_of(roots.begin(), roots.end(), [&](const std::string& r) { return path::is_under(p, r); });
}

inline bool named(const std::string& p, const std::vector<std::string>& list) {
  return std::find(list.begin(), list.end(), p) != list.end();
}

// profile_dirs() for this caller's home and XDG_CONFIG_HOME.
inline std::vector<std::string> own_profile_dirs(const Caller& c) {
  auto xdg = c.env.find("XDG_CONFIG_HOME");
  return profile_dirs(c.home, xdg == c.env.end() ? std::string() : xdg->second);
}

}  // namespace zb::policy::internal
