// zerobox::run: the top-level flow of one sandboxed run, one line a step.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "exec/blocked.hpp"
#include "exec/execvp.hpp"
#include "exec/landlock.hpp"
#include "run/run.hpp"
#include "exec/sandbox.hpp"
#include "exec/seccomp.hpp"
#include "exec/signals.hpp"
#include "exec/status_fd.hpp"
#include "net/proxy.hpp"
#include "overlay/mountinfo.hpp"
#include "overlay/plan.hpp"
#include "policy/policy.hpp"
#include "snapshot/apply.hpp"
#include "snapshot/journal.hpp"
#include "store/registry.hpp"
#include "store/store.hpp"
#include "util/env.hpp"
#include "util/fs.hpp"
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

// --allow-net, --deny-net and --resolve as one NetPolicy, made the first time it is needed
// (into `made`): the secrets' own policy, and the proxy's with the --secret-host names.
zb::Result<const zb::net::NetPolicy*> allow_net_policy(const Policy& p, const zb::policy::Resolved& resolved,
                                                       std::optional<zb::net::NetPolicy>& made) {
  if (!made) {
    auto np = zb::net::NetPolicy::make(p.allow_net, p.deny_net, p.resolve, resolved.allow_net_all);
    if (!np) return std::unexpected(np.error());
    made.emplace(std::move(*np));
  }
  return &*made;
}

// The proxy's side of the secrets: their host rules, the run's CA and the TLS contexts.
zb::Result<zb::net::ProxySecrets> make_secrets(const Policy& p, const zb::policy::Resolved& resolved,
                                               std::optional<zb::net::NetPolicy>& allow_net_made) {
  std::vector<zb::net::SecretEntry> entries;
  bool any_host = !p.allow_net.empty() || resolved.allow_net_all;
  for (std::size_t i = 0; i < p.secrets.size(); ++i) {
    const auto& s = p.secrets[i];
    zb::net::SecretEntry e{s.key, resolved.placeholders[i], s.value, {}};
    for (const auto& h : s.hosts) {
      auto r = zb::net::parse_rule(h);
      if (!r) return zb::fail_msg("--secret-host " + s.key + ": " + r.error().what);
      e.hosts.push_back(std::move(*r));
    }
    if (e.hosts.empty() && !any_host) {
      log::warning("--secret " + s.key + ": no host is allowed, so it cannot be used (name one with --secret-host " +
                   s.key + "=HOST or --allow-net)");
    }
    if (s.value.size() < zb::net::k_min_redacted) {
      log::warning("--secret " + s.key + ": the value is shorter than " + std::to_string(zb::net::k_min_redacted) +
                   " bytes, so responses are not scrubbed of it");
    }
    entries.push_back(std::move(e));
  }
  auto allow_net = allow_net_policy(p, resolved, allow_net_made);
  if (!allow_net) return std::unexpected(allow_net.error());
  auto ca = zb::net::CertAuthority::create(std::to_string(::getpid()) + "@" + std::to_string(::time(nullptr)));
  if (!ca) return std::unexpected(ca.error());
  auto tls = zb::net::make_tls_contexts(p.upstream_ca);
  if (!tls) return std::unexpected(tls.error());
  return zb::net::ProxySecrets{zb::net::SecretSet(std::move(entries), **allow_net), std::move(*ca),
                               std::move(*tls)};
}

// Reports how the command ended (the child_exit event) and returns the exit code.
int report_exit(StatusFd& status, const std::string& cmd, zb::exec::Outcome outcome, int code, int sig, int err) {
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
  return rc;
}

// The same, then EOF on the status fd.
int finish(StatusFd& status, const std::string& cmd, zb::exec::Outcome outcome, int code, int sig, int err) {
  int rc = report_exit(status, cmd, outcome, code, sig, err);
  status.close();
  return rc;
}

// --no-sandbox: the environment policy only. The child reports on a pipe, as init does:
// {0, errno} when no candidate could be run, {1, errno} when it could not enter the
// working directory (a setup error, not the command's exit status).
int run_unsandboxed(const Policy& p, const std::vector<std::string>& env, StatusFd& status) {
  auto cands = zb::exec::exec_candidates(p.argv[0], env);
  std::vector<char*> argv, envp, cv;
  for (const auto& a : p.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  for (const auto& c : cands) cv.push_back(const_cast<char*>(c.c_str()));
  cv.push_back(nullptr);
  auto errpipe = zb::make_pipe();
  if (!errpipe) return setup_failed(status, std::string("pipe: ") + std::strerror(errpipe.error().err));
  zb::exec::SignalForwarding forwarding;
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
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int s : zb::exec::k_forwarded_signals) ::sigaction(s, &dfl, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    // Even without a sandbox, the command does not outlive zerobox.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (::getppid() != parent) ::_exit(125);
    int32_t report[2] = {0, 0};
    if (::chdir(p.cwd.c_str()) != 0) {
      report[0] = 1;
      report[1] = errno;
    } else {
      report[1] = zb::exec::exec_first(cv.data(), argv.data(), envp.data());
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
  using zb::exec::Outcome;
  if (failed && report[0] == 1) {
    return setup_failed(status, "enter the working directory " + log::quote(p.cwd) + ": " + std::strerror(report[1]));
  }
  if (failed) return finish(status, p.argv[0], Outcome::ExecFailed, 0, 0, report[1]);
  if (WIFSIGNALED(st)) return finish(status, p.argv[0], Outcome::Signaled, 0, WTERMSIG(st), 0);
  return finish(status, p.argv[0], Outcome::Exited, WEXITSTATUS(st), 0, 0);
}

// A run with --snapshot, --restore or --review: its session in the store.
struct SnapshotRun {
  std::optional<zb::store::Store> store;
  zb::store::Session session;
  zb::store::SessionLock lock;
  zb::snapshot::SessionPolicy policy;
  bool active = false;

  // The sandbox never started: the session is failed and its layers are removed.
  void abandon() {
    if (!active) return;
    (void)store->finish(session.id, {.state = zb::store::SessionState::Failed});
    (void)zb::util::remove_tree(store->session_dir(session.id) + "/upper");
    (void)zb::util::remove_tree(store->session_dir(session.id) + "/work");
    active = false;
  }
  ~SnapshotRun() { abandon(); }
};

// Opens the store and records a session in state running, locked by this process.
zb::Result<void> start_session(SnapshotRun& run, const Policy& p, const zb::policy::Resolved& resolved,
                               const zb::policy::FsRules& fs, const std::string& store_dir,
                               zb::store::Registry* registry) {
  for (const auto& t : fs.tracked) {
    if (!resolved.snapshot_everything && zb::path::is_under(store_dir, t)) {
      return zb::fail_msg("the snapshot store " + log::quote(store_dir) + " lies inside the tracked path " + log::quote(t) +
                          ": set ZEROBOX_HOME to a directory outside it, or track less with --snapshot-path");
    }
    if (zb::path::is_under(t, store_dir)) {
      return zb::fail_msg("the tracked path " + log::quote(t) + " lies inside the snapshot store " + log::quote(store_dir));
    }
  }
  if (fs.tracked.empty()) {
    log::warning("nothing is tracked: no directory is writable (add --allow-write=DIR)");
  }
  auto excludes = zb::snapshot::Excludes::compile(p.snapshot_exclude);
  if (!excludes) return std::unexpected(excludes.error());
  auto st = zb::store::Store::open(store_dir, registry);
  if (!st) return std::unexpected(st.error());
  run.store.emplace(std::move(*st));
  auto recovered = zb::snapshot::recover_interrupted(*run.store);
  if (!recovered) return std::unexpected(recovered.error());
  run.policy.tracked = fs.tracked;
  run.policy.exclude = p.snapshot_exclude;
  for (const auto* list : {&fs.read_only, &fs.masked, &fs.absent_protected}) {
    run.policy.protected_paths.insert(run.policy.protected_paths.end(), list->begin(), list->end());
  }
  zb::store::NewSession ns;
  ns.kind = zb::store::SessionKind::Run;
  ns.mode = p.snapshot == SnapshotMode::Review    ? zb::store::SessionMode::Review
            : p.snapshot == SnapshotMode::Restore ? zb::store::SessionMode::Restore
                                                  : zb::store::SessionMode::Snapshot;
  ns.command = p.argv;
  ns.cwd = p.cwd;
  ns.roots = fs.tracked;
  ns.policy = run.policy.to_json();
  auto session = run.store->create_session(ns);
  if (!session) return std::unexpected(session.error());
  run.session = std::move(*session);
  auto lock = run.store->lock_session(run.session.id);
  if (!lock) return std::unexpected(lock.error());
  run.lock = std::move(*lock);
  run.active = true;
  return {};
}

// The tracked overlays of the plan, in upper/N order, with their directories.
zb::Result<void> prepare_layers(SnapshotRun& run, const std::vector<std::string>& tracked) {
  run.session.roots = tracked;
  if (auto r = run.store->set_roots(run.session.id, tracked); !r) return r;
  std::string dir = run.store->session_dir(run.session.id);
  for (std::size_t n = 0; n < tracked.size(); ++n) {
    for (const char* layer : {"/upper/", "/work/"}) {
      std::string d = dir + layer + std::to_string(n);
      if (::mkdir(d.c_str(), 0700) != 0 && errno != EEXIST) return zb::fail("mkdir " + d);
    }
    // The overlay's root directory shows the upper directory's mode and owner: make them
    // the tracked directory's (the store itself stays 0700).
    struct stat st {};
    std::string up = dir + "/upper/" + std::to_string(n);
    if (::stat(tracked[n].c_str(), &st) != 0) return zb::fail("stat " + tracked[n]);
    if (::geteuid() == 0 && ::chown(up.c_str(), st.st_uid, st.st_gid) != 0) return zb::fail("chown " + up);
    if (::chmod(up.c_str(), st.st_mode & 07777) != 0) return zb::fail("chmod " + up);
  }
  return {};
}

// After the sandbox is gone: journal the layers, then apply, keep or drop per the mode.
void end_session(SnapshotRun& run, const Policy& p, const RunOptions& options, StatusFd& status, zb::exec::Outcome outcome, int code, int sig) {
  using zb::store::SessionState;
  zb::store::Finish fin;
  if (outcome == zb::exec::Outcome::Signaled) {
    fin.signal = sig;
  } else {
    fin.exit_code = code;
  }
  std::string short_id = run.session.id.substr(0, 12);
  auto js = zb::snapshot::journal_session(*run.store, run.session, run.policy);
  run.active = false;
  if (!js) {
    fin.state = SessionState::Failed;
    (void)run.store->finish(run.session.id, fin);
    log::error("recording session " + short_id + " failed: " + js.error().message() + "; the command's writes are kept in " +
               run.store->session_dir(run.session.id) + "/upper");
    status.session(run.session.id, "failed", 0);
    return;
  }
  fin.state = p.snapshot == SnapshotMode::Restore ? SessionState::Restored : SessionState::Pending;
  std::string state(zb::store::to_string(fin.state));
  if (auto r = run.store->finish(run.session.id, fin); !r) log::error("session " + short_id + ": " + r.error().message());
  if (p.snapshot == SnapshotMode::Snapshot && js->changes == 0) {
    if (auto r = run.store->set_state(run.session.id, SessionState::Accepted); r) state = "accepted";
  } else if (p.snapshot == SnapshotMode::Snapshot) {
    auto applied = zb::snapshot::apply_locked(*run.store, run.session, {.force = false, .progress = !options.quiet});
    if (!applied) {
      log::error("applying session " + short_id + " failed: " + applied.error().message() +
                 " (the next zerobox snapshot command finishes it)");
    } else if (!applied->conflicts.empty()) {
      for (const auto& c : applied->conflicts) log::error("conflict: " + c);
      log::error("session " + short_id + " was not applied: files changed on the host meanwhile; see `zerobox snapshot diff " +
                 short_id + "`, then `zerobox snapshot accept --force " + short_id + "`");
    } else {
      state = "accepted";
    }
  }
  std::string counts = std::to_string(js->changes) + (js->changes == 1 ? " change" : " changes");
  if (js->excluded > 0) counts += ", " + std::to_string(js->excluded) + " excluded applied";
  log::info("session " + short_id + " (" + counts + ", " + state + ")");
  status.session(run.session.id, state, static_cast<long>(js->changes));
}

std::string staging_dir() {
  for (const char* d : {"/tmp", "/mnt", "/run", "/var/tmp"}) {
    if (zb::path::kind_of(d) == zb::path::Kind::Directory) return d;
  }
  return "/tmp";
}

}  // namespace

int run(Policy p, const std::vector<std::string>& environ, RunOptions options) {
  zb::exec::guard_std_fds();  // main() does this for the CLI, before anything opens a file
  return run_prestarted(std::move(p), environ, options, nullptr);
}

int run_prestarted(Policy p, const std::vector<std::string>& environ, RunOptions options,
                   std::unique_ptr<zb::exec::Prestart> prestarted) {
  log::set_quiet(options.quiet);
  log::set_debug(options.debug);
  StatusFd status(options.status_fd);
  ::signal(SIGPIPE, SIG_IGN);

  // 1. Policy: canonical paths, checked against the machine.
  auto caller = zb::policy::current_caller(environ);
  auto resolved = zb::policy::finalize(p, caller);
  if (!resolved) return setup_failed(status, resolved.error().message());
  std::vector<std::string> env = zb::policy::build_env(p, *resolved, caller);
  if (p.no_sandbox) {
    log::debug("no sandbox: only the environment policy applies");
    return run_unsandboxed(p, env, status);
  }

  // A directory on fd 0, 1 or 2 (`zerobox ... <dir`) would be a way around the mount
  // view: openat() relative to it reaches the host's tree, protected paths and all.
  for (int fd = 0; fd <= 2; ++fd) {
    int fl = ::fcntl(fd, F_GETFL);
    struct stat st {};
    if (fl >= 0 && ((fl & O_PATH) != 0 || (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)))) {
      static const char* const k_names[] = {"stdin", "stdout", "stderr"};
      return setup_failed(status, std::string(k_names[fd]) + " (fd " + std::to_string(fd) +
                                      ") is a directory, which would give the command the host's files around the "
                                      "sandbox: give it a file, a pipe or a terminal");
    }
  }

  // 2. The filesystem view and the mount plan.
  auto fs = zb::policy::compute_fs(p, *resolved, caller);
  zb::exec::Placeholders placeholders;  // removed when run() returns
  if (auto r = placeholders.create(fs.placeholders); !r) return setup_failed(status, r.error().message());
  auto mounts = zb::overlay::read_mount_table();
  if (!mounts) return setup_failed(status, mounts.error().message());
  // No store is ever visible inside a sandbox, snapshot run or not: neither the current
  // one, nor any in this user's registry, nor the registry (store/registry.hpp).
  std::string store_dir;
  if (auto loc = zb::store::Store::location(environ); loc) {
    auto canon = zb::path::canonicalize(*loc);
    store_dir = canon && canon->exists ? canon->path : *loc;
  } else if (p.snapshot != SnapshotMode::Off) {
    return setup_failed(status, loc.error().message());
  }
  std::string no_registry;
  auto registry = zb::store::user_registry(environ, no_registry);
  if (!registry) log::debug("store registry: none (" + no_registry + ")");
  SnapshotRun snap;
  if (p.snapshot != SnapshotMode::Off) {
    // A tracked directory is an overlay's lower layer, and overlayfs takes none with mounts
    // below it inside a user namespace (they are locked there). Only a tracked "/" is
    // walked around them (build_plan).
    for (const auto& t : fs.tracked) {
      if (std::string m = t == "/" ? std::string() : mounts->first_mount_below(t); !m.empty()) {
        return setup_failed(status, "cannot track " + log::quote(t) + ": the host has a mount below it, " + log::quote(m) +
                                        ", and overlayfs takes no directory with mounts below as a lower layer in a user "
                                        "namespace: track a directory without mounts below (--snapshot-path), or unmount it");
      }
    }
    if (auto r = start_session(snap, p, *resolved, fs, store_dir, registry ? &*registry : nullptr); !r) {
      return setup_failed(status, r.error().message());
    }
  }
  std::optional<zb::store::Registry::Entry> run_record;  // removed when run() returns, after the sandbox
  std::optional<zb::store::Registry::Lock> registry_lock;  // from reading the stores to the record
  if (registry) {
    auto locked = registry->lock();
    if (!locked) return setup_failed(status, locked.error().message());
    registry_lock.emplace(std::move(*locked));
    // A store location that is not there yet would be the command's to make, journal and
    // all, wherever it can write: it is made now, so that it can be masked. A mask is a
    // mount, which holds whatever the kernel offers, where guarding an absent path needs
    // the create guard. One this user cannot make, no sandbox of theirs can either.
    auto stores = registry->stores(*registry_lock);
    if (!stores) return setup_failed(status, stores.error().message());
    bool listed = store_dir == registry->dir() || std::find(stores->begin(), stores->end(), store_dir) != stores->end();
    if (!snap.active && !store_dir.empty() && (!listed || zb::path::kind_of(store_dir) != zb::path::Kind::Directory)) {
      if (auto r = registry->admit_store(*registry_lock, store_dir); !r && r.error().err == 0) {
        return setup_failed(status, r.error().message());
      }
    }
    for (const auto& s : *stores) {
      struct stat st {};
      if (::lstat(s.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) zb::policy::mask_where_shown(fs, s);
    }
    zb::policy::mask_where_shown(fs, registry->dir());
  }
  if (!store_dir.empty()) {
    auto canon = zb::path::canonicalize(store_dir);
    if (canon && canon->exists) store_dir = canon->path;
    if (zb::path::kind_of(store_dir) == zb::path::Kind::Directory) zb::policy::mask_where_shown(fs, store_dir);
  }
  if (registry) {
    // A store opened from now on sees this record; one listed before is masked above.
    zb::store::RunRecord rec{.writable = zb::policy::writable_roots(fs), .masked = fs.masked};
    auto entry = registry->record_run(*registry_lock, std::move(rec));
    if (!entry) return setup_failed(status, entry.error().message());
    run_record.emplace(std::move(*entry));
    registry_lock.reset();
  }
  zb::overlay::PlanOptions plan_opts{.uid0_is_host_root = ::geteuid() == 0};
  if (snap.active) {
    plan_opts.session_dir = snap.store->session_dir(snap.session.id);
    plan_opts.store_dir = store_dir;
  }
  // Secrets: the run's CA, and the trust bundle the sandbox sees.
  std::optional<zb::net::ProxySecrets> secrets;
  std::optional<zb::net::NetPolicy> allow_net;
  if (!p.secrets.empty()) {
    auto made = make_secrets(p, *resolved, allow_net);
    if (!made) return setup_failed(status, made.error().message());
    secrets.emplace(std::move(*made));
    auto bundle = zb::net::trust_bundle(secrets->ca.ca_pem());
    if (!bundle) return setup_failed(status, bundle.error().message());
    plan_opts.ca_bundle = std::move(*bundle);
    for (const auto& b : zb::net::present_bundle_paths()) {
      if (auto canon = zb::path::canonicalize(b); canon && canon->exists) plan_opts.ca_bundle_targets.push_back(canon->path);
    }
  }
  zb::exec::SandboxSpec spec;
  spec.plan = zb::overlay::build_plan(fs, *mounts, p.cwd, plan_opts);
  if (snap.active) {
    if (auto r = prepare_layers(snap, spec.plan.tracked); !r) return setup_failed(status, r.error().message());
    log::debug("session " + snap.session.id + ": " + std::to_string(spec.plan.tracked.size()) + " tracked overlays");
  }
  spec.staging = staging_dir();
  spec.cwd = p.cwd;
  spec.argv = p.argv;
  spec.env = env;
  spec.exec_candidates = zb::exec::exec_candidates(p.argv[0], env);
  // The sandbox sees the host's files, so PATH resolves there as it did here: try that
  // first rather than failing execve() once per earlier PATH entry.
  if (!fs.command_path.empty() && p.argv[0].find('/') == std::string::npos) {
    spec.exec_candidates.insert(spec.exec_candidates.begin(), fs.command_path);
  }
  spec.new_net = p.net != NetMode::Host;

  // Filtered network: the proxy's policy, checked before anything starts.
  std::optional<zb::net::NetPolicy> net_policy;
  if (p.net == NetMode::Filtered) {
    // The hosts of --secret-host are allowed without being listed in --allow-net.
    auto base = allow_net_policy(p, *resolved, allow_net);
    if (!base) return setup_failed(status, base.error().message());
    std::vector<std::string> secret_hosts;
    for (const auto& sec : p.secrets) secret_hosts.insert(secret_hosts.end(), sec.hosts.begin(), sec.hosts.end());
    auto np = (*base)->allowing(secret_hosts);
    if (!np) return setup_failed(status, np.error().message());
    net_policy.emplace(std::move(*np));
    spec.proxy_port = zb::policy::k_proxy_port;
  }
  // A session is journaled only once every process of the sandbox is gone.
  spec.wait_for_teardown = options.wait_for_teardown || snap.active;

  // 3. Kernel features, probed; --strict-sandbox refuses to run without any of them.
  int abi = zb::exec::landlock_abi();
  if (abi <= 0) {
    if (p.strict) return setup_failed(status, "Landlock is unavailable on this kernel (--strict-sandbox)");
    log::warning("Landlock is unavailable: writes are fenced by the mount view alone");
  }
  spec.landlock = zb::exec::make_landlock_plan(fs, abi);
  spec.seccomp = zb::exec::embedded_seccomp_filter();
  if (!fs.absent_protected.empty() || !fs.protected_links.empty() || !fs.depth_roots.empty()) {
    spec.guarded = fs.absent_protected;
    spec.guarded.insert(spec.guarded.end(), fs.protected_links.begin(), fs.protected_links.end());
    // Renamed or linked over, a read-only file would give EBUSY (a mount point): the
    // guard's EACCES says what happened, and the user learns which path it was.
    spec.guarded.insert(spec.guarded.end(), fs.protected_existing.begin(), fs.protected_existing.end());
    if (!fs.depth_roots.empty()) {
      spec.depth_names = zb::policy::protected_write_names();
      spec.depth_roots = fs.depth_roots;
      spec.depth_exempt = fs.depth_exempt;
      spec.depth_lifted = fs.lifted;
      spec.depth_new_trees = fs.new_trees;
    }
    spec.guard_filter = zb::exec::embedded_guard_filter(!fs.depth_roots.empty());
    spec.seccomp = zb::exec::embedded_seccomp_filter_for_guard();
  }

  if (log::debug_enabled()) {
    for (const auto& line : zb::policy::describe(p, fs)) log::debug(line);
    log::debug("namespaces: user, mount, pid, ipc, uts, cgroup" + std::string(spec.new_net ? ", net (loopback only)" : ""));
    // Root's map is decided as the sandbox is cloned: its "ids:" note follows.
    if (::geteuid() != 0) log::debug("uid/gid map: the caller's uid and gid only");
    for (const auto& op : spec.plan.ops) log::debug("mount plan: " + zb::overlay::describe(op));
    for (const auto& n : spec.plan.notes) log::debug("mount plan: " + n);
    log::debug(zb::exec::describe(spec.landlock));
    log::debug("seccomp: " + std::to_string(spec.seccomp.size()) + " BPF instructions (compiled by libseccomp at build time)");
    log::debug("environment: " + std::to_string(env.size()) + " variables");
  }

  // 4. Run, then report. In filtered mode the proxy serves the socket the child made.
  std::unique_ptr<zb::net::Proxy> proxy;
  std::mutex denied_mutex;
  std::map<std::string, unsigned> denied;  // "host:port" -> attempts
  auto on_listener = [&](int fd) {
    proxy = std::make_unique<zb::net::Proxy>(fd, *net_policy, [&](const zb::net::NetEvent& e) {
      std::string where = e.host + ":" + std::to_string(e.port);
      if (log::debug_enabled()) log::debug(std::string("net: ") + (e.allowed ? "allow " : "deny ") + where + (e.reason.empty() ? "" : " (" + e.reason + ")"));
      status.net(e.host, e.port, e.allowed, e.reason);
      if (!e.allowed) {
        std::lock_guard<std::mutex> lock(denied_mutex);
        ++denied[where];
      }
    }, std::exchange(secrets, std::nullopt));
    proxy->start();
  };
  zb::exec::LiveBlocker live_blocker(fs.absent_protected);
  bool guard_ran = false;
  auto res = zb::exec::run_sandbox(spec,
                                   [&](long pid, bool guarded) {
                                     status.child_started(pid);
                                     // The guard refuses them in the kernel's stead; else
                                     // they are looked for and moved aside.
                                     guard_ran = guarded;
                                     if (!guarded) live_blocker.start();
                                   },
                                   net_policy ? std::function<void(int)>(on_listener) : std::function<void(int)>(),
                                   std::move(prestarted));
  if (proxy) {
    proxy->stop();
    std::lock_guard<std::mutex> lock(denied_mutex);
    if (!denied.empty()) {
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
  }
  for (const auto& n : res.notes) log::debug(n);
  if (res.outcome == zb::exec::Outcome::SetupFailed) return setup_failed(status, res.message);
  std::vector<std::string> blocked_lines = live_blocker.stop();
  // With the guard nothing in the sandbox made them; what a process on the host made
  // meanwhile (the user's editor) is the user's, and stays.
  if (!guard_ran) {
    for (auto& line : zb::exec::move_created_aside(fs.absent_protected)) blocked_lines.push_back(std::move(line));
  }
  // Each refused path with the flag that allows it; denied ones and zerobox's profiles
  // stay refused whatever the flags say.
  std::vector<std::string> flags;
  auto xdg = caller.env.find("XDG_CONFIG_HOME");
  auto profiles = zb::policy::profile_dirs(caller.home, xdg == caller.env.end() ? std::string() : xdg->second);
  for (const auto& path : res.guard_refused) {
    bool is_denied = std::any_of(p.deny_write.begin(), p.deny_write.end(), [&](const std::string& d) { return zb::path::is_under(path, d); }) ||
                  std::any_of(p.deny_read.begin(), p.deny_read.end(), [&](const std::string& d) { return zb::path::is_under(path, d); });
    bool profile = std::any_of(profiles.begin(), profiles.end(), [&](const std::string& d) { return zb::path::is_under(path, d); });
    if (is_denied || profile) {
      log::warning("refused to let the command create " + log::quote(path) +
                   (is_denied ? " (a denied path)" : " (zerobox's profiles are never writable inside a sandbox)"));
      continue;
    }
    bool existing = std::find(fs.protected_existing.begin(), fs.protected_existing.end(), path) != fs.protected_existing.end();
    // Deep in a writable tree, an existing one was opened for writing (or something made in it).
    struct stat there {};
    bool deep_existing = !existing && ::lstat(path.c_str(), &there) == 0;
    std::string name_this = zb::policy::allow_write_hint(path, fs);
    log::warning("refused to let the command " + std::string(existing ? "replace" : deep_existing ? "change" : "create") +
                 " protected path " +
                 log::quote(path) + " (--allow-write=" + log::quote(name_this) + " allows it)");
    if (std::find(flags.begin(), flags.end(), name_this) == flags.end()) flags.push_back(name_this);
  }
  std::erase_if(flags, [&](const std::string& f) {
    return std::any_of(flags.begin(), flags.end(), [&](const std::string& o) { return o != f && zb::path::is_under(f, o); });
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
  int rc = report_exit(status, p.argv[0], res.outcome, res.code, res.sig, res.err);
  if (snap.active) end_session(snap, p, options, status, res.outcome, rc, res.sig);
  status.close();
  return rc;
}

}  // namespace zerobox
