// The seccomp filter, built with libseccomp in the supervisor and loaded after clone().
#pragma once

#include <linux/filter.h>

#include <span>
#include <vector>

#include "util/error.hpp"

namespace zb::exec {

// Default allow; refuses the syscalls listed in seccomp.cpp with EPERM (clone3 with
// ENOSYS so libc falls back to clone, whose flags can be inspected), and kills the
// process on a foreign ABI (i386, x32).
Result<std::vector<sock_filter>> build_seccomp_filter();

// The same filter, compiled at build time by zb_seccomp_gen (what zerobox loads).
std::span<const sock_filter> embedded_seccomp_filter();

// Loads a BPF program. Requires no_new_privs. No allocation.
int apply_seccomp(std::span<const sock_filter> filter);

}  // namespace zb::exec
