// openat2(2) in one place: opening a path below a directory fd without leaving it.
#pragma once

#include <linux/openat2.h>
#include <sys/types.h>

#include <cstdint>
#include <string>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace zb::util {

// What "beneath" means for the snapshot code: the path stays below dirfd (no absolute
// path, no ".." above it), and no symlink or /proc magic link is followed on the way, so
// a link planted by a sandboxed command can never take a write elsewhere. Each refusal is
// an errno: EXDEV for a path that would leave the root, ELOOP for a symlink or magic link.
inline constexpr std::uint64_t k_resolve_beneath = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

// openat2(dirfd, path, flags | O_CLOEXEC, mode, resolve): the fd, or -1 with errno set.
// No allocation and no exception, so the child after clone() and the guard may call it.
int openat2_fd(int dirfd, const char* path, std::uint64_t flags, std::uint64_t resolve, mode_t mode = 0);

// dirfd/rel opened with `flags` (O_CLOEXEC is added) and k_resolve_beneath. `shown` names
// the path in the error ("open 'x': ..."), which keeps the errno above.
Result<UniqueFd> open_beneath(int dirfd, const std::string& rel, int flags, const std::string& shown);

}  // namespace zb::util
