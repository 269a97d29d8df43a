// The host's mount table, read once through libmount before the sandbox is cloned.
#pragma once

#include <set>
#include <string>

#include "util/error.hpp"

namespace zb::overlay {

struct MountTable {
  std::set<std::string> targets;  // every mount point, unescaped

  // True when a mount point lies strictly beneath dir. overlayfs cannot take such a
  // directory as a lower layer inside a user namespace (its child mounts are locked).
  bool has_mounts_below(const std::string& dir) const;
};

Result<MountTable> read_mount_table(const char* file = "/proc/self/mountinfo");

}  // namespace zb::overlay
