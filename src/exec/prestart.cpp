// Prestart (exec/sandbox.hpp): the sandbox's process, cloned by a helper thread before
// its spec is known, with its uid/gid maps written, and the handshake that hands it over
// to run_sandbox.
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <string>
#include <system_error>
#include <utility>

#include "exec/child.hpp"
#include "exec/ids.hpp"
#include "exec/sandbox.hpp"
#include "exec/signals.hpp"
#include "exec/userns.hpp"
#include "util/fd.hpp"

namespace zb::exec {

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
    if (tree && send_host_tree(m_channel_parent.get(), *tree) != 0)
      tree = fail("send the host's mounts to the sandbox");
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
    if (auto maps = write_id_maps(static_cast<pid_t>(pid), false); !maps)
      error = "write uid/gid maps: " + maps.error().message();
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

}  // namespace zb::exec
