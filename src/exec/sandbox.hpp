// The sandbox itself: clone() into new namespaces, the uid/gid map handshake, the mount
// plan, no_new_privs, Landlock, the capability drop and seccomp, then our own pid 1 that
// starts the command (vfork), forwards signals and reaps. The supervisor (the caller)
// stays in the host's namespaces: it reads the child's reports, copies relayed stdio and,
// in filtered mode, serves the proxy (run/run.cpp).
#pragma once

#include <linux/filter.h>
#include <sys/types.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "exec/arena.hpp"
#include "util/fd.hpp"

#include "exec/landlock.hpp"
#include "overlay/plan.hpp"

namespace zb::exec {

struct SandboxSpec {
  overlay::Plan plan;
  std::string staging;  // host directory the staging tmpfs is mounted on
  std::string cwd;      // working directory inside the sandbox
  std::vector<std::string> argv;
  std::vector<std::string> env;
  std::vector<std::string> exec_candidates;  // argv[0], or each PATH dir + "/" + argv[0]
  bool new_net = true;
  // Filtered mode: the child listens on 127.0.0.1:proxy_port in its network namespace
  // and hands the socket to run_sandbox, which passes it to on_proxy_listener.
  unsigned short proxy_port = 0;
  LandlockPlan landlock;
  std::span<const sock_filter> seccomp;  // empty: no filter
  // The create guard (exec/guard.hpp): paths that must not come into being, and its
  // filter. No filter, or no path and no depth names: no guard.
  std::vector<std::string> guarded;
  // Its depth rule (GuardList's names, roots, exempt, lifted, new_trees).
  std::vector<std::string> depth_names, depth_roots, depth_exempt, depth_lifted, depth_new_trees;
  std::span<const sock_filter> guard_filter;
  // false: return as soon as the command's status is known and nothing else was left
  // running, without waiting for the kernel to tear the namespaces down (their mounts
  // go away as init exits, which takes about a millisecond). init is then left to the
  // caller's reaper, so only a process about to exit should pass false.
  bool wait_for_teardown = true;
};

enum class Outcome { Exited, Signaled, SetupFailed, ExecFailed };

struct SandboxResult {
  Outcome outcome = Outcome::SetupFailed;
  int code = 0;                            // Exited
  int sig = 0;                             // Signaled
  int err = 0;                             // ExecFailed: errno of execve
  std::string message;                     // SetupFailed: one line
  std::vector<std::string> notes;          // for --debug
  std::vector<std::string> guard_refused;  // guarded paths the create guard refused to make (both rules)
};

// Occupies each of fds 0, 1 and 2 that is closed with /dev/null, close-on-exec: the pipes
// and sockets zerobox makes can then never land there (where the command would take them
// for its stdio), and the command still finds them closed, as the caller left them.
void hold_std_fds();

// The sandbox's process, cloned before its spec is known. Creating the namespaces (the
// network namespace above all) is the largest single cost of a start, and it depends on
// nothing but whether the run gets its own network: a helper thread clones and writes
// the uid/gid maps, and the child makes its network namespace, while the caller parses
// and plans; then the child waits for its spec.
// The helper thread stays until this object goes (then it is detached and returns on
// its own): the child's PR_SET_PDEATHSIG follows the thread that cloned it.
class Prestart {
 public:
  // Never fails here: a failure (no user namespaces, say) is reported when the sandbox
  // is run.
  static std::unique_ptr<Prestart> launch(bool new_net, std::size_t arena_bytes = SharedArena::k_default_capacity);
  ~Prestart();
  Prestart(const Prestart&) = delete;
  Prestart& operator=(const Prestart&) = delete;

  bool new_net() const { return m_new_net; }

 private:
  friend SandboxResult run_sandbox(const SandboxSpec&, const std::function<void(long, bool)>&,
                                   const std::function<void(int)>&, std::unique_ptr<Prestart>);
  Prestart() = default;
  void helper(int hold_fd);
  void clone_and_map();
  // Waits for the helper's clone() and maps: the child's pid, or -1 with `error` set.
  long wait_ready(std::string& error);

  bool m_new_net = true;
  bool m_adopted = false;
  sigset_t m_child_mask{};
  SharedArena m_arena;
  UniqueFd m_sync_r, m_sync_w, m_report_r, m_report_w, m_channel_parent, m_channel_child;
  UniqueFd m_hold_r, m_hold_w;  // the helper waits on the read end (its own) until the destructor
  std::string m_setup_error;    // before the helper ran (pipes, mapping, thread)
  std::thread m_thread;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  bool m_ready = false;
  long m_pid = -1;
  bool m_own_ids = false;  // root's own ids (exec/ids.hpp); the child has the host tree
  std::string m_ids_note;  // for --debug
  std::string m_error;
};

// Runs the command; `on_started` gets the command's host pid once it is about to exec,
// and whether the create guard runs,
// `on_proxy_listener` (filtered mode) the listening socket, before the command starts.
// `prestarted`, if given and made for the same network mode, is used; else one is launched.
SandboxResult run_sandbox(const SandboxSpec& spec, const std::function<void(long, bool)>& on_started,
                          const std::function<void(int)>& on_proxy_listener = {},
                          std::unique_ptr<Prestart> prestarted = nullptr);

}  // namespace zb::exec
