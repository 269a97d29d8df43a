// The child's checklist (exec/child.hpp): each step one line, and a failed step one
// report and _exit (die).
#include "exec/child.hpp"

#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "exec/caps.hpp"
#include "exec/ids.hpp"
#include "exec/init.hpp"
#include "exec/netns.hpp"
#include "exec/report.hpp"
#include "exec/seccomp.hpp"
#include "exec/stdio.hpp"
#include "overlay/mount.hpp"
#include "util/scrub.hpp"

namespace zb::exec {
namespace {

// A failed step of the child: its report ({step, index, errno}, errno as it is now by
// default), then exit. No allocation.
[[noreturn]] void die(int report_fd, int32_t step, int32_t index = -1, int32_t err = errno, int32_t value = 0) {
  send_msg(report_fd, k_msg_setup_failed, step, index, err, value);
  ::_exit(1);
}

// Waits for the go byte the supervisor writes once the uid/gid maps and the spec are in
// place. false at EOF: the supervisor is gone or gave up.
bool wait_for_go(int sync_fd) {
  char go = 0;
  ssize_t n;
  do {
    n = ::read(sync_fd, &go, 1);
  } while (n < 0 && errno == EINTR);
  ::close(sync_fd);
  return n == 1 && go == 'g';
}

// Whether the report pipe has lost its reader (the supervisor).
bool no_reader(int report_fd) {
  pollfd p{report_fd, POLLOUT, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLERR) != 0;
}

}  // namespace

[[noreturn]] void child_main(int sync_fd, int report_fd, int channel, bool new_net, const char* arena,
                             std::size_t arena_size, const sigset_t& mask) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  // The helper blocks every signal; the child keeps the caller's mask plus the forwarded
  // signals, which stay blocked until init has a command to pass them to.
  ::sigprocmask(SIG_SETMASK, &mask, nullptr);
  // The network namespace is made here rather than by clone(): it is the slowest part of
  // creating the namespaces, and this way it overlaps with the helper writing the uid/gid
  // maps (the child holds every capability in its user namespace, mapped or not).
  if (new_net) {
    if (::unshare(CLONE_NEWNET) != 0) die(report_fd, k_step_netns);
    if (bring_up_loopback() != 0) die(report_fd, k_step_loopback);
  }
  if (!wait_for_go(sync_fd)) ::_exit(1);
  const FlatSpec& s = *reinterpret_cast<const FlatSpec*>(arena);
  if (s.own_ids) {
    if (become_own_root(SIGKILL) != 0) die(report_fd, k_step_ids);
    // The parent-death signal came back only now: the supervisor may have gone in between.
    if (no_reader(report_fd)) ::_exit(1);
  }
  // Not dumpable (only now: the supervisor needed /proc/PID/uid_map): the command, with
  // the same uid, cannot open /proc/1/mem, environ or fd/ of its init, which hold the
  // supervisor's memory and the report pipe.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  scrub::wipe();

  if (s.proxy_port != 0 && send_proxy_listener(channel, s.proxy_port) != 0) die(report_fd, k_step_proxy);
  overlay::MountFailure mf;
  overlay::MountReport mr;
  if (!overlay::execute_plan(s.plan, s.staging, s.cwd, s.own_ids ? channel : -1, mf, mr)) {
    die(report_fd, k_step_mount, mf.index, mf.err, static_cast<int32_t>(mf.step));
  }
  // The caller's stdio: device nodes were opened again read-only by the plan; files
  // become pipes to the supervisor (exec/stdio.hpp).
  if (relay_std_fds(channel, mr.std_reopened, s.own_ids) != 0) die(report_fd, k_step_stdio);
  ::close(channel);
  for (int i = 0; i < mr.n_skipped; ++i) send_msg(report_fd, k_msg_skipped, 0, mr.skipped[i], mr.skipped_err[i], 0);

  if (set_no_new_privs() != 0) die(report_fd, k_step_no_new_privs);
  if (s.landlock.abi > 0) {
    int failed_rule = -1;
    if (apply_landlock(s.landlock, mr.host_pts_fd, failed_rule) != 0) die(report_fd, k_step_landlock, failed_rule);
    send_msg(report_fd, k_msg_landlock, 0, 0, 0, s.landlock.abi);
  }
  if (mr.host_pts_fd >= 0) ::close(mr.host_pts_fd);
  // Capabilities go after Landlock; the order does not matter to either, since Landlock
  // needs no capability once no_new_privs is set. With the create guard, init keeps
  // CAP_SYS_PTRACE (in the sandbox's user namespace only) to read the memory of a command
  // that made itself non-dumpable; the command drops it before execve (init.cpp).
  bool guarded = s.n_guard_filter != 0 && (s.guard.count != 0 || s.guard.n_names != 0);
  if (drop_all_capabilities(guarded ? CAP_SYS_PTRACE : -1) != 0) die(report_fd, k_step_caps);
  if (s.n_seccomp != 0 && apply_seccomp({s.seccomp, s.n_seccomp}) != 0) die(report_fd, k_step_seccomp);
  run_init(
      InitArgs{report_fd, s.argv, s.envp, s.candidates, arena, arena_size, s.guard_filter, s.n_guard_filter, s.guard});
}

}  // namespace zb::exec
