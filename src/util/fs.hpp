// Small filesystem helpers shared by the store, the snapshot code and the proxy. None of
// them follows a symlink it was not asked to.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace zb::util {

// The target of the symlink dirfd/name, however long (the buffer grows until it fits).
// `shown` names it in the error as given: "readlinkat SHOWN: ...".
Result<std::string> read_link_at(int dirfd, const char* name, const std::string& shown);

// st_mtim in nanoseconds since the epoch: the unit of the journal's mtime columns.
std::int64_t mtime_ns(const struct stat& st);

// The names in directory `dir_fd` but "." and "..", in readdir order; `shown` names it in
// errors as given. dir_fd stays open and unchanged (the listing reads a duplicate).
Result<std::vector<std::string>> list_names(int dir_fd, const std::string& shown);

// rm -rf of parent/name (parent may be AT_FDCWD, name then a whole path) without
// following symlinks: a symlink is unlinked, never entered. Directories a sandboxed
// command (or overlayfs, whose work/work is mode 0) left without write or search
// permission are made 0700 first, which their owner may always do. A name that is already
// gone (now or while the walk runs) is not an error. `shown` is the path errors name
// (through log::quote).
Result<void> remove_tree_at(int parent, const std::string& name, const std::string& shown);

// remove_tree_at(AT_FDCWD, path, path).
Result<void> remove_tree(const std::string& path);

// Raises the soft RLIMIT_NOFILE to the hard limit, for a process that holds many fds at
// once (a deep directory walk, a proxy with many tunnels). False when setrlimit refused.
bool raise_nofile_limit();

}  // namespace zb::util
