// What the files of src/run/ share: the state of one run (Run), built up one step at a
// time by run_prestarted (run.cpp), the snapshot session (session.cpp), the reports on
// stderr and the status fd (report.cpp) and the --no-sandbox path (unsandboxed.cpp).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "exec/blocked.hpp"
#include "exec/sandbox.hpp"
#include "exec/status_fd.hpp"
#include "net/proxy.hpp"
#include "overlay/mountinfo.hpp"
#include "overlay/plan.hpp"
#include "policy/policy.hpp"
#include "snapshot/journal.hpp"
#include "store/registry.hpp"
#include "store/store.hpp"
#include "zerobox/zerobox.hpp"

namespace zb::run {

// A run with --snapshot, --restore or --review: its session in the store.
struct SnapshotRun {
  std::optional<store::Store> store;
  store::Session session;
  store::SessionLock lock;
  snapshot::SessionPolicy policy;
  bool active = false;

  // The sandbox never started: the session is failed and its layers are removed.
  void abandon();
  ~SnapshotRun() { abandon(); }
};

// One run, from the caller's Policy to the exit status. Each step of run_prestarted fills
// in some of it. The members are destroyed in the reverse of this order, so that the
// proxy stops before the sandbox's spec goes, the registry record is dropped before the
// session is abandoned (when the sandbox never started), and the mask anchors are
// removed after both.
struct Run {
  Run(zerobox::Policy policy, const std::vector<std::string>& environ, const zerobox::RunOptions& options);

  zerobox::Policy p;
  const std::vector<std::string>& environ;
  zerobox::RunOptions options;
  exec::StatusFd status;

  // finalize_policy
  policy::Caller caller;
  policy::Resolved resolved;
  std::vector<std::string> env;  // the command's, "K=V"
  // plan_filesystem
  policy::FsRules fs;
  exec::MaskAnchors mask_anchors;  // removed when run() returns
  std::optional<overlay::MountTable> mounts;
  std::string store_dir;  // canonical when it exists; empty: none
  std::optional<store::Registry> registry;
  // open_session
  SnapshotRun snap;
  // hide_stores
  std::optional<store::Registry::Entry> run_record;    // removed when run() returns, after the sandbox
  std::optional<store::Registry::Lock> registry_lock;  // from reading the stores to the record
  // prepare_secrets, plan_mounts, filter_network, probe_kernel
  overlay::PlanOptions plan_opts;
  std::optional<net::ProxySecrets> secrets;
  std::optional<net::NetPolicy> allow_net;  // made once, for the secrets and the proxy
  exec::SandboxSpec spec;
  std::optional<net::NetPolicy> net_policy;  // filtered mode: the proxy's
  // start_and_wait
  std::unique_ptr<net::Proxy> proxy;
  std::mutex denied_mutex;
  std::map<std::string, unsigned> denied;  // "host:port" -> attempts
  std::optional<exec::LiveBlocker> live_blocker;
  bool guard_ran = false;
};

// session.cpp
// Opens the store and records a session in state running, locked by this process.
Result<void> start_session(SnapshotRun& run, const zerobox::Policy& p, const policy::Resolved& resolved,
                           const policy::FsRules& fs, const std::string& store_dir, store::Registry* registry);
// The tracked overlays of the plan, in upper/N order, with their directories.
Result<void> prepare_layers(SnapshotRun& run, const std::vector<std::string>& tracked);
// After the sandbox is gone: journal the layers, then apply, keep or drop per the mode.
void end_session(SnapshotRun& run, const zerobox::Policy& p, const zerobox::RunOptions& options, exec::StatusFd& status,
                 exec::Outcome outcome, int code, int sig);

// report.cpp
// A setup error (exit 125): the message on stderr and as a setup_error event, then EOF
// on the status fd.
int setup_failed(exec::StatusFd& status, const std::string& msg);
// Reports how the command ended (the child_exit event) and returns the exit code.
int report_exit(exec::StatusFd& status, const std::string& cmd, exec::Outcome outcome, int code, int sig, int err);
// The same, then EOF on the status fd.
int finish(exec::StatusFd& status, const std::string& cmd, exec::Outcome outcome, int code, int sig, int err);
// The proxy's denied connections, as one warning.
void report_denied(const std::map<std::string, unsigned>& denied);
// After the sandbox: protected paths made meanwhile (moved aside unless the guard ran),
// paths the create guard refused (with the --allow-write that allows each), and the
// lines of the live blocker.
void report_refusals(Run& run, const exec::SandboxResult& res);

// unsandboxed.cpp
// --no-sandbox: the environment policy only. Returns the exit status.
int run_unsandboxed(const zerobox::Policy& p, const std::vector<std::string>& env, exec::StatusFd& status);

}  // namespace zb::run
