// Crash recovery (apply.hpp): the test hook that kills zerobox after its N-th write, runs
// whose zerobox was killed (their layers journaled as pending sessions), and accepts and
// restores left unfinished by a crash, finished from their intents.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "snapshot/apply_internal.hpp"
#include "snapshot/journal.hpp"
#include "util/log.hpp"
#include "util/random.hpp"

namespace zb::snapshot {

using detail::apply_changes;
using detail::finish_accept;
using detail::finish_restore;

void crash_point() {
  static long remaining = [] {
    const char* v = std::getenv("ZEROBOX_TEST_CRASH_AFTER");
    return v != nullptr ? std::atol(v) : 0L;
  }();
  if (remaining <= 0) return;
  if (--remaining == 0) ::kill(::getpid(), SIGKILL);
}

namespace {

// A session still `running` whose zerobox is gone (killed: its sandbox died with it,
// PR_SET_PDEATHSIG) still has its upper layers. They are journaled as a pending session,
// so what the command wrote can be reviewed rather than lost. Only sessions whose lock
// file holds a pid are considered: one that is being created has none yet.
Result<void> recover_abandoned(store::Store& store, std::vector<std::string>& done) {
  // Every zerobox that opens the store comes here: read only the running sessions.
  auto sessions = store.list_sessions(store::SessionState::Running);
  if (!sessions) return std::unexpected(sessions.error());
  for (const auto& s : *sessions) {
    if (s.state != store::SessionState::Running || s.kind != store::SessionKind::Run) continue;
    std::string lockfile = store.session_dir(s.id) + "/lock";
    struct stat st{};
    if (::stat(lockfile.c_str(), &st) != 0 || st.st_size == 0) continue;
    auto lock = store.lock_session(s.id);
    if (!lock) continue;  // its zerobox is alive
    auto again = store.get_session(s.id);
    if (!again || !*again || (*again)->state != store::SessionState::Running) continue;
    auto js = journal_session(store, s, SessionPolicy::from_json(s.policy.value_or("")));
    if (!js) {
      (void)store.finish(s.id, {.state = store::SessionState::Failed});
      done.push_back(
          "warning: session " + s.id.substr(0, 12) +
          " was left running by a zerobox that was killed; its layers could not be read: " + js.error().message());
      continue;
    }
    auto state = s.mode == store::SessionMode::Restore ? store::SessionState::Restored : store::SessionState::Pending;
    if (auto r = store.finish(s.id, {.state = state}); !r) return r;
    done.push_back("session " + s.id.substr(0, 12) +
                   " was left running by a zerobox that was killed: " + std::to_string(js->changes) +
                   (js->changes == 1 ? " change" : " changes") + " recorded, " + std::string(store::to_string(state)));
  }
  return {};
}

}  // namespace

Result<void> recover_interrupted(store::Store& store) {
  std::vector<std::string> done;
  if (auto r = recover_abandoned(store, done); !r) return std::unexpected(r.error());
  auto intents = store.intents();
  if (!intents) return std::unexpected(intents.error());
  for (const auto& in : *intents) {
    auto lock = store.lock_session(in.session);
    if (!lock) {
      if (lock.error().err == ENOENT) {
        (void)store.remove_intent(in.id);
        continue;
      }
      continue;  // in use: its owner is still working on it
    }
    auto s = store.get_session(in.session);
    if (!s) return std::unexpected(s.error());
    if (!*s) {
      (void)store.remove_intent(in.id);
      continue;
    }
    // A failure here is reported and left for later: it must not make the rest of the
    // store unusable.
    auto data = nlohmann::json::parse(in.data, nullptr, false);
    ApplyOptions opts;
    std::string restored, tag;
    if (data.is_object()) {
      opts.force = data.value("force", false);
      restored = data.value("restores", std::string());
      tag = data.value("tag", std::string());
    }
    if (in.op == "accept" && (*s)->state != store::SessionState::Pending) {
      (void)store.remove_intent(in.id);  // already finished, or given up
      continue;
    }
    if (tag.empty()) {
      auto t = util::random_hex(16);
      if (!t) return std::unexpected(t.error());
      tag = *t;
    }
    // The user knows a restore by the session it restores.
    const std::string& shown_id = in.op == "restore" && !restored.empty() ? restored : in.session;
    auto report = apply_changes(store, **s, "finishing", opts, [&]() -> Result<std::string> { return tag; });
    if (!report) {
      done.push_back("warning: cannot finish the interrupted " + in.op + " of session " + shown_id.substr(0, 12) +
                     " yet: " + report.error().message());
      continue;
    }
    if (!report->conflicts.empty()) {
      std::string msg =
          "warning: cannot finish the interrupted " + in.op + " of session " + shown_id.substr(0, 12) + ": ";
      msg += report->conflicts.front();
      if (report->conflicts.size() > 1) msg += " (and " + std::to_string(report->conflicts.size() - 1) + " more)";
      done.push_back(msg);
      continue;
    }
    if (in.op == "restore") {
      if (auto r = finish_restore(store, in.session, restored, in.id); !r) return std::unexpected(r.error());
      done.push_back("finished the interrupted restore of session " + restored.substr(0, 12));
    } else {
      if (auto r = finish_accept(store, in.session, in.id); !r) return std::unexpected(r.error());
      done.push_back("finished the interrupted accept of session " + in.session.substr(0, 12));
    }
  }
  for (const auto& line : done) {
    if (line.rfind("warning: ", 0) == 0) {
      log::warning(line.substr(9));
    } else {
      log::info(line);
    }
  }
  return {};
}

}  // namespace zb::snapshot
