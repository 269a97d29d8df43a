// The seccomp filter, built with libseccomp in the supervisor and loaded after clone().
#pragma once

#include <linux/filter.h>

#include <vector>

#include "util/error.hpp"

namespace zb::exec {

// Default allow; refuses the syscalls listed in seccomp.cpp with EPERM (clone3 with
// ENOSYS so libc falls back to clone, whose flags can be inspected), and kills the
// process on a foreign ABI (i386, x32).
Result<std::vector<sock_filter>> build_seccomp_filter();

// Loads a filter built by build_seccomp_filter(). Requires no_new_privs. No allocation.
int apply_seccomp(const std::vector<sock_filter>& filter);

}  // namespace zb::exec
