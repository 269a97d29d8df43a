// Denied paths that did not exist when the sandbox was built cannot be masked (there is
// no inode to mount over). If the command created one inside a writable directory, it is
// renamed aside at exit, so it never takes effect on the host under its denied name.
#pragma once

#include <string>
#include <vector>

namespace zb::exec {

// For each path that now exists, renames it to PATH.zerobox-blocked (or -2, -3, ...)
// without following symlinks anywhere in its path, and returns one line per path for
// the user.
std::vector<std::string> move_created_aside(const std::vector<std::string>& absent_at_start);

}  // namespace zb::exec
