// The store as a whole: the journal's spellings of its values, where the store lives,
// opening it (directories, connection, schema) and making it durable. The schema is in
// schema.cpp, sessions in sessions.cpp, changes and intents in changes.cpp, blobs in
// blobs.cpp; the format is specified in store.hpp.
#include "store/store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <ctime>
#include <utility>

#include "store/internal.hpp"
#include "store/registry.hpp"
#include "store/sqlite.hpp"
#include "util/env.hpp"
#include "util/log.hpp"

namespace zb::store {

namespace {

constexpr int k_busy_timeout_ms = 5000;

// --- Spellings --------------------------------------------------------------------

constexpr std::array<std::string_view, 2> k_kinds = {"run", "restore"};
constexpr std::array<std::string_view, 3> k_modes = {"snapshot", "restore", "review"};
constexpr std::array<std::string_view, 6> k_states = {"running",   "pending",  "accepted",
                                                      "discarded", "restored", "failed"};
constexpr std::array<std::string_view, 5> k_change_kinds = {"added", "modified", "deleted", "type_changed",
                                                            "mode_changed"};
constexpr std::array<std::string_view, 7> k_file_types = {"file", "dir", "symlink", "fifo", "socket", "char", "block"};

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

// 'X' for messages, escaped when X could forge output.
std::string in_quotes(std::string_view s) {
  std::string q = log::quote(s);
  return !q.empty() && q.front() == '\'' ? q : "'" + q + "'";
}

Result<UniqueFd> open_subdir(int parent, const std::string& name, const std::string& shown, bool create) {
  if (create && ::mkdirat(parent, name.c_str(), 0700) != 0 && errno != EEXIST) return fail("mkdir " + shown);
  UniqueFd fd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return fail("open " + shown);
  return fd;
}

}  // namespace detail

// --- Opening ----------------------------------------------------------------------

void Store::DbClose::operator()(sqlite3* db) const { sqlite3_close_v2(db); }

Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

Result<std::string> Store::location(const std::vector<std::string>& environ) {
  auto get = [&](std::string_view key) -> std::string { return env::find(environ, key).value_or(""); };
  if (auto v = get("ZEROBOX_HOME"); !v.empty()) {
    if (v.front() != '/') return fail_msg("ZEROBOX_HOME must be an absolute path, not " + detail::in_quotes(v));
    return v;
  }
  return default_location(environ);
}

Result<std::string> Store::default_location(const std::vector<std::string>& environ) {
  auto get = [&](std::string_view key) -> std::string { return env::find(environ, key).value_or(""); };
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
  auto blobs = detail::open_subdir(s.m_dir_fd.get(), "blobs", s.m_dir + "/blobs", true);
  if (!blobs) return std::unexpected(blobs.error());
  s.m_blobs_fd = std::move(*blobs);
  auto sessions = detail::open_subdir(s.m_dir_fd.get(), "sessions", s.m_dir + "/sessions", true);
  if (!sessions) return std::unexpected(sessions.error());
  s.m_sessions_fd = std::move(*sessions);

  std::string journal = s.m_dir + "/journal.db";
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(journal.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW,
                           nullptr);
  s.m_db.reset(raw);
  if (rc != SQLITE_OK) return sql::error(raw, "open journal " + journal);
  sqlite3* db = s.m_db.get();
  sqlite3_busy_timeout(db, k_busy_timeout_ms);
  sqlite3_extended_result_codes(db, 1);

  if (auto r = detail::enable_wal(db, journal); !r) return std::unexpected(r.error());
  if (auto r = sql::exec(db, "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL"); !r) {
    return fail_msg("journal " + journal + ": " + r.error().message());
  }
  if (auto r = s.migrate(); !r) return fail_msg("journal " + journal + ": " + r.error().message());
  return s;
}

Result<void> Store::sync() {
  if (::syncfs(m_dir_fd.get()) != 0) return fail("syncfs " + m_dir);
  return {};
}

}  // namespace zb::store
