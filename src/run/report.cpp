// What a run reports once it is over, on stderr and the status fd: setup errors, how the
// command ended, denied connections and the protected paths it was refused.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "exec/blocked.hpp"
#include "run/internal.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/path.hpp"

namespace zb::run {

using exec::StatusFd;

int setup_failed(StatusFd& status, const std::string& msg) {
  log::error(msg);
  status.setup_error(msg);
  status.close();
  return k_exit_setup;
}

int report_exit(StatusFd& status, const std::string& cmd, exec::Outcome outcome, int code, int sig, int err) {
  using exec::Outcome;
  int rc = 0;
  switch (outcome) {
    case Outcome::Exited:
      rc = code;
      status.child_exit_code(code);
      break;
    case Outcome::Signaled:
      rc = 128 + sig;
      status.child_exit_signal(sig);
      break;
    case Outcome::ExecFailed:
      rc = (err == ENOENT || err == ENOTDIR) ? k_exit_not_found : k_exit_not_executable;
      log::error(log::quote(cmd) + ": " +
                 (rc == k_exit_not_found ? std::string("command not found") : std::strerror(err)));
      status.child_exit_code(rc);
      break;
    case Outcome::SetupFailed: break;
  }
  return rc;
}

int finish(StatusFd& status, const std::string& cmd, exec::Outcome outcome, int code, int sig, int err) {
  int rc = report_exit(status, cmd, outcome, code, sig, err);
  status.close();
  return rc;
}

void report_denied(const std::map<std::string, unsigned>& denied) {
  if (denied.empty()) return;
  unsigned total = 0;
  std::string list;
  std::size_t shown = 0;
  for (const auto& [where, n] : denied) {
    total += n;
    if (shown++ < 5) list += (list.empty() ? "" : ", ") + where + (n > 1 ? " (" + std::to_string(n) + "x)" : "");
  }
  if (denied.size() > 5) list += ", ...";
  log::warning("blocked " + std::to_string(total) + (total == 1 ? " connection: " : " connections: ") + list);
}

void report_refusals(Run& run, const exec::SandboxResult& res) {
  const auto& p = run.p;
  const auto& fs = run.fs;
  std::vector<std::string> blocked_lines = run.live_blocker->stop();
  // With the guard nothing in the sandbox made them; what a process on the host made
  // meanwhile (the user's editor) is the user's, and stays.
  if (!run.guard_ran) {
    for (auto& line : exec::move_created_aside(fs.absent_protected)) blocked_lines.push_back(std::move(line));
  }
  // Each refused path with the flag that allows it; denied ones and zerobox's profiles
  // stay refused whatever the flags say.
  std::vector<std::string> flags;
  auto xdg = run.caller.env.find("XDG_CONFIG_HOME");
  auto profiles = policy::profile_dirs(run.caller.home, xdg == run.caller.env.end() ? std::string() : xdg->second);
  for (const auto& refused : res.guard_refused) {
    bool is_denied = std::any_of(p.deny_write.begin(), p.deny_write.end(),
                                 [&](const std::string& d) { return path::is_under(refused, d); }) ||
                     std::any_of(p.deny_read.begin(), p.deny_read.end(),
                                 [&](const std::string& d) { return path::is_under(refused, d); });
    bool profile =
        std::any_of(profiles.begin(), profiles.end(), [&](const std::string& d) { return path::is_under(refused, d); });
    if (is_denied || profile) {
      log::warning("refused to let the command create " + log::quote(refused) +
                   (is_denied ? " (a denied path)" : " (zerobox's profiles are never writable inside a sandbox)"));
      continue;
    }
    bool existing =
        std::find(fs.protected_existing.begin(), fs.protected_existing.end(), refused) != fs.protected_existing.end();
    // Deep in a writable tree, an existing one was opened for writing (or something made in it).
    struct stat there{};
    bool deep_existing = !existing && ::lstat(refused.c_str(), &there) == 0;
    std::string name_this = policy::allow_write_hint(refused, fs);
    log::warning("refused to let the command " +
                 std::string(existing        ? "replace"
                             : deep_existing ? "change"
                                             : "create") +
                 " protected path " + log::quote(refused) + " (--allow-write=" + log::quote(name_this) + " allows it)");
    if (std::find(flags.begin(), flags.end(), name_this) == flags.end()) flags.push_back(name_this);
  }
  std::erase_if(flags, [&](const std::string& f) {
    return std::any_of(flags.begin(), flags.end(),
                       [&](const std::string& o) { return o != f && path::is_under(f, o); });
  });
  if (flags.size() > 1) {
    std::string all;
    for (const auto& f : flags) all += (all.empty() ? "" : ",") + log::quote(f);
    log::warning("to allow all of them, add --allow-write=" + all);
  }
  for (const auto& line : blocked_lines) {
    // A failure to move one aside is an error, shown even with --quiet.
    if (line.rfind("error: ", 0) == 0) {
      log::error(line.substr(7));
    } else {
      log::warning(line);
    }
  }
}

}  // namespace zb::run
