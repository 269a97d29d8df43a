// The per-user registry of stores and running sandboxes; the format is in registry.hpp.
#include "store/registry.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <memory>

#include "store/internal.hpp"
#include "store/store.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"
#include "util/path.hpp"
#include "util/random.hpp"

namespace zb::store {

namespace {

constexpr std::string_view k_record_magic = "zerobox-run 1";

template <class T>
std::optional<T> to_number(std::string_view s) {
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// The whole of dir_fd/name; nullopt when it does not exist.
Result<std::optional<std::string>> read_at(int dir_fd, const char* name, const std::string& shown) {
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return std::optional<std::string>();
    return fail("open " + shown);
  }
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("read " + shown);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return std::optional<std::string>(std::move(out));
}

Result<void> write_all(int fd, std::string_view bytes, const std::string& shown) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("write " + shown);
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

bool is_dir_nofollow(const std::string& p) {
  struct stat st{};
  return ::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

// --- Encodings ----------------------------------------------------------------------

std::string encode_paths(const std::vector<std::string>& paths) {
  std::string out;
  for (const auto& p : paths) {
    out += p;
    out += '\0';
  }
  return out;
}

std::vector<std::string> decode_paths(std::string_view bytes) {
  std::vector<std::string> out;
  while (!bytes.empty()) {
    std::size_t nul = bytes.find('\0');
    std::string_view item = bytes.substr(0, nul);
    if (!item.empty()) out.emplace_back(item);
    if (nul == std::string_view::npos) break;
    bytes.remove_prefix(nul + 1);
  }
  return out;
}

std::string encode_record(const RunRecord& r) {
  std::vector<std::string> fields = {std::string(k_record_magic), std::to_string(r.pid), std::to_string(r.start_time)};
  for (const auto& w : r.writable) fields.push_back("w" + w);
  for (const auto& m : r.masked) fields.push_back("m" + m);
  return encode_paths(fields);
}

std::optional<RunRecord> decode_record(std::string_view bytes) {
  // Every field ends in a NUL: a record cut short by a crash is not one.
  if (bytes.empty() || bytes.back() != '\0') return std::nullopt;
  auto fields = decode_paths(bytes);
  if (fields.size() < 3 || fields[0] != k_record_magic) return std::nullopt;
  auto pid = to_number<pid_t>(fields[1]);
  auto start = to_number<std::uint64_t>(fields[2]);
  if (!pid || *pid <= 0 || !start) return std::nullopt;
  RunRecord r;
  r.pid = *pid;
  r.start_time = *start;
  for (std::size_t i = 3; i < fields.size(); ++i) {
    std::string p = fields[i].substr(1);
    if (p.empty() || p.front() != '/') return std::nullopt;
    if (fields[i][0] == 'w') {
      r.writable.push_back(std::move(p));
    } else if (fields[i][0] == 'm') {
      r.masked.push_back(std::move(p));
    } else {
      return std::nullopt;
    }
  }
  return r;
}

std::optional<std::string> reached_through(const RunRecord& r, const std::string& dir) {
  for (const auto& m : r.masked) {
    if (path::is_under(dir, m)) return std::nullopt;
  }
  for (const auto& w : r.writable) {
    if (path::is_under(dir, w) || path::is_under(w, dir)) return w;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> process_start_time(pid_t pid) {
  std::string shown = "/proc/" + std::to_string(pid) + "/stat";
  UniqueFd fd(::open(shown.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  char buf[1024];
  ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) return std::nullopt;
  std::string_view s(buf, static_cast<std::size_t>(n));
  // "PID (COMM) STATE ...": COMM may hold spaces and parentheses, so count from the last
  // ')'. Field 22 (starttime) is the 20th after it.
  auto close = s.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  s.remove_prefix(close + 1);
  for (int field = 3; field <= 22; ++field) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    auto end = s.find(' ');
    std::string_view tok = s.substr(0, end);
    if (field == 22) {
      while (!tok.empty() && (tok.back() == '\n')) tok.remove_suffix(1);
      return to_number<std::uint64_t>(tok);
    }
    if (end == std::string_view::npos) return std::nullopt;
    s.remove_prefix(end);
  }
  return std::nullopt;
}

// --- Registry -----------------------------------------------------------------------

Registry::Lock::~Lock() {
  if (m_fd >= 0) ::flock(m_fd, LOCK_UN);
}

void Registry::Entry::remove() {
  if (m_name.empty() || !m_dir_fd) return;
  (void)::unlinkat(m_dir_fd.get(), m_name.c_str(), 0);
  m_name.clear();
}

std::optional<Registry> user_registry(const std::vector<std::string>& environ, std::string& why_not) {
  auto loc = Store::default_location(environ);
  if (!loc) {
    why_not = loc.error().message();
    return std::nullopt;
  }
  auto r = Registry::open(*loc);
  if (!r) {
    why_not = r.error().message();
    return std::nullopt;
  }
  return std::move(*r);
}

Result<Registry> Registry::open(const std::string& dir) {
  Registry r;
  int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  r.m_dir_fd.reset(::open(dir.c_str(), flags));
  if (!r.m_dir_fd && errno == ENOENT) {
    if (auto made = detail::make_dirs(dir); !made) return std::unexpected(made.error());
    r.m_dir_fd.reset(::open(dir.c_str(), flags));
  }
  if (!r.m_dir_fd) return fail("open " + dir);
  auto canon = path::canonicalize(dir);
  if (!canon) return std::unexpected(canon.error());
  r.m_dir = canon->path;
  flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  r.m_running_fd.reset(::openat(r.m_dir_fd.get(), "running", flags));
  if (!r.m_running_fd && errno == ENOENT) {
    if (::mkdirat(r.m_dir_fd.get(), "running", 0700) != 0 && errno != EEXIST)
      return fail("mkdir " + r.m_dir + "/running");
    r.m_running_fd.reset(::openat(r.m_dir_fd.get(), "running", flags));
  }
  if (!r.m_running_fd) return fail("open " + r.m_dir + "/running");
  r.m_lock_fd.reset(::openat(r.m_dir_fd.get(), "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!r.m_lock_fd) return fail("open " + r.m_dir + "/lock");
  return r;
}

Result<Registry::Lock> Registry::lock() {
  while (::flock(m_lock_fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return fail("flock " + m_dir + "/lock");
  }
  return Lock(m_lock_fd.get());
}

Result<std::vector<std::string>> Registry::stores(const Lock&) {
  auto bytes = read_at(m_dir_fd.get(), "stores", m_dir + "/stores");
  if (!bytes) return std::unexpected(bytes.error());
  return *bytes ? decode_paths(**bytes) : std::vector<std::string>{};
}

Result<void> Registry::add_store(const Lock& lock, const std::string& dir) {
  if (dir == m_dir) return {};
  auto listed = stores(lock);
  if (!listed) return std::unexpected(listed.error());
  if (std::find(listed->begin(), listed->end(), dir) != listed->end()) return {};
  std::vector<std::string> kept;
  for (auto& s : *listed) {
    if (is_dir_nofollow(s)) kept.push_back(std::move(s));
  }
  kept.push_back(dir);
  std::string tmp_shown = m_dir + "/stores.tmp";
  UniqueFd fd(::openat(m_dir_fd.get(), "stores.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return fail("open " + tmp_shown);
  if (auto w = write_all(fd.get(), encode_paths(kept), tmp_shown); !w) return w;
  // Made durable: a store that drops out of the list after a power loss is masked again
  // only once something opens it.
  if (::fsync(fd.get()) != 0) return fail("fsync " + tmp_shown);
  if (::renameat(m_dir_fd.get(), "stores.tmp", m_dir_fd.get(), "stores") != 0) return fail("rename " + tmp_shown);
  return {};
}

Result<void> Registry::check_reach(const Lock&, const std::string& dir) {
  auto names = util::list_names(m_running_fd.get(), m_dir + "/running");
  if (!names) return std::unexpected(names.error());
  for (const auto& name : *names) {
    std::string shown = m_dir + "/running/" + name;
    auto bytes = read_at(m_running_fd.get(), name.c_str(), shown);
    if (!bytes) return std::unexpected(bytes.error());
    if (!*bytes) continue;
    auto rec = decode_record(**bytes);
    // A record is written whole under the lock: one that is not a record was cut short
    // by a crash of its run.
    if (!rec || process_start_time(rec->pid) != rec->start_time) {
      (void)::unlinkat(m_running_fd.get(), name.c_str(), 0);
      continue;
    }
    if (auto w = reached_through(*rec, dir)) {
      return fail_msg("the store " + log::quote(dir) + " lies where a running sandbox can write (zerobox pid " +
                      std::to_string(rec->pid) + ", writable " + log::quote(*w) +
                      "): open it once that run has ended, or keep the store outside what sandboxes may write");
    }
  }
  return {};
}

Result<void> Registry::admit_store(const Lock& lock, const std::string& dir) {
  auto canon = path::canonicalize(dir);
  if (!canon) return std::unexpected(canon.error());
  // Listed, it would be masked in every run from now on: a store of HOME (or of /) would
  // take HOME away from every sandbox.
  if (canon->path != m_dir && path::is_under(m_dir, canon->path)) {
    return fail_msg("the store " + log::quote(canon->path) + " would hold the store registry " + log::quote(m_dir) +
                    ": give the store a directory of its own");
  }
  if (auto r = check_reach(lock, canon->path); !r) return r;
  if (!canon->exists) {
    if (auto r = detail::make_dirs(dir); !r) return r;
    canon = path::canonicalize(dir);
    if (!canon) return std::unexpected(canon.error());
  }
  return add_store(lock, canon->path);
}

Result<Registry::Entry> Registry::record_run(const Lock&, RunRecord r) {
  r.pid = ::getpid();
  auto start = process_start_time(r.pid);
  if (!start)
    return fail_msg("cannot read the start time of this process from /proc/" + std::to_string(r.pid) + "/stat");
  r.start_time = *start;
  auto tag = util::random_hex(8);
  if (!tag) return std::unexpected(tag.error());
  std::string name = std::to_string(r.pid) + "." + *tag;
  std::string shown = m_dir + "/running/" + name;
  UniqueFd fd(::openat(m_running_fd.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return fail("create " + shown);
  UniqueFd dir_fd(::fcntl(m_running_fd.get(), F_DUPFD_CLOEXEC, 0));
  if (!dir_fd) return fail("dup " + m_dir + "/running");
  Entry entry(std::move(dir_fd), name);
  if (auto w = write_all(fd.get(), encode_record(r), shown); !w) return std::unexpected(w.error());
  return entry;
}

}  // namespace zb::store
