#include "exec/signals.hpp"

#include <cerrno>

namespace zb::exec {
namespace {

volatile sig_atomic_t g_target = 0;

void forward(int sig) {
  int saved = errno;
  pid_t p = g_target;
  if (p > 0) ::kill(p, sig);
  errno = saved;
}

}  // namespace

SignalForwarding::SignalForwarding() {
  struct sigaction sa {};
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < std::size(k_forwarded_signals); ++i) ::sigaction(k_forwarded_signals[i], &sa, &m_old[i]);
}

SignalForwarding::~SignalForwarding() {
  g_target = 0;
  for (size_t i = 0; i < std::size(k_forwarded_signals); ++i) ::sigaction(k_forwarded_signals[i], &m_old[i], nullptr);
}

void SignalForwarding::set_target(pid_t pid) { g_target = pid; }

}  // namespace zb::exec
