// pid 1 of the sandbox: starts the command (vfork), forwards signals to its process
// group, reaps every child, and reports the command's status to the supervisor. Runs
// after clone() in a copy of a multi-threaded process: allocates nothing, throws
// nothing, and never calls fork(), whose atfork handlers take malloc's locks.
#pragma once

#include <linux/filter.h>

#include <cstddef>

#include "exec/guard.hpp"

namespace zb::exec {

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

// Reports on args.report_fd (exec/report.hpp) as it goes. Never returns.
[[noreturn]] void run_init(const InitArgs& args);

}  // namespace zb::exec
