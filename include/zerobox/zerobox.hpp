// The public C++ API of zerobox. The command-line tool is a thin layer over it:
// parse argv into a Policy (zerobox::parse_args), then zerobox::run().
#pragma once

#include <string>
#include <vector>

#include "zerobox/policy.hpp"

namespace zerobox {

// The version string, e.g. "0.1.0".
const char* version();

// Runs policy.argv in a sandbox built from the policy and waits for it.
// Returns what zerobox should exit with: the command's own status, 128+N when a signal
// N killed it, 125 when zerobox could not build the sandbox (a one-line message is on
// stderr and a setup_error event on the status fd), 126/127 when the command could not
// be executed or found. `environ` is the caller's environment ("K=V" strings).
struct RunOptions {
  // false: return once the command's status is known, leaving the kernel to finish
  // tearing down the sandbox's namespaces (the CLI, which exits right after, does this).
  bool wait_for_teardown = true;
};
int run(Policy policy, const std::vector<std::string>& environ, RunOptions options = {});

}  // namespace zerobox
