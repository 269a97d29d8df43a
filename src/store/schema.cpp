// The journal's schema: the migrations from version 0 (a new journal) to
// k_schema_version, reading the version, and WAL mode. The schema itself is specified in
// store.hpp.
#include <unistd.h>

#include <array>
#include <charconv>
#include <string>

#include "store/internal.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"

namespace zb::store {

namespace {

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

}  // namespace

namespace detail {

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

}  // namespace detail

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

Result<int> Store::schema_version() { return read_version(m_db.get()); }

}  // namespace zb::store
