// The per-user registry of stores and of running sandboxes (docs/security.md "The
// snapshot store"). A sandbox that could write a store could replace its blobs or rewrite
// its journal, and a later accept or restore would carry that onto the host. So every
// store this user's zerobox opens is listed here, every sandboxed run masks each listed
// store, and a store refuses to open where a sandbox that is running could write it (a
// sandbox that started before the store was listed did not mask it).
//
// On-disk format
// ==============
//
//   REGISTRY/                the user's default store directory (Store::default_location),
//                            mode 0700: made by every run, masked in every sandbox
//     stores                 the canonical directory of every store opened, each followed
//                            by a NUL (encode_paths). Rewritten whole (stores.tmp, then a
//                            rename) when an entry is added, without the entries that are
//                            no longer directories.
//     lock                   flock(2)ed (LOCK_EX) by a run from before it reads `stores`
//                            until its record is written, and by a store from before it
//                            reads the records until it is listed: so either the run masks
//                            the store or the store sees the run.
//     running/
//       PID.HEX              one per running sandbox (encode_record), removed at its end.
//                            A record whose process is gone (no such pid, or a different
//                            start time: the pid was reused) is stale, ignored and removed.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace zb::store {

// Paths, each followed by a NUL. Decoding drops empty entries; a last entry without its
// NUL counts.
std::string encode_paths(const std::vector<std::string>& paths);
std::vector<std::string> decode_paths(std::string_view bytes);

// What a running sandbox could write on the host, and what it masks.
struct RunRecord {
  pid_t pid = 0;
  std::uint64_t start_time = 0;       // /proc/PID/stat field 22 (clock ticks since boot)
  std::vector<std::string> writable;  // canonical host paths the sandbox can write
  std::vector<std::string> masked;    // canonical host paths it cannot see at all

  bool operator==(const RunRecord&) const = default;
};
// "zerobox-run 1", PID, START_TIME, then "w" + each writable path and "m" + each masked
// path, each field followed by a NUL. nullopt for bytes that are not a record.
std::string encode_record(const RunRecord& r);
std::optional<RunRecord> decode_record(std::string_view bytes);

// The writable path through which a sandbox described by r could write dir or something
// inside it (dir lies in, or holds, that path, and in nothing the sandbox masks); nullopt
// when it cannot.
std::optional<std::string> reached_through(const RunRecord& r, const std::string& dir);

// The start time of a process (/proc/PID/stat field 22); nullopt when there is no such
// process.
std::optional<std::uint64_t> process_start_time(pid_t pid);

class Registry;

// The registry of the user of this environment (Store::default_location), opened; nullopt
// when there is none to be had (no usable HOME, or this user cannot make the directory),
// with the reason in why_not.
std::optional<Registry> user_registry(const std::vector<std::string>& environ, std::string& why_not);

class Registry {
 public:
  // flock(LOCK_EX) on REGISTRY/lock, released on destruction. Move-only; the Registry
  // must outlive it.
  class Lock {
   public:
    Lock(Lock&& o) noexcept : m_fd(std::exchange(o.m_fd, -1)) {}
    Lock& operator=(Lock&&) = delete;
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;
    ~Lock();

   private:
    friend class Registry;
    explicit Lock(int fd) : m_fd(fd) {}
    int m_fd = -1;
  };

  // A run's record, removed (unlinked) on destruction or by remove(). Move-only.
  class Entry {
   public:
    Entry() = default;
    Entry(Entry&& o) noexcept : m_dir_fd(std::move(o.m_dir_fd)), m_name(std::exchange(o.m_name, {})) {}
    Entry& operator=(Entry&&) = delete;
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    ~Entry() { remove(); }
    void remove();

   private:
    friend class Registry;
    Entry(UniqueFd dir_fd, std::string name) : m_dir_fd(std::move(dir_fd)), m_name(std::move(name)) {}
    UniqueFd m_dir_fd;  // REGISTRY/running
    std::string m_name;
  };

  // Opens the registry at dir, making it and its parents (mode 0700) and its lock file as
  // needed. The error keeps errno: EACCES, EROFS and the like mean this user cannot make
  // it, nor can any sandbox of theirs, and callers go on without one.
  static Result<Registry> open(const std::string& dir);

  Registry(Registry&&) noexcept = default;
  Registry& operator=(Registry&&) noexcept = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Canonical.
  const std::string& dir() const { return m_dir; }

  Result<Lock> lock();

  // The listed stores (as listed: callers check that each still exists). Needs the lock.
  Result<std::vector<std::string>> stores(const Lock&);

  // Lets the store at dir (canonical, made or not) be opened: fails, naming the sandbox,
  // while a running sandbox could write it. Stale records are removed on the way.
  Result<void> check_reach(const Lock&, const std::string& dir);
  // Lists dir (canonical) among the stores, unless it is there or is the registry itself.
  Result<void> add_store(const Lock&, const std::string& dir);
  // check_reach, then makes dir (and its parents, mode 0700) and lists it. A directory
  // that holds the registry (HOME, /) is refused too. A refusal has err 0; a failure to
  // make the directory keeps its errno.
  Result<void> admit_store(const Lock&, const std::string& dir);

  // Records a running sandbox (r.pid and r.start_time are filled in from this process).
  Result<Entry> record_run(const Lock&, RunRecord r);

 private:
  Registry() = default;
  std::string m_dir;
  UniqueFd m_dir_fd;
  UniqueFd m_running_fd;
  UniqueFd m_lock_fd;
};

}  // namespace zb::store
