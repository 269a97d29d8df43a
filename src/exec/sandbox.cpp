#include "exec/sandbox.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "exec/caps.hpp"
#include "exec/init.hpp"
#include "exec/netns.hpp"
#include "exec/seccomp.hpp"
#include "exec/signals.hpp"
#include "overlay/mount.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"
#include "util/scrub.hpp"

namespace zb::exec {
namespace {

// The child side, from clone() to run_init(). Everything it touches was allocated by the
// supervisor before clone(); failures go to the report pipe as {step, index, errno}.
[[noreturn]] void child_main(const SandboxSpec& s, int sync_fd, int report_fd, int proxy_fd, char* const* argv,
                             char* const* envp, char* const* candidates) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  // Wait for the uid/gid maps. EOF means the supervisor is gone.
  char go = 0;
  ssize_t n;
  do {
    n = ::read(sync_fd, &go, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) ::_exit(1);
  ::close(sync_fd);
  // Not dumpable (only now: the supervisor needed /proc/PID/uid_map): the command, with
  // the same uid, cannot open /proc/1/mem, environ or fd/ of its init, which hold the
  // supervisor's memory and the report pipe.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  scrub::wipe();

  if (s.new_net && bring_up_loopback() != 0) {
    send_msg(report_fd, k_msg_setup_failed, k_step_loopback, -1, errno, 0);
    ::_exit(1);
  }
  if (proxy_fd >= 0) {
    if (send_proxy_listener(proxy_fd, s.proxy_port) != 0) {
      send_msg(report_fd, k_msg_setup_failed, k_step_proxy, -1, errno, 0);
      ::_exit(1);
    }
    ::close(proxy_fd);
  }
  overlay::MountFailure mf;
  overlay::MountReport mr;
  if (!overlay::execute_plan(s.plan, s.staging.c_str(), s.cwd.c_str(), mf, mr)) {
    send_msg(report_fd, k_msg_setup_failed, k_step_mount, mf.index, mf.err, static_cast<int32_t>(mf.step));
    ::_exit(1);
  }
  for (int i = 0; i < mr.n_skipped; ++i) send_msg(report_fd, k_msg_skipped, 0, mr.skipped[i], mr.skipped_err[i], 0);

  if (set_no_new_privs() != 0) {
    send_msg(report_fd, k_msg_setup_failed, k_step_no_new_privs, -1, errno, 0);
    ::_exit(1);
  }
  if (s.landlock.abi > 0) {
    int failed_rule = -1;
    if (apply_landlock(s.landlock, mr.host_pts_fd, failed_rule) != 0) {
      send_msg(report_fd, k_msg_setup_failed, k_step_landlock, failed_rule, errno, 0);
      ::_exit(1);
    }
    send_msg(report_fd, k_msg_landlock, 0, 0, 0, s.landlock.abi);
  }
  if (mr.host_pts_fd >= 0) ::close(mr.host_pts_fd);
  if (drop_all_capabilities() != 0) {
    send_msg(report_fd, k_msg_setup_failed, k_step_caps, -1, errno, 0);
    ::_exit(1);
  }
  if (!s.seccomp.empty() && apply_seccomp(s.seccomp) != 0) {
    send_msg(report_fd, k_msg_setup_failed, k_step_seccomp, -1, errno, 0);
    ::_exit(1);
  }
  run_init(InitArgs{report_fd, argv, envp, candidates});
}

Result<void> write_file(const std::string& path, const std::string& data) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return fail("open " + path);
  if (::write(fd.get(), data.data(), data.size()) != static_cast<ssize_t>(data.size())) return fail("write " + path);
  return {};
}

// Identity map of every id the supervisor's own namespace maps (all of them for root on
// the host), so files keep their owners; an unprivileged caller can map only itself.
std::string identity_map(const char* self_map) {
  std::ifstream in(self_map);
  std::string out, line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    unsigned long inside = 0, outside = 0, count = 0;
    if (ls >> inside >> outside >> count) out += std::to_string(inside) + " " + std::to_string(inside) + " " + std::to_string(count) + "\n";
  }
  return out;
}

Result<void> write_id_maps(pid_t pid) {
  std::string base = "/proc/" + std::to_string(pid);
  unsigned uid = ::geteuid(), gid = ::getegid();
  if (uid == 0) {
    auto u = write_file(base + "/uid_map", identity_map("/proc/self/uid_map"));
    if (u) {
      auto g = write_file(base + "/gid_map", identity_map("/proc/self/gid_map"));
      if (g) return {};
      return g;
    }
  }
  if (auto r = write_file(base + "/setgroups", "deny"); !r && r.error().err != ENOENT) return r;
  if (auto r = write_file(base + "/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1\n"); !r) return r;
  return write_file(base + "/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1\n");
}

std::string step_text(const SandboxSpec& s, const ChildMsg& m) {
  std::string why = std::strerror(m.err);
  switch (m.step) {
    case k_step_loopback: return "bring up loopback in the new network namespace: " + why;
    case k_step_mount: {
      overlay::MountFailure f{static_cast<overlay::MountStep>(m.value), m.index, m.err};
      return overlay::describe_failure(s.plan, f);
    }
    case k_step_caps: return "drop capabilities: " + why;
    case k_step_no_new_privs: return "set no_new_privs: " + why;
    case k_step_landlock:
      return "apply Landlock" +
             (m.index >= 0 && static_cast<size_t>(m.index) < s.landlock.rules.size()
                  ? " rule for " + log::quote(s.landlock.rules[static_cast<size_t>(m.index)].path)
                  : std::string()) +
             ": " + why;
    case k_step_seccomp: return "load the seccomp filter: " + why;
    case k_step_fork: return "start the command's process: " + why;
    case k_step_proxy: return "listen for the proxy inside the network namespace: " + why;
    default: return "set up the sandbox: " + why;
  }
}

std::vector<char*> cstrings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Host pid of the command: init's only child at the time it reports the start.
long command_host_pid(pid_t init) {
  std::ifstream in("/proc/" + std::to_string(init) + "/task/" + std::to_string(init) + "/children");
  long pid = 0;
  if (in >> pid) return pid;
  return init;
}

}  // namespace

SandboxResult run_sandbox(const SandboxSpec& spec, const std::function<void(long)>& on_started,
                          const std::function<void(int)>& on_proxy_listener) {
  SandboxResult res;
  std::vector<char*> argv = cstrings(spec.argv);
  std::vector<char*> envp = cstrings(spec.env);
  std::vector<char*> cands = cstrings(spec.exec_candidates);

  int sync[2], report[2];
  if (::pipe2(sync, O_CLOEXEC) != 0 || ::pipe2(report, O_CLOEXEC) != 0) {
    res.message = std::string("pipe: ") + std::strerror(errno);
    return res;
  }
  UniqueFd sync_r(sync[0]), sync_w(sync[1]), report_r(report[0]), report_w(report[1]);
  UniqueFd proxy_parent, proxy_child;
  if (spec.proxy_port != 0) {
    int sp[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0) {
      res.message = std::string("socketpair: ") + std::strerror(errno);
      return res;
    }
    proxy_parent.reset(sp[0]);
    proxy_child.reset(sp[1]);
  }

  unsigned long flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;
  if (spec.new_net) flags |= CLONE_NEWNET;

  // Forwarded signals stay blocked across clone(), and in the child until its init has a
  // command to forward them to (run_init unblocks them after forking it): a signal that
  // arrives meanwhile waits instead of meeting a handler with nowhere to send it (or, for
  // a pid namespace's init, the default action, which drops it).
  sigset_t fwd, old_mask;
  sigemptyset(&fwd);
  for (int s : k_forwarded_signals) sigaddset(&fwd, s);
  ::sigprocmask(SIG_BLOCK, &fwd, &old_mask);
  SignalForwarding forwarding;

  long pid = ::syscall(SYS_clone, flags | SIGCHLD, nullptr, nullptr, nullptr, nullptr);
  if (pid == 0) {
    // Keep only the fds the child uses (and stdio).
    int keep[3] = {sync_r.get(), report_w.get(), proxy_child.get()};
    std::sort(std::begin(keep), std::end(keep));
    unsigned next = 3;
    for (int k : keep) {
      if (k < 0) continue;
      if (static_cast<unsigned>(k) > next) ::syscall(SYS_close_range, next, static_cast<unsigned>(k - 1), 0U);
      next = static_cast<unsigned>(k) + 1;
    }
    ::syscall(SYS_close_range, next, ~0U, 0U);
    child_main(spec, sync_r.get(), report_w.get(), proxy_child.get(), argv.data(), envp.data(), cands.data());
  }
  int clone_err = errno;
  if (pid < 0) {
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    res.message = std::string("create namespaces (clone): ") + std::strerror(clone_err);
    if (clone_err == EPERM || clone_err == ENOSPC || clone_err == EUSERS || clone_err == EINVAL) {
      res.message += " (user namespaces are disabled or exhausted on this machine; --no-sandbox runs without isolation)";
    }
    return res;
  }
  forwarding.set_target(static_cast<pid_t>(pid));
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  sync_r.reset();
  report_w.reset();

  auto maps = write_id_maps(static_cast<pid_t>(pid));
  if (!maps) {
    ::kill(static_cast<pid_t>(pid), SIGKILL);
    ::waitpid(static_cast<pid_t>(pid), nullptr, 0);
    res.message = "write uid/gid maps: " + maps.error().message();
    return res;
  }
  (void)!::write(sync_w.get(), "1", 1);
  sync_w.reset();
  if (proxy_parent) {
    // The child sends the socket right after bringing up lo; if it fails first, its end
    // closes and the report pipe says why.
    proxy_child.reset();
    int listener = receive_proxy_listener(proxy_parent.get());
    proxy_parent.reset();
    if (listener >= 0) {
      if (on_proxy_listener) {
        on_proxy_listener(listener);
      } else {
        ::close(listener);
      }
    }
  }

  // Messages are checked against the order init sends them in: a forged or garbled
  // message cannot turn a run into a setup error or a second start.
  bool got_final = false, started = false, clean_exit = false;
  auto op_ok = [&](int32_t i) { return i >= 0 && static_cast<size_t>(i) < spec.plan.ops.size(); };
  for (;;) {
    ChildMsg m{};
    ssize_t n = ::read(report_r.get(), &m, sizeof m);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof m)) break;
    if (got_final) continue;
    switch (m.type) {
      case k_msg_setup_failed:
        if (started) break;
        if (m.step == k_step_mount && m.index != -1 && !op_ok(m.index)) m.index = -1;
        res.outcome = Outcome::SetupFailed;
        res.message = step_text(spec, m);
        got_final = true;
        break;
      case k_msg_skipped:
        if (!started && op_ok(m.index)) {
          res.notes.push_back("skipped optional " + overlay::describe(spec.plan.ops[static_cast<size_t>(m.index)]) + ": " +
                              std::strerror(m.err));
        }
        break;
      case k_msg_landlock:
        if (!started) res.notes.push_back("landlock: applied with ABI " + std::to_string(m.value));
        break;
      case k_msg_started:
        if (started) break;
        started = true;
        if (on_started) on_started(command_host_pid(static_cast<pid_t>(pid)));
        break;
      case k_msg_exec_failed:
        if (!started) break;
        res.outcome = Outcome::ExecFailed;
        res.err = m.err;
        got_final = true;
        break;
      case k_msg_exited:
        if (!started) break;
        res.outcome = Outcome::Exited;
        res.code = m.value & 0xff;
        got_final = true;
        clean_exit = m.index == 0;
        break;
      case k_msg_signaled:
        if (!started || m.value <= 0 || m.value >= 128) break;
        res.outcome = Outcome::Signaled;
        res.sig = m.value;
        got_final = true;
        clean_exit = m.index == 0;
        break;
      default: break;
    }
    if (clean_exit && !spec.wait_for_teardown) return res;
  }
  int st = 0;
  while (::waitpid(static_cast<pid_t>(pid), &st, 0) < 0 && errno == EINTR) {
  }
  if (!got_final) {
    // init died without a word: killed from outside (OOM, kill -9).
    if (WIFSIGNALED(st)) {
      res.outcome = Outcome::Signaled;
      res.sig = WTERMSIG(st);
    } else {
      res.outcome = Outcome::SetupFailed;
      res.message = "the sandbox's init exited unexpectedly (status " + std::to_string(WEXITSTATUS(st)) + ")";
    }
  }
  return res;
}

}  // namespace zb::exec
