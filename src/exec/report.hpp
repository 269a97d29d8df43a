// The child's reports to the supervisor on the report pipe: wire format, version 1.
//
// The child after clone() (exec/child.cpp), init (exec/init.cpp) and the create guard in
// init (exec/guard/) write; run_sandbox reads (read_reports). Both ends are one binary,
// so nothing on the wire names the version: a change of this layout changes its reader
// in the same commit.
//
// A message is one ChildMsg: five int32 in the host's byte order, 20 bytes, written with
// one write(2). A pipe keeps a write of up to PIPE_BUF bytes whole, so one read of 20
// bytes is one message. The fields:
//   type   a ChildMsgType
//   step   k_msg_setup_failed: the ChildStep that failed; else 0
//   index  which one of several, per type (below); -1 for none
//   err    an errno, 0 for none
//   value  per type (below)
// k_msg_guard_depth_refused alone carries more: `value` bytes of a path follow the
// message in the same write (at most PIPE_BUF bytes in all).
//
// The order the reader accepts, which is the order init sends in: any number of
// k_msg_skipped, k_msg_landlock and k_msg_guard; then k_msg_setup_failed (final) or
// k_msg_started; after k_msg_started, one of k_msg_exec_failed, k_msg_exited and
// k_msg_signaled (final). k_msg_guard_refused and k_msg_guard_depth_refused come at any
// time after a k_msg_guard that said the guard runs. Anything else (out of order, after a
// final message) is ignored, and an index out of range is not used, so that a forged or
// garbled message cannot turn a run into a setup error or a second start.
//
// The enumerators' values are part of the format: a new one takes a new value.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <functional>
#include <string>

namespace zb::exec {

struct ChildMsg {
  int32_t type;
  int32_t step;
  int32_t index;
  int32_t err;
  int32_t value;
};

enum ChildMsgType : int32_t {
  k_msg_setup_failed = 1,   // step, err; index: the mount op (k_step_mount) or Landlock
                            // rule (k_step_landlock), else -1; value: the MountStep (k_step_mount)
  k_msg_started = 2,        // value: the command's pid inside the sandbox
  k_msg_exec_failed = 3,    // err: of the last execve that decides the exit status (exec_first)
  k_msg_exited = 4,         // value: exit code; index: 1 if other processes had to be killed
  k_msg_signaled = 5,       // value: signal; index: as for k_msg_exited
  k_msg_skipped = 6,        // index, err: an optional mount op failed
  k_msg_landlock = 7,       // value: ABI applied
  k_msg_guard = 8,          // value: 1 if the create guard runs; err: why not; index: 1 if
                            // the command makes no regular file itself (forbid_making_files)
  k_msg_guard_refused = 9,  // index: the guarded path a call was refused for (once per path)
  // value: the length of the path the depth rule refused, whose bytes follow the message
  // in the same write (at most PIPE_BUF in all)
  k_msg_guard_depth_refused = 10,
};

// The steps of the child and of init that can fail (k_msg_setup_failed's step).
enum ChildStep : int32_t {
  k_step_loopback = 2,
  k_step_mount,  // value: MountStep, index: op index
  k_step_caps,
  k_step_no_new_privs,
  k_step_landlock,  // index: the rule, -1 for the ruleset
  k_step_seccomp,
  k_step_fork,
  k_step_proxy,
  k_step_netns,
  k_step_stdio,
  k_step_ids,  // root's own ids: the host tree or the change of credentials
};

// Writes one message. No allocation: the child and init call it.
inline void send_msg(int fd, int32_t type, int32_t step, int32_t index, int32_t err, int32_t value) {
  ChildMsg m{type, step, index, err, value};
  while (::write(fd, &m, sizeof m) < 0 && errno == EINTR) {
  }
}

struct SandboxSpec;
struct SandboxResult;

// The supervisor's end. One line for a k_msg_setup_failed of the run of `spec`.
std::string step_text(const SandboxSpec& spec, const ChildMsg& m);

// What read_reports saw.
struct Reports {
  bool final = false;       // a final message came
  bool clean_exit = false;  // an exit or a signal with nothing else left running
};

// Reads the messages on `fd` until the child's end closes, or until a clean exit when
// `spec.wait_for_teardown` is false, into `res` (outcome, notes, refused paths), checking
// them against the order above. `on_started` is called once, when init reports the start,
// with whether the create guard runs.
Reports read_reports(int fd, const SandboxSpec& spec, const std::function<void(bool guarded)>& on_started,
                     SandboxResult& res);

}  // namespace zb::exec
