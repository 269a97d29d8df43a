// Changing the real filesystem (apply.hpp): an accept or restore as a whole (check,
// intent, writes, state), inverse changes, discard, and the excluded paths applied at exit.
// The steps live in check.cpp and write.cpp, recovery in recover.cpp.
#include "snapshot/apply.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "snapshot/apply_internal.hpp"
#include "snapshot/journal.hpp"
#include "util/log.hpp"
#include "util/path.hpp"
#include "util/random.hpp"

namespace zb::snapshot {

using store::Change;
using store::FileMeta;
using store::FileType;
using store::type_of;
using namespace detail;

namespace {

class Progress {
 public:
  Progress(bool on, std::string verb, std::size_t total)
      : m_on(on && total >= 200 && ::isatty(2)), m_verb(std::move(verb)), m_total(total) {}
  void tick(std::size_t done) {
    if (!m_on) return;
    auto now = std::chrono::steady_clock::now();
    if (now - m_last < std::chrono::milliseconds(100) && done != m_total) return;
    m_last = now;
    std::fprintf(stderr, "\rzerobox: %s: %zu/%zu changes (%zu%%)", m_verb.c_str(), done, m_total,
                 m_total ? done * 100 / m_total : 100);
    m_shown = true;
  }
  ~Progress() {
    if (m_shown) std::fprintf(stderr, "\r\x1b[K");
  }

 private:
  bool m_on;
  std::string m_verb;
  std::size_t m_total;
  bool m_shown = false;
  std::chrono::steady_clock::time_point m_last{};
};

// What an intent records: the session a restore undoes, and whether it was forced (a
// resumed operation must make the same choice).
std::string intent_data(const std::string& restores, bool force, const std::string& tag) {
  nlohmann::json j;
  if (!restores.empty()) j["restores"] = restores;
  j["force"] = force;
  j["tag"] = tag;
  return j.dump();
}

// The `begin` of an accept or restore: records the intent (its id in `intent`) with a
// fresh tag for the temporary names.
std::function<Result<std::string>()> intent_recorder(store::Store& store, const std::string& session, const char* op,
                                                     const std::string& restores, bool force, std::int64_t& intent) {
  return [&store, session, op, restores, force, &intent]() -> Result<std::string> {
    auto tag = util::random_hex(16);
    if (!tag) return tag;
    auto id = store.add_intent(session, op, intent_data(restores, force, *tag));
    if (!id) return std::unexpected(id.error());
    intent = *id;
    crash_point();
    return tag;
  };
}

std::string state_name(store::SessionState s) { return std::string(store::to_string(s)); }

}  // namespace

namespace detail {

Change inverse(const Change& c) {
  Change r = c;
  std::swap(r.before, r.after);
  if (c.kind == store::ChangeKind::Added) r.kind = store::ChangeKind::Deleted;
  if (c.kind == store::ChangeKind::Deleted) r.kind = store::ChangeKind::Added;
  return r;
}

Result<ApplyReport> apply_changes(store::Store& store, const store::Session& s, const std::string& verb,
                                  const ApplyOptions& opts, const std::function<Result<std::string>()>& begin,
                                  const std::function<void()>& on_rolled_back) {
  ApplyReport report;
  auto changes = store.changes(s.id);
  if (!changes) return std::unexpected(changes.error());
  if (auto r = validate_journal(store, s, *changes); !r) return std::unexpected(r.error());
  SessionPolicy policy = SessionPolicy::from_json(s.policy.value_or(""));
  Tree tree(s.roots);
  std::vector<Checked> checked;
  std::vector<bool> skip;
  auto check_all = [&]() -> Result<void> {
    report.conflicts.clear();
    checked.clear();
    checked.reserve(changes->size());
    skip.assign(changes->size(), false);
    Progress progress(opts.progress, "checking", changes->size());
    for (std::size_t i = 0; i < changes->size(); ++i) {
      const Change& c = (*changes)[i];
      progress.tick(i + 1);
      if (protected_change(c.path, c, policy.protected_paths)) {
        skip[i] = true;
        checked.push_back({});
        continue;
      }
      auto ch = check(store, tree, c);
      if (!ch) return std::unexpected(ch.error());
      if (ch->where == Where::Conflict) report.conflicts.push_back(describe_conflict(c, ch->now));
      checked.push_back(*ch);
    }
    return {};
  };
  if (auto r = check_all(); !r) return std::unexpected(r.error());
  for (std::size_t i = 0; i < changes->size(); ++i) {
    if (skip[i]) log::warning("not applied: " + log::quote((*changes)[i].path) + " is protected");
  }
  auto unseen = find_unseen(store, tree, s, *changes, skip, policy);
  if (!unseen) return std::unexpected(unseen.error());
  for (const auto& u : *unseen) {
    report.conflicts.push_back(
        log::quote(u.path) +
        " is not part of the session: it was added or changed on the host after the command saw its directory");
  }
  if (!report.conflicts.empty() && !opts.force) return report;

  // Every content about to be written is checked against its hash first: a blob changed
  // in the store is refused before anything is written.
  {
    std::set<std::string> verified;
    for (std::size_t i = 0; i < changes->size(); ++i) {
      const Change& c = (*changes)[i];
      if (skip[i] || checked[i].where == Where::After || type_of(c.after) != FileType::Regular || !c.after->blob ||
          c.after->blob->empty()) {
        continue;
      }
      const std::string& blob = *c.after->blob;
      if (verified.count(blob) != 0) continue;
      auto ok = store.verify_blob(blob);
      if (!ok) {
        return fail_msg("session " + shown_session(s) + ": the stored content of " + log::quote(c.path) + " (blob " +
                        blob + ") cannot be read: " + ok.error().message() + "; nothing was changed");
      }
      if (!*ok) {
        return fail_msg("session " + shown_session(s) + ": the stored content of " + log::quote(c.path) +
                        " does not match its hash (blob " + blob +
                        "): the store was changed outside zerobox; nothing was changed");
      }
      verified.insert(blob);
    }
  }

  auto begun = begin();
  if (!begun) return std::unexpected(begun.error());
  std::string tag = *begun;

  // Forced: what is really there becomes the before-state, so an undo returns to it.
  auto capture_conflicts = [&]() -> Result<void> {
    for (std::size_t i = 0; i < changes->size(); ++i) {
      if (skip[i] || checked[i].where != Where::Conflict) continue;
      Change& c = (*changes)[i];
      if (auto r = capture(store, tree, c, checked[i].now); !r) return r;
      if (auto r = store.set_change_old(s.id, c); !r) return r;
      crash_point();
      checked[i].where = Where::Before;
    }
    return {};
  };
  if (auto r = capture_conflicts(); !r) return std::unexpected(r.error());
  // Forced over host entries the session never saw: recorded as deletions (with their
  // pre-images) before the change that removes their directory, or at the end when the
  // directory stays; nothing is removed that the journal does not hold.
  if (!unseen->empty()) {
    std::map<std::int64_t, std::vector<Change>, std::greater<>> groups;
    for (const auto& u : *unseen) {
      auto& rows = groups[u.before_seq == 0 ? std::numeric_limits<std::int64_t>::max() : u.before_seq];
      if (auto r = capture_tree(store, tree, u.path, rows); !r) return std::unexpected(r.error());
    }
    // From the last position to the first, so that each insert leaves the next one's seq
    // where it was.
    for (auto& [seq, rows] : groups) {
      auto at = seq == std::numeric_limits<std::int64_t>::max() ? 0 : seq;
      if (auto r = store.insert_changes(s.id, at, rows); !r) return std::unexpected(r.error());
      crash_point();
    }
    changes = store.changes(s.id);
    if (!changes) return std::unexpected(changes.error());
    std::vector<std::string> forced = std::move(report.conflicts);
    if (auto r = check_all(); !r) return std::unexpected(r.error());
    if (auto r = capture_conflicts(); !r) return std::unexpected(r.error());
    report.conflicts.insert(report.conflicts.begin(), forced.begin(), forced.end());
  }
  if (!report.conflicts.empty()) {
    if (auto r = store.sync(); !r) return std::unexpected(r.error());
  }
  for (const auto& c : report.conflicts) log::warning("overwriting (--force): " + c);
  report.conflicts.clear();

  OpenContent from_blob = [&](const FileMeta& st) -> Result<UniqueFd> {
    std::string blob = st.blob.value_or("");
    auto b = store.open_blob(blob);
    if (!b) return fail("the content of a change is missing from the store (blob " + blob + ")", b.error().err);
    return b;
  };
  // The first name in place of each recorded inode: the others become hard links of it.
  std::map<std::int64_t, std::pair<std::string, FileMeta>> first_name;
  auto same_file = [](const FileMeta& a, const FileMeta& b) {
    return a.blob.value_or("") == b.blob.value_or("") && a.mode.value_or(0) == b.mode.value_or(0) && a.uid == b.uid &&
           a.gid.value_or(0) == b.gid.value_or(0) && a.mtime_ns.value_or(0) == b.mtime_ns.value_or(0) &&
           a.xattrs == b.xattrs && a.size.value_or(0) == b.size.value_or(0);
  };
  std::vector<DirMeta> dirs;
  Progress progress(opts.progress, verb, changes->size());
  for (std::size_t i = 0; i < changes->size(); ++i) {
    progress.tick(i + 1);
    if (skip[i]) continue;
    const Change& c = (*changes)[i];
    bool linkable = type_of(c.after) == FileType::Regular && c.after->inode;
    if (checked[i].where == Where::After) {
      if (type_of(c.after) == FileType::Directory) dirs.push_back({c.path, *c.after});
      if (linkable) first_name.try_emplace(*c.after->inode, c.path, *c.after);
      continue;
    }
    const std::string* link_from = nullptr;
    if (linkable) {
      auto it = first_name.find(*c.after->inode);
      if (it != first_name.end() && same_file(it->second.second, *c.after)) link_from = &it->second.first;
    }
    // A directory replaced or removed invalidates the cached parent fd.
    if (type_of(c.before) == FileType::Directory || type_of(c.after) == FileType::Directory ||
        type_of(c.before) == FileType::Symlink) {
      tree.forget();
    }
    if (auto r = materialize(tree, c, tag, from_blob, dirs, link_from); !r) {
      // A failure (a full disk, a permission) rather than a crash: put back what was
      // already changed, newest first, so the tree is as it was before the operation.
      std::vector<DirMeta> undo_dirs;
      bool undone = true;
      tree.forget();
      for (std::size_t j = i + 1; j-- > 0;) {
        if (skip[j] || checked[j].where == Where::After) continue;
        Change back = inverse((*changes)[j]);
        auto where = check(store, tree, back);
        if (where && where->where == Where::After) continue;  // never got that far
        if (auto u = materialize(tree, back, tag, from_blob, undo_dirs); !u) {
          undone = false;
          log::error("could not undo " + log::quote(back.path) + ": " + u.error().message());
        }
      }
      if (undone && settle_dirs(tree, undo_dirs)) {
        if (on_rolled_back) on_rolled_back();
        return std::unexpected(SysError{r.error().what + "; nothing was changed", r.error().err});
      }
      return std::unexpected(r.error());
    }
    if (linkable) first_name.try_emplace(*c.after->inode, c.path, *c.after);
    ++report.applied;
  }
  if (auto r = settle_dirs(tree, dirs); !r) return std::unexpected(r.error());
  // Durable once, at the end, rather than an fsync per file.
  for (std::size_t i = 0; report.applied > 0 && i < tree.roots().size(); ++i) {
    if (auto fd = tree.root_fd(i); fd) {
      UniqueFd f(::openat(*fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (f) ::syncfs(f.get());
    }
  }
  return report;
}

Result<void> finish_accept(store::Store& store, const std::string& id, std::int64_t intent) {
  if (auto r = store.set_state(id, store::SessionState::Accepted); !r) return r;
  if (auto r = store.mark_applied(id); !r) return r;
  crash_point();
  if (auto r = store.remove_intent(intent); !r) return r;
  crash_point();
  return {};
}

Result<void> finish_restore(store::Store& store, const std::string& restore_id, const std::string& restored,
                            std::int64_t intent) {
  if (auto r = store.finish(restore_id, {.state = store::SessionState::Accepted}); !r) return r;
  if (auto r = store.mark_applied(restore_id); !r) return r;
  crash_point();
  if (auto r = store.set_state(restored, store::SessionState::Restored); !r) return r;
  crash_point();
  if (auto r = store.remove_intent(intent); !r) return r;
  crash_point();
  return {};
}

}  // namespace detail

Result<ApplyReport> apply_locked(store::Store& store, const store::Session& s, const ApplyOptions& opts) {
  // The check runs first and writes nothing; the intent is recorded before the first write.
  std::int64_t intent = -1;
  auto begin = intent_recorder(store, s.id, "accept", "", opts.force, intent);
  auto report = apply_changes(store, s, "accepting", opts, begin, [&] { (void)store.remove_intent(intent); });
  if (!report || !report->conflicts.empty()) return report;
  if (auto r = finish_accept(store, s.id, intent); !r) return std::unexpected(r.error());
  return report;
}

namespace {

// A pending session, locked for as long as the result lives.
struct PendingSession {
  store::SessionLock lock;
  store::Session session;
};

Result<PendingSession> lock_pending(store::Store& store, const std::string& id, const char* verb) {
  auto lock = store.lock_session(id);
  if (!lock) return std::unexpected(lock.error());
  auto s = store.get_session(id);
  if (!s) return std::unexpected(s.error());
  if (!*s) return fail_msg("no session " + id);
  if ((*s)->state != store::SessionState::Pending) {
    return fail_msg("session " + id.substr(0, 12) + " is " + state_name((*s)->state) +
                    ", not pending: only a pending session can be " + verb);
  }
  return PendingSession{std::move(*lock), std::move(**s)};
}

}  // namespace

Result<ApplyReport> accept_session(store::Store& store, const std::string& id, const ApplyOptions& opts) {
  auto p = lock_pending(store, id, "accepted");
  if (!p) return std::unexpected(p.error());
  return apply_locked(store, p->session, opts);
}

Result<ApplyReport> restore_session(store::Store& store, const std::string& id, const ApplyOptions& opts) {
  auto lock = store.lock_session(id);
  if (!lock) return std::unexpected(lock.error());
  auto got = store.get_session(id);
  if (!got) return std::unexpected(got.error());
  if (!*got) return fail_msg("no session " + id);
  const store::Session& s = **got;
  std::string short_id = id.substr(0, 12);
  switch (s.state) {
    case store::SessionState::Accepted: break;
    case store::SessionState::Restored: return fail_msg("session " + short_id + " is already restored");
    case store::SessionState::Pending:
      return fail_msg("session " + short_id + " is pending: nothing was applied (use `zerobox snapshot discard " +
                      short_id + "`)");
    default: return fail_msg("session " + short_id + " is " + state_name(s.state) + ": nothing to restore");
  }
  auto changes = store.changes(id);
  if (!changes) return std::unexpected(changes.error());
  if (auto r = validate_journal(store, s, *changes); !r) return std::unexpected(r.error());

  store::NewSession ns;
  ns.kind = store::SessionKind::Restore;
  ns.mode = store::SessionMode::Snapshot;
  ns.command = {"zerobox", "snapshot", "restore", id};
  ns.cwd = s.cwd;
  ns.roots = s.roots;
  ns.policy = s.policy;
  ns.parent = id;
  auto r_session = store.create_session(ns);
  if (!r_session) return std::unexpected(r_session.error());
  auto r_lock = store.lock_session(r_session->id);
  if (!r_lock) return std::unexpected(r_lock.error());
  std::vector<Change> inv;
  std::vector<std::string> refs;
  inv.reserve(changes->size());
  for (auto it = changes->rbegin(); it != changes->rend(); ++it) {
    Change c = inverse(*it);
    for (const auto* side : {&c.before, &c.after}) {
      if (*side && (*side)->blob && !(*side)->blob->empty()) refs.push_back(*(*side)->blob);
    }
    inv.push_back(std::move(c));
  }
  if (auto r = store.retain_blobs(refs); !r) return std::unexpected(r.error());
  if (auto r = store.add_changes(r_session->id, inv); !r) return std::unexpected(r.error());
  auto fresh = store.get_session(r_session->id);
  if (!fresh || !*fresh)
    return std::unexpected(fresh ? SysError{"journal: restore session vanished", 0} : fresh.error());
  std::int64_t intent = -1;
  auto begin = intent_recorder(store, r_session->id, "restore", id, opts.force, intent);
  bool rolled_back = false;
  auto report = apply_changes(store, **fresh, "restoring", opts, begin, [&] {
    (void)store.remove_intent(intent);
    rolled_back = true;
  });
  if (!report || !report->conflicts.empty()) {
    // Refused, failed before any write, or rolled back: the new session was never
    // applied and is not kept. Failed half-way: kept, with its intent, for recovery.
    if (intent < 0 || rolled_back) (void)store.remove_session(std::move(*r_lock));
    return report;
  }
  if (auto r = finish_restore(store, r_session->id, id, intent); !r) return std::unexpected(r.error());
  report->session = r_session->id;
  return report;
}

Result<void> discard_session(store::Store& store, const std::string& id) {
  auto p = lock_pending(store, id, "discarded");
  if (!p) return std::unexpected(p.error());
  return store.set_state(id, store::SessionState::Discarded);
}

Result<void> apply_from_file(const std::string& root, const Change& change, const std::string& content_path) {
  Tree tree({root});
  // Directories needed by an excluded file are created (they may be pending in the journal).
  std::string rel = root == "/" ? change.path.substr(1) : change.path.substr(root.size() + 1);
  for (std::size_t pos = rel.find('/'); pos != std::string::npos; pos = rel.find('/', pos + 1)) {
    std::string dir = path::join(root, rel.substr(0, pos));
    auto par = tree.parent(dir);
    if (!par) return std::unexpected(par.error());
    if (::mkdirat(par->fd, par->name.c_str(), 0755) != 0 && errno != EEXIST) return fail("mkdir " + log::quote(dir));
    tree.forget();
  }
  std::vector<DirMeta> dirs;
  OpenContent from_file = [&](const FileMeta&) -> Result<UniqueFd> {
    UniqueFd f(::open(content_path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!f) return fail("open " + log::quote(content_path));
    return f;
  };
  if (auto r = materialize(tree, change, "excluded", from_file, dirs); !r) return r;
  return settle_dirs(tree, dirs);
}

}  // namespace zb::snapshot
