// zerobox::run: the top-level flow of one sandboxed run, one line a step.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "exec/blocked.hpp"
#include "exec/landlock.hpp"
#include "exec/sandbox.hpp"
#include "exec/seccomp.hpp"
#include "exec/signals.hpp"
#include "exec/status_fd.hpp"
#include "overlay/mountinfo.hpp"
#include "overlay/plan.hpp"
#include "policy/policy.hpp"
#include "util/log.hpp"
#include "util/path.hpp"
#include "zerobox/zerobox.hpp"
#include "zerobox_version.hpp"

namespace zerobox {

const char* version() { return ZEROBOX_VERSION; }

namespace {

using zb::exec::StatusFd;
namespace log = zb::log;

int setup_failed(StatusFd& status, const std::string& msg) {
  log::error(msg);
  status.setup_error(msg);
  status.close();
  return zb::k_exit_setup;
}

std::vector<std::string> exec_candidates(const std::string& name, const std::vector<std::string>& env) {
  if (name.find('/') != std::string::npos) return {name};
  std::string path = zb::policy::find_env(env, "PATH").value_or("");
  if (path.empty()) path = "/usr/local/bin:/usr/bin:/bin";
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    out.push_back((dir.empty() ? std::string(".") : dir) + "/" + name);
    start = end + 1;
  }
  return out;
}

// Finishes a run whose command did or did not start: status events and the exit code.
int finish(StatusFd& status, const std::string& cmd, zb::exec::Outcome outcome, int code, int sig, int err) {
  using zb::exec::Outcome;
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
      rc = (err == ENOENT || err == ENOTDIR) ? zb::k_exit_not_found : zb::k_exit_not_executable;
      log::error(log::quote(cmd) + ": " + (rc == zb::k_exit_not_found ? std::string("command not found") : std::strerror(err)));
      status.child_exit_code(rc);
      break;
    case Outcome::SetupFailed: break;
  }
  status.close();
  return rc;
}

// --no-sandbox: the environment policy only.
int run_unsandboxed(const Policy& p, const std::vector<std::string>& env, StatusFd& status) {
  auto cands = exec_candidates(p.argv[0], env);
  std::vector<char*> argv, envp, cv;
  for (const auto& a : p.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int errpipe[2];
  if (::pipe2(errpipe, O_CLOEXEC) != 0) return setup_failed(status, std::string("pipe: ") + std::strerror(errno));
  zb::exec::SignalForwarding forwarding;
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return setup_failed(status, std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(errpipe[0]);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int s : zb::exec::k_forwarded_signals) ::sigaction(s, &dfl, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    // Even without a sandbox, the command does not outlive zerobox.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (::getppid() != parent) ::_exit(125);
    if (::chdir(p.cwd.c_str()) != 0) ::_exit(125);
    int err = ENOENT;
    bool eacces = false;
    for (const auto& c : cands) {
      ::execve(c.c_str(), argv.data(), envp.data());
      err = errno;
      if (err == EACCES) eacces = true;
      if (err != ENOENT && err != ENOTDIR && err != EACCES) break;
    }
    if (err == ENOENT && eacces) err = EACCES;
    (void)!::write(errpipe[1], &err, sizeof err);
    ::_exit(127);
  }
  ::close(errpipe[1]);
  forwarding.set_target(pid);
  status.child_started(pid);
  int err = 0;
  bool failed = ::read(errpipe[0], &err, sizeof err) == static_cast<ssize_t>(sizeof err);
  ::close(errpipe[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  using zb::exec::Outcome;
  if (failed) return finish(status, p.argv[0], Outcome::ExecFailed, 0, 0, err);
  if (WIFSIGNALED(st)) return finish(status, p.argv[0], Outcome::Signaled, 0, WTERMSIG(st), 0);
  return finish(status, p.argv[0], Outcome::Exited, WEXITSTATUS(st), 0, 0);
}

std::string staging_dir() {
  for (const char* d : {"/tmp", "/mnt", "/run", "/var/tmp"}) {
    if (zb::path::kind_of(d) == zb::path::Kind::Directory) return d;
  }
  return "/tmp";
}

}  // namespace

int run(Policy p, const std::vector<std::string>& environ, RunOptions options) {
  log::set_quiet(p.quiet);
  log::set_debug(p.debug);
  StatusFd status(p.status_fd);
  ::signal(SIGPIPE, SIG_IGN);

  // 1. Policy: canonical paths, checked against the machine.
  auto caller = zb::policy::current_caller(environ);
  if (auto r = zb::policy::finalize(p, caller); !r) return setup_failed(status, r.error().message());
  std::vector<std::string> env = zb::policy::build_env(p, caller);
  if (p.no_sandbox) {
    log::debug("no sandbox: only the environment policy applies");
    return run_unsandboxed(p, env, status);
  }

  // 2. The filesystem view and the mount plan.
  auto fs = zb::policy::compute_fs(p, caller);
  zb::exec::Placeholders placeholders;  // removed when run() returns
  if (auto r = placeholders.create(fs.placeholders); !r) return setup_failed(status, r.error().message());
  auto mounts = zb::overlay::read_mount_table();
  if (!mounts) return setup_failed(status, mounts.error().message());
  zb::exec::SandboxSpec spec;
  spec.plan = zb::overlay::build_plan(fs, *mounts, p.cwd, {.uid0_is_host_root = ::geteuid() == 0});
  spec.staging = staging_dir();
  spec.cwd = p.cwd;
  spec.argv = p.argv;
  spec.env = env;
  spec.exec_candidates = exec_candidates(p.argv[0], env);
  // The sandbox sees the host's files, so PATH resolves there as it did here: try that
  // first rather than failing execve() once per earlier PATH entry.
  if (!fs.command_path.empty() && p.argv[0].find('/') == std::string::npos) {
    spec.exec_candidates.insert(spec.exec_candidates.begin(), fs.command_path);
  }
  spec.new_net = p.net != NetMode::Host;
  spec.wait_for_teardown = options.wait_for_teardown;

  // 3. Kernel features, probed; --strict-sandbox refuses to run without any of them.
  int abi = zb::exec::landlock_abi();
  if (abi <= 0) {
    if (p.strict) return setup_failed(status, "Landlock is unavailable on this kernel (--strict-sandbox)");
    log::warning("Landlock is unavailable: writes are fenced by the mount view alone");
  }
  spec.landlock = zb::exec::make_landlock_plan(fs, abi);
  spec.seccomp = zb::exec::embedded_seccomp_filter();

  if (log::debug_enabled()) {
    for (const auto& line : zb::policy::describe(p, fs)) log::debug(line);
    log::debug("namespaces: user, mount, pid, ipc, uts, cgroup" + std::string(spec.new_net ? ", net (loopback only)" : ""));
    log::debug(std::string("uid/gid map: ") + (::geteuid() == 0 ? "identity (root)" : "caller's ids only"));
    for (const auto& op : spec.plan.ops) log::debug("mount plan: " + zb::overlay::describe(op));
    for (const auto& n : spec.plan.notes) log::debug("mount plan: " + n);
    log::debug(zb::exec::describe(spec.landlock));
    log::debug("seccomp: " + std::to_string(spec.seccomp.size()) + " BPF instructions (compiled by libseccomp at build time)");
    log::debug("environment: " + std::to_string(env.size()) + " variables");
  }

  // 4. Run, then report.
  auto res = zb::exec::run_sandbox(spec, [&](long pid) { status.child_started(pid); });
  for (const auto& n : res.notes) log::debug(n);
  if (res.outcome == zb::exec::Outcome::SetupFailed) return setup_failed(status, res.message);
  for (const auto& line : zb::exec::move_created_aside(fs.absent_protected)) {
    // A failure to move one aside is an error, shown even with --quiet.
    if (line.rfind("error: ", 0) == 0) {
      log::error(line.substr(7));
    } else {
      log::warning(line);
    }
  }
  return finish(status, p.argv[0], res.outcome, res.code, res.sig, res.err);
}

}  // namespace zerobox
