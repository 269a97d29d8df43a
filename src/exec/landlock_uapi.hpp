// Landlock's UAPI, for the two halves of exec/landlock.hpp: the plan (landlock.cpp, in
// the supervisor) and its system calls (landlock_apply.cpp, in the child). Debian 12's
// <linux/landlock.h> predates ABI 4-7, so it is spelled out here (values from the
// kernel's include/uapi/linux/landlock.h). Internal to src/exec.
#pragma once

#include <sys/syscall.h>

#include <cstdint>

namespace zb::exec::landlock_uapi {

inline constexpr uint64_t k_execute = 1ULL << 0;
inline constexpr uint64_t k_write_file = 1ULL << 1;
inline constexpr uint64_t k_read_file = 1ULL << 2;
inline constexpr uint64_t k_read_dir = 1ULL << 3;
inline constexpr uint64_t k_remove_dir = 1ULL << 4;
inline constexpr uint64_t k_remove_file = 1ULL << 5;
inline constexpr uint64_t k_make_char = 1ULL << 6;
inline constexpr uint64_t k_make_dir = 1ULL << 7;
inline constexpr uint64_t k_make_reg = 1ULL << 8;
inline constexpr uint64_t k_make_sock = 1ULL << 9;
inline constexpr uint64_t k_make_fifo = 1ULL << 10;
inline constexpr uint64_t k_make_block = 1ULL << 11;
inline constexpr uint64_t k_make_sym = 1ULL << 12;
inline constexpr uint64_t k_refer = 1ULL << 13;               // ABI 2
inline constexpr uint64_t k_truncate = 1ULL << 14;            // ABI 3
inline constexpr uint64_t k_scope_abstract_unix = 1ULL << 0;  // ABI 6
inline constexpr uint64_t k_scope_signal = 1ULL << 1;         // ABI 6
inline constexpr uint32_t k_create_ruleset_version = 1U << 0;
inline constexpr int k_rule_path_beneath = 1;

struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;  // ABI 4
  uint64_t scoped;              // ABI 6
};
struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
};

#ifndef SYS_landlock_create_ruleset
inline constexpr long k_sys_create = 444, k_sys_add = 445, k_sys_restrict = 446;
#else
inline constexpr long k_sys_create = SYS_landlock_create_ruleset, k_sys_add = SYS_landlock_add_rule,
                      k_sys_restrict = SYS_landlock_restrict_self;
#endif

inline constexpr uint64_t k_file_rights = k_execute | k_write_file | k_read_file | k_truncate;

}  // namespace zb::exec::landlock_uapi
