// The host's mount table, read once before the sandbox is cloned.
//
// Only the mount points are needed, so /proc/self/mountinfo is parsed here rather than
// through libmount: linking libmount (with libblkid, libselinux and libpcre2) costs about
// 0.5 ms on every start and Debian ships no static libmount, which blocks the static
// link that removes another 0.3 ms (docs/performance.md). The unit tests check this
// parser against libmount's on the live mount table.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "util/error.hpp"

namespace zb::overlay {

struct MountTable {
  std::set<std::string> targets;  // every mount point, unescaped

  // True when a mount point lies strictly beneath dir. overlayfs cannot take such a
  // directory as a lower layer inside a user namespace (its child mounts are locked).
  bool has_mounts_below(const std::string& dir) const { return !first_mount_below(dir).empty(); }
  // The first such mount point (in sorted order), or "" when there is none.
  std::string first_mount_below(const std::string& dir) const;
};

Result<MountTable> read_mount_table(const char* file = "/proc/self/mountinfo");

// Parses mountinfo text (proc(5) format).
Result<MountTable> parse_mountinfo(std::string_view text);

// Decodes mountinfo's \ooo escapes.
std::string unescape_mountinfo(std::string_view field);

}  // namespace zb::overlay
