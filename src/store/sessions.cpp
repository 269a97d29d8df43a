// Sessions: their rows (create, read, list, state and roots), resolving an id the user
// typed, the per-session lock and removing a session with its directory and blob
// references.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "store/internal.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"
#include "util/fs.hpp"
#include "util/path.hpp"
#include "util/random.hpp"
#include "util/text.hpp"

namespace zb::store {

using detail::in_quotes;
using detail::open_subdir;

namespace {

// Lists of byte strings (command, roots) as JSON: an element that is not UTF-8 is
// {"b64": "..."} (store.hpp).
std::string encode_list(const std::vector<std::string>& items) {
  auto arr = nlohmann::json::array();
  for (const auto& s : items) {
    if (text::valid_utf8(s)) {
      arr.push_back(s);
    } else {
      arr.push_back({{"b64", text::base64(s)}});
    }
  }
  return arr.dump();
}

std::optional<std::vector<std::string>> decode_list(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& e : j) {
    if (e.is_string()) {
      out.push_back(e.get<std::string>());
    } else if (e.is_object() && e.size() == 1 && e.contains("b64") && e["b64"].is_string()) {
      auto bytes = text::unbase64(e["b64"].get<std::string>());
      if (!bytes) return std::nullopt;
      out.push_back(std::move(*bytes));
    } else {
      return std::nullopt;
    }
  }
  return out;
}

constexpr const char* k_session_cols =
    "id, kind, mode, state, command, cwd, roots, policy, exit_code, signal, created_at, finished_at, "
    "applied_at, parent";

Result<Session> read_session(const sql::Stmt& st) {
  Session s;
  s.id = st.bytes(0);
  auto kind = parse_session_kind(st.bytes(1));
  auto mode = parse_session_mode(st.bytes(2));
  auto state = parse_session_state(st.bytes(3));
  auto command = decode_list(st.bytes(4));
  auto roots = decode_list(st.bytes(6));
  if (!kind || !mode || !state || !command || !roots) return fail_msg("journal: session " + s.id + " is malformed");
  s.kind = *kind;
  s.mode = *mode;
  s.state = *state;
  s.command = std::move(*command);
  s.cwd = st.bytes(5);
  s.roots = std::move(*roots);
  s.policy = st.opt_bytes(7);
  if (auto v = st.opt_int64(8)) s.exit_code = static_cast<int>(*v);
  if (auto v = st.opt_int64(9)) s.signal = static_cast<int>(*v);
  s.created_at = st.int64(10);
  s.finished_at = st.opt_int64(11);
  s.applied_at = st.opt_int64(12);
  s.parent = st.opt_bytes(13);
  return s;
}

}  // namespace

std::string Store::session_dir(std::string_view id) const { return m_dir + "/sessions/" + std::string(id); }

Result<Session> Store::create_session(const NewSession& ns) {
  Session s;
  // 128 random bits never collide in practice; EEXIST is still checked rather than
  // assumed away, since the directory is what a second session would overwrite.
  for (int attempt = 0;; ++attempt) {
    auto id = util::random_hex(16);
    if (!id) return std::unexpected(id.error());
    if (::mkdirat(m_sessions_fd.get(), id->c_str(), 0700) == 0) {
      s.id = std::move(*id);
      break;
    }
    if (errno != EEXIST || attempt >= 3) return fail("mkdir " + session_dir(*id));
  }
  // Until the row is recorded, the directory is removed again on every way out.
  struct Undo {
    int parent;
    std::string id, shown;
    bool armed = true;
    ~Undo() {
      if (armed) (void)util::remove_tree_at(parent, id, shown);
    }
  } undo{m_sessions_fd.get(), s.id, session_dir(s.id)};
  auto dir = open_subdir(m_sessions_fd.get(), s.id, session_dir(s.id), false);
  if (!dir) return std::unexpected(dir.error());
  for (const char* sub : {"upper", "work"}) {
    if (::mkdirat(dir->get(), sub, 0700) != 0) return fail("mkdir " + session_dir(s.id) + "/" + sub);
  }

  s.kind = ns.kind;
  s.mode = ns.mode;
  s.state = SessionState::Running;
  s.command = ns.command;
  s.cwd = ns.cwd;
  s.roots = ns.roots;
  s.policy = ns.policy;
  s.parent = ns.parent;
  s.created_at = detail::now_ns();
  auto st = sql::Stmt::prepare(m_db.get(),
                               "INSERT INTO sessions(id, kind, mode, state, command, cwd, roots, policy, "
                               "created_at, parent) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
  if (!st) return std::unexpected(st.error());
  st->bind_text(1, s.id)
      .bind_text(2, to_string(s.kind))
      .bind_text(3, to_string(s.mode))
      .bind_text(4, to_string(s.state))
      .bind_text(5, encode_list(s.command))
      .bind_text(6, s.cwd)
      .bind_text(7, encode_list(s.roots))
      .bind_opt_text(8, s.policy)
      .bind(9, s.created_at)
      .bind_opt_text(10, s.parent);
  if (auto r = st->run(); !r) return std::unexpected(r.error());
  undo.armed = false;
  return s;
}

Result<std::optional<Session>> Store::get_session(std::string_view id) {
  auto st = sql::Stmt::prepare(m_db.get(), std::string("SELECT ") + k_session_cols + " FROM sessions WHERE id = ?1");
  if (!st) return std::unexpected(st.error());
  auto row = st->bind_text(1, id).step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return std::optional<Session>();
  auto s = read_session(*st);
  if (!s) return std::unexpected(s.error());
  return std::optional<Session>(std::move(*s));
}

Result<std::vector<Session>> Store::list_sessions(std::optional<SessionState> state) {
  auto st = sql::Stmt::prepare(m_db.get(), std::string("SELECT ") + k_session_cols + " FROM sessions" +
                                               (state ? " WHERE state = ?1" : "") + " ORDER BY created_at, rowid");
  if (!st) return std::unexpected(st.error());
  if (state) st->bind_text(1, to_string(*state));
  std::vector<Session> out;
  for (;;) {
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    auto s = read_session(*st);
    if (!s) return std::unexpected(s.error());
    out.push_back(std::move(*s));
  }
  return out;
}

namespace {

// Runs an UPDATE of one session; "no session ID" when it matched no row.
Result<void> update_session(sqlite3* db, sql::Stmt& st, std::string_view id) {
  if (auto r = st.run(); !r) return r;
  if (sqlite3_changes(db) == 0) return fail("no session " + in_quotes(id), ENOENT);
  return {};
}

}  // namespace

Result<void> Store::set_state(std::string_view id, SessionState state) {
  auto st = sql::Stmt::prepare(m_db.get(), "UPDATE sessions SET state = ?2 WHERE id = ?1");
  if (!st) return std::unexpected(st.error());
  st->bind_text(1, id).bind_text(2, to_string(state));
  return update_session(m_db.get(), *st, id);
}

Result<void> Store::finish(std::string_view id, const Finish& f) {
  auto st = sql::Stmt::prepare(
      m_db.get(), "UPDATE sessions SET state = ?2, exit_code = ?3, signal = ?4, finished_at = ?5 WHERE id = ?1");
  if (!st) return std::unexpected(st.error());
  st->bind_text(1, id).bind_text(2, to_string(f.state)).bind_opt(3, f.exit_code).bind_opt(4, f.signal);
  st->bind(5, detail::now_ns());
  return update_session(m_db.get(), *st, id);
}

Result<void> Store::set_roots(std::string_view id, const std::vector<std::string>& roots) {
  auto st = sql::Stmt::prepare(m_db.get(), "UPDATE sessions SET roots = ?2 WHERE id = ?1");
  if (!st) return std::unexpected(st.error());
  st->bind_text(1, id).bind_text(2, encode_list(roots));
  return update_session(m_db.get(), *st, id);
}

Result<void> Store::mark_applied(std::string_view id) {
  auto st = sql::Stmt::prepare(m_db.get(), "UPDATE sessions SET applied_at = ?2 WHERE id = ?1");
  if (!st) return std::unexpected(st.error());
  st->bind_text(1, id).bind(2, detail::now_ns());
  return update_session(m_db.get(), *st, id);
}

Result<Store::Resolved> Store::resolve_id(std::string_view arg, std::string_view caller_cwd) {
  if (arg == "last") {
    // Newest first; the first session of the caller's directory wins, else the newest.
    auto st =
        sql::Stmt::prepare(m_db.get(), "SELECT id, cwd, roots FROM sessions ORDER BY created_at DESC, rowid DESC");
    if (!st) return std::unexpected(st.error());
    std::optional<std::string> newest;
    for (;;) {
      auto row = st->step();
      if (!row) return std::unexpected(row.error());
      if (!*row) break;
      std::string id = st->bytes(0);
      if (!newest) newest = id;
      bool own = !caller_cwd.empty() && st->bytes(1) == caller_cwd;
      if (!own && !caller_cwd.empty()) {
        auto roots = decode_list(st->bytes(2));
        if (!roots) return fail_msg("journal: session " + id + " is malformed");
        own = std::any_of(roots->begin(), roots->end(),
                          [&](const std::string& r) { return path::is_under(caller_cwd, r); });
      }
      if (own) return Resolved{std::move(id), false};
    }
    if (!newest) return fail_msg("no sessions yet");
    return Resolved{std::move(*newest), true};
  }
  auto none = fail_msg("no session matches " + in_quotes(arg));
  if (arg.empty() || arg.size() > 32) return none;
  for (char c : arg) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return none;
  }
  // Every id starting with the prefix sorts in [prefix, prefix + "~"), '~' being above
  // every hex digit, so the primary key index answers this.
  auto st = sql::Stmt::prepare(m_db.get(), "SELECT id FROM sessions WHERE id >= ?1 AND id < ?2 ORDER BY id LIMIT 6");
  if (!st) return std::unexpected(st.error());
  st->bind_text(1, arg).bind_text(2, std::string(arg) + "~");
  auto rows = st->column0();
  if (!rows) return std::unexpected(rows.error());
  std::vector<std::string> ids = std::move(*rows);
  if (ids.empty()) return none;
  if (ids.size() == 1) return Resolved{ids.front(), false};
  std::string msg = in_quotes(arg) + " is ambiguous: matches ";
  for (std::size_t i = 0; i < ids.size() && i < 5; ++i) msg += (i > 0 ? ", " : "") + ids[i];
  if (ids.size() > 5) msg += ", ...";
  return fail_msg(msg);
}

Result<SessionLock> Store::lock_session(std::string_view id_view) {
  std::string id(id_view);
  if (!valid_id(id)) return fail_msg("invalid session id " + in_quotes(id));
  auto dir = open_subdir(m_sessions_fd.get(), id, session_dir(id), false);
  if (!dir) return std::unexpected(dir.error());
  std::string path = session_dir(id) + "/lock";
  UniqueFd fd(::openat(dir->get(), "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return fail("open " + path);
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) return fail("flock " + path);
    std::string msg = "session " + id + " is in use by another zerobox";
    char buf[32] = {};
    ssize_t n = ::pread(fd.get(), buf, sizeof buf - 1, 0);
    long pid = 0;
    if (n > 0) {
      auto [end, ec] = std::from_chars(buf, buf + n, pid);
      if (ec != std::errc() || end == buf) pid = 0;
    }
    if (pid > 0) msg += " (pid " + std::to_string(pid) + ")";
    return fail_msg(msg);
  }
  // The pid is informational, for the message above; a failure to write it is harmless.
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd.get(), 0) == 0) (void)!::pwrite(fd.get(), pid.data(), pid.size(), 0);
  return SessionLock(std::move(id), std::move(fd));
}

Result<void> Store::remove_session(std::string_view id) {
  auto lock = lock_session(id);
  if (lock) return remove_session(std::move(*lock));
  // A row whose directory is gone (a crash inside create_session) cannot be in use.
  if (lock.error().err != ENOENT) return std::unexpected(lock.error());
  return remove_session_unlocked(std::string(id));
}

Result<void> Store::remove_session(SessionLock lock) { return remove_session_unlocked(lock.id()); }

Result<void> Store::remove_session_unlocked(const std::string& id) {
  if (!valid_id(id)) return fail_msg("invalid session id " + in_quotes(id));
  bool had_row = false;
  {
    auto blobs_lock = detail::BlobsLock::acquire(m_blobs_fd.get());
    if (!blobs_lock) return std::unexpected(blobs_lock.error());
    sqlite3* db = m_db.get();
    auto txn = sql::Transaction::begin(db);
    if (!txn) return std::unexpected(txn.error());
    auto st = sql::Stmt::prepare(db,
                                 "SELECT old_blob FROM changes WHERE session = ?1 AND old_blob IS NOT NULL "
                                 "UNION ALL SELECT new_blob FROM changes WHERE session = ?1 AND new_blob IS NOT NULL");
    if (!st) return std::unexpected(st.error());
    st->bind_text(1, id);
    auto rows = st->column0();
    if (!rows) return std::unexpected(rows.error());
    std::vector<std::string> hashes = std::move(*rows);
    auto del_intents = sql::Stmt::prepare(db, "DELETE FROM intents WHERE session = ?1");
    if (!del_intents) return std::unexpected(del_intents.error());
    if (auto r = del_intents->bind_text(1, id).run(); !r) return r;
    auto del = sql::Stmt::prepare(db, "DELETE FROM sessions WHERE id = ?1");
    if (!del) return std::unexpected(del.error());
    if (auto r = del->bind_text(1, id).run(); !r) return r;
    had_row = sqlite3_changes(db) > 0;
    auto dropped = detail::drop_blob_refs(db, hashes);
    if (!dropped) return std::unexpected(dropped.error());
    if (auto r = txn->commit(); !r) return r;
    detail::unlink_blob_files(m_blobs_fd.get(), dropped->deleted);
  }
  struct stat st{};
  bool had_dir = ::fstatat(m_sessions_fd.get(), id.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (auto r = util::remove_tree_at(m_sessions_fd.get(), id, session_dir(id)); !r) return r;
  if (!had_row && !had_dir) return fail("no session " + id, ENOENT);
  return {};
}

}  // namespace zb::store
