// Root's sandbox in ids of its own.
//
// An ordinary caller's sandbox maps only the caller's own uid and gid. For root, mapping
// every id to itself would make the command's uid 0 the host's uid 0, and the kernel
// trusts host uid 0 in places that check a file's mode and no capability: root-only
// files in /proc and /sys (/proc/slabinfo, tracefs, ACPI tables), unix sockets that only
// root may connect to, and the peer credentials a daemon reads from them.
//
// So root's sandbox maps its ids 0 .. k_count-1 to host ids k_base .. k_base+k_count-1,
// a range no host user has, and the host's files keep their owners inside through
// idmapped mounts: the supervisor, root in the initial user namespace, clones each host
// mount that a path reaches as a detached mount of its own, idmaps those whose file
// system allows it with the sandbox's own user namespace, and hands them to the child,
// which mounts them back, parents first, as the host root it builds the sandbox from
// (/oldroot). A file that host uid 0 owns
// there shows as the sandbox root's, and what the sandbox's root creates there is stored
// as uid 0, as it would be outside. Mounts that cannot be idmapped (proc, sysfs, devpts,
// cgroup; tmpfs before Linux 6.3) show their files with unmapped owners, as nobody's.
//
// Kernels before 5.19 (overlayfs takes idmapped layers from 5.19), a supervisor that is
// root only in a user namespace of its own (a container's root, whose uid 0 is not the
// host's), and a root file system that cannot be idmapped keep the identity map.
#pragma once

#include <string>
#include <vector>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace zb::exec {

inline constexpr unsigned long k_own_ids_base = 2147483648UL;   // 2^31
inline constexpr unsigned long k_own_ids_count = 2147483647UL;  // up to 2^32 - 2

// "" when root's sandbox gets ids of its own here, else the reason it keeps the
// identity map (for --debug).
std::string own_ids_unavailable();

// uid_map and gid_map text for root's own ids.
std::string own_id_map();

// The host's mounts, each as a detached clone of its own (a detached tree's mounts below
// its top cannot be idmapped), in the order the child mounts them back, parents first;
// /proc and /sys, never idmapped, as one clone each with their mounts below.
struct HostMount {
  std::string point;  // "/", "/proc", ...
  UniqueFd fd;        // the clone, private: nothing mounted on it propagates
};
struct IdmappedTree {
  std::vector<HostMount> mounts;
  std::vector<std::string> unmapped;  // mount points whose clone could not be idmapped
};

// Every mount the host's mount table lists that a path still reaches (not one covered by
// a later mount), idmapped through the user namespace `userns_fd` where its file system
// allows it. Fails when the root mount cannot be idmapped, or a mount cannot be cloned.
Result<IdmappedTree> idmapped_host_tree(int userns_fd);

// Sends the tree over `channel` (SCM_RIGHTS): messages of up to k_tree_batch fds, each
// with its mount points, NUL-terminated, after a first byte that is 'M' (more follow) or
// 'E' (the last). 0 or -1/errno.
inline constexpr std::size_t k_tree_batch = 200;
inline constexpr std::size_t k_tree_message = 65536;
int send_host_tree(int channel, const IdmappedTree& tree);

// The child's side, once its maps are written: become the namespace's uid 0 and gid 0,
// with no supplementary groups (the host's, root's group among them, would still count
// on the host's files). A change of credentials clears the parent-death signal; it is set
// again. No allocation. 0 or -1/errno.
int become_own_root(int death_signal);

}  // namespace zb::exec
