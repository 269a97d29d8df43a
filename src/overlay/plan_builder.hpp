// The builder of the mount plan (plan.hpp): the plan being made and the helpers that add
// its ops, from the host paths they mirror in the new root (mkdir, read-only views, binds,
// masks, tracked overlays) and the walks of the host tree. build_plan (plan.cpp) drives it
// step by step. Internal to src/overlay.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "overlay/mountinfo.hpp"
#include "overlay/plan.hpp"
#include "policy/policy.hpp"
#include "util/path.hpp"

namespace zb::overlay::plan_detail {

inline std::string in_new(const std::string& p) { return path::join(k_new, p); }
inline std::string in_old(const std::string& p) { return path::join(k_old, p); }

inline bool in_scratch(const std::string& p) { return path::is_under(p, "/tmp") || path::is_under(p, "/var/tmp"); }

// The scratch tmpfs: the upper layers of /tmp and /var/tmp and the sandbox's /dev/shm, in
// one tmpfs with one size limit (see build_plan, step 0).
inline constexpr const char* k_scratch = "/.zb/scratch";

class Builder {
 public:
  Builder(const MountTable& mounts, const policy::FsRules& fs, const PlanOptions& opts);

  Plan take() { return std::move(m_plan); }

  void op(Op o) { m_plan.ops.push_back(std::move(o)); }
  void note(std::string s) { m_plan.notes.push_back(std::move(s)); }

  void mkdir(const std::string& host_path, unsigned mode = 0755);
  // mkdir -p of host_path's ancestors and itself inside the new root's skeleton.
  void mkdir_p(const std::string& host_path);
  void file_mountpoint(const std::string& host_path);

  // A read-only view of one host directory with no mounts below it. `gone_ok`: where it
  // covers a read-only skeleton directory, a host directory gone since the plan was made
  // (a mount taken down meanwhile) leaves that directory empty instead of failing.
  void ro_overlay(const std::string& host_path, bool gone_ok = false);

  // A read-only view of a host file; `gone_ok` as above.
  void ro_file(const std::string& host_path, bool gone_ok = false);

  // A read-only view of the host tree at host_path, whose mount point already exists in
  // the new root. Directories with mounts below them become skeleton directories of the
  // new root's tmpfs and are walked one level down; everything else is one overlay.
  void ro_tree(const std::string& host_path, const std::set<std::string>& special);

  // True (and noted) for a host mount point of a file system the sandbox leaves out.
  bool left_out(const std::string& host_path);

  // The kernel interfaces mounted under a writable bind of host_path, outside the
  // sandbox's own /proc, /sys and /dev: a proc, binfmt_misc or hugetlbfs is covered by an
  // empty read-only tmpfs, the others made read-only.
  void seal_kernel_mounts(const std::string& host_path);

  // A read-only view of a directory that may have mounts below it, over a writable
  // bind (--deny-write paths, protected names, socket directories): an overlay when
  // possible. A directory with mounts below cannot be an overlay's lower layer (they are
  // locked), and a bind would keep the host's sockets in it connectable: it becomes a
  // read-only tmpfs skeleton walked like the root, whose sockets are not shown at all.
  void ro_view(const std::string& host_path);

  // Covers a path the policy shows with nothing of the host's. `late`: the policy found
  // it absent (see ro_tree and build_plan).
  void mask(const std::string& host_path, bool late = false);
  void mask_one_late(const std::string& host_path);
  // The --deny-read paths absent when the policy was made and here now, outside the walk.
  void mask_late();

  bool is_tracked(const std::string& p) const;
  bool overlaid(const std::string& p) const;
  bool is_tracked_root(const std::string& p) const;

  // A read-write overlay of a tracked directory whose upper layer is in the session. It
  // has no mounts below it: overlayfs takes none as a lower layer in a user namespace
  // (run() refuses such a tracked path, and tracked_tree walks around them).
  void tracked_overlay(const std::string& dir);

  // A tracked "/": like ro_tree, but each directory becomes a tracked overlay; those with
  // mounts below are walked instead. One of them holds the store: overlayfs (6.x) takes
  // an upper layer inside its lower, and the store is masked inside the sandbox, so the
  // overlay never looks at the part of its lower layer that changes during the run.
  void tracked_tree(const std::string& host_path, const std::set<std::string>& special);

  std::vector<std::string> list_dir(const std::string& host_path);

  void rw_bind(const std::string& host_path);

  std::set<std::string> m_made;

 private:
  const MountTable& m_mounts;
  std::set<std::string> m_masked;      // never shown from the host (fs.masked, fs.deny_read_all)
  std::set<std::string> m_mask_later;  // mask() is called for these after the walk (fs.masked)
  std::set<std::string> m_late_done;   // the others, once masked
  std::vector<std::string> m_tracked;
  std::string m_session;
  std::string m_store;
  Plan m_plan;
};

}  // namespace zb::overlay::plan_detail
