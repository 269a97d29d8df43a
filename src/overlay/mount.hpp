// Executes a mount Plan inside the child's new mount namespace. Runs after clone(): it
// allocates nothing and throws nothing; on failure it fills a MountFailure and returns.
#pragma once

#include <cstddef>
#include <cstdint>

#include "overlay/plan.hpp"

namespace zb::overlay {

enum class MountStep : int32_t {
  MakePrivate = 1,  // mount --make-rprivate /
  Staging,          // tmpfs for the staging root
  PivotStaging,     // pivot_root into the staging root
  Op,               // plan.ops[index]
  DetachOld,        // umount the host root
  PivotNew,         // pivot_root into the new root
  Chdir,            // chdir to the working directory
  Unmasked,         // plan.must_hide[index] shows the host's file
  HostTree,         // mount the host's idmapped mounts at /oldroot (index: which one)
};

struct MountFailure {
  MountStep step = MountStep::MakePrivate;
  int32_t index = -1;  // op index for MountStep::Op
  int32_t err = 0;
};

// Optional ops that failed, for --debug (at most k_max_skipped are kept).
struct MountReport {
  static constexpr int k_max_skipped = 16;
  int32_t skipped[k_max_skipped] = {};
  int32_t skipped_err[k_max_skipped] = {};
  int32_t n_skipped = 0;
  // O_PATH fd of the host's /dev/pts, opened before the host root is detached: the
  // command's inherited terminal lives there, and Landlock needs it to allow reopening
  // that terminal through /dev/stdout (/proc/self/fd/N). -1 if it could not be opened.
  int host_pts_fd = -1;
  // A bit per std fd that is a device node and was opened again through a read-only bind
  // of that node (exec/stdio.hpp).
  unsigned std_reopened = 0;
};

// A Plan as the child reads it: the child is cloned before its plan exists, so the
// supervisor copies the plan into memory the two share (exec/sandbox.cpp), as plain
// structs and C strings, in the same order (op indexes match Plan::ops).
struct FlatOp {
  OpKind kind;
  bool recursive;
  bool optional;
  bool hides;
  unsigned mode;
  unsigned long flags;
  const char* src;
  const char* dst;
  const char* data;
};
struct FlatFile {
  const char* path;
  const char* data;
  std::size_t size;
};
// One per op, zeroed, in the shared memory too: where the helper that prepares overlay
// superblocks ahead of the ops (mount.cpp) leaves each one's detached mount.
struct OverlaySlot {
  int32_t state;  // 0 pending, 1 ready (fd holds the mount), 2 failed (the op runs mount(2) itself)
  int32_t fd;
};
struct FlatPlan {
  const FlatOp* ops;
  std::size_t n_ops;
  OverlaySlot* slots;  // n_ops of them, or nullptr: no helper
  const FlatFile* files;
  std::size_t n_files;
  const char* const* scratch_dirs;
  std::size_t n_scratch_dirs;
  const char* const* must_hide;
  std::size_t n_must_hide;
};

// `staging` is an existing host directory to mount the staging tmpfs on; `cwd` is the
// working directory to enter in the new root. `host_tree`, if not -1, is the socket the
// supervisor sent root's idmapped host mounts on (exec/ids.hpp: send_host_tree): they
// stand for the host's root at /oldroot, in place of this namespace's copy of it.
bool execute_plan(const FlatPlan& plan, const char* staging, const char* cwd, int host_tree, MountFailure& failure,
                  MountReport& report);

// "mount overlay on /usr" style text for a failure, with the errno explained where the
// kernel's errno misleads (overlay's ELOOP means overlapping layers, EINVAL is often
// "not supported here").
std::string describe_failure(const Plan& plan, const MountFailure& f);

}  // namespace zb::overlay
