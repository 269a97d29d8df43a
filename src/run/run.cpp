// zerobox::run: the top-level flow of one sandboxed run, one line a step
// (run_prestarted). The steps are below it in the order they run; the session, the
// reports and the --no-sandbox path are in session.cpp, report.cpp and unsandboxed.cpp.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <functional>
#include <utility>

#include "exec/blocked.hpp"
#include "exec/execvp.hpp"
#include "exec/landlock.hpp"
#include "exec/sandbox.hpp"
#include "exec/seccomp.hpp"
#include "exec/signals.hpp"
#include "exec/status_fd.hpp"
#include "net/proxy.hpp"
#include "overlay/mountinfo.hpp"
#include "overlay/plan.hpp"
#include "policy/policy.hpp"
#include "run/internal.hpp"
#include "run/run.hpp"
#include "store/registry.hpp"
#include "store/store.hpp"
#include "util/log.hpp"
#include "util/path.hpp"
#include "zerobox/zerobox.hpp"
#include "zerobox_version.hpp"

namespace zerobox {

const char* version() { return ZEROBOX_VERSION; }

int run(Policy p, const std::vector<std::string>& environ, RunOptions options) {
  zb::exec::hold_std_fds();  // main() does this for the CLI, before anything opens a file
  return zb::run::run_prestarted(std::move(p), environ, options, nullptr);
}

}  // namespace zerobox

namespace zb::run {

using zerobox::NetMode;
using zerobox::Policy;
using zerobox::RunOptions;
using zerobox::SnapshotMode;

namespace {

Result<void> finalize_policy(Run& run);
Result<void> refuse_directory_stdio();
Result<void> plan_filesystem(Run& run);
Result<void> open_session(Run& run);
Result<void> hide_stores(Run& run);
Result<void> prepare_secrets(Run& run);
Result<void> plan_mounts(Run& run);
Result<void> filter_network(Run& run);
Result<void> probe_kernel(Run& run);
void debug_dump(const Run& run);
exec::SandboxResult start_and_wait(Run& run, std::unique_ptr<exec::Prestart> prestarted);
int finish_run(Run& run, const exec::SandboxResult& res);

}  // namespace

int run_prestarted(Policy policy, const std::vector<std::string>& environ, RunOptions options,
                   std::unique_ptr<exec::Prestart> prestarted) {
  Run run(std::move(policy), environ, options);  // logging, the status fd, SIGPIPE ignored
  auto failed = [&](const SysError& e) { return setup_failed(run.status, e.message()); };
  if (auto r = finalize_policy(run); !r) return failed(r.error());  // canonical paths, the environment
  if (run.p.no_sandbox) {
    log::debug("no sandbox: only the environment policy applies");
    return run_unsandboxed(run.p, run.env, run.status);
  }
  if (auto r = refuse_directory_stdio(); !r) return failed(r.error());
  if (auto r = plan_filesystem(run); !r) return failed(r.error());  // compute_fs, mask anchors, the store
  if (auto r = open_session(run); !r) return failed(r.error());     // snapshot runs only
  if (auto r = hide_stores(run); !r) return failed(r.error());      // masks, the registry record
  if (auto r = prepare_secrets(run); !r) return failed(r.error());  // the run's CA and trust bundle
  if (auto r = plan_mounts(run); !r) return failed(r.error());      // build_plan, session layers, argv
  if (auto r = filter_network(run); !r) return failed(r.error());   // the proxy's NetPolicy
  if (auto r = probe_kernel(run); !r) return failed(r.error());     // Landlock, seccomp, the guard
  debug_dump(run);
  exec::SandboxResult res = start_and_wait(run, std::move(prestarted));  // proxy, live blocker, sandbox
  if (res.outcome == exec::Outcome::SetupFailed) return setup_failed(run.status, res.message);
  report_refusals(run, res);    // protected paths made or refused
  return finish_run(run, res);  // the exit status, the session journaled
}

namespace {

// --quiet and --debug take effect before anything is said; returns the status fd.
int start_logging(const RunOptions& o) {
  log::set_quiet(o.quiet);
  log::set_debug(o.debug);
  return o.status_fd;
}

}  // namespace

Run::Run(Policy policy, const std::vector<std::string>& environ_, const RunOptions& options_)
    : p(std::move(policy)), environ(environ_), options(options_), status(start_logging(options)) {
  ::signal(SIGPIPE, SIG_IGN);
}

namespace {

// --allow-net, --deny-net and --resolve as one NetPolicy, made the first time it is needed
// (into run.allow_net): the secrets' own policy, and the proxy's with the --secret-host names.
Result<const net::NetPolicy*> allow_net_policy(Run& run) {
  if (!run.allow_net) {
    auto np = net::NetPolicy::make(run.p.allow_net, run.p.deny_net, run.p.resolve, run.resolved.allow_net_all);
    if (!np) return std::unexpected(np.error());
    run.allow_net.emplace(std::move(*np));
  }
  return &*run.allow_net;
}

// The proxy's side of the secrets: their host rules, the run's CA and the TLS contexts.
Result<net::ProxySecrets> make_secrets(Run& run) {
  const Policy& p = run.p;
  std::vector<net::SecretEntry> entries;
  bool any_host = !p.allow_net.empty() || run.resolved.allow_net_all;
  for (std::size_t i = 0; i < p.secrets.size(); ++i) {
    const auto& s = p.secrets[i];
    net::SecretEntry e{s.key, run.resolved.placeholders[i], s.value, {}};
    for (const auto& h : s.hosts) {
      auto r = net::parse_rule(h);
      if (!r) return fail_msg("--secret-host " + s.key + ": " + r.error().what);
      e.hosts.push_back(std::move(*r));
    }
    if (e.hosts.empty() && !any_host) {
      log::warning("--secret " + s.key + ": no host is allowed, so it cannot be used (name one with --secret-host " +
                   s.key + "=HOST or --allow-net)");
    }
    if (s.value.size() < net::k_min_redacted) {
      log::warning("--secret " + s.key + ": the value is shorter than " + std::to_string(net::k_min_redacted) +
                   " bytes, so responses are not scrubbed of it");
    }
    entries.push_back(std::move(e));
  }
  auto allow_net = allow_net_policy(run);
  if (!allow_net) return std::unexpected(allow_net.error());
  auto ca = net::CertAuthority::create(std::to_string(::getpid()) + "@" + std::to_string(::time(nullptr)));
  if (!ca) return std::unexpected(ca.error());
  auto tls = net::make_tls_contexts(p.upstream_ca);
  if (!tls) return std::unexpected(tls.error());
  return net::ProxySecrets{net::SecretSet(std::move(entries), **allow_net), std::move(*ca), std::move(*tls)};
}

std::string staging_dir() {
  for (const char* d : {"/tmp", "/mnt", "/run", "/var/tmp"}) {
    if (path::kind_of(d) == path::Kind::Directory) return d;
  }
  return "/tmp";
}

// The policy: canonical paths, checked against the machine; the command's environment.
Result<void> finalize_policy(Run& run) {
  run.caller = policy::current_caller(run.environ);
  auto resolved = policy::finalize(run.p, run.caller);
  if (!resolved) return std::unexpected(resolved.error());
  run.resolved = std::move(*resolved);
  run.env = policy::build_env(run.p, run.resolved, run.caller);
  return {};
}

// A directory on fd 0, 1 or 2 (`zerobox ... <dir`) would be a way around the mount
// view: openat() relative to it reaches the host's tree, protected paths and all.
Result<void> refuse_directory_stdio() {
  for (int fd = 0; fd <= 2; ++fd) {
    int fl = ::fcntl(fd, F_GETFL);
    struct stat st{};
    if (fl >= 0 && ((fl & O_PATH) != 0 || (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)))) {
      static const char* const k_names[] = {"stdin", "stdout", "stderr"};
      return fail_msg(std::string(k_names[fd]) + " (fd " + std::to_string(fd) +
                      ") is a directory, which would give the command the host's files around the "
                      "sandbox: give it a file, a pipe or a terminal");
    }
  }
  return {};
}

// The filesystem view, its mask anchors, the host's mount table, and where the store and
// the registry are.
Result<void> plan_filesystem(Run& run) {
  run.fs = policy::compute_fs(run.p, run.resolved, run.caller);
  if (auto r = run.mask_anchors.create(run.fs.mask_anchors); !r) return r;
  auto mounts = overlay::read_mount_table();
  if (!mounts) return std::unexpected(mounts.error());
  run.mounts.emplace(std::move(*mounts));
  // No store is ever visible inside a sandbox, snapshot run or not: neither the current
  // one, nor any in this user's registry, nor the registry (store/registry.hpp).
  if (auto loc = store::Store::location(run.environ); loc) {
    auto canon = path::canonicalize(*loc);
    run.store_dir = canon && canon->exists ? canon->path : *loc;
  } else if (run.p.snapshot != SnapshotMode::Off) {
    return std::unexpected(loc.error());
  }
  std::string no_registry;
  run.registry = store::user_registry(run.environ, no_registry);
  if (!run.registry) log::debug("store registry: none (" + no_registry + ")");
  return {};
}

// A snapshot run's session, once its tracked paths are known to be usable.
Result<void> open_session(Run& run) {
  if (run.p.snapshot == SnapshotMode::Off) return {};
  // A tracked directory is an overlay's lower layer, and overlayfs takes none with mounts
  // below it inside a user namespace (they are locked there). Only a tracked "/" is
  // walked around them (build_plan).
  for (const auto& t : run.fs.tracked) {
    if (std::string m = t == "/" ? std::string() : run.mounts->first_mount_below(t); !m.empty()) {
      return fail_msg("cannot track " + log::quote(t) + ": the host has a mount below it, " + log::quote(m) +
                      ", and overlayfs takes no directory with mounts below as a lower layer in a user "
                      "namespace: track a directory without mounts below (--snapshot-path), or unmount it");
    }
  }
  return start_session(run.snap, run.p, run.resolved, run.fs, run.store_dir, run.registry ? &*run.registry : nullptr);
}

// Every store of this user's registry, the registry and the current store masked; the
// run recorded in the registry, so that a store opened from now on sees it.
Result<void> hide_stores(Run& run) {
  auto& registry = run.registry;
  auto& store_dir = run.store_dir;
  if (registry) {
    auto locked = registry->lock();
    if (!locked) return std::unexpected(locked.error());
    run.registry_lock.emplace(std::move(*locked));
    // A store location that is not there yet would be the command's to make, journal and
    // all, wherever it can write: it is made now, so that it can be masked. A mask is a
    // mount, which holds whatever the kernel offers, where guarding an absent path needs
    // the create guard. One this user cannot make, no sandbox of theirs can either.
    auto stores = registry->stores(*run.registry_lock);
    if (!stores) return std::unexpected(stores.error());
    bool listed = store_dir == registry->dir() || std::find(stores->begin(), stores->end(), store_dir) != stores->end();
    if (!run.snap.active && !store_dir.empty() && (!listed || path::kind_of(store_dir) != path::Kind::Directory)) {
      if (auto r = registry->admit_store(*run.registry_lock, store_dir); !r && r.error().err == 0) return r;
    }
    for (const auto& s : *stores) {
      struct stat st{};
      if (::lstat(s.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) policy::mask_where_shown(run.fs, s);
    }
    policy::mask_where_shown(run.fs, registry->dir());
  }
  if (!store_dir.empty()) {
    auto canon = path::canonicalize(store_dir);
    if (canon && canon->exists) store_dir = canon->path;
    if (path::kind_of(store_dir) == path::Kind::Directory) policy::mask_where_shown(run.fs, store_dir);
  }
  if (registry) {
    // A store opened from now on sees this record; one listed before is masked above.
    store::RunRecord rec{.writable = policy::writable_roots(run.fs), .masked = run.fs.masked};
    auto entry = registry->record_run(*run.registry_lock, std::move(rec));
    if (!entry) return std::unexpected(entry.error());
    run.run_record.emplace(std::move(*entry));
    run.registry_lock.reset();
  }
  return {};
}

// Secrets: the run's CA, and the trust bundle the sandbox sees.
Result<void> prepare_secrets(Run& run) {
  run.plan_opts.uid0_is_host_root = ::geteuid() == 0;
  if (run.snap.active) {
    run.plan_opts.session_dir = run.snap.store->session_dir(run.snap.session.id);
    run.plan_opts.store_dir = run.store_dir;
  }
  if (run.p.secrets.empty()) return {};
  auto made = make_secrets(run);
  if (!made) return std::unexpected(made.error());
  run.secrets.emplace(std::move(*made));
  auto bundle = net::trust_bundle(run.secrets->ca.ca_pem());
  if (!bundle) return std::unexpected(bundle.error());
  run.plan_opts.ca_bundle = std::move(*bundle);
  for (const auto& b : net::present_bundle_paths()) {
    if (auto canon = path::canonicalize(b); canon && canon->exists)
      run.plan_opts.ca_bundle_targets.push_back(canon->path);
  }
  return {};
}

// The mount plan (with a snapshot run's layers) and what the sandbox executes.
Result<void> plan_mounts(Run& run) {
  const Policy& p = run.p;
  auto& spec = run.spec;
  spec.plan = overlay::build_plan(run.fs, *run.mounts, p.cwd, run.plan_opts);
  if (run.snap.active) {
    if (auto r = prepare_layers(run.snap, spec.plan.tracked); !r) return r;
    log::debug("session " + run.snap.session.id + ": " + std::to_string(spec.plan.tracked.size()) +
               " tracked overlays");
  }
  spec.staging = staging_dir();
  spec.cwd = p.cwd;
  spec.argv = p.argv;
  spec.env = run.env;
  spec.exec_candidates = exec::exec_candidates(p.argv[0], run.env);
  // The sandbox sees the host's files, so PATH resolves there as it did here: try that
  // first rather than failing execve() once per earlier PATH entry.
  if (!run.fs.command_path.empty() && p.argv[0].find('/') == std::string::npos) {
    spec.exec_candidates.insert(spec.exec_candidates.begin(), run.fs.command_path);
  }
  spec.new_net = p.net != NetMode::Host;
  return {};
}

// Filtered network: the proxy's policy, checked before anything starts.
Result<void> filter_network(Run& run) {
  if (run.p.net == NetMode::Filtered) {
    // The hosts of --secret-host are allowed without being listed in --allow-net.
    auto base = allow_net_policy(run);
    if (!base) return std::unexpected(base.error());
    std::vector<std::string> secret_hosts;
    for (const auto& sec : run.p.secrets) secret_hosts.insert(secret_hosts.end(), sec.hosts.begin(), sec.hosts.end());
    auto np = (*base)->allowing(secret_hosts);
    if (!np) return std::unexpected(np.error());
    run.net_policy.emplace(std::move(*np));
    run.spec.proxy_port = policy::k_proxy_port;
  }
  // A session is journaled only once every process of the sandbox is gone.
  run.spec.wait_for_teardown = run.options.wait_for_teardown || run.snap.active;
  return {};
}

// Kernel features, probed; --strict-sandbox refuses to run without any of them.
Result<void> probe_kernel(Run& run) {
  const auto& fs = run.fs;
  auto& spec = run.spec;
  int abi = exec::landlock_abi();
  if (abi <= 0) {
    if (run.p.strict) return fail_msg("Landlock is unavailable on this kernel (--strict-sandbox)");
    log::warning("Landlock is unavailable: writes are fenced by the mount view alone");
  }
  spec.landlock = exec::make_landlock_plan(fs, abi);
  spec.seccomp = exec::embedded_seccomp_filter();
  if (!fs.absent_protected.empty() || !fs.protected_links.empty() || !fs.depth_roots.empty()) {
    spec.guarded = fs.absent_protected;
    spec.guarded.insert(spec.guarded.end(), fs.protected_links.begin(), fs.protected_links.end());
    // Renamed or linked over, a read-only file would give EBUSY (a mount point): the
    // guard's EACCES says what happened, and the user learns which path it was.
    spec.guarded.insert(spec.guarded.end(), fs.protected_existing.begin(), fs.protected_existing.end());
    if (!fs.depth_roots.empty()) {
      spec.depth_names = policy::protected_write_names();
      spec.depth_roots = fs.depth_roots;
      spec.depth_exempt = fs.depth_exempt;
      spec.depth_lifted = fs.lifted;
      spec.depth_new_trees = fs.new_trees;
    }
    spec.guard_filter = exec::embedded_guard_filter(!fs.depth_roots.empty());
    spec.seccomp = exec::embedded_seccomp_filter_for_guard();
  }
  return {};
}

// --debug: the effective policy, the namespaces, the mount plan, Landlock and seccomp.
void debug_dump(const Run& run) {
  if (!log::debug_enabled()) return;
  const auto& spec = run.spec;
  for (const auto& line : policy::describe(run.p, run.fs)) log::debug(line);
  log::debug("namespaces: user, mount, pid, ipc, uts, cgroup" +
             std::string(spec.new_net ? ", net (loopback only)" : ""));
  // Root's map is decided as the sandbox is cloned: its "ids:" note follows.
  if (::geteuid() != 0) log::debug("uid/gid map: the caller's uid and gid only");
  for (const auto& op : spec.plan.ops) log::debug("mount plan: " + overlay::describe(op));
  for (const auto& n : spec.plan.notes) log::debug("mount plan: " + n);
  log::debug(exec::describe(spec.landlock));
  log::debug("seccomp: " + std::to_string(spec.seccomp.size()) +
             " BPF instructions (compiled by libseccomp at build time)");
  log::debug("environment: " + std::to_string(run.env.size()) + " variables");
}

// Runs the sandbox and waits for it. In filtered mode the proxy serves the socket the
// child made; without the create guard, the live blocker watches the protected paths.
exec::SandboxResult start_and_wait(Run& run, std::unique_ptr<exec::Prestart> prestarted) {
  auto on_listener = [&](int fd) {
    run.proxy = std::make_unique<net::Proxy>(
        fd, *run.net_policy,
        [&](const net::NetEvent& e) {
          std::string where = e.host + ":" + std::to_string(e.port);
          if (log::debug_enabled())
            log::debug(std::string("net: ") + (e.allowed ? "allow " : "deny ") + where +
                       (e.reason.empty() ? "" : " (" + e.reason + ")"));
          run.status.net(e.host, e.port, e.allowed, e.reason);
          if (!e.allowed) {
            std::lock_guard<std::mutex> lock(run.denied_mutex);
            ++run.denied[where];
          }
        },
        std::exchange(run.secrets, std::nullopt));
    run.proxy->start();
  };
  run.live_blocker.emplace(run.fs.absent_protected);
  auto res = exec::run_sandbox(
      run.spec,
      [&](long pid, bool guarded) {
        run.status.child_started(pid);
        // The guard refuses them in the kernel's stead; else
        // they are looked for and moved aside.
        run.guard_ran = guarded;
        if (!guarded) run.live_blocker->start();
      },
      run.net_policy ? std::function<void(int)>(on_listener) : std::function<void(int)>(), std::move(prestarted));
  if (run.proxy) {
    run.proxy->stop();
    std::lock_guard<std::mutex> lock(run.denied_mutex);
    report_denied(run.denied);
  }
  for (const auto& n : res.notes) log::debug(n);
  return res;
}

// The exit status (the child_exit event), the session journaled, EOF on the status fd.
int finish_run(Run& run, const exec::SandboxResult& res) {
  int rc = report_exit(run.status, run.p.argv[0], res.outcome, res.code, res.sig, res.err);
  if (run.snap.active) end_session(run.snap, run.p, run.options, run.status, res.outcome, rc, res.sig);
  run.status.close();
  return rc;
}

}  // namespace

}  // namespace zb::run
