// The mount plan: the list of mount operations that builds the sandbox's root, computed
// in the supervisor from FsRules and the host mount table (no privileges needed, so it
// can be printed by --debug and unit-tested), and executed after clone() by mount.cpp.
//
// Paths in the plan are in the staging root the child pivots into first:
//   /oldroot   the host's root, with all its mounts
//   /newroot   the root being built for the command
//   /.zb       zerobox's internals: an empty dir (second overlay lower), the mode-000
//              file that masks denied files, and the scratch upper/work directories
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "overlay/mountinfo.hpp"
#include "policy/policy.hpp"

namespace zb::overlay {

inline constexpr const char* k_old = "/oldroot";
inline constexpr const char* k_new = "/newroot";
inline constexpr const char* k_internal = "/.zb";
inline constexpr const char* k_empty_dir = "/.zb/empty";
inline constexpr const char* k_denied_file = "/.zb/denied";
inline constexpr const char* k_ca_bundle = "/.zb/ca-bundle.pem";

enum class OpKind {
  Mkdir,     // mkdir dst (mode); an existing directory is fine
  File,      // create an empty file dst (mode) as a mount point; existing is fine
  Symlink,   // symlink src -> dst
  Tmpfs,     // mount a tmpfs on dst (flags, data)
  Overlay,   // mount an overlay on dst (data holds lowerdir/upperdir/workdir)
  Bind,      // bind src onto dst (recursive when `recursive`)
  Proc,      // mount a fresh proc on dst
  Devpts,    // mount a new devpts instance on dst
  ReadOnly,  // make the mount at dst read-only, nosuid and nodev (mount_setattr; recursive
             // when `recursive`); `flags`, when set, names which of MS_RDONLY, MS_NOSUID and
             // MS_NODEV to set instead (a device node's bind must keep working)
  PinLink,   // mount the symlink dst onto itself, so it can be neither removed nor replaced
};

struct Op {
  OpKind kind = OpKind::Mkdir;
  std::string src;
  std::string dst;
  std::string data;
  unsigned long flags = 0;
  unsigned mode = 0755;
  bool recursive = false;
  bool optional = false;  // ENOENT (not on this host) is noted in --debug, not fatal
  // A mask (--deny-read, protected secrets): optional only while nothing is at dst. If
  // something is there and cannot be covered (a host file replaced since it was bound),
  // the run fails.
  bool hides = false;
};

struct Plan {
  std::vector<Op> ops;
  // Snapshots: the host directories overlaid read-write with the session's upper/N and
  // work/N, N being the index here. Each tracked root is one overlay, plus one for each
  // mount below it (an overlay's lower layer does not reach into submounts).
  std::vector<std::string> tracked;
  std::vector<std::string> notes;  // decisions worth showing in --debug
  // Staging dirs to create before the ops run (the scratch directories are made by ops,
  // inside the scratch tmpfs).
  std::vector<std::string> scratch_dirs;
  // Paths in the new root (/newroot/...) that must show nothing of the host's once every
  // op has run: absent, or one of the masks. Checked last, so that a path the host
  // changed during start-up fails the run instead of being shown.
  std::vector<std::string> must_hide;
  // Files written into the staging root before the ops run (path, content), mode 0444.
  std::vector<std::pair<std::string, std::string>> files;
};

struct PlanOptions {
  // The command's uid 0 is the host's root (an identity uid map): kernel interfaces
  // that trust uid 0 without a capability check (/proc/sys, /proc/sysrq-trigger, ...)
  // must be read-only. For anyone else the host's DAC already refuses those writes.
  bool uid0_is_host_root = true;
  // Snapshots: writes under fs.tracked go to overlays whose upper and work directories
  // are session_dir/upper/N and session_dir/work/N (host paths). store_dir is the
  // whole store (masked by the caller through fs.masked).
  std::string session_dir;
  std::string store_dir;
  // Secrets: the trust bundle, shown read-only at each of these host paths (the system's CA
  // bundles that exist here, canonical).
  std::string ca_bundle;
  std::vector<std::string> ca_bundle_targets;
};

// The mount table of the sandbox's root, as data: the ops the child executes in order
// (execute_plan, mount.cpp) and a note for --debug on each decision. It changes nothing
// on the host: it reads the host's mounts from `mounts` and looks at (stat, readlink,
// readdir) the paths it shows, to mirror their types, modes and links. `cwd` is the
// command's working directory, which exists in the sandbox even where it is not
// readable; `opts` holds the session's layers, the store and the trust bundle. Every
// path of `fs` is absolute and canonical (policy::compute_fs).
Plan build_plan(const policy::FsRules& fs, const MountTable& mounts, const std::string& cwd, const PlanOptions& opts);

// The size option of the scratch tmpfs (fs.tmpfs_size, --tmpfs-size): "size=BYTES", or
// for 0 "size=50%", half the RAM, the kernel's default for one tmpfs, here the limit for
// all the scratch space together.
std::string tmpfs_size_option(std::uint64_t bytes);

// One line per op for --debug and error messages ("overlay (ro) /usr").
std::string describe(const Op& op);

// Escapes a path for overlayfs' option parser (',', ':' and '\' are special).
std::string overlay_escape(const std::string& p);

}  // namespace zb::overlay
