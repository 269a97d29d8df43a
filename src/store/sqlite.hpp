// Owners for SQLite statements and the few helpers src/store needs (the connection's
// owner is Store::m_db, store.hpp). Internal to src/store.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.hpp"

namespace zb::store::sql {

// "what: <sqlite message>", err 0 (SQLite's codes are not errno values).
std::unexpected<SysError> error(sqlite3* db, std::string what);

// Runs one or more statements that return no rows we need.
Result<void> exec(sqlite3* db, const char* sql);

// A prepared statement. Bind errors are remembered and reported by the next step(), so
// call sites read as a list of binds. Strings are copied by SQLite when bound.
class Stmt {
 public:
  static Result<Stmt> prepare(sqlite3* db, std::string_view sql);

  Stmt& bind(int idx, std::int64_t v);
  Stmt& bind_text(int idx, std::string_view v);
  Stmt& bind_blob(int idx, std::string_view v);
  Stmt& bind_null(int idx);
  template <class T>
  Stmt& bind_opt(int idx, const std::optional<T>& v) {
    return v ? bind(idx, static_cast<std::int64_t>(*v)) : bind_null(idx);
  }
  Stmt& bind_opt_text(int idx, const std::optional<std::string>& v) { return v ? bind_text(idx, *v) : bind_null(idx); }
  Stmt& bind_opt_blob(int idx, const std::optional<std::string>& v) { return v ? bind_blob(idx, *v) : bind_null(idx); }

  // True when a row is available, false when the statement is done.
  Result<bool> step();
  // Steps a statement that returns no rows.
  Result<void> run();
  // Steps to the end, collecting column 0 of every row as bytes.
  Result<std::vector<std::string>> column0();
  // Makes the statement ready to bind and step again.
  void reset();

  bool is_null(int col) const;
  std::int64_t int64(int col) const;
  std::optional<std::int64_t> opt_int64(int col) const;
  // Text or blob column as bytes ("" for NULL).
  std::string bytes(int col) const;
  std::optional<std::string> opt_bytes(int col) const;

 private:
  struct Finalize {
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
  };
  Stmt(sqlite3* db, sqlite3_stmt* s) : m_db(db), m_stmt(s) {}
  void check_bind(int rc);

  sqlite3* m_db = nullptr;
  std::unique_ptr<sqlite3_stmt, Finalize> m_stmt;
  int m_bind_rc = SQLITE_OK;
};

// BEGIN IMMEDIATE: takes the write lock up front, so two writers never both read and then
// fail to upgrade (a deadlock SQLite can only resolve by failing one of them with BUSY,
// bypassing busy_timeout). Rolls back on destruction unless committed.
class Transaction {
 public:
  static Result<Transaction> begin(sqlite3* db);
  Transaction(Transaction&& other) noexcept : m_db(std::exchange(other.m_db, nullptr)) {}
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  Result<void> commit();

 private:
  explicit Transaction(sqlite3* db) : m_db(db) {}
  sqlite3* m_db = nullptr;
};

}  // namespace zb::store::sql
