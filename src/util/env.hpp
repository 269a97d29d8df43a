// Environment variables as the `K=V` strings execve(2) takes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zb::env {

// A variable name as POSIX shells accept it: [A-Za-z_][A-Za-z0-9_]*.
bool valid_name(const std::string& k);

// The value of `key` in `environ` (the first `key=` entry), if there is one.
std::optional<std::string> find(const std::vector<std::string>& environ, std::string_view key);

}  // namespace zb::env
