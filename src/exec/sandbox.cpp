#include "exec/sandbox.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>

#include "exec/caps.hpp"
#include "exec/ids.hpp"
#include "exec/init.hpp"
#include "exec/netns.hpp"
#include "exec/seccomp.hpp"
#include "exec/signals.hpp"
#include "exec/stdio.hpp"
#include "overlay/mount.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"
#include "util/scrub.hpp"

namespace zb::exec {
namespace {

// The spec as the child reads it: the first object in the shared arena, so the child
// finds it at the arena's base (see flatten()).
struct FlatSpec {
  overlay::FlatPlan plan;
  const char* staging;
  const char* cwd;
  char* const* argv;
  char* const* envp;
  char* const* candidates;
  FlatLandlock landlock;
  const sock_filter* seccomp;
  std::size_t n_seccomp;
  const sock_filter* guard_filter;
  std::size_t n_guard_filter;
  GuardList guard;
  unsigned short proxy_port;
  // Root's own ids (exec/ids.hpp): the supervisor sends the host's mounts, idmapped, on
  // the channel before the go byte. Set once the helper has cloned and mapped.
  bool own_ids;
};

// A failed step of the child: its report ({step, index, errno}, errno as it is now by
// default), then exit. No allocation.
[[noreturn]] void die(int report_fd, int32_t step, int32_t index = -1, int32_t err = errno, int32_t value = 0) {
  send_msg(report_fd, k_msg_setup_failed, step, index, err, value);
  ::_exit(1);
}

// The child side, from clone() to run_init(). It is a copy of the helper thread of a
// process whose other threads may hold locks (malloc's among them), so it allocates
// nothing: it reads its spec from the shared arena and reports failures on the report
// pipe as {step, index, errno}.
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
  // Wait for the uid/gid maps and the spec. EOF means the supervisor is gone or gave up.
  char go = 0;
  ssize_t n;
  do {
    n = ::read(sync_fd, &go, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1 || go != 'g') ::_exit(1);
  ::close(sync_fd);
  const FlatSpec& s = *reinterpret_cast<const FlatSpec*>(arena);
  if (s.own_ids) {
    if (become_own_root(SIGKILL) != 0) die(report_fd, k_step_ids);
    // The parent-death signal came back only now: if the supervisor went in between, the
    // report pipe has no reader left.
    pollfd p{report_fd, POLLOUT, 0};
    if (::poll(&p, 1, 0) == 1 && (p.revents & POLLERR) != 0) ::_exit(1);
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
  run_init(InitArgs{report_fd, s.argv, s.envp, s.candidates, arena, arena_size, s.guard_filter, s.n_guard_filter, s.guard});
}

// Copies the spec into the arena, FlatSpec first. nullptr when it does not fit.
FlatSpec* flatten(const SandboxSpec& spec, SharedArena& a) {
  auto* f = a.array<FlatSpec>(1);
  if (f == nullptr || reinterpret_cast<char*>(f) != a.base()) return nullptr;
  const auto& plan = spec.plan;
  auto* ops = a.array<overlay::FlatOp>(plan.ops.size());
  for (std::size_t i = 0; ops != nullptr && i < plan.ops.size(); ++i) {
    const auto& op = plan.ops[i];
    ops[i] = {op.kind, op.recursive, op.optional, op.hides, op.mode, op.flags, a.str(op.src), a.str(op.dst), a.str(op.data)};
  }
  auto* files = a.array<overlay::FlatFile>(plan.files.size());
  for (std::size_t i = 0; files != nullptr && i < plan.files.size(); ++i) {
    const auto& [path, content] = plan.files[i];
    files[i] = {a.str(path), a.str(content), content.size()};
  }
  auto* slots = a.array<overlay::OverlaySlot>(plan.ops.size());
  f->plan = {ops, plan.ops.size(), slots, files, plan.files.size(), a.strings(plan.scratch_dirs), plan.scratch_dirs.size(),
             a.strings(plan.must_hide), plan.must_hide.size()};
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
    f->guard = {a.strings(spec.guarded),          spec.guarded.size(),
                a.strings(spec.depth_names),      spec.depth_names.size(),
                a.strings(spec.depth_roots),      spec.depth_roots.size(),
                a.strings(spec.depth_exempt),     spec.depth_exempt.size(),
                a.strings(spec.depth_lifted),     spec.depth_lifted.size(),
                a.strings(spec.depth_new_trees),  spec.depth_new_trees.size()};
  }
  f->proxy_port = spec.proxy_port;
  f->own_ids = false;
  return a.full() ? nullptr : f;
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

// An ordinary caller maps only itself. Root maps either its own range (exec/ids.hpp) or,
// where that cannot be, every id it has to itself.
Result<void> write_id_maps(pid_t pid, bool own_ids) {
  std::string base = "/proc/" + std::to_string(pid);
  unsigned uid = ::geteuid(), gid = ::getegid();
  if (uid == 0) {
    std::string uids = own_ids ? own_id_map() : identity_map("/proc/self/uid_map");
    std::string gids = own_ids ? own_id_map() : identity_map("/proc/self/gid_map");
    auto u = write_file(base + "/uid_map", uids);
    if (u) {
      auto g = write_file(base + "/gid_map", gids);
      if (g) return {};
      return g;
    }
    if (own_ids) return u;
  }
  if (auto r = write_file(base + "/setgroups", "deny"); !r && r.error().err != ENOENT) return r;
  if (auto r = write_file(base + "/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1\n"); !r) return r;
  return write_file(base + "/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1\n");
}

// The note --debug prints on the ids the sandbox runs with.
std::string ids_note(bool own, const std::string& why_not, const IdmappedTree* tree) {
  if (::geteuid() != 0) return "";
  if (!own) return "ids: root keeps the host's ids (identity map): " + why_not;
  std::string note = "ids: the sandbox's uid and gid 0 are host id " + std::to_string(k_own_ids_base) + "; " +
                     std::to_string(tree->mounts.size() - tree->unmapped.size()) + " of " +
                     std::to_string(tree->mounts.size()) + " host mounts idmapped";
  if (!tree->unmapped.empty()) {
    note += "; files show as nobody's on";
    std::size_t shown = 0;
    for (const auto& m : tree->unmapped) {
      if (shown++ == 6) {
        note += " and " + std::to_string(tree->unmapped.size() - 6) + " more";
        break;
      }
      note += " " + m;
    }
  }
  return note;
}

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

// Host pid of the command: init's only child at the time it reports the start.
long command_host_pid(pid_t init) {
  std::ifstream in("/proc/" + std::to_string(init) + "/task/" + std::to_string(init) + "/children");
  long pid = 0;
  if (in >> pid) return pid;
  return init;
}

std::string clone_error(int err) {
  std::string msg = std::string("create namespaces (clone): ") + std::strerror(err);
  // The kernel refuses CLONE_NEWUSER (EPERM) to a process whose root is not its mount
  // namespace's: a chroot. There /proc/self/mountinfo (when /proc is mounted) lists no
  // mount at "/" unless the chroot's directory is itself a mount point.
  bool chrooted = false;
  if (err == EPERM) {
    std::ifstream mountinfo("/proc/self/mountinfo");
    std::string line;
    bool any = false, root_seen = false;
    while (std::getline(mountinfo, line)) {
      any = true;
      std::istringstream fields(line);
      std::string id, parent, devno, root, mount_point;
      if (fields >> id >> parent >> devno >> root >> mount_point && mount_point == "/") root_seen = true;
    }
    chrooted = any && !root_seen;
  }
  if (chrooted) {
    msg += " (this process runs in a chroot, where the kernel refuses new user namespaces: run zerobox "
           "outside the chroot, or in a container with its own mount namespace)";
  } else if (err == EPERM || err == ENOSPC || err == EUSERS || err == EINVAL) {
    msg += " (user namespaces are disabled or exhausted on this machine, or this process runs in a chroot, "
           "where the kernel refuses them; --no-sandbox runs without isolation)";
  }
  return msg;
}

}  // namespace

void guard_std_fds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    int got = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (got >= 0 && got != fd) ::close(got);  // not the lowest free fd: leave it
  }
}

std::unique_ptr<Prestart> Prestart::launch(bool new_net, std::size_t arena_bytes) {
  std::unique_ptr<Prestart> p(new Prestart);
  p->m_new_net = new_net;
  ::pthread_sigmask(SIG_BLOCK, nullptr, &p->m_child_mask);
  for (int sig : k_forwarded_signals) sigaddset(&p->m_child_mask, sig);
  auto fail = [&](const std::string& what, int err = errno) {
    p->m_setup_error = what + ": " + std::strerror(err);
    return std::move(p);
  };
  for (auto [r, w] : {std::pair{&p->m_sync_r, &p->m_sync_w}, std::pair{&p->m_report_r, &p->m_report_w},
                      std::pair{&p->m_hold_r, &p->m_hold_w}}) {
    auto pipe = make_pipe();
    if (!pipe) return fail("pipe", pipe.error().err);
    *r = std::move(pipe->read);
    *w = std::move(pipe->write);
  }
  {
    // The child sends fds back on this: the proxy's listening socket in filtered mode,
    // then the pipes that stand for the caller's stdio files (exec/stdio.hpp).
    int sp[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0) return fail("socketpair");
    p->m_channel_parent.reset(sp[0]);
    p->m_channel_child.reset(sp[1]);
  }
  if (!p->m_arena.map(arena_bytes)) return fail("map memory shared with the sandbox");
  // The helper owns the read end of the hold pipe: it may outlive this object.
  int hold_r = p->m_hold_r.release();
  try {
    AllSignalsBlocked blocked;  // the helper never takes a signal meant for the supervisor
    p->m_thread = std::thread([q = p.get(), hold_r] { q->helper(hold_r); });
  } catch (const std::system_error&) {
    // No thread to spare (a process limit): clone here, without the head start. The
    // child's PR_SET_PDEATHSIG then follows this thread.
    ::close(hold_r);
    AllSignalsBlocked blocked;
    p->clone_and_map();
  }
  return p;
}

void Prestart::helper(int hold_fd) {
  clone_and_map();
  // Stay until the destructor closes the other end: the child's PR_SET_PDEATHSIG
  // follows this thread.
  char c;
  while (::read(hold_fd, &c, 1) < 0 && errno == EINTR) {
  }
  ::close(hold_fd);
}

void Prestart::clone_and_map() {
  // On the helper, every signal is blocked (launch): the child inherits that mask and sets its own.
  int sync_r = m_sync_r.get(), report_w = m_report_w.get(), channel = m_channel_child.get();
  const char* arena = m_arena.base();
  std::size_t arena_size = m_arena.capacity();
  bool new_net = m_new_net;
  const sigset_t& mask = m_child_mask;
  unsigned long flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;

  std::string why_not = own_ids_unavailable();
  bool own = why_not.empty();
  std::string note;
  long pid;
  int clone_err;
  for (;;) {
    pid = ::syscall(SYS_clone, flags | SIGCHLD, nullptr, nullptr, nullptr, nullptr);
    if (pid == 0) {
      // Keep only the fds the child uses (and stdio).
      int keep[3] = {sync_r, report_w, channel};
      std::sort(std::begin(keep), std::end(keep));
      unsigned next = 3;
      for (int k : keep) {
        if (k < 0) continue;
        if (static_cast<unsigned>(k) > next) ::syscall(SYS_close_range, next, static_cast<unsigned>(k - 1), 0U);
        next = static_cast<unsigned>(k) + 1;
      }
      ::syscall(SYS_close_range, next, ~0U, 0U);
      child_main(sync_r, report_w, channel, new_net, arena, arena_size, mask);
    }
    clone_err = errno;
    if (pid < 0 || !own) break;
    // Root's own ids: the maps, then the idmapped host tree, sent to the child before it
    // is given its spec. Should either fail, this child goes, and the next one keeps the
    // identity map.
    Result<IdmappedTree> tree = [&]() -> Result<IdmappedTree> {
      if (auto maps = write_id_maps(static_cast<pid_t>(pid), true); !maps) return std::unexpected(maps.error());
      std::string ns_path = "/proc/" + std::to_string(pid) + "/ns/user";
      UniqueFd ns(::open(ns_path.c_str(), O_RDONLY | O_CLOEXEC));
      if (!ns) return fail("open " + ns_path);
      return idmapped_host_tree(ns.get());
    }();
    if (tree && send_host_tree(m_channel_parent.get(), *tree) != 0) tree = fail("send the host's mounts to the sandbox");
    if (tree) {
      note = ids_note(true, "", &*tree);
      break;
    }
    why_not = tree.error().message();
    own = false;
    ::kill(static_cast<pid_t>(pid), SIGKILL);
    while (::waitpid(static_cast<pid_t>(pid), nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  m_sync_r.reset();
  m_report_w.reset();
  m_channel_child.reset();
  std::string error;
  if (pid < 0) {
    error = clone_error(clone_err);
  } else if (!own) {
    if (auto maps = write_id_maps(static_cast<pid_t>(pid), false); !maps) error = "write uid/gid maps: " + maps.error().message();
    note = ids_note(false, why_not, nullptr);
  }
  // Notified under the lock: once it is released, the object may be gone, and nothing
  // after this touches it.
  std::lock_guard<std::mutex> lock(m_mutex);
  m_pid = pid;
  m_own_ids = own && pid > 0;
  m_ids_note = std::move(note);
  m_error = std::move(error);
  m_ready = true;
  m_cv.notify_all();
}

long Prestart::wait_ready(std::string& error) {
  if (!m_setup_error.empty()) {
    error = m_setup_error;
    return -1;
  }
  std::unique_lock<std::mutex> lock(m_mutex);
  m_cv.wait(lock, [&] { return m_ready; });
  if (!m_error.empty()) {
    error = m_error;
    return -1;
  }
  return m_pid;
}

Prestart::~Prestart() {
  if (!m_setup_error.empty()) return;  // nothing was cloned
  long pid;
  {
    std::unique_lock<std::mutex> lock(m_mutex);
    m_cv.wait(lock, [&] { return m_ready; });
    pid = m_pid;
  }
  if (pid > 0 && !m_adopted) {
    // Never given its spec (a usage error, another network mode, a failed map): it is
    // still waiting, and goes now.
    ::kill(static_cast<pid_t>(pid), SIGKILL);
    while (::waitpid(static_cast<pid_t>(pid), nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  // The helper returns on its own; waiting for it would only add a wake-up to every
  // exit. Whatever of the sandbox is still exiting gets its SIGKILL then.
  m_hold_w.reset();
  if (m_thread.joinable()) m_thread.detach();
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
  // Declared after the signal forwarding and before the loop: the relay is drained, and
  // the terminal's modes put back, before anything below returns.
  TerminalModes terminal;
  StdioRelay relay;

  // Messages are checked against the order init sends them in: a forged or garbled
  // message cannot turn a run into a setup error or a second start.
  bool got_final = false, started = false, clean_exit = false, guarded = false;
  auto op_ok = [&](int32_t i) { return i >= 0 && static_cast<size_t>(i) < spec.plan.ops.size(); };
  for (;;) {
    ChildMsg m{};
    ssize_t n = ::read(report_r.get(), &m, sizeof m);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof m)) break;
    if (m.type == k_msg_guard_depth_refused) {
      // The path follows in the same write.
      if (m.value <= 0 || m.value > PIPE_BUF) continue;
      std::string path(static_cast<std::size_t>(m.value), '\0');
      if (::read(report_r.get(), path.data(), path.size()) != static_cast<ssize_t>(path.size())) break;
      if (!got_final && guarded && std::find(res.guard_refused.begin(), res.guard_refused.end(), path) == res.guard_refused.end()) {
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
          res.notes.push_back("skipped optional " + overlay::describe(spec.plan.ops[static_cast<size_t>(m.index)]) + ": " +
                              std::strerror(m.err));
        }
        break;
      case k_msg_landlock:
        if (!started) res.notes.push_back("landlock: applied with ABI " + std::to_string(m.value));
        break;
      case k_msg_guard:
        if (started) break;
        guarded = m.value == 1;
        res.notes.push_back(guarded ? "create guard: " + std::to_string(spec.guarded.size()) +
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
        // The child sent its stdio pipes before init reported the start.
        relay.start(pre.m_channel_parent.get());
        pre.m_channel_parent.reset();
        if (on_started) on_started(command_host_pid(static_cast<pid_t>(pid)), guarded);
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
