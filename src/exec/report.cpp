// The supervisor's end of the report pipe (exec/report.hpp): each message checked
// against the order init sends in, and a failed step put into words.
#include "exec/report.hpp"

#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "exec/sandbox.hpp"
#include "overlay/mount.hpp"
#include "util/log.hpp"

namespace zb::exec {

std::string step_text(const SandboxSpec& s, const ChildMsg& m) {
  std::string why = std::strerror(m.err);
  switch (m.step) {
    case k_step_netns:
      return "create the network namespace: " + why +
             (m.err == ENOSPC || m.err == EPERM || m.err == EUSERS
                  ? " (network namespaces are disabled or exhausted on this machine)"
                  : "");
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
    case k_step_stdio: return "give the command its stdin, stdout and stderr: " + why;
    case k_step_ids: return "take the sandbox's own uid and gid: " + why;
    default: return "set up the sandbox: " + why;
  }
}

Reports read_reports(int fd, const SandboxSpec& spec, const std::function<void(bool guarded)>& on_started,
                     SandboxResult& res) {
  // Messages are checked against the order init sends them in: a forged or garbled
  // message cannot turn a run into a setup error or a second start.
  bool got_final = false, started = false, clean_exit = false, guarded = false;
  auto op_ok = [&](int32_t i) { return i >= 0 && static_cast<size_t>(i) < spec.plan.ops.size(); };
  for (;;) {
    ChildMsg m{};
    ssize_t n = ::read(fd, &m, sizeof m);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof m)) break;
    if (m.type == k_msg_guard_depth_refused) {
      // The path follows in the same write.
      if (m.value <= 0 || m.value > PIPE_BUF) continue;
      std::string path(static_cast<std::size_t>(m.value), '\0');
      if (::read(fd, path.data(), path.size()) != static_cast<ssize_t>(path.size())) break;
      if (!got_final && guarded &&
          std::find(res.guard_refused.begin(), res.guard_refused.end(), path) == res.guard_refused.end()) {
        res.guard_refused.push_back(path);
      }
      continue;
    }
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
          res.notes.push_back("skipped optional " + overlay::describe(spec.plan.ops[static_cast<size_t>(m.index)]) +
                              ": " + std::strerror(m.err));
        }
        break;
      case k_msg_landlock:
        if (!started) res.notes.push_back("landlock: applied with ABI " + std::to_string(m.value));
        break;
      case k_msg_guard:
        if (started) break;
        guarded = m.value == 1;
        res.notes.push_back(guarded
                                ? "create guard: " + std::to_string(spec.guarded.size()) +
                                      " absent protected paths and pinned links refused by seccomp user notification" +
                                      (m.index == 1 ? "; the command makes no regular file itself (landlock)" : "")
                                : std::string("create guard: unavailable (") + std::strerror(m.err) +
                                      "); absent protected paths are moved aside instead");
        break;
      case k_msg_guard_refused:
        if (guarded && m.index >= 0 && static_cast<std::size_t>(m.index) < spec.guarded.size()) {
          const std::string& path = spec.guarded[static_cast<std::size_t>(m.index)];
          if (std::find(res.guard_refused.begin(), res.guard_refused.end(), path) == res.guard_refused.end()) {
            res.guard_refused.push_back(path);
          }
        }
        break;
      case k_msg_started:
        if (started) break;
        started = true;
        on_started(guarded);
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
    if (clean_exit && !spec.wait_for_teardown) return {got_final, clean_exit};
  }
  return {got_final, clean_exit};
}

}  // namespace zb::exec
