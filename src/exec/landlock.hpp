// Landlock: a second, independent fence that mirrors the mount policy's writes (and, from
// ABI 6, scopes abstract unix sockets and signals to the sandbox). Probed at run time;
// the ABI in use is reported by --debug.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "policy/policy.hpp"

namespace zb::exec {

// The Landlock ABI version of the running kernel, or 0 when Landlock is unavailable.
int landlock_abi();

struct LandlockRule {
  std::string path;  // in the sandbox's root
  uint64_t access;   // LANDLOCK_ACCESS_FS_* bits; narrowed to file rights for non-directories
};

struct LandlockPlan {
  int abi = 0;
  uint64_t handled_fs = 0;
  uint64_t scoped = 0;
  std::vector<LandlockRule> rules;
};

// The Landlock ruleset for `fs` at kernel ABI `abi` (0 or less: no Landlock, an empty
// plan). Only write rights are handled: the paths of fs.writable (or "/" for a bare
// --allow-write), scratch /tmp, /var/tmp and /dev/shm, and file writes under /dev and
// /proc; from ABI 6 abstract unix sockets and signals are scoped. Pure; applied in the
// child by landlock_apply.cpp.
LandlockPlan make_landlock_plan(const policy::FsRules& fs, int abi);

// A LandlockPlan as the child reads it, in memory shared with the supervisor (see
// overlay::FlatPlan); rule indexes match LandlockPlan::rules.
struct FlatLandlockRule {
  const char* path;
  uint64_t access;
};
struct FlatLandlock {
  int abi;
  uint64_t handled_fs;
  uint64_t scoped;
  const FlatLandlockRule* rules;
  std::size_t n_rules;
};

// Applies the plan to the calling thread. Runs after clone() and after pivot_root: opens
// each rule's path with O_PATH, adds it, restricts self. Requires no_new_privs.
// Returns 0, or -1 with errno set (`failed_rule` names the rule, -1 for the ruleset).
// `tty_dir_fd`, when >= 0, is the host's /dev/pts: its terminals may be reopened for
// reading and writing (they are reachable only through fds the command inherited).
int apply_landlock(const FlatLandlock& plan, int tty_dir_fd, int& failed_rule);

// A further layer for the calling thread that refuses making regular files anywhere
// (LANDLOCK_ACCESS_FS_MAKE_REG handled, no rule). The command of a guarded run gets it:
// init makes its files, so that for a name the guard lets through, the command's own
// open() may go on and find the file there (exec/guard/serve.cpp, fast_path). 0, or -1 with errno.
int forbid_making_files();

std::string describe(const LandlockPlan& plan);

}  // namespace zb::exec
