// --no-sandbox: the command runs on the host with only the environment policy applied,
// still reported on the status fd and still killed with zerobox.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "exec/execvp.hpp"
#include "exec/signals.hpp"
#include "run/internal.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"

namespace zb::run {

using exec::StatusFd;
using zerobox::Policy;

// --no-sandbox: the environment policy only. The child reports on a pipe, as init does:
// {0, errno} when no candidate could be run, {1, errno} when it could not enter the
// working directory (a setup error, not the command's exit status).
int run_unsandboxed(const Policy& p, const std::vector<std::string>& env, StatusFd& status) {
  auto cands = exec::exec_candidates(p.argv[0], env);
  std::vector<char*> argv, envp, cv;
  for (const auto& a : p.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  for (const auto& c : cands) cv.push_back(const_cast<char*>(c.c_str()));
  cv.push_back(nullptr);
  auto errpipe = make_pipe();
  if (!errpipe) return setup_failed(status, std::string("pipe: ") + std::strerror(errpipe.error().err));
  exec::SignalForwarding forwarding;
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    errpipe->read.reset();
    errpipe->write.reset();
    return setup_failed(status, std::string("fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    errpipe->read.reset();
    struct sigaction dfl{};
    dfl.sa_handler = SIG_DFL;
    for (int s : exec::k_forwarded_signals) ::sigaction(s, &dfl, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    // Even without a sandbox, the command does not outlive zerobox.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (::getppid() != parent) ::_exit(125);
    int32_t report[2] = {0, 0};
    if (::chdir(p.cwd.c_str()) != 0) {
      report[0] = 1;
      report[1] = errno;
    } else {
      report[1] = exec::exec_first(cv.data(), argv.data(), envp.data());
    }
    (void)!::write(errpipe->write.get(), report, sizeof report);
    ::_exit(127);
  }
  errpipe->write.reset();
  forwarding.set_target(pid);
  status.child_started(pid);
  int32_t report[2] = {0, 0};
  bool failed = ::read(errpipe->read.get(), report, sizeof report) == static_cast<ssize_t>(sizeof report);
  errpipe->read.reset();
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  using exec::Outcome;
  if (failed && report[0] == 1) {
    return setup_failed(status, "enter the working directory " + log::quote(p.cwd) + ": " + std::strerror(report[1]));
  }
  if (failed) return finish(status, p.argv[0], Outcome::ExecFailed, 0, 0, report[1]);
  if (WIFSIGNALED(st)) return finish(status, p.argv[0], Outcome::Signaled, 0, WTERMSIG(st), 0);
  return finish(status, p.argv[0], Outcome::Exited, WEXITSTATUS(st), 0, 0);
}

}  // namespace zb::run
