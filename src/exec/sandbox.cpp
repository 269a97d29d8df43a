// run_sandbox (exec/sandbox.hpp): the spec flattened into the memory the child shares,
// the go byte that hands it over, then the child's reports (exec/report.hpp) until the
// command's status is known.
#include "exec/sandbox.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "exec/child.hpp"
#include "exec/ids.hpp"
#include "exec/netns.hpp"
#include "exec/report.hpp"
#include "exec/signals.hpp"
#include "exec/stdio.hpp"
#include "util/fd.hpp"

namespace zb::exec {
namespace {

// Copies the spec into the arena, FlatSpec first. nullptr when it does not fit.
FlatSpec* flatten(const SandboxSpec& spec, SharedArena& a) {
  auto* f = a.array<FlatSpec>(1);
  if (f == nullptr || reinterpret_cast<char*>(f) != a.base()) return nullptr;
  const auto& plan = spec.plan;
  auto* ops = a.array<overlay::FlatOp>(plan.ops.size());
  for (std::size_t i = 0; ops != nullptr && i < plan.ops.size(); ++i) {
    const auto& op = plan.ops[i];
    ops[i] = {op.kind,  op.recursive,  op.optional,   op.hides,      op.mode,
              op.flags, a.str(op.src), a.str(op.dst), a.str(op.data)};
  }
  auto* files = a.array<overlay::FlatFile>(plan.files.size());
  for (std::size_t i = 0; files != nullptr && i < plan.files.size(); ++i) {
    const auto& [path, content] = plan.files[i];
    files[i] = {a.str(path), a.str(content), content.size()};
  }
  auto* slots = a.array<overlay::OverlaySlot>(plan.ops.size());
  f->plan = {ops,
             plan.ops.size(),
             slots,
             files,
             plan.files.size(),
             a.strings(plan.scratch_dirs),
             plan.scratch_dirs.size(),
             a.strings(plan.must_hide),
             plan.must_hide.size()};
  f->staging = a.str(spec.staging);
  f->cwd = a.str(spec.cwd);
  f->argv = a.strings(spec.argv);
  f->envp = a.strings(spec.env);
  f->candidates = a.strings(spec.exec_candidates);
  auto* rules = a.array<FlatLandlockRule>(spec.landlock.rules.size());
  for (std::size_t i = 0; rules != nullptr && i < spec.landlock.rules.size(); ++i) {
    rules[i] = {a.str(spec.landlock.rules[i].path), spec.landlock.rules[i].access};
  }
  f->landlock = {spec.landlock.abi, spec.landlock.handled_fs, spec.landlock.scoped, rules, spec.landlock.rules.size()};
  auto* filter = a.array<sock_filter>(spec.seccomp.size());
  if (filter != nullptr && !spec.seccomp.empty()) std::memcpy(filter, spec.seccomp.data(), spec.seccomp.size_bytes());
  f->seccomp = filter;
  f->n_seccomp = spec.seccomp.size();
  if ((!spec.guarded.empty() || !spec.depth_names.empty()) && !spec.guard_filter.empty()) {
    auto* gf = a.array<sock_filter>(spec.guard_filter.size());
    if (gf != nullptr) std::memcpy(gf, spec.guard_filter.data(), spec.guard_filter.size_bytes());
    f->guard_filter = gf;
    f->n_guard_filter = spec.guard_filter.size();
    f->guard = {a.strings(spec.guarded),         spec.guarded.size(),
                a.strings(spec.depth_names),     spec.depth_names.size(),
                a.strings(spec.depth_roots),     spec.depth_roots.size(),
                a.strings(spec.depth_exempt),    spec.depth_exempt.size(),
                a.strings(spec.depth_lifted),    spec.depth_lifted.size(),
                a.strings(spec.depth_new_trees), spec.depth_new_trees.size()};
  }
  f->proxy_port = spec.proxy_port;
  f->own_ids = false;
  return a.full() ? nullptr : f;
}

// Host pid of the command: init's only child at the time it reports the start.
long command_host_pid(pid_t init) {
  std::ifstream in("/proc/" + std::to_string(init) + "/task/" + std::to_string(init) + "/children");
  long pid = 0;
  if (in >> pid) return pid;
  return init;
}

}  // namespace

void hold_std_fds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    int got = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (got >= 0 && got != fd) ::close(got);  // not the lowest free fd: leave it
  }
}

SandboxResult run_sandbox(const SandboxSpec& spec, const std::function<void(long, bool)>& on_started,
                          const std::function<void(int)>& on_proxy_listener, std::unique_ptr<Prestart> prestarted) {
  SandboxResult res;
  if (!prestarted || prestarted->new_net() != spec.new_net) prestarted = Prestart::launch(spec.new_net);
  // The spec goes into the memory the child shares while the helper may still be cloning.
  // A spec too large for the arena (a huge environment) needs a child cloned with a
  // larger one.
  FlatSpec* flat = nullptr;
  for (std::size_t size = SharedArena::k_default_capacity;
       prestarted->m_setup_error.empty() && (flat = flatten(spec, prestarted->m_arena)) == nullptr;) {
    size *= 8;
    if (size > SharedArena::k_max_capacity) {
      res.message = "the sandbox's mount plan, arguments and environment take more than " +
                    std::to_string(SharedArena::k_max_capacity >> 20) + " MiB";
      return res;
    }
    if (size > prestarted->m_arena.capacity()) prestarted = Prestart::launch(spec.new_net, size);
  }
  Prestart& pre = *prestarted;

  // Forwarded signals are blocked until the handlers have their target: one that arrives
  // meanwhile waits instead of meeting a handler with nowhere to send it.
  sigset_t fwd, old_mask;
  sigemptyset(&fwd);
  for (int s : k_forwarded_signals) sigaddset(&fwd, s);
  ::pthread_sigmask(SIG_BLOCK, &fwd, &old_mask);
  SignalForwarding forwarding;
  long pid = pre.wait_ready(res.message);
  if (pid < 0) {
    ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    return res;
  }
  forwarding.set_target(static_cast<pid_t>(pid));
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  flat->own_ids = pre.m_own_ids;
  if (!pre.m_ids_note.empty()) res.notes.push_back(pre.m_ids_note);
  LentPipes lent;
  if (pre.m_own_ids) lent.lend(static_cast<uid_t>(k_own_ids_base), static_cast<gid_t>(k_own_ids_base));

  pre.m_adopted = true;
  (void)!::write(pre.m_sync_w.get(), "g", 1);
  pre.m_sync_w.reset();
  // The child has its own mapping of the spec; this side's is no longer needed.
  pre.m_arena.unmap();
  UniqueFd& report_r = pre.m_report_r;
  if (spec.proxy_port != 0) {
    // The child sends the socket right after bringing up lo; if it fails first, its end
    // closes and the report pipe says why.
    int listener = receive_proxy_listener(pre.m_channel_parent.get());
    if (listener >= 0) {
      if (on_proxy_listener) {
        on_proxy_listener(listener);
      } else {
        ::close(listener);
      }
    }
  }
  // Declared after the signal forwarding and before the reports: the relay is drained, and
  // the terminal's modes put back, before anything below returns.
  TerminalModes terminal;
  StdioRelay relay;

  Reports reports = read_reports(
      report_r.get(), spec,
      [&](bool guarded) {
        // The child sent its stdio pipes before init reported the start.
        relay.start(pre.m_channel_parent.get());
        pre.m_channel_parent.reset();
        if (on_started) on_started(command_host_pid(static_cast<pid_t>(pid)), guarded);
      },
      res);
  if (reports.clean_exit && !spec.wait_for_teardown) return res;
  int st = 0;
  while (::waitpid(static_cast<pid_t>(pid), &st, 0) < 0 && errno == EINTR) {
  }
  if (!reports.final) {
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
