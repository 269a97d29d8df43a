// The session of a snapshot run (--snapshot, --restore, --review) in the store: opened
// before the sandbox starts, its layers made for the mount plan, journaled and applied
// (or kept, or dropped) once the sandbox is gone.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "run/internal.hpp"
#include "snapshot/apply.hpp"
#include "snapshot/journal.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"
#include "util/path.hpp"

namespace zb::run {

using exec::StatusFd;
using zerobox::Policy;
using zerobox::RunOptions;
using zerobox::SnapshotMode;

void SnapshotRun::abandon() {
  if (!active) return;
  (void)store->finish(session.id, {.state = zb::store::SessionState::Failed});
  (void)util::remove_tree(store->session_dir(session.id) + "/upper");
  (void)util::remove_tree(store->session_dir(session.id) + "/work");
  active = false;
}

Result<void> start_session(SnapshotRun& run, const Policy& p, const policy::Resolved& resolved,
                           const policy::FsRules& fs, const std::string& store_dir, store::Registry* registry) {
  for (const auto& t : fs.tracked) {
    if (!resolved.snapshot_everything && path::is_under(store_dir, t)) {
      return fail_msg("the snapshot store " + log::quote(store_dir) + " lies inside the tracked path " + log::quote(t) +
                      ": set ZEROBOX_HOME to a directory outside it, or track less with --snapshot-path");
    }
    if (path::is_under(t, store_dir)) {
      return fail_msg("the tracked path " + log::quote(t) + " lies inside the snapshot store " + log::quote(store_dir));
    }
  }
  if (fs.tracked.empty()) {
    log::warning("nothing is tracked: no directory is writable (add --allow-write=DIR)");
  }
  auto excludes = snapshot::Excludes::compile(p.snapshot_exclude);
  if (!excludes) return std::unexpected(excludes.error());
  auto st = store::Store::open(store_dir, registry);
  if (!st) return std::unexpected(st.error());
  run.store.emplace(std::move(*st));
  auto recovered = snapshot::recover_interrupted(*run.store);
  if (!recovered) return std::unexpected(recovered.error());
  run.policy.tracked = fs.tracked;
  run.policy.exclude = p.snapshot_exclude;
  for (const auto* list : {&fs.read_only, &fs.masked, &fs.absent_protected}) {
    run.policy.protected_paths.insert(run.policy.protected_paths.end(), list->begin(), list->end());
  }
  store::NewSession ns;
  ns.kind = store::SessionKind::Run;
  ns.mode = p.snapshot == SnapshotMode::Review    ? store::SessionMode::Review
            : p.snapshot == SnapshotMode::Restore ? store::SessionMode::Restore
                                                  : store::SessionMode::Snapshot;
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

Result<void> prepare_layers(SnapshotRun& run, const std::vector<std::string>& tracked) {
  run.session.roots = tracked;
  if (auto r = run.store->set_roots(run.session.id, tracked); !r) return r;
  std::string dir = run.store->session_dir(run.session.id);
  for (std::size_t n = 0; n < tracked.size(); ++n) {
    for (const char* layer : {"/upper/", "/work/"}) {
      std::string d = dir + layer + std::to_string(n);
      if (::mkdir(d.c_str(), 0700) != 0 && errno != EEXIST) return fail("mkdir " + d);
    }
    // The overlay's root directory shows the upper directory's mode and owner: make them
    // the tracked directory's (the store itself stays 0700).
    struct stat st{};
    std::string up = dir + "/upper/" + std::to_string(n);
    if (::stat(tracked[n].c_str(), &st) != 0) return fail("stat " + tracked[n]);
    if (::geteuid() == 0 && ::chown(up.c_str(), st.st_uid, st.st_gid) != 0) return fail("chown " + up);
    if (::chmod(up.c_str(), st.st_mode & 07777) != 0) return fail("chmod " + up);
  }
  return {};
}

void end_session(SnapshotRun& run, const Policy& p, const RunOptions& options, StatusFd& status, exec::Outcome outcome,
                 int code, int sig) {
  using store::SessionState;
  store::Finish fin;
  if (outcome == exec::Outcome::Signaled) {
    fin.signal = sig;
  } else {
    fin.exit_code = code;
  }
  std::string short_id = run.session.id.substr(0, 12);
  auto js = snapshot::journal_session(*run.store, run.session, run.policy);
  run.active = false;
  if (!js) {
    fin.state = SessionState::Failed;
    (void)run.store->finish(run.session.id, fin);
    log::error("recording session " + short_id + " failed: " + js.error().message() +
               "; the command's writes are kept in " + run.store->session_dir(run.session.id) + "/upper");
    status.session(run.session.id, "failed", 0);
    return;
  }
  fin.state = p.snapshot == SnapshotMode::Restore ? SessionState::Restored : SessionState::Pending;
  std::string state(store::to_string(fin.state));
  if (auto r = run.store->finish(run.session.id, fin); !r)
    log::error("session " + short_id + ": " + r.error().message());
  if (p.snapshot == SnapshotMode::Snapshot && js->changes == 0) {
    if (auto r = run.store->set_state(run.session.id, SessionState::Accepted); r) state = "accepted";
  } else if (p.snapshot == SnapshotMode::Snapshot) {
    auto applied = snapshot::apply_locked(*run.store, run.session, {.force = false, .progress = !options.quiet});
    if (!applied) {
      log::error("applying session " + short_id + " failed: " + applied.error().message() +
                 " (the next zerobox snapshot command finishes it)");
    } else if (!applied->conflicts.empty()) {
      for (const auto& c : applied->conflicts) log::error("conflict: " + c);
      log::error("session " + short_id +
                 " was not applied: files changed on the host meanwhile; see `zerobox snapshot diff " + short_id +
                 "`, then `zerobox snapshot accept --force " + short_id + "`");
    } else {
      state = "accepted";
    }
  }
  std::string counts = std::to_string(js->changes) + (js->changes == 1 ? " change" : " changes");
  if (js->excluded > 0) counts += ", " + std::to_string(js->excluded) + " excluded applied";
  log::info("session " + short_id + " (" + counts + ", " + state + ")");
  status.session(run.session.id, state, static_cast<long>(js->changes));
}

}  // namespace zb::run
