// The public C++ API of zerobox. The command-line tool is a thin layer over it: it turns
// argv and profiles into a Policy (its parser is the CLI's own, not part of this API),
// then calls zerobox::run().
#pragma once

#include <string>
#include <vector>

#include "zerobox/policy.hpp"

namespace zerobox {

// The version string, e.g. "0.1.0".
const char* version();

// How run() reports and returns, as opposed to what it runs (the Policy).
struct RunOptions {
  // false: return once the command's status is known, leaving the kernel to finish
  // tearing down the sandbox's namespaces (the CLI, which exits right after, does this).
  bool wait_for_teardown = true;
  // --status-fd: an open file descriptor (3 or more) that gets JSON Lines lifecycle
  // events (docs/usage.md, "--status-fd protocol"); -1 for none.
  int status_fd = -1;
  // --debug: the effective policy, the mount plan and every decision on stderr.
  bool debug = false;
  // --quiet: no zerobox messages on stderr except errors.
  bool quiet = false;
};

// Runs policy.argv in a sandbox built from the policy and waits for it. The policy is
// checked and canonicalised first (relative paths against the caller's directory).
// Returns what zerobox should exit with: the command's own status, 128+N when a signal
// N killed it, 125 when zerobox could not build the sandbox (a one-line message is on
// stderr and a setup_error event on the status fd), 126/127 when the command could not
// be executed or found. `environ` is the caller's environment ("K=V" strings).
int run(Policy policy, const std::vector<std::string>& environ, RunOptions options = {});

}  // namespace zerobox
