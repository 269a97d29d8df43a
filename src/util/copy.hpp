// Copying file contents between two open fds, preserving holes, and the xattrs of a file.
#pragma once

#include <cstdint>

#include "util/error.hpp"

namespace zb::util {

// Copies everything from in_fd (offset 0 to EOF) to out_fd (written from offset 0, then
// truncated to the same size). Ranges that are holes in the input (SEEK_DATA/SEEK_HOLE)
// and blocks of zeros stay holes in the output; data ranges go through
// copy_file_range(2), so filesystems that can clone (btrfs, XFS) share blocks, with a
// read/write fallback where it is unsupported (EXDEV, EINVAL, ENOSYS, EOPNOTSUPP).
// Returns the number of bytes (the file size).
//
// out_fd must be a regular file open for writing without O_APPEND; it is truncated to 0
// before anything is written, so no earlier content survives in the holes. Offsets are
// passed explicitly, so neither fd's file offset matters; out_fd's is left alone, in_fd's
// is moved by the SEEK_DATA/SEEK_HOLE probes. Where SEEK_DATA is unsupported (EINVAL) the
// whole file counts as data. The size is taken from fstat(2) at the start: a file that
// grows meanwhile is copied up to that size, one that shrinks gives a copy that ends
// where the input did (and that is the size returned). A failure names the call
// ("copy_file_range: No space left on device") and leaves out_fd partly written.
Result<std::int64_t> copy_sparse(int in_fd, int out_fd);

}  // namespace zb::util

#include <string>
#include <utility>
#include <vector>

namespace zb::util {

// Extended attributes of one file: (name, value) pairs.
using Xattrs = std::vector<std::pair<std::string, std::string>>;

// Which xattrs a copy carries.
enum class XattrScope {
  // Every one the caller can read: user.*, security.*, trusted.* (root), system.* (ACLs).
  // For the host's own files (pre-images).
  All,
  // user.* only, without overlayfs's own user.overlay.*: what a sandboxed command may set
  // on its files. security.* (file capabilities, labels) and trusted.* are never carried
  // out of a sandbox, whose command holds capabilities in its own user namespace.
  Carried,
};

// The xattrs of dir_fd/name (never following a symlink there; dir_fd may be O_PATH),
// sorted by name. Attributes that vanish or cannot be read (EACCES, EPERM) are left out; a
// filesystem without xattrs gives none.
Result<Xattrs> read_xattrs(int dir_fd, const std::string& name, XattrScope scope);

// Sets `want` on dir_fd/name. With `replace`, user.* attributes not in `want` are removed
// (other namespaces are only ever added to). Names that cannot be set here (EPERM,
// EACCES, ENOTSUP: a trusted.* as an ordinary user, a filesystem without xattrs) go to
// `refused` rather than failing.
Result<void> write_xattrs(int dir_fd, const std::string& name, const Xattrs& want, bool replace,
                          std::vector<std::string>& refused);

}  // namespace zb::util
