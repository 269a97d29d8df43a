// The child after clone(), from its first instruction to run_init(): the steps that turn
// a copy of the supervisor's helper thread into the sandbox, one line a step, in kernel
// order. It is a copy of a process whose other threads may hold locks (malloc's among
// them), so it allocates nothing and throws nothing (the zb_child library, compiled with
// -fno-exceptions and checked by lint.child_alloc): it reads its spec from the shared
// arena (FlatSpec) and reports a failed step on the report pipe (exec/report.hpp).
#pragma once

#include <linux/filter.h>
#include <signal.h>

#include <cstddef>

#include "exec/guard.hpp"
#include "exec/landlock.hpp"
#include "overlay/mount.hpp"

namespace zb::exec {

// The spec as the child reads it: the first object in the shared arena, so the child
// finds it at the arena's base (flatten(), exec/sandbox.cpp).
struct FlatSpec {
  overlay::FlatPlan plan;
  const char* staging;
  const char* cwd;
  char* const* argv;
  char* const* envp;
  char* const* candidates;
  FlatLandlock landlock;
  const sock_filter* seccomp;
  std::size_t n_seccomp;
  const sock_filter* guard_filter;
  std::size_t n_guard_filter;
  GuardList guard;
  unsigned short proxy_port;
  // Root's own ids (exec/ids.hpp): the supervisor sends the host's mounts, idmapped, on
  // the channel before the go byte. Set once the helper has cloned and mapped.
  bool own_ids;
};

// Runs in the child cloned by Prestart: its network namespace (`new_net`) at once; then,
// once the supervisor has written 'g' on `sync_fd`, the spec at `arena` (FlatSpec first)
// step by step, up to init, which runs the command. `report_fd`: the report pipe
// (exec/report.hpp); `channel`: the unix socket on which fds go to and from the
// supervisor (the proxy's listener, the host's mounts, stdio pipes); `mask`: the signal
// mask to take. Never returns.
[[noreturn]] void child_main(int sync_fd, int report_fd, int channel, bool new_net, const char* arena,
                             std::size_t arena_size, const sigset_t& mask);

}  // namespace zb::exec
