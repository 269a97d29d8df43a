// The content-addressed blob store (layout and locking in store.hpp).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "store/internal.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"
#include "util/random.hpp"
#include "util/text.hpp"

// Header-only: every XXH function is static inline here, so nothing links libxxhash.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace zb::store {

namespace {

// Large enough that read(2) and the hash run at disk speed, small enough that many
// concurrent zerobox processes do not notice it.
constexpr std::size_t k_chunk = std::size_t{128} * 1024;

struct FreeXxh {
  void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
};

// XXH3-128 of everything read from fd to EOF, optionally copying it to out_fd.
struct Digest {
  std::string hash;
  std::int64_t size = 0;
};

// holes=false hashes every byte (holes read as zeros), as a pipe is hashed.
Result<Digest> hash_stream(int fd, int out_fd, const std::string& shown_in, const std::string& shown_out,
                           bool holes = true) {
  std::unique_ptr<XXH3_state_t, FreeXxh> state(XXH3_createState());
  if (!state) return fail("XXH3_createState", ENOMEM);
  XXH3_128bits_reset(state.get());
  std::vector<char> buf(k_chunk);
  Digest d;
  // A regular file's holes are skipped, not read: a 16 TiB sparse file costs what its
  // data costs. A hole enters the key as its length, not as its zeros, so the key of a
  // sparse file is not the plain XXH3 of its bytes; blobs are compared byte for byte
  // before they are shared anyway (install_blob).
  struct stat in_st{};
  bool sparse_aware = holes && ::fstat(fd, &in_st) == 0 && S_ISREG(in_st.st_mode);
  off_t data_end = -1;  // where the current data range ends (a hole starts)
  for (;;) {
    if (sparse_aware && data_end >= 0) {
      off_t pos = ::lseek(fd, 0, SEEK_CUR);
      if (pos >= data_end) data_end = -1;
    }
    if (sparse_aware && data_end < 0) {
      off_t pos = ::lseek(fd, 0, SEEK_CUR);
      off_t next = pos < 0 ? -1 : ::lseek(fd, pos, SEEK_DATA);
      if (pos >= 0 && next < 0 && errno == ENXIO) next = std::max<off_t>(pos, ::lseek(fd, 0, SEEK_END));
      if (pos < 0 || next < 0) {
        sparse_aware = false;  // SEEK_DATA unsupported: read everything
        if (pos >= 0) ::lseek(fd, pos, SEEK_SET);
      } else {
        if (next > pos) {
          std::uint64_t hole = static_cast<std::uint64_t>(next - pos);
          const char marker[8] = {'\0', 'z', 'b', 'h', 'o', 'l', 'e', '\0'};
          XXH3_128bits_update(state.get(), marker, sizeof marker);
          XXH3_128bits_update(state.get(), &hole, sizeof hole);
          d.size += next - pos;
          if (out_fd >= 0 && ::lseek(out_fd, next - pos, SEEK_CUR) < 0) return fail("lseek " + shown_out);
        }
        ::lseek(fd, next, SEEK_SET);
        data_end = ::lseek(fd, next, SEEK_HOLE);
        ::lseek(fd, next, SEEK_SET);
        if (data_end <= next) data_end = -1;
        if (data_end < 0) {
          // At EOF (or a file that shrank): nothing more to read.
          struct stat now{};
          if (::fstat(fd, &now) == 0 && next >= now.st_size) break;
        }
      }
    }
    std::size_t want = buf.size();
    if (sparse_aware && data_end >= 0) {
      off_t pos = ::lseek(fd, 0, SEEK_CUR);
      want = static_cast<std::size_t>(std::min<off_t>(static_cast<off_t>(want), data_end - pos));
    }
    ssize_t n = ::read(fd, buf.data(), want);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("read " + shown_in);
    }
    if (n == 0) break;
    auto len = static_cast<std::size_t>(n);
    XXH3_128bits_update(state.get(), buf.data(), len);
    d.size += n;
    // A chunk of zeros becomes a hole: a sparse pre-image (a disk image, a 1 GiB
    // truncate) costs no space in the store.
    if (out_fd >= 0 && len == buf.size() && !sparse_aware && buf[0] == 0 &&
        std::memcmp(buf.data(), buf.data() + 1, len - 1) == 0) {
      if (::lseek(out_fd, n, SEEK_CUR) < 0) return fail("lseek " + shown_out);
      continue;
    }
    for (std::size_t off = 0; out_fd >= 0 && off < len;) {
      ssize_t w = ::write(out_fd, buf.data() + off, len - off);
      if (w < 0) {
        if (errno == EINTR) continue;
        return fail("write " + shown_out);
      }
      off += static_cast<std::size_t>(w);
    }
  }
  if (out_fd >= 0 && ::ftruncate(out_fd, d.size) != 0) return fail("ftruncate " + shown_out);
  XXH128_canonical_t canon;
  XXH128_canonicalFromHash(&canon, XXH3_128bits_digest(state.get()));
  d.hash = text::hex(std::string_view(reinterpret_cast<const char*>(canon.digest), sizeof canon.digest));
  return d;
}

// Unlinks a temporary file unless dismissed.
class TempFile {
 public:
  TempFile(int dir_fd, std::string name) : m_dir_fd(dir_fd), m_name(std::move(name)) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (!m_name.empty()) ::unlinkat(m_dir_fd, m_name.c_str(), 0);
  }
  const std::string& name() const { return m_name; }
  void dismiss() { m_name.clear(); }

 private:
  int m_dir_fd;
  std::string m_name;
};

std::string blob_shown(const std::string& dir, std::string_view hash) {
  return dir + "/blobs/" + std::string(hash.substr(0, 2)) + "/" + std::string(hash.substr(2));
}

Result<void> check_hash(std::string_view hash) {
  if (!valid_id(hash)) return fail_msg("invalid blob hash '" + std::string(hash.substr(0, 64)) + "'");
  return {};
}

}  // namespace

namespace detail {

Result<BlobsLock> BlobsLock::acquire(int blobs_fd) {
  while (::flock(blobs_fd, LOCK_EX) != 0) {
    if (errno != EINTR) return fail("flock blobs/");
  }
  return BlobsLock(blobs_fd);
}

BlobsLock::~BlobsLock() {
  if (m_fd >= 0) ::flock(m_fd, LOCK_UN);
}

Result<Dropped> drop_blob_refs(sqlite3* db, const std::vector<std::string>& hashes) {
  auto dec = sql::Stmt::prepare(db, "UPDATE blobs SET refs = refs - 1 WHERE hash = ?1 RETURNING refs");
  if (!dec) return std::unexpected(dec.error());
  auto del = sql::Stmt::prepare(db, "DELETE FROM blobs WHERE hash = ?1");
  if (!del) return std::unexpected(del.error());
  Dropped out;
  for (const auto& h : hashes) {
    dec->reset();
    auto row = dec->bind_text(1, h).step();
    if (!row) return std::unexpected(row.error());
    if (!*row) {
      out.missing.push_back(h);
      continue;
    }
    std::int64_t refs = dec->int64(0);
    // Finish the UPDATE ... RETURNING before the DELETE touches the same row.
    if (auto done = dec->step(); !done) return std::unexpected(done.error());
    if (refs > 0) continue;
    del->reset();
    if (auto r = del->bind_text(1, h).run(); !r) return std::unexpected(r.error());
    out.deleted.push_back(h);
  }
  return out;
}

void unlink_blob_files(int blobs_fd, const std::vector<std::string>& hashes) {
  for (const auto& h : hashes) {
    if (!valid_id(h)) continue;
    std::string rel = h.substr(0, 2) + "/" + h.substr(2);
    ::unlinkat(blobs_fd, rel.c_str(), 0);
  }
}

}  // namespace detail

namespace {

// True when two files hold the same bytes (sizes first, then a bounded buffer).
Result<bool> same_bytes(int a, int b) {
  struct stat sa{}, sb{};
  if (::fstat(a, &sa) != 0 || ::fstat(b, &sb) != 0) return fail("fstat blob");
  if (sa.st_size != sb.st_size) return false;
  std::vector<char> x(k_chunk), y(k_chunk);
  for (off_t off = 0; off < sa.st_size;) {
    // A range that is a hole in both is equal without reading it.
    off_t da = ::lseek(a, off, SEEK_DATA), db = ::lseek(b, off, SEEK_DATA);
    if (da < 0) da = sa.st_size;
    if (db < 0) db = sa.st_size;
    if (da > off && db > off) {
      off = std::min(da, db);
      continue;
    }
    ssize_t n = ::pread(a, x.data(), x.size(), off);
    ssize_t m = ::pread(b, y.data(), y.size(), off);
    if (n < 0 || m < 0) return fail("read blob");
    if (n != m) return false;
    if (n == 0) break;
    if (std::memcmp(x.data(), y.data(), static_cast<std::size_t>(n)) != 0) return false;
    off += n;
  }
  return true;
}

// The next name to try after a hash collision: XXH3-128 is not a cryptographic hash, and
// colliding files can be made on purpose. Each candidate is content-compared, so a
// planted blob can never stand in for another file's bytes.
std::string next_key(const std::string& hash, int n) {
  std::string in = hash + "#" + std::to_string(n);
  XXH128_hash_t h = XXH3_128bits(in.data(), in.size());
  XXH128_canonical_t canon;
  XXH128_canonicalFromHash(&canon, h);
  return text::hex(std::string_view(reinterpret_cast<const char*>(canon.digest), sizeof canon.digest));
}

}  // namespace

Result<BlobInfo> Store::install_blob(int src_dir_fd, const std::string& src_name, int chmod_fd,
                                     const std::string& first_hash, std::int64_t size) {
  auto lock = detail::BlobsLock::acquire(m_blobs_fd.get());
  if (!lock) return std::unexpected(lock.error());
  std::string hash = first_hash;
  std::string sub, rest, shown;
  UniqueFd sub_fd;
  struct stat st{};
  bool exists = false;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) hash = next_key(first_hash, attempt);
    if (attempt > 64) return fail_msg("blob " + first_hash + ": too many hash collisions");
    sub = hash.substr(0, 2);
    rest = hash.substr(2);
    shown = blob_shown(m_dir, hash);
    if (::mkdirat(m_blobs_fd.get(), sub.c_str(), 0700) != 0 && errno != EEXIST)
      return fail("mkdir " + m_dir + "/blobs/" + sub);
    sub_fd.reset(::openat(m_blobs_fd.get(), sub.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub_fd) return fail("open " + m_dir + "/blobs/" + sub);
    if (::fstatat(sub_fd.get(), rest.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) return fail("stat " + shown);
      exists = false;
      break;
    }
    UniqueFd have(::openat(sub_fd.get(), rest.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    UniqueFd want(::openat(src_dir_fd, src_name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!have || !want) return fail("open " + shown);
    auto same = same_bytes(have.get(), want.get());
    if (!same) return std::unexpected(same.error());
    if (*same) {
      exists = true;
      break;
    }
  }
  bool new_sub = false;
  if (exists) {
    // Same content: keep the blob that is in place, drop the new copy.
    if (::unlinkat(src_dir_fd, src_name.c_str(), 0) != 0 && errno != ENOENT) return fail("unlink " + src_name);
  } else {
    if (chmod_fd >= 0) (void)::fchmod(chmod_fd, 0400);
    if (::renameat(src_dir_fd, src_name.c_str(), sub_fd.get(), rest.c_str()) != 0) {
      return fail("rename " + src_name + " to " + shown);
    }
    // Durability against power loss is Store::sync()'s, once per operation: an fsync
    // per blob made journaling 10,000 files take a minute on a busy disk.
    (void)new_sub;
  }

  auto st_up = sql::Stmt::prepare(m_db.get(),
                                  "INSERT INTO blobs(hash, size, refs) VALUES(?1, ?2, 1) "
                                  "ON CONFLICT(hash) DO UPDATE SET refs = refs + 1 RETURNING size, refs");
  if (!st_up) return std::unexpected(st_up.error());
  auto row = st_up->bind_text(1, hash).bind(2, size).step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return fail_msg("blob " + hash + ": upsert returned nothing");
  BlobInfo info{hash, st_up->int64(0), st_up->int64(1)};
  if (auto done = st_up->step(); !done) return std::unexpected(done.error());
  return info;
}

Result<BlobInfo> Store::put_blob_from_fd(int fd) {
  auto rnd = util::random_hex(8);
  if (!rnd) return std::unexpected(rnd.error());
  std::string name = "tmp." + *rnd;
  std::string shown = m_dir + "/blobs/" + name;
  UniqueFd out(::openat(m_blobs_fd.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400));
  if (!out) return fail("create " + shown);
  TempFile tmp(m_blobs_fd.get(), name);
  auto d = hash_stream(fd, out.get(), "blob source", shown);
  if (!d) return std::unexpected(d.error());
  out.reset();
  auto info = install_blob(m_blobs_fd.get(), name, -1, d->hash, d->size);
  if (info) tmp.dismiss();
  return info;
}

Result<BlobInfo> Store::put_blob_by_rename(int dir_fd, const std::string& name) {
  // O_NONBLOCK: opening a FIFO must fail the S_ISREG check below, not hang.
  UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return fail("open " + name);
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return fail("stat " + name);
  if (!S_ISREG(st.st_mode)) return fail("blob source " + name + " is not a regular file", EINVAL);
  struct stat blobs_st{};
  if (::fstat(m_blobs_fd.get(), &blobs_st) != 0) return fail("stat " + m_dir + "/blobs");

  auto copy_and_unlink = [&]() -> Result<BlobInfo> {
    if (::lseek(fd.get(), 0, SEEK_SET) != 0) return fail("lseek " + name);
    auto info = put_blob_from_fd(fd.get());
    if (!info) return info;
    if (::unlinkat(dir_fd, name.c_str(), 0) != 0 && errno != ENOENT) return fail("unlink " + name);
    return info;
  };
  // Another hard link could change the content after it is in the store.
  if (st.st_nlink > 1 || st.st_dev != blobs_st.st_dev) return copy_and_unlink();

  auto d = hash_stream(fd.get(), -1, name, "");
  if (!d) return std::unexpected(d.error());
  auto info = install_blob(dir_fd, name, fd.get(), d->hash, d->size);
  // Same st_dev but different mounts (bind mounts) still refuse rename(2).
  if (!info && info.error().err == EXDEV) return copy_and_unlink();
  return info;
}

Result<BlobInfo> Store::put_blob_by_rename(const std::string& path) { return put_blob_by_rename(AT_FDCWD, path); }

Result<void> Store::retain_blob(std::string_view hash) {
  if (auto r = check_hash(hash); !r) return r;
  auto st = sql::Stmt::prepare(m_db.get(), "UPDATE blobs SET refs = refs + 1 WHERE hash = ?1");
  if (!st) return std::unexpected(st.error());
  if (auto r = st->bind_text(1, hash).run(); !r) return r;
  if (sqlite3_changes(m_db.get()) == 0) return fail("blob " + std::string(hash), ENOENT);
  return {};
}

Result<void> Store::retain_blobs(const std::vector<std::string>& hashes) {
  auto txn = sql::Transaction::begin(m_db.get());
  if (!txn) return std::unexpected(txn.error());
  for (const auto& h : hashes) {
    if (auto r = retain_blob(h); !r) return r;
  }
  return txn->commit();
}

Result<UniqueFd> Store::open_blob(std::string_view hash) {
  if (auto r = check_hash(hash); !r) return std::unexpected(r.error());
  std::string rel = std::string(hash.substr(0, 2)) + "/" + std::string(hash.substr(2));
  UniqueFd fd(::openat(m_blobs_fd.get(), rel.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return fail("open blob " + blob_shown(m_dir, hash));
  return fd;
}

Result<std::optional<BlobInfo>> Store::blob_info(std::string_view hash) {
  auto st = sql::Stmt::prepare(m_db.get(), "SELECT size, refs FROM blobs WHERE hash = ?1");
  if (!st) return std::unexpected(st.error());
  auto row = st->bind_text(1, hash).step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return std::optional<BlobInfo>();
  return std::optional<BlobInfo>(BlobInfo{std::string(hash), st->int64(0), st->int64(1)});
}

Result<void> Store::release_blob(std::string_view hash_view) {
  std::string hash(hash_view);
  if (auto r = check_hash(hash); !r) return r;
  auto lock = detail::BlobsLock::acquire(m_blobs_fd.get());
  if (!lock) return std::unexpected(lock.error());
  auto txn = sql::Transaction::begin(m_db.get());
  if (!txn) return std::unexpected(txn.error());
  auto dropped = detail::drop_blob_refs(m_db.get(), {hash});
  if (!dropped) return std::unexpected(dropped.error());
  if (!dropped->missing.empty()) return fail("blob " + hash, ENOENT);
  if (auto r = txn->commit(); !r) return r;
  // After the commit: a crash in between leaves a file without a row, which is garbage,
  // never a row without its file.
  detail::unlink_blob_files(m_blobs_fd.get(), dropped->deleted);
  return {};
}

Result<bool> Store::verify_blob(std::string_view hash_view) {
  std::string hash(hash_view);
  if (auto r = check_hash(hash); !r) return std::unexpected(r.error());
  auto fd = open_blob(hash);
  if (!fd) return std::unexpected(fd.error());
  // The name is the key of the content, or (after a collision) one of the keys derived
  // from it. The key of a regular source counts its holes (hash_stream), and the blob
  // keeps the source's holes; a blob from a pipe was keyed on all of its bytes.
  auto matches = [&](const std::string& key) {
    if (key == hash) return true;
    for (int n = 1; n <= 64; ++n) {
      if (next_key(key, n) == hash) return true;
    }
    return false;
  };
  for (bool holes : {true, false}) {
    if (::lseek(fd->get(), 0, SEEK_SET) != 0) return fail("lseek " + blob_shown(m_dir, hash));
    auto d = hash_stream(fd->get(), -1, blob_shown(m_dir, hash), "", holes);
    if (!d) return std::unexpected(d.error());
    if (matches(d->hash)) return true;
  }
  return false;
}

}  // namespace zb::store
