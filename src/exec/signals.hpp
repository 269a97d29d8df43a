// Signal forwarding from the supervisor to the process it waits for.
#pragma once

#include <pthread.h>
#include <signal.h>
#include <sys/types.h>

#include <iterator>

namespace zb::exec {

// Signals the supervisor forwards (and the sandbox's init passes on to the command).
inline constexpr int k_forwarded_signals[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGUSR1, SIGUSR2,
                                              SIGALRM, SIGTERM, SIGCONT, SIGWINCH};

// While alive, forwards k_forwarded_signals to the target set with set_target(); one that
// arrives before that is held and sent when the target is set. Restores the previous
// handlers when it goes out of scope.
class SignalForwarding {
 public:
  SignalForwarding();
  ~SignalForwarding();
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;

  void set_target(pid_t pid);

 private:
  struct sigaction m_old[std::size(k_forwarded_signals)]{};
};

// Blocks every signal in the calling thread while alive. A thread created meanwhile starts
// with them all blocked, so a signal for the process never runs a handler on it (on a
// helper that has not yet blocked them itself, SignalForwarding could meet it before its
// target is set, and drop it).
class AllSignalsBlocked {
 public:
  AllSignalsBlocked() {
    sigset_t all;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &m_old);
  }
  ~AllSignalsBlocked() { ::pthread_sigmask(SIG_SETMASK, &m_old, nullptr); }
  AllSignalsBlocked(const AllSignalsBlocked&) = delete;
  AllSignalsBlocked& operator=(const AllSignalsBlocked&) = delete;

 private:
  sigset_t m_old{};
};

}  // namespace zb::exec
