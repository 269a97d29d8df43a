// pid 1 of the sandbox: starts the command (vfork), forwards signals to its process
// group, reaps every child, and reports the command's status to the supervisor. Runs
// after clone() in a copy of a multi-threaded process: allocates nothing, throws
// nothing, and never calls fork(), whose atfork handlers take malloc's locks.
#pragma once

#include <linux/filter.h>

#include <cstddef>
#include <cstdint>

#include "exec/guard.hpp"

namespace zb::exec {

// Messages from the child to the supervisor on the report pipe (fixed size, so one
// write is atomic and one read is one message).
struct ChildMsg {
  int32_t type;
  int32_t step;
  int32_t index;
  int32_t err;
  int32_t value;
};

enum ChildMsgType : int32_t {
  k_msg_setup_failed = 1,  // step, index, err
  k_msg_started = 2,       // value: the command's pid inside the sandbox
  k_msg_exec_failed = 3,   // err
  k_msg_exited = 4,        // value: exit code; index: 1 if other processes had to be killed
  k_msg_signaled = 5,      // value: signal; index: as for k_msg_exited
  k_msg_skipped = 6,       // index, err: an optional mount op failed
  k_msg_landlock = 7,      // value: ABI applied
  k_msg_guard = 8,         // value: 1 if the create guard runs; err: why not
  k_msg_guard_refused = 9, // index: the guarded path a call was refused for (once per path)
  // value: the length of the path the depth rule refused, whose bytes follow the message
  // in the same write (at most PIPE_BUF in all)
  k_msg_guard_depth_refused = 10,
};

enum ChildStep : int32_t {
  k_step_loopback = 2,
  k_step_mount,  // value: MountStep, index: op index
  k_step_caps,
  k_step_no_new_privs,
  k_step_landlock,
  k_step_seccomp,
  k_step_fork,
  k_step_proxy,
  k_step_netns,
  k_step_stdio,
  k_step_ids,  // root's own ids: the host tree or the change of credentials
};

struct InitArgs {
  int report_fd;
  char* const* argv;
  char* const* envp;
  char* const* candidates;  // NULL-terminated
  // The memory shared with the supervisor that the above live in, unmapped once the
  // command has been exec'd (nullptr: nothing to unmap).
  const void* shared;
  std::size_t shared_size;
  // The create guard (exec/guard.hpp); no filter, or no path, for none. The paths may
  // live in `shared`: init copies them first.
  const sock_filter* guard_filter;
  std::size_t n_guard_filter;
  GuardList guard;
};

// Never returns.
[[noreturn]] void run_init(const InitArgs& args);

// Writes one message; used by the child before init starts too.
void send_msg(int fd, int32_t type, int32_t step, int32_t index, int32_t err, int32_t value);

}  // namespace zb::exec
