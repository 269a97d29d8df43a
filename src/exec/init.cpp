#include "exec/init.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "exec/caps.hpp"
#include "exec/execvp.hpp"
#include "exec/landlock.hpp"
#include "exec/netns.hpp"
#include "exec/report.hpp"
#include "exec/seccomp.hpp"
#include "exec/signals.hpp"

namespace zb::exec {
namespace {

volatile sig_atomic_t g_command = 0;
volatile int g_guard_err = 0;               // set by the vfork()ed child, which shares our memory
volatile int g_command_makes_no_files = 0;  // ... as is this (forbid_making_files())

void on_child(int) {}

void forward(int sig) {
  int saved = errno;
  pid_t p = g_command;
  if (p > 0 && ::kill(-p, sig) != 0) ::kill(p, sig);
  errno = saved;
}

// The command's side of the create guard, before execve: no capability left (init keeps
// CAP_SYS_PTRACE), the filter, and its listener sent to init.
// Without it (an older kernel), the command still gets the fallback filter, which
// refuses what init's filter left out for the guard; if even that fails, no command.
// Returns 0, or the errno that stops the command.
int start_guard(const InitArgs& a, int channel) {
  if (clear_capabilities() != 0) return errno;
  int listener = channel >= 0 ? install_guard(a.guard_filter, a.n_guard_filter) : -1;
  if (listener < 0) {
    g_guard_err = errno;
    return apply_seccomp(embedded_guard_fallback_filter()) == 0 ? 0 : errno;
  }
  if (send_fd(channel, listener) != 0) g_guard_err = errno;
  ::close(listener);
  // Best effort: without it, init hands every new file over itself (SECCOMP_IOCTL_NOTIF_ADDFD).
  if (forbid_making_files() == 0) g_command_makes_no_files = 1;
  return 0;
}

[[noreturn]] void exec_command(const InitArgs& a, int exec_err_fd, int guard_channel) {
  // A fresh session: no controlling terminal to push input into, and our own process
  // group for signal forwarding.
  ::setsid();
  // Handlers are reset by execve; what zerobox itself set to "ignore" (SIGPIPE) is
  // not, so restore the defaults of every signal zerobox touched. Signals the caller
  // ignored stay ignored, as across any exec.
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  for (int s : k_forwarded_signals) ::sigaction(s, &dfl, nullptr);
  ::sigaction(SIGPIPE, &dfl, nullptr);
  ::sigaction(SIGCHLD, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (a.n_guard_filter != 0 && (a.guard.count != 0 || a.guard.n_names != 0)) {
    if (int32_t e = start_guard(a, guard_channel); e != 0) {
      (void)!::write(exec_err_fd, &e, sizeof e);
      ::_exit(127);
    }
  }
  // Every fd above 2 goes, except the CLOEXEC pipe that reports a failed execve.
  if (exec_err_fd > 3) ::syscall(SYS_close_range, 3U, static_cast<unsigned>(exec_err_fd - 1), 0U);
  ::syscall(SYS_close_range, static_cast<unsigned>(exec_err_fd + 1), ~0U, 0U);

  int err = exec_first(a.candidates, a.argv, a.envp);
  int32_t e = err;
  (void)!::write(exec_err_fd, &e, sizeof e);
  ::_exit(127);
}

}  // namespace

void run_init(const InitArgs& a) {
  sigset_t fwd;
  sigemptyset(&fwd);
  for (int s : k_forwarded_signals) sigaddset(&fwd, s);
  ::sigprocmask(SIG_BLOCK, &fwd, nullptr);
  struct sigaction sa{};
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  for (int s : k_forwarded_signals) ::sigaction(s, &sa, nullptr);

  int exec_pipe[2];
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    send_msg(a.report_fd, k_msg_setup_failed, k_step_fork, -1, errno, 0);
    ::_exit(1);
  }
  // The create guard: its listener comes back from the child over a socket pair.
  // The paths are copied out of the memory shared with the supervisor, unmapped below.
  GuardState guard{};
  int guard_pair[2] = {-1, -1};
  if (a.n_guard_filter != 0 && (a.guard.count != 0 || a.guard.n_names != 0)) {
    if (!prepare_guard(a.guard, a.report_fd, guard) ||
        ::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, guard_pair) != 0) {
      g_guard_err = errno;
    }
  }
  // SIGCHLD interrupts the wait for a notification; blocked outside it (see below).
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  if (guard_pair[0] >= 0) {
    struct sigaction sc{};
    sc.sa_handler = on_child;
    sigemptyset(&sc.sa_mask);
    ::sigaction(SIGCHLD, &sc, nullptr);
    ::sigprocmask(SIG_BLOCK, &chld, nullptr);
  }
  // vfork: no copy of init's page tables (a copy of the supervisor's), and no atfork
  // handlers. The child only makes system calls until execve or _exit, and init resumes
  // once it has done either.
  pid_t pid = ::vfork();  // NOLINT(bugprone-unsafe-functions): chosen for the reasons above
  if (pid < 0) {
    send_msg(a.report_fd, k_msg_setup_failed, k_step_fork, -1, errno, 0);
    ::_exit(1);
  }
  if (pid == 0) exec_command(a, exec_pipe[1], guard_pair[1]);  // its own fd table: closing is its business
  ::close(exec_pipe[1]);
  // init keeps no copy of the command's stdio: the supervisor's copy of a relayed output
  // ends when the command's processes have closed theirs (exec/stdio.hpp).
  int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd <= 2; ++fd) {
    if (null_fd >= 0 && null_fd != fd) {
      ::dup3(null_fd, fd, O_CLOEXEC);
    } else if (null_fd < 0) {
      ::close(fd);
    }
  }
  if (null_fd > 2) ::close(null_fd);
  int listener = -1;
  if (guard_pair[0] >= 0) {
    listener = receive_fd(guard_pair[0], MSG_DONTWAIT);
    ::close(guard_pair[0]);
    guard.command_makes_no_files = g_command_makes_no_files != 0;
    // Linux 6.6: a call wakes init on the caller's CPU, and init's answer wakes the caller
    // on init's, each a switch on one CPU instead of a wake-up of another (an
    // inter-processor interrupt, which a VM pays dearly for). Older kernels refuse it.
    if (listener >= 0) {
      constexpr unsigned long k_notif_set_flags = _IOW('!', 4, std::uint64_t);  // SECCOMP_IOCTL_NOTIF_SET_FLAGS
      constexpr std::uint64_t k_sync_wake_up = 1;                               // SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
      (void)::ioctl(listener, k_notif_set_flags, k_sync_wake_up);
    }
    ::close(guard_pair[1]);
  }
  if (a.n_guard_filter != 0 && (a.guard.count != 0 || a.guard.n_names != 0)) {
    send_msg(a.report_fd, k_msg_guard, 0, guard.command_makes_no_files ? 1 : 0,
             listener >= 0 ? 0 : (g_guard_err != 0 ? g_guard_err : EIO), listener >= 0 ? 1 : 0);
  }
  g_command = pid;
  ::sigprocmask(SIG_UNBLOCK, &fwd, nullptr);
  send_msg(a.report_fd, k_msg_started, 0, 0, 0, pid);

  int32_t exec_err = 0;
  ssize_t n;
  do {
    n = ::read(exec_pipe[0], &exec_err, sizeof exec_err);
  } while (n < 0 && errno == EINTR);
  ::close(exec_pipe[0]);
  if (a.shared != nullptr) ::munmap(const_cast<void*>(a.shared), a.shared_size);
  bool exec_failed = n == static_cast<ssize_t>(sizeof exec_err);
  if (exec_failed) send_msg(a.report_fd, k_msg_exec_failed, 0, 0, exec_err, 0);

  int status = 0;
  bool done = false;
  if (listener >= 0 && !exec_failed) {
    // Serve the guard until the command exits. SIGCHLD stays blocked and is read from a
    // signalfd polled beside the listener, so a call costs no waitpid(). Without the
    // signalfd, ppoll() unblocks SIGCHLD while it waits, and every wake-up reaps.
    int exits = ::signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
    sigset_t waiting;
    ::sigprocmask(SIG_SETMASK, nullptr, &waiting);
    if (exits < 0) sigdelset(&waiting, SIGCHLD);
    bool reap = true;     // the command may be gone already
    bool served = false;  // the last wake-up was a call: more may follow at once
    while (!done) {
      if (reap || exits < 0) {
        signalfd_siginfo info;
        while (exits >= 0 && ::read(exits, &info, sizeof info) > 0) {
        }
        int st = 0;
        pid_t w;
        while ((w = ::waitpid(-1, &st, WNOHANG)) > 0) {
          if (w == pid) {
            status = st;
            done = true;
            break;
          }
        }
        if (done || (w < 0 && errno == ECHILD)) break;
      }
      // A command making files makes them in bursts: waiting awake for the next call a
      // little (yielding the CPU to anything runnable) shortens the round trip, which on
      // a VM is mostly the wake-up of a sleeping init.
      pollfd p[2] = {{listener, POLLIN, 0}, {exits, POLLIN, 0}};
      bool ready = false;
      for (int spin = 0; served && spin < 100 && !ready; ++spin) {
        if (::poll(p, 2, 0) > 0) {
          ready = true;
        } else {
          ::sched_yield();
        }
      }
      reap = false;
      served = false;
      if (!ready && ::ppoll(p, 2, nullptr, &waiting) <= 0) continue;
      reap = (p[1].revents & POLLIN) != 0;
      served = (p[0].revents & POLLIN) != 0;
      if (served) {
        serve_guard(listener, guard);
      } else if ((p[0].revents & (POLLHUP | POLLERR | POLLNVAL)) != 0) {
        break;  // no process is left under the filter; wait below
      }
    }
    if (exits >= 0) ::close(exits);
  }
  if (listener >= 0) ::close(listener);
  ::sigprocmask(SIG_UNBLOCK, &chld, nullptr);
  for (; !done;) {
    int st = 0;
    pid_t w = ::waitpid(-1, &st, 0);
    if (w < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (w == pid) {
      status = st;
      break;
    }
  }
  g_command = 0;
  // The command is gone: nothing it started may outlive it. The status goes out first,
  // with whether anything else was left: if nothing was, the supervisor need not wait
  // for the namespaces' teardown.
  bool lingering = ::kill(-1, SIGKILL) == 0;
  if (!exec_failed) {
    int32_t flag = lingering ? 1 : 0;
    if (WIFSIGNALED(status)) {
      send_msg(a.report_fd, k_msg_signaled, 0, flag, 0, WTERMSIG(status));
    } else {
      send_msg(a.report_fd, k_msg_exited, 0, flag, 0, WEXITSTATUS(status));
    }
  }
  while (::waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
  }
  ::_exit(0);
}

}  // namespace zb::exec
