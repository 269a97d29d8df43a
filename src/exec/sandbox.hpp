// The sandbox itself: clone() into new namespaces, the uid/gid map handshake, the mount
// plan, the capability drop, no_new_privs, Landlock and seccomp, then our own pid 1 that
// forks the command, forwards signals and reaps. The supervisor (the caller) stays in
// the host's namespaces and only waits.
#pragma once

#include <linux/filter.h>
#include <sys/types.h>

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "exec/landlock.hpp"
#include "overlay/plan.hpp"

namespace zb::exec {

struct SandboxSpec {
  overlay::Plan plan;
  std::string staging;  // host directory the staging tmpfs is mounted on
  std::string cwd;      // working directory inside the sandbox
  std::vector<std::string> argv;
  std::vector<std::string> env;
  std::vector<std::string> exec_candidates;  // argv[0], or each PATH dir + "/" + argv[0]
  bool new_net = true;
  // Filtered mode: the child listens on 127.0.0.1:proxy_port in its network namespace
  // and hands the socket to run_sandbox, which passes it to on_proxy_listener.
  unsigned short proxy_port = 0;
  LandlockPlan landlock;
  std::span<const sock_filter> seccomp;  // empty: no filter
  // false: return as soon as the command's status is known and nothing else was left
  // running, without waiting for the kernel to tear the namespaces down (their mounts
  // go away as init exits, which takes about a millisecond). init is then left to the
  // caller's reaper, so only a process about to exit should pass false.
  bool wait_for_teardown = true;
};

enum class Outcome { Exited, Signaled, SetupFailed, ExecFailed };

struct SandboxResult {
  Outcome outcome = Outcome::SetupFailed;
  int code = 0;     // Exited
  int sig = 0;      // Signaled
  int err = 0;      // ExecFailed: errno of execve
  std::string message;  // SetupFailed: one line
  std::vector<std::string> notes;  // for --debug
};

// Runs the command; `on_started` gets the command's host pid once it is about to exec,
// `on_proxy_listener` (filtered mode) the listening socket, before the command starts.
SandboxResult run_sandbox(const SandboxSpec& spec, const std::function<void(long)>& on_started,
                          const std::function<void(int)>& on_proxy_listener = {});

}  // namespace zb::exec
