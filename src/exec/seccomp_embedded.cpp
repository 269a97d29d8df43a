#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>

#include <iterator>

#include "exec/seccomp.hpp"
#include "seccomp_filter.inc"

namespace zb::exec {

std::span<const sock_filter> embedded_seccomp_filter() { return {k_seccomp_filter, std::size(k_seccomp_filter)}; }

std::span<const sock_filter> embedded_seccomp_filter_for_guard() {
  return {k_seccomp_filter_for_guard, std::size(k_seccomp_filter_for_guard)};
}

std::span<const sock_filter> embedded_guard_filter(bool writes) {
  if (writes) return {k_guard_write_filter, std::size(k_guard_write_filter)};
  return {k_guard_filter, std::size(k_guard_filter)};
}

std::span<const sock_filter> embedded_guard_fallback_filter() {
  return {k_guard_fallback_filter, std::size(k_guard_fallback_filter)};
}

int apply_seccomp(std::span<const sock_filter> filter) {
  sock_fprog prog{static_cast<unsigned short>(filter.size()), const_cast<sock_filter*>(filter.data())};
  return ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

}  // namespace zb::exec
