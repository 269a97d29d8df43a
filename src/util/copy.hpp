// Copying file contents between two open fds, preserving holes.
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
