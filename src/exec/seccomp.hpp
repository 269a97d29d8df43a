// The seccomp filter, built with libseccomp in the supervisor and loaded after clone().
#pragma once

#include <linux/filter.h>

#include <span>
#include <vector>

#include "util/error.hpp"

namespace zb::exec {

// Default allow; refuses the syscalls listed in seccomp.cpp with EPERM (clone3 with
// ENOSYS so libc falls back to clone, whose flags can be inspected), and kills the
// process on a foreign ABI (i386, x32). `for_guard`: for a run with the create guard,
// whose init needs process_vm_readv and pidfd_getfd; the guard's filter, loaded on top
// for the command, refuses those.
Result<std::vector<sock_filter>> build_seccomp_filter(bool for_guard = false);

// The create guard's filter (exec/guard.hpp): hands every call that can create a name
// (open/openat with O_CREAT, creat, mkdir*, mknod*, symlink*, link*, rename*) to the
// supervising init as a user notification, answers openat2 with ENOSYS, and refuses
// what build_seccomp_filter(true) left to init. `writes` (runs with the depth rule): also
// open/openat of an existing file for writing (O_WRONLY, O_RDWR, O_TRUNC) and truncate.
Result<std::vector<sock_filter>> build_guard_filter(bool writes = false);
// Refuses only what build_seccomp_filter(true) left to init: for the command when the
// guard's filter cannot be loaded (a kernel before 5.19).
Result<std::vector<sock_filter>> build_guard_fallback_filter();

// The same filters, compiled at build time by zb_seccomp_gen (what zerobox loads).
std::span<const sock_filter> embedded_seccomp_filter();
std::span<const sock_filter> embedded_seccomp_filter_for_guard();
std::span<const sock_filter> embedded_guard_filter(bool writes = false);
std::span<const sock_filter> embedded_guard_fallback_filter();

// Loads a BPF program. Requires no_new_privs. No allocation.
int apply_seccomp(std::span<const sock_filter> filter);

}  // namespace zb::exec
