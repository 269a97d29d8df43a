// Signal forwarding from the supervisor to the process it waits for.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <iterator>

namespace zb::exec {

// Signals the supervisor forwards (and the sandbox's init passes on to the command).
inline constexpr int k_forwarded_signals[] = {SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2,
                                              SIGALRM, SIGTERM, SIGCONT, SIGWINCH};

// While alive, forwards k_forwarded_signals to the target set with set_target() (none
// before that); restores the previous handlers when it goes out of scope.
class SignalForwarding {
 public:
  SignalForwarding();
  ~SignalForwarding();
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;

  void set_target(pid_t pid);

 private:
  struct sigaction m_old[std::size(k_forwarded_signals)] {};
};

}  // namespace zb::exec
