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

// The search path of a command run without PATH.
inline constexpr std::string_view k_default_path = "/usr/local/bin:/usr/bin:/bin";

// The directories of a PATH value in order, as written: an empty entry (a leading,
// trailing or doubled ':') stays "", which execvp reads as the current directory.
std::vector<std::string> path_dirs(std::string_view path);

}  // namespace zb::env
