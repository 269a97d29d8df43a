// The new mount API (open_tree, move_mount, fsopen, fsconfig, fsmount, mount_setattr) by
// system call number, with the constants it takes: glibc 2.36's <sys/mount.h> wrappers
// need <linux/mount.h> for them, which clashes with <sys/mount.h>.
#pragma once

#include <cstdint>

namespace zb::mount_api {

struct MountAttr {  // struct mount_attr
  uint64_t attr_set;
  uint64_t attr_clr;
  uint64_t propagation;
  uint64_t userns_fd;
};

inline constexpr long k_sys_open_tree = 428, k_sys_move_mount = 429, k_sys_fsopen = 430, k_sys_fsconfig = 431,
                      k_sys_fsmount = 432, k_sys_clone3 = 435, k_sys_mount_setattr = 442;

inline constexpr uint64_t k_attr_rdonly = 0x1, k_attr_nosuid = 0x2, k_attr_nodev = 0x4, k_attr_noexec = 0x8,
                          k_attr_idmap = 0x00100000;
inline constexpr unsigned k_at_recursive = 0x8000;
inline constexpr unsigned k_open_tree_clone = 0x1;
inline constexpr unsigned k_move_mount_f_empty_path = 0x4;
inline constexpr unsigned k_fsopen_cloexec = 0x1, k_fsmount_cloexec = 0x1;
inline constexpr unsigned k_fsconfig_set_flag = 0, k_fsconfig_set_string = 1, k_fsconfig_cmd_create = 6;

}  // namespace zb::mount_api
