// Changes and intents: appending, reading, counting and inserting the rows of `changes`
// (one side of a row is one FileMeta), the baselines of opaque directories, the xattr
// encoding, and the intents of operations on the real filesystem.
#include <algorithm>
#include <cerrno>
#include <optional>
#include <string>
#include <utility>

#include "store/internal.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"

namespace zb::store {

using detail::in_quotes;

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

  auto st = sql::Stmt::prepare(
      db, std::string("INSERT INTO changes(session, seq, path, kind, ") + k_side_cols_old + ", " + k_side_cols_new +
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
  auto st = sql::Stmt::prepare(m_db.get(), std::string("SELECT seq, path, kind, ") + k_side_cols_old + ", " +
                                               k_side_cols_new + " FROM changes WHERE session = ?1 ORDER BY seq");
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
  auto st =
      sql::Stmt::prepare(m_db.get(), "SELECT id, session, op, state, coalesce(data, '') FROM intents ORDER BY id");
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

Result<void> Store::insert_changes(std::string_view session, std::int64_t before_seq,
                                   const std::vector<Change>& changes) {
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
