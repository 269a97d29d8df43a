#include "util/env.hpp"

namespace zb::env {

bool valid_name(const std::string& k) {
  if (k.empty()) return false;
  auto alpha = [](char ch) { return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_'; };
  if (!alpha(k[0])) return false;
  for (char ch : k) {
    if (!alpha(ch) && !(ch >= '0' && ch <= '9')) return false;
  }
  return true;
}

std::optional<std::string> find(const std::vector<std::string>& environ, std::string_view key) {
  for (const auto& kv : environ) {
    if (kv.size() > key.size() && kv.compare(0, key.size(), key) == 0 && kv[key.size()] == '=') {
      return kv.substr(key.size() + 1);
    }
  }
  return std::nullopt;
}

std::vector<std::string> path_dirs(std::string_view path) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string_view::npos) end = path.size();
    out.emplace_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace zb::env
