#include "exec/signals.hpp"

#include <atomic>
#include <cerrno>

namespace zb::exec {
namespace {

std::atomic<pid_t> g_target{0};
// Signals that met the handler before it had a target, by number: set_target() passes
// them on. A thread that does not block the forwarded signals (one a library started, or
// any thread while the target is being set) can take a signal meant for the process at
// any time; dropping it would let the run go on as if it had never been sent.
std::atomic<bool> g_pending[65];
static_assert(std::atomic<pid_t>::is_always_lock_free && std::atomic<bool>::is_always_lock_free);

void deliver_pending(pid_t p) {
  for (int s : k_forwarded_signals) {
    if (g_pending[s].exchange(false)) ::kill(p, s);
  }
}

void forward(int sig) {
  int saved = errno;
  pid_t p = g_target.load();
  if (p > 0) {
    ::kill(p, sig);
  } else if (sig > 0 && sig < 65) {
    g_pending[sig].store(true);
    // set_target() may have stored the target and looked at the pending set between the
    // load above and the store: look again, and deliver what is still pending.
    if ((p = g_target.load()) > 0) deliver_pending(p);
  }
  errno = saved;
}

}  // namespace

SignalForwarding::SignalForwarding() {
  for (int s : k_forwarded_signals) g_pending[s].store(false);
  struct sigaction sa{};
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < std::size(k_forwarded_signals); ++i) ::sigaction(k_forwarded_signals[i], &sa, &m_old[i]);
}

SignalForwarding::~SignalForwarding() {
  g_target.store(0);
  for (size_t i = 0; i < std::size(k_forwarded_signals); ++i) ::sigaction(k_forwarded_signals[i], &m_old[i], nullptr);
}

void SignalForwarding::set_target(pid_t pid) {
  g_target.store(pid);
  deliver_pending(pid);
}

}  // namespace zb::exec
