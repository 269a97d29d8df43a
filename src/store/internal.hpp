// Helpers shared by the files of src/store (store, schema, sessions, changes, blobs,
// registry). Internal to src/store.
#pragma once

#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace zb::store::detail {

// mkdir -p with mode 0700 for every directory it creates.
Result<void> make_dirs(const std::string& dir);

// CLOCK_REALTIME in nanoseconds.
std::int64_t now_ns();

// 'X' for messages, escaped when X could forge output.
std::string in_quotes(std::string_view s);

// parent/name as a directory fd, never following a symlink; made first (mode 0700) when
// `create`. `shown` names it in errors.
Result<UniqueFd> open_subdir(int parent, const std::string& name, const std::string& shown, bool create);

// Switches the journal to WAL unless it is already (schema.cpp).
Result<void> enable_wal(sqlite3* db, const std::string& journal);

// flock(LOCK_EX) on the blobs/ directory, held while blob files are created or deleted
// and their rows changed (store.hpp, "On-disk format"). Taken before any SQLite write
// transaction, never inside one, so the two locks are always acquired in one order.
class BlobsLock {
 public:
  static Result<BlobsLock> acquire(int blobs_fd);
  BlobsLock(BlobsLock&& other) noexcept : m_fd(std::exchange(other.m_fd, -1)) {}
  BlobsLock& operator=(BlobsLock&&) = delete;
  BlobsLock(const BlobsLock&) = delete;
  BlobsLock& operator=(const BlobsLock&) = delete;
  ~BlobsLock();

 private:
  explicit BlobsLock(int fd) : m_fd(fd) {}
  int m_fd = -1;
};

struct Dropped {
  std::vector<std::string> deleted;  // reached zero references: rows deleted
  std::vector<std::string> missing;  // had no row
};
// Drops one reference per element of hashes (repeats count). Run inside a transaction,
// under BlobsLock; delete the files of `deleted` after the commit.
Result<Dropped> drop_blob_refs(sqlite3* db, const std::vector<std::string>& hashes);

// Unlinks blobs/ab/cdef... for each hash, ignoring ENOENT (a crash may have gone first).
void unlink_blob_files(int blobs_fd, const std::vector<std::string>& hashes);

}  // namespace zb::store::detail
