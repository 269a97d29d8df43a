// Validation and canonicalisation of a Policy, and the filesystem rules derived from it.
// Touches the filesystem only through stat/lstat/realpath (and mkdir for an --allow-write
// path whose parent exists, which docs/usage.md promises).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"
#include "zerobox/policy.hpp"

namespace zb::policy {

// What zerobox knows about the caller.
struct Caller {
  std::string cwd;
  std::string home;
  unsigned uid = 0;
  unsigned gid = 0;
  std::map<std::string, std::string> env;
};

// The caller of this process: `environ` ("K=V" strings; one without '=' is skipped) as a
// map, the working directory (getcwd; "/" when it cannot be read), the home ($HOME; "/"
// when unset or empty) and the real uid and gid. Reads nothing else; never fails.
Caller current_caller(const std::vector<std::string>& environ);

// What finalize() works out from a Policy beside its canonical paths: outputs that no
// caller gives (zerobox::Policy holds inputs only), read by compute_fs, build_env and run/.
struct Resolved {
  // One per Policy::secrets, in order: the placeholder the command sees instead of the
  // value (policy/secrets.hpp).
  std::vector<std::string> placeholders;
  // The --allow-write paths that did not exist and lie inside another writable path.
  // zerobox does not create them (the command may, as it would below any writable path):
  // they lift protection for themselves and everything below them.
  std::vector<std::string> allow_write_new;
  // A bare --allow-net (or -A) together with --deny-net or secrets: filtered mode where
  // everything but the denied names is allowed.
  bool allow_net_all = false;
  // The tracked paths stand for "everything" (a bare --allow-write), so the store may lie
  // inside one of them (it is masked there).
  bool snapshot_everything = false;
};

// Checks the policy against the machine and rewrites every path to its canonical
// absolute form; returns what follows from it. A failure here is a setup error (exit
// 125) with a one-line message. finalize.cpp.
Result<Resolved> finalize(zerobox::Policy& p, const Caller& caller);

// Write-protected names, relative to each writable root (docs/usage.md "Protected paths").
const std::vector<std::string>& protected_write_names();
// Read-protected paths; "~/" is the caller's home. "/etc/ssh/*key*" is a glob.
const std::vector<std::string>& protected_read_paths();
// System paths that stay readable under --allow-read.
const std::vector<std::string>& system_read_paths();

// Filtered mode: the port zerobox's proxy listens on inside the sandbox's network
// namespace (a fresh one, so nothing else can hold it).
inline constexpr unsigned short k_proxy_port = 3128;

// The filesystem view, in absolute canonical host paths.
struct FsRules {
  bool read_restricted = false;
  std::vector<std::string> readable;      // roots to expose when read_restricted
  std::vector<std::string> system_links;  // symlinks like /bin -> usr/bin to recreate
  bool write_all = false;
  // Existing paths bound read-write; one inside another with nothing read-only between
  // them has no mount of its own (a rename over a file bound on its own fails: EBUSY).
  std::vector<std::string> writable;
  std::vector<std::string> read_only;  // existing paths forced read-only (deny-write, protected)
  std::vector<std::string> masked;     // existing paths that cannot be read
  // Every --deny-read path, there at the check or not: the mount plan never shows one of
  // the host's, and masks one that has appeared since (overlay/plan.cpp).
  std::vector<std::string> deny_read_all;
  std::vector<std::string> socket_dirs;     // read-only views that block host unix sockets
  std::vector<std::string> masked_sockets;  // host sockets inside writable binds, masked
  bool scratch_host_content = true;         // scratch /tmp shows the host's /tmp
  bool tmp_writable = false;                // /tmp really writable (bare --allow-write or named)
  bool var_tmp_writable = false;
  bool shm_writable = false;
  std::uint64_t tmpfs_size = 0;               // the scratch tmpfs's limit in bytes; 0: half the RAM
  std::vector<std::string> absent_protected;  // denied or protected paths that do not exist yet
  // Protected names that are symlinks in a writable directory (~/.bashrc -> dotfiles/bashrc):
  // their targets are read-only; the create guard keeps the links from being replaced.
  std::vector<std::string> protected_links;
  // Directories that must keep their place (mounted onto themselves): the protected roots
  // inside writable paths (the cwd and the directories up to its git top-level, where a
  // .git or .envrc would be taken), and directories a protected link's target steps out
  // of with "..".
  std::vector<std::string> pinned_dirs;
  // Denied paths that do not exist but whose parent is writable: an empty file is
  // created there for the run (exec::MaskAnchors, exec/blocked.hpp) so that it can be masked. They
  // are already listed in masked/read_only.
  std::vector<std::string> mask_anchors;
  // The create guard's depth rule (exec/guard.hpp, GuardList): the directories below
  // which protected names hold at any depth ("/" when everything is writable), the private
  // scratch directories below it where they do not, and the --allow-write paths that lift
  // it: `lifted` each, `new_trees` (the ones that did not exist) for all below them.
  std::vector<std::string> depth_roots, depth_exempt, lifted, new_trees;
  // Existing protected paths shown read-only: the guard refuses renames and links over
  // them with EACCES (the kernel's answer at a mount point is EBUSY) and names them.
  std::vector<std::string> protected_existing;
  std::vector<std::string> tracked;  // snapshots: roots whose writes go to an overlay
  std::string binary;                // the command's resolved path, canonical, if found
  std::string command_path;          // the same as PATH found it (for execve)
};

// The filesystem view of a policy. Precondition: `resolved` is what finalize(p, caller)
// returned (every path in p is canonical and absolute). Reads the host (stat, directory listings of the
// writable roots, glob, /proc/net/unix) and writes nothing; never fails: a path that
// cannot be looked at is left out. Every list in the result is canonical and sorted;
// deny lists win over allow lists, and protected paths (unless --no-protect) and
// zerobox's profile directories are never writable. fs_rules.cpp, one step a function.
FsRules compute_fs(const zerobox::Policy& p, const Resolved& resolved, const Caller& caller);

// Adds `dir` (zerobox's store) to fs.masked where the view shows it. Under --allow-read a
// path outside every readable root is not in the view at all: there is nothing to hide,
// and no mount point for a mask.
void mask_where_shown(FsRules& fs, const std::string& dir);

// The host paths a sandbox with this view can write, over-approximated: the writable and
// tracked paths and the host's /tmp, /var/tmp, /dev/shm where they are shared; with a bare
// --allow-write, "/" (or every readable root under --allow-read). What the store registry
// records of a run (store/registry.hpp).
std::vector<std::string> writable_roots(const FsRules& fs);

// The absolute paths of the unix sockets bound in this network namespace, as listed by the
// kernel in /proc/net/unix (sorted, unique).
std::vector<std::string> bound_unix_sockets(const std::string& proc_net_unix = "/proc/net/unix");

// Resolves argv[0] against PATH the way execvp does; empty when not found.
std::string resolve_command(const std::string& name, const std::string& path_env, const std::string& cwd);

// The environment the command sees, as "K=V" strings.
std::vector<std::string> build_env(const zerobox::Policy& p, const Resolved& resolved, const Caller& caller);

// zerobox's own configuration. The directory `--profile NAME` reads NAME.toml from:
// $XDG_CONFIG_HOME/zerobox when XDG_CONFIG_HOME is an absolute path, else ~/.config/zerobox
// (an empty home is "/"). Lexically normalised, not canonical.
std::string profile_lookup_dir(const std::string& home, const std::string& xdg_config_home);
// Every directory a later run may load a profile from by name, whatever XDG_CONFIG_HOME is
// then: ~/.config/zerobox, and $XDG_CONFIG_HOME/zerobox when that differs. compute_fs keeps
// them from being written, created or replaced inside the sandbox, whatever the policy says.
std::vector<std::string> profile_dirs(const std::string& home, const std::string& xdg_config_home);

// A --tmpfs-size value: a number of bytes with an optional K, M, G or T suffix (powers of
// 1024, either case), more than 0. nullopt when malformed or out of range.
std::optional<std::uint64_t> parse_size(std::string_view s);

// What to name in --allow-write so that a later run may make `refused`, a protected path
// the create guard refused (canonical). The path itself; for .git/hooks, which only git
// init and clone make, the new repository's .git. And where the protected name's first
// directory has no parent now (git clone removes what it made when it fails), the highest
// missing directory inside a writable path: it did not exist at start, so naming it lifts
// protection for everything the command makes below it.
std::string allow_write_hint(const std::string& refused, const FsRules& fs);

// Human-readable summary of the effective policy for --debug.
std::vector<std::string> describe(const zerobox::Policy& p, const FsRules& fs);

}  // namespace zb::policy
