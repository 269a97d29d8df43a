#include "store/sqlite.hpp"

#include <utility>

namespace zb::store::sql {

namespace {

// SQLITE_TRANSIENT is an old-style cast of -1 to a function pointer; spelled here once.
sqlite3_destructor_type transient() {
  return reinterpret_cast<sqlite3_destructor_type>(static_cast<std::intptr_t>(-1));
}

}  // namespace

std::unexpected<SysError> error(sqlite3* db, std::string what) {
  return fail_msg(std::move(what) + ": " + (db != nullptr ? sqlite3_errmsg(db) : "out of memory"));
}

Result<void> exec(sqlite3* db, const char* sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
    std::string text = msg != nullptr ? msg : sqlite3_errmsg(db);
    sqlite3_free(msg);
    std::string_view head(sql);
    head = head.substr(0, head.find_first_of("(;"));
    return fail_msg("sqlite " + std::string(head) + ": " + text);
  }
  return {};
}

Result<Stmt> Stmt::prepare(sqlite3* db, std::string_view sql) {
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &s, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(s);
    return error(db, "sqlite prepare " + std::string(sql.substr(0, 40)));
  }
  return Stmt(db, s);
}

void Stmt::check_bind(int rc) {
  if (rc != SQLITE_OK && m_bind_rc == SQLITE_OK) m_bind_rc = rc;
}

Stmt& Stmt::bind(int idx, std::int64_t v) {
  check_bind(sqlite3_bind_int64(m_stmt.get(), idx, v));
  return *this;
}

Stmt& Stmt::bind_text(int idx, std::string_view v) {
  check_bind(sqlite3_bind_text64(m_stmt.get(), idx, v.data(), v.size(), transient(), SQLITE_UTF8));
  return *this;
}

Stmt& Stmt::bind_blob(int idx, std::string_view v) {
  // A zero-length blob must not become NULL: sqlite3_bind_blob64 with a null pointer does.
  static const char empty = 0;
  check_bind(sqlite3_bind_blob64(m_stmt.get(), idx, v.empty() ? &empty : v.data(), v.size(), transient()));
  return *this;
}

Stmt& Stmt::bind_null(int idx) {
  check_bind(sqlite3_bind_null(m_stmt.get(), idx));
  return *this;
}

Result<bool> Stmt::step() {
  if (m_bind_rc != SQLITE_OK) {
    return fail_msg(std::string("sqlite bind: ") + sqlite3_errstr(m_bind_rc));
  }
  int rc = sqlite3_step(m_stmt.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  const char* sql = sqlite3_sql(m_stmt.get());
  std::string_view head(sql != nullptr ? sql : "");
  return error(m_db, "sqlite " + std::string(head.substr(0, head.find_first_of("(;"))));
}

Result<std::vector<std::string>> Stmt::column0() {
  std::vector<std::string> out;
  for (;;) {
    auto row = step();
    if (!row) return std::unexpected(row.error());
    if (!*row) return out;
    out.push_back(bytes(0));
  }
}

Result<void> Stmt::run() {
  auto r = step();
  if (!r) return std::unexpected(r.error());
  return {};
}

void Stmt::reset() {
  sqlite3_reset(m_stmt.get());
  sqlite3_clear_bindings(m_stmt.get());
  m_bind_rc = SQLITE_OK;
}

bool Stmt::is_null(int col) const { return sqlite3_column_type(m_stmt.get(), col) == SQLITE_NULL; }

std::int64_t Stmt::int64(int col) const { return sqlite3_column_int64(m_stmt.get(), col); }

std::optional<std::int64_t> Stmt::opt_int64(int col) const {
  if (is_null(col)) return std::nullopt;
  return int64(col);
}

std::string Stmt::bytes(int col) const {
  // Blob first, then the length: the documented order that avoids a conversion.
  const void* p = sqlite3_column_blob(m_stmt.get(), col);
  int n = sqlite3_column_bytes(m_stmt.get(), col);
  if (p == nullptr || n <= 0) return {};
  return std::string(static_cast<const char*>(p), static_cast<size_t>(n));
}

std::optional<std::string> Stmt::opt_bytes(int col) const {
  if (is_null(col)) return std::nullopt;
  return bytes(col);
}

Result<Transaction> Transaction::begin(sqlite3* db) {
  if (auto r = exec(db, "BEGIN IMMEDIATE"); !r) return std::unexpected(r.error());
  return Transaction(db);
}

Transaction::~Transaction() {
  if (m_db != nullptr) sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
}

Result<void> Transaction::commit() {
  sqlite3* db = std::exchange(m_db, nullptr);
  auto r = exec(db, "COMMIT");
  // A failed COMMIT may leave the transaction open; end it so the connection stays usable.
  if (!r && sqlite3_get_autocommit(db) == 0) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  return r;
}

}  // namespace zb::store::sql
