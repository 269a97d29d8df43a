// The journal: opening and migrating it, sessions, changes and session locks.
// Blobs are in blobs.cpp; the format is specified in store.hpp.
#include "store/store.hpp"
#include "util/text.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <ctime>
#include <nlohmann/json.hpp>
#include <utility>

#include "store/internal.hpp"
#include "store/registry.hpp"
#include "store/sqlite.hpp"
#include "util/env.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"
#include "util/path.hpp"
#include "util/random.hpp"

namespace zb::store {

namespace {

constexpr int k_busy_timeout_ms = 5000;

// --- Spellings --------------------------------------------------------------------

constexpr std::array<std::string_view, 2> k_kinds = {"run", "restore"};
constexpr std::array<std::string_view, 3> k_modes = {"snapshot", "restore", "review"};
constexpr std::array<std::string_view, 6> k_states = {"running",  "pending",  "accepted",
                                                      "discarded", "restored", "failed"};
constexpr std::array<std::string_view, 5> k_change_kinds = {"added", "modified", "deleted", "type_changed",
                                                            "mode_changed"};
constexpr std::array<std::string_view, 7> k_file_types = {"file", "dir", "symlink", "fifo",
                                                          "socket", "char", "block"};

template <class E, std::size_t N>
std::string_view spell(const std::array<std::string_view, N>& names, E v) {
  auto i = static_cast<std::size_t>(v);
  return i < N ? names[i] : std::string_view("?");
}

template <class E, std::size_t N>
std::optional<E> parse(const std::array<std::string_view, N>& names, std::string_view s) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == s) return static_cast<E>(i);
  }
  return std::nullopt;
}

// --- Lists of byte strings as JSON ------------------------------------------------

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

// --- Filesystem -------------------------------------------------------------------

Result<UniqueFd> open_subdir(int parent, const std::string& name, const std::string& shown, bool create) {
  if (create && ::mkdirat(parent, name.c_str(), 0700) != 0 && errno != EEXIST) return fail("mkdir " + shown);
  UniqueFd fd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return fail("open " + shown);
  return fd;
}

// 'X' for messages, escaped when X could forge output.
std::string in_quotes(std::string_view s) {
  std::string q = log::quote(s);
  return !q.empty() && q.front() == '\'' ? q : "'" + q + "'";
}

// --- Schema -----------------------------------------------------------------------

// Migration N takes a journal from version N-1 to N. Append new steps; never edit one
// that has shipped, since journals at every older version must still upgrade.
struct Migration {
  int to;
  const char* sql;
};

constexpr const char* k_schema_v1 = R"sql(
CREATE TABLE sessions(
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  mode TEXT NOT NULL,
  state TEXT NOT NULL,
  command TEXT NOT NULL,
  cwd TEXT NOT NULL,
  roots TEXT NOT NULL,
  policy TEXT,
  exit_code INTEGER,
  signal INTEGER,
  created_at INTEGER NOT NULL,
  finished_at INTEGER,
  applied_at INTEGER,
  parent TEXT
);
CREATE TABLE changes(
  session TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  path BLOB NOT NULL,
  kind TEXT NOT NULL,
  old_type TEXT, new_type TEXT,
  old_mode INTEGER, new_mode INTEGER,
  old_size INTEGER, new_size INTEGER,
  old_mtime_ns INTEGER, new_mtime_ns INTEGER,
  old_uid INTEGER, old_gid INTEGER, new_uid INTEGER, new_gid INTEGER,
  old_blob TEXT, new_blob TEXT,
  old_link BLOB, new_link BLOB,
  PRIMARY KEY(session, seq)
);
CREATE TABLE blobs(
  hash TEXT PRIMARY KEY,
  size INTEGER NOT NULL,
  refs INTEGER NOT NULL
);
CREATE TABLE intents(
  id INTEGER PRIMARY KEY,
  session TEXT NOT NULL,
  op TEXT NOT NULL,
  path BLOB NOT NULL,
  state TEXT NOT NULL,
  data TEXT
);
CREATE INDEX intents_by_session ON intents(session);
)sql";

// Version 2: what restore needs to bring back besides content and mode (xattrs, hard
// links) and the baseline of opaque directories.
constexpr const char* k_schema_v2 = R"sql(
ALTER TABLE changes ADD COLUMN old_xattrs BLOB;
ALTER TABLE changes ADD COLUMN new_xattrs BLOB;
ALTER TABLE changes ADD COLUMN old_inode INTEGER;
ALTER TABLE changes ADD COLUMN new_inode INTEGER;
CREATE TABLE opaque(
  session TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  path BLOB NOT NULL,
  names BLOB NOT NULL,
  PRIMARY KEY(session, path)
);
)sql";

constexpr std::array<Migration, 2> k_migrations = {{{1, k_schema_v1}, {2, k_schema_v2}}};
static_assert(k_migrations.back().to == k_schema_version);

// meta.schema_version, or 0 for a journal without one (new, or not ours yet).
Result<int> read_version(sqlite3* db) {
  auto has_meta = sql::Stmt::prepare(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
  if (!has_meta) return std::unexpected(has_meta.error());
  auto row = has_meta->step();
  if (!row) return std::unexpected(row.error());
  if (has_meta->int64(0) == 0) return 0;
  auto st = sql::Stmt::prepare(db, "SELECT value FROM meta WHERE key = 'schema_version'");
  if (!st) return std::unexpected(st.error());
  row = st->step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return 0;
  std::string v = st->bytes(0);
  int n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < 0) return fail_msg("malformed schema_version '" + v + "'");
  return n;
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

// Switches the journal to WAL unless it is already. This is the first statement that reads
// the file, so a journal that is not SQLite fails here.
Result<void> enable_wal(sqlite3* db, const std::string& journal) {
  auto mode = sql::Stmt::prepare(db, "PRAGMA journal_mode");
  if (!mode) return sql::error(db, "open journal " + journal);
  auto row = mode->step();
  if (!row) return sql::error(db, "open journal " + journal);
  if (!*row || mode->bytes(0) == "wal") return {};
  // Switching to WAL needs the file to itself for a moment: the first openers of a new
  // store, racing, can get SQLITE_BUSY here without the busy handler being consulted.
  mode = sql::Stmt::prepare(db, "PRAGMA journal_mode = WAL");
  if (!mode) return sql::error(db, "open journal " + journal);
  for (int attempt = 0;; ++attempt) {
    row = mode->step();
    if (row && *row) {
      std::string now = mode->bytes(0);
      if (now == "wal") break;
      return fail_msg("journal " + journal + ": cannot enable WAL (journal_mode is " + now + ")");
    }
    int code = sqlite3_errcode(db) & 0xff;
    if ((code != SQLITE_BUSY && code != SQLITE_LOCKED) || attempt >= 250) {
      return sql::error(db, "open journal " + journal);
    }
    mode->reset();
    ::usleep(20'000);
  }
  return {};
}

}  // namespace

// --- Public helpers ---------------------------------------------------------------

std::string_view to_string(SessionKind v) { return spell(k_kinds, v); }
std::string_view to_string(SessionMode v) { return spell(k_modes, v); }
std::string_view to_string(SessionState v) { return spell(k_states, v); }
std::string_view to_string(ChangeKind v) { return spell(k_change_kinds, v); }
std::string_view to_string(FileType v) { return spell(k_file_types, v); }
std::optional<SessionKind> parse_session_kind(std::string_view s) { return parse<SessionKind>(k_kinds, s); }
std::optional<SessionMode> parse_session_mode(std::string_view s) { return parse<SessionMode>(k_modes, s); }
std::optional<SessionState> parse_session_state(std::string_view s) { return parse<SessionState>(k_states, s); }
std::optional<ChangeKind> parse_change_kind(std::string_view s) { return parse<ChangeKind>(k_change_kinds, s); }
std::optional<FileType> parse_file_type(std::string_view s) { return parse<FileType>(k_file_types, s); }

std::optional<FileType> file_type_of(mode_t st_mode) {
  switch (st_mode & S_IFMT) {
    case S_IFREG: return FileType::Regular;
    case S_IFDIR: return FileType::Directory;
    case S_IFLNK: return FileType::Symlink;
    case S_IFIFO: return FileType::Fifo;
    case S_IFSOCK: return FileType::Socket;
    case S_IFCHR: return FileType::CharDevice;
    case S_IFBLK: return FileType::BlockDevice;
    default: return std::nullopt;
  }
}

bool valid_id(std::string_view s) {
  if (s.size() != 32) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

namespace detail {

Result<void> make_dirs(const std::string& dir) {
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    std::string prefix = dir.substr(0, pos);
    if (prefix.empty()) continue;
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) return fail("mkdir " + prefix);
  }
  return {};
}

std::int64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace detail

// --- Opening ----------------------------------------------------------------------

void Store::DbClose::operator()(sqlite3* db) const { sqlite3_close_v2(db); }

Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

Result<std::string> Store::location(const std::vector<std::string>& environ) {
  auto get = [&](std::string_view key) -> std::string {
    return env::find(environ, key).value_or("");
  };
  if (auto v = get("ZEROBOX_HOME"); !v.empty()) {
    if (v.front() != '/') return fail_msg("ZEROBOX_HOME must be an absolute path, not " + in_quotes(v));
    return v;
  }
  return default_location(environ);
}

Result<std::string> Store::default_location(const std::vector<std::string>& environ) {
  auto get = [&](std::string_view key) -> std::string {
    return env::find(environ, key).value_or("");
  };
  if (auto v = get("XDG_STATE_HOME"); !v.empty() && v.front() == '/') return v + "/zerobox";
  if (auto v = get("HOME"); !v.empty() && v.front() == '/') return v + "/.local/state/zerobox";
  return fail_msg("cannot find the store: set ZEROBOX_HOME, XDG_STATE_HOME or HOME to an absolute path");
}

Result<Store> Store::open(const std::string& dir, Registry* registry) {
  Store s;
  s.m_dir = dir;
  while (s.m_dir.size() > 1 && s.m_dir.back() == '/') s.m_dir.pop_back();
  if (registry) {
    // Under the registry's lock: a run that starts later masks the store; one that is
    // running now is in running/, and is checked.
    auto lock = registry->lock();
    if (!lock) return std::unexpected(lock.error());
    if (auto r = registry->admit_store(*lock, s.m_dir); !r) return std::unexpected(r.error());
  } else if (auto r = detail::make_dirs(s.m_dir); !r) {
    return std::unexpected(r.error());
  }
  // The store directory itself may be a symlink the user chose; nothing below it is
  // followed.
  s.m_dir_fd.reset(::open(s.m_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!s.m_dir_fd) return fail("open " + s.m_dir);
  auto blobs = open_subdir(s.m_dir_fd.get(), "blobs", s.m_dir + "/blobs", true);
  if (!blobs) return std::unexpected(blobs.error());
  s.m_blobs_fd = std::move(*blobs);
  auto sessions = open_subdir(s.m_dir_fd.get(), "sessions", s.m_dir + "/sessions", true);
  if (!sessions) return std::unexpected(sessions.error());
  s.m_sessions_fd = std::move(*sessions);

  std::string journal = s.m_dir + "/journal.db";
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(journal.c_str(), &raw,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW, nullptr);
  s.m_db.reset(raw);
  if (rc != SQLITE_OK) return sql::error(raw, "open journal " + journal);
  sqlite3* db = s.m_db.get();
  sqlite3_busy_timeout(db, k_busy_timeout_ms);
  sqlite3_extended_result_codes(db, 1);

  if (auto r = enable_wal(db, journal); !r) return std::unexpected(r.error());
  if (auto r = sql::exec(db, "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL"); !r) {
    return fail_msg("journal " + journal + ": " + r.error().message());
  }
  if (auto r = s.migrate(); !r) return fail_msg("journal " + journal + ": " + r.error().message());
  return s;
}

Result<void> Store::migrate() {
  sqlite3* db = m_db.get();
  auto version = read_version(db);
  if (!version) return std::unexpected(version.error());
  if (*version == k_schema_version) return {};
  auto newer = [](int v) {
    return fail_msg("schema version " + std::to_string(v) + " is newer than this zerobox understands (" +
                    std::to_string(k_schema_version) + ")");
  };
  if (*version > k_schema_version) return newer(*version);

  auto txn = sql::Transaction::begin(db);
  if (!txn) return std::unexpected(txn.error());
  // Another process may have migrated between the read above and the lock.
  version = read_version(db);
  if (!version) return std::unexpected(version.error());
  if (*version > k_schema_version) return newer(*version);
  if (*version == k_schema_version) return {};
  if (auto r = sql::exec(db, "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)"); !r) {
    return r;
  }
  for (const auto& m : k_migrations) {
    if (m.to <= *version) continue;
    if (auto r = sql::exec(db, m.sql); !r) {
      return fail_msg("migrating to schema version " + std::to_string(m.to) + ": " + r.error().message());
    }
  }
  auto st = sql::Stmt::prepare(db, "INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?1)");
  if (!st) return std::unexpected(st.error());
  if (auto r = st->bind_text(1, std::to_string(k_schema_version)).run(); !r) return r;
  return txn->commit();
}

Result<void> Store::sync() {
  if (::syncfs(m_dir_fd.get()) != 0) return fail("syncfs " + m_dir);
  return {};
}

Result<int> Store::schema_version() { return read_version(m_db.get()); }

// --- Sessions ---------------------------------------------------------------------

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
    auto st = sql::Stmt::prepare(m_db.get(), "SELECT id, cwd, roots FROM sessions ORDER BY created_at DESC, rowid DESC");
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
  struct stat st {};
  bool had_dir = ::fstatat(m_sessions_fd.get(), id.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (auto r = util::remove_tree_at(m_sessions_fd.get(), id, session_dir(id)); !r) return r;
  if (!had_row && !had_dir) return fail("no session " + id, ENOENT);
  return {};
}

// --- Changes ----------------------------------------------------------------------

namespace {

template <class T>
std::optional<T> narrow(std::optional<std::int64_t> v) {
  if (!v) return std::nullopt;
  return static_cast<T>(*v);
}

// The columns of one side of a change, in the order bind_side and read_side use: every
// statement below lists the old_* columns, then the new_* ones, this way.
constexpr const char* k_side_cols_old =
    "old_type, old_mode, old_size, old_mtime_ns, old_uid, old_gid, old_blob, old_link, old_xattrs, old_inode";
constexpr const char* k_side_cols_new =
    "new_type, new_mode, new_size, new_mtime_ns, new_uid, new_gid, new_blob, new_link, new_xattrs, new_inode";
constexpr int k_side_cols = 10;

// Binds one side to the k_side_cols parameters from `first` on; all NULL when absent.
void bind_side(sql::Stmt& st, int first, const std::optional<FileMeta>& m) {
  if (!m) {
    for (int i = 0; i < k_side_cols; ++i) st.bind_null(first + i);
    return;
  }
  st.bind_text(first, to_string(m->type));
  st.bind_opt(first + 1, m->mode).bind_opt(first + 2, m->size).bind_opt(first + 3, m->mtime_ns);
  st.bind_opt(first + 4, m->uid).bind_opt(first + 5, m->gid);
  st.bind_opt_text(first + 6, m->blob).bind_opt_blob(first + 7, m->link);
  st.bind_opt_blob(first + 8, m->xattrs).bind_opt(first + 9, m->inode);
}

// Reads one side from the k_side_cols columns from `first` on: absent when its type is
// NULL. False for a type the journal does not know.
bool read_side(const sql::Stmt& st, int first, std::optional<FileMeta>& out) {
  out.reset();
  auto type = st.opt_bytes(first);
  if (!type) return true;
  auto t = parse_file_type(*type);
  if (!t) return false;
  FileMeta& m = out.emplace();
  m.type = *t;
  m.mode = narrow<std::uint32_t>(st.opt_int64(first + 1));
  m.size = st.opt_int64(first + 2);
  m.mtime_ns = st.opt_int64(first + 3);
  m.uid = narrow<std::uint32_t>(st.opt_int64(first + 4));
  m.gid = narrow<std::uint32_t>(st.opt_int64(first + 5));
  m.blob = st.opt_bytes(first + 6);
  m.link = st.opt_bytes(first + 7);
  m.xattrs = st.opt_bytes(first + 8);
  m.inode = st.opt_int64(first + 9);
  return true;
}

// add_changes inside the caller's transaction.
Result<void> append_changes(sqlite3* db, std::string_view session, const std::vector<Change>& changes) {
  auto exists = sql::Stmt::prepare(db, "SELECT 1 FROM sessions WHERE id = ?1");
  if (!exists) return std::unexpected(exists.error());
  auto row = exists->bind_text(1, session).step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return fail("no session " + in_quotes(session), ENOENT);
  auto last = sql::Stmt::prepare(db, "SELECT coalesce(max(seq), 0) FROM changes WHERE session = ?1");
  if (!last) return std::unexpected(last.error());
  row = last->bind_text(1, session).step();
  if (!row) return std::unexpected(row.error());
  std::int64_t seq = last->int64(0);

  auto st = sql::Stmt::prepare(db, std::string("INSERT INTO changes(session, seq, path, kind, ") + k_side_cols_old + ", " +
                                       k_side_cols_new +
                                       ") VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, "
                                       "?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24)");
  if (!st) return std::unexpected(st.error());
  for (const auto& c : changes) {
    st->reset();
    st->bind_text(1, session).bind(2, ++seq).bind_blob(3, c.path).bind_text(4, to_string(c.kind));
    bind_side(*st, 5, c.before);
    bind_side(*st, 5 + k_side_cols, c.after);
    if (auto r = st->run(); !r) return r;
  }
  return {};
}

}  // namespace

Result<void> Store::add_changes(std::string_view session, const std::vector<Change>& changes) {
  sqlite3* db = m_db.get();
  auto txn = sql::Transaction::begin(db);
  if (!txn) return std::unexpected(txn.error());
  if (auto r = append_changes(db, session, changes); !r) return r;
  return txn->commit();
}

Result<std::vector<Change>> Store::changes(std::string_view session) {
  auto st = sql::Stmt::prepare(m_db.get(), std::string("SELECT seq, path, kind, ") + k_side_cols_old + ", " + k_side_cols_new +
                                               " FROM changes WHERE session = ?1 ORDER BY seq");
  if (!st) return std::unexpected(st.error());
  st->bind_text(1, session);
  std::vector<Change> out;
  for (;;) {
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    Change c;
    c.seq = st->int64(0);
    c.path = st->bytes(1);
    auto kind = parse_change_kind(st->bytes(2));
    bool sides = read_side(*st, 3, c.before) && read_side(*st, 3 + k_side_cols, c.after);
    if (!kind || !sides) {
      return fail_msg("journal: change " + std::to_string(c.seq) + " of session " + std::string(session) +
                      " is malformed");
    }
    c.kind = *kind;
    out.push_back(std::move(c));
  }
  return out;
}

Result<std::vector<std::int64_t>> Store::count_changes(std::string_view session) {
  auto st = sql::Stmt::prepare(m_db.get(), "SELECT kind, count(*) FROM changes WHERE session = ?1 GROUP BY kind");
  if (!st) return std::unexpected(st.error());
  st->bind_text(1, session);
  std::vector<std::int64_t> out(5, 0);
  for (;;) {
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    if (auto k = parse_change_kind(st->bytes(0))) out[static_cast<std::size_t>(*k)] += st->int64(1);
  }
  return out;
}

Result<void> Store::set_change_old(std::string_view session, const Change& c) {
  sqlite3* db = m_db.get();
  std::optional<std::string> previous;
  {
    auto txn = sql::Transaction::begin(db);
    if (!txn) return std::unexpected(txn.error());
    auto get = sql::Stmt::prepare(db, "SELECT old_blob FROM changes WHERE session = ?1 AND seq = ?2");
    if (!get) return std::unexpected(get.error());
    auto row = get->bind_text(1, session).bind(2, c.seq).step();
    if (!row) return std::unexpected(row.error());
    if (!*row) return fail("no change " + std::to_string(c.seq) + " in session " + in_quotes(session), ENOENT);
    previous = get->opt_bytes(0);
    auto st = sql::Stmt::prepare(db,
                                 "UPDATE changes SET old_type = ?3, old_mode = ?4, old_size = ?5, old_mtime_ns = ?6, "
                                 "old_uid = ?7, old_gid = ?8, old_blob = ?9, old_link = ?10, old_xattrs = ?11, "
                                 "old_inode = ?12 WHERE session = ?1 AND seq = ?2");
    if (!st) return std::unexpected(st.error());
    st->bind_text(1, session).bind(2, c.seq);
    bind_side(*st, 3, c.before);  // the old_* columns in k_side_cols_old's order
    if (auto r = st->run(); !r) return r;
    if (auto r = txn->commit(); !r) return r;
  }
  if (previous && !previous->empty()) return release_blob(*previous);
  return {};
}

// --- Intents ------------------------------------------------------------------------

Result<std::int64_t> Store::add_intent(std::string_view session, std::string_view op, std::string_view data) {
  auto st = sql::Stmt::prepare(m_db.get(),
                               "INSERT INTO intents(session, op, path, state, data) VALUES(?1, ?2, '', 'started', ?3)");
  if (!st) return std::unexpected(st.error());
  st->bind_text(1, session).bind_text(2, op).bind_text(3, data);
  if (auto r = st->run(); !r) return std::unexpected(r.error());
  return sqlite3_last_insert_rowid(m_db.get());
}

Result<std::vector<Intent>> Store::intents() {
  auto st = sql::Stmt::prepare(m_db.get(), "SELECT id, session, op, state, coalesce(data, '') FROM intents ORDER BY id");
  if (!st) return std::unexpected(st.error());
  std::vector<Intent> out;
  for (;;) {
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    out.push_back({st->int64(0), st->bytes(1), st->bytes(2), st->bytes(3), st->bytes(4)});
  }
  return out;
}

Result<void> Store::remove_intent(std::int64_t id) {
  auto st = sql::Stmt::prepare(m_db.get(), "DELETE FROM intents WHERE id = ?1");
  if (!st) return std::unexpected(st.error());
  return st->bind(1, id).run();
}

// --- Baselines and inserted changes -------------------------------------------------

std::string encode_xattrs(const Xattrs& x) {
  Xattrs sorted = x;
  std::sort(sorted.begin(), sorted.end());
  std::string out;
  for (const auto& [name, value] : sorted) {
    out += name;
    out += '\0';
    auto n = static_cast<std::uint32_t>(value.size());
    for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((n >> shift) & 0xff);
    out += value;
  }
  return out;
}

std::optional<Xattrs> decode_xattrs(std::string_view s) {
  Xattrs out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    std::size_t nul = s.find('\0', pos);
    if (nul == std::string_view::npos || nul == pos || s.size() - nul - 1 < 4) return std::nullopt;
    std::uint32_t n = 0;
    for (std::size_t i = 0; i < 4; ++i) n = (n << 8) | static_cast<unsigned char>(s[nul + 1 + i]);
    std::size_t value_at = nul + 5;
    if (s.size() - value_at < n) return std::nullopt;
    out.emplace_back(std::string(s.substr(pos, nul - pos)), std::string(s.substr(value_at, n)));
    pos = value_at + n;
  }
  return out;
}

Result<void> Store::add_opaque_dirs(std::string_view session, const std::vector<OpaqueDir>& dirs) {
  if (dirs.empty()) return {};
  sqlite3* db = m_db.get();
  auto txn = sql::Transaction::begin(db);
  if (!txn) return std::unexpected(txn.error());
  auto st = sql::Stmt::prepare(db, "INSERT OR REPLACE INTO opaque(session, path, names) VALUES(?1, ?2, ?3)");
  if (!st) return std::unexpected(st.error());
  for (const auto& d : dirs) {
    std::string names;
    for (const auto& n : d.names) {
      names += n;
      names += '\0';
    }
    st->reset();
    if (auto r = st->bind_text(1, session).bind_blob(2, d.path).bind_blob(3, names).run(); !r) return r;
  }
  return txn->commit();
}

Result<std::vector<OpaqueDir>> Store::opaque_dirs(std::string_view session) {
  auto st = sql::Stmt::prepare(m_db.get(), "SELECT path, names FROM opaque WHERE session = ?1 ORDER BY path");
  if (!st) return std::unexpected(st.error());
  st->bind_text(1, session);
  std::vector<OpaqueDir> out;
  for (;;) {
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    OpaqueDir d;
    d.path = st->bytes(0);
    std::string names = st->bytes(1);
    for (std::size_t pos = 0; pos < names.size();) {
      std::size_t nul = names.find('\0', pos);
      if (nul == std::string::npos) nul = names.size();
      d.names.push_back(names.substr(pos, nul - pos));
      pos = nul + 1;
    }
    out.push_back(std::move(d));
  }
  return out;
}

Result<void> Store::insert_changes(std::string_view session, std::int64_t before_seq, const std::vector<Change>& changes) {
  if (changes.empty()) return {};
  sqlite3* db = m_db.get();
  auto txn = sql::Transaction::begin(db);
  if (!txn) return std::unexpected(txn.error());
  auto has = sql::Stmt::prepare(db, "SELECT 1 FROM changes WHERE session = ?1 AND seq = ?2");
  if (!has) return std::unexpected(has.error());
  auto row = has->bind_text(1, session).bind(2, before_seq).step();
  if (!row) return std::unexpected(row.error());
  if (*row) {
    // Make room: seq is part of the primary key, so the rows move through negative
    // numbers rather than colliding with each other on the way up.
    auto n = static_cast<std::int64_t>(changes.size());
    auto away = sql::Stmt::prepare(db, "UPDATE changes SET seq = -(seq + ?3) WHERE session = ?1 AND seq >= ?2");
    if (!away) return std::unexpected(away.error());
    if (auto r = away->bind_text(1, session).bind(2, before_seq).bind(3, n).run(); !r) return r;
    auto back = sql::Stmt::prepare(db, "UPDATE changes SET seq = -seq WHERE session = ?1 AND seq < 0");
    if (!back) return std::unexpected(back.error());
    if (auto r = back->bind_text(1, session).run(); !r) return r;
    auto put = sql::Stmt::prepare(db, "UPDATE changes SET seq = ?3 WHERE session = ?1 AND seq = ?2");
    if (!put) return std::unexpected(put.error());
    // add_changes (below, in the same transaction) appends after the current maximum: the
    // new rows are numbered there and then moved into the gap.
    auto last = sql::Stmt::prepare(db, "SELECT coalesce(max(seq), 0) FROM changes WHERE session = ?1");
    if (!last) return std::unexpected(last.error());
    row = last->bind_text(1, session).step();
    if (!row) return std::unexpected(row.error());
    std::int64_t top = last->int64(0);
    if (auto r = append_changes(db, session, changes); !r) return r;
    for (std::int64_t i = 0; i < n; ++i) {
      put->reset();
      if (auto r = put->bind_text(1, session).bind(2, top + 1 + i).bind(3, before_seq + i).run(); !r) return r;
    }
    return txn->commit();
  }
  if (auto r = append_changes(db, session, changes); !r) return r;
  return txn->commit();
}

}  // namespace zb::store
