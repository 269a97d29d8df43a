// The store: a SQLite journal of sessions and their changes, content-addressed blobs
// (pre-images and accepted contents) and the per-session overlay layers (docs/usage.md,
// "The store"). The store is never mounted into a sandbox.
//
// On-disk format
// ==============
//
//   STORE/                       mode 0700; see Store::location
//     journal.db                 SQLite, journal_mode=WAL (plus -wal and -shm files)
//     blobs/                     content-addressed blobs
//       ab/cdef0123...           a blob: the file whose XXH3-128 hash, as 32 lowercase hex
//                                digits (the canonical big-endian form), is "abcdef0123...";
//                                the first two digits name the directory. Mode 0400.
//                                Never modified once in place.
//       tmp.<16 hex digits>      a blob being written; renamed into place when complete.
//                                Left behind only by a crash, and then garbage.
//     sessions/
//       ID/                      one per session; ID is 32 lowercase hex digits (getrandom)
//         upper/  work/          overlay upper and work directories (the overlay of
//                                tracked root N uses upper/N and work/N)
//         lock                   flock(2)ed while a process works on the session; holds
//                                the holder's pid in decimal
//
// Blob files are created and deleted only under an flock(2) on blobs/ itself, and the
// journal's `blobs` row is updated under the same lock, so a blob being released to zero
// references is never deleted under a concurrent put of the same content. A blob file
// without a row (a crash between the rename and the commit) is garbage; a row with
// refs > 0 always has its file.
//
// Journal schema, version 2 (meta.schema_version). Times are nanoseconds since the Unix
// epoch (CLOCK_REALTIME). Paths and link targets are BLOBs holding the exact bytes.
// Version 1 journals are upgraded when opened (version 2 adds the xattr and inode columns
// of `changes` and the `opaque` table); a zerobox that knows only version 1 refuses a
// version 2 journal.
//
//   meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)
//     ('schema_version', '2')
//   sessions(
//     id TEXT PRIMARY KEY,            32 lowercase hex digits
//     kind TEXT NOT NULL,             run | restore (a restore records its own session)
//     mode TEXT NOT NULL,             snapshot | restore | review
//     state TEXT NOT NULL,            running | pending | accepted | discarded | restored
//                                     | failed
//     command TEXT NOT NULL,          JSON array of argv; an element that is not UTF-8 is
//                                     {"b64": "<base64 of its bytes>"}
//     cwd TEXT NOT NULL,              the caller's working directory, bytes
//     roots TEXT NOT NULL,            JSON array of the tracked roots, encoded like command;
//                                     root N is overlaid with upper/N and work/N
//     policy TEXT,                    the policy, as the caller serialises it
//     exit_code INTEGER, signal INTEGER,    how the command ended (at most one is set)
//     created_at INTEGER NOT NULL, finished_at INTEGER, applied_at INTEGER,
//     parent TEXT)                    for a restore: the session it restored
//   changes(
//     session TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
//     seq INTEGER NOT NULL,           1, 2, ... within the session, in recording order
//     path BLOB NOT NULL,             absolute path on the real filesystem
//     kind TEXT NOT NULL,             added | modified | deleted | type_changed
//                                     | mode_changed
//     old_type TEXT, new_type TEXT,   file | dir | symlink | fifo | socket | char | block
//     old_mode INTEGER, new_mode INTEGER,   permission bits (st_mode & 07777)
//     old_size INTEGER, new_size INTEGER,
//     old_mtime_ns INTEGER, new_mtime_ns INTEGER,
//     old_uid INTEGER, old_gid INTEGER, new_uid INTEGER, new_gid INTEGER,
//     old_blob TEXT, new_blob TEXT,   blob hashes of regular files' contents
//     old_link BLOB, new_link BLOB,   symlink targets
//     old_xattrs BLOB, new_xattrs BLOB,   extended attributes (encode_xattrs); NULL: not
//                                     recorded (a version 1 row), empty: none
//     old_inode INTEGER, new_inode INTEGER,  hard links: the rows of one session whose
//                                     old_inode (new_inode) are equal and not NULL were
//                                     one inode before (after) the change; the value is
//                                     only a label
//     PRIMARY KEY(session, seq))
//   opaque(session TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
//          path BLOB NOT NULL,      a directory whose host contents the session replaces
//                                   as a whole (an overlay opaque directory)
//          names BLOB NOT NULL,     the names the session's directory held (NUL after each)
//          PRIMARY KEY(session, path))
//   blobs(hash TEXT PRIMARY KEY, size INTEGER NOT NULL, refs INTEGER NOT NULL)
//     refs counts the references handed out by put_blob_* and retain_blob; each non-NULL
//     old_blob/new_blob of a change holds one, released by remove_session.
//   intents(id INTEGER PRIMARY KEY, session TEXT NOT NULL, op TEXT NOT NULL,
//           path BLOB NOT NULL, state TEXT NOT NULL, data TEXT)
//     operations on the real filesystem, written before they are carried out, for crash
//     recovery (ARCHITECTURE.md: nothing is lost). Deleted with their session.
//     Index intents_by_session on intents(session).
//
// Connections use WAL, busy_timeout 5000 ms, foreign_keys=ON and synchronous=NORMAL (a
// commit survives a crash of the process; after a power loss the journal is consistent
// but may miss its last transactions, and Store::sync() makes everything durable), and
// every write is one BEGIN IMMEDIATE transaction, so many zerobox processes can use the
// store at once.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/copy.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

struct sqlite3;

namespace zb::store {

class Registry;

inline constexpr int k_schema_version = 2;

enum class SessionKind { Run, Restore };
enum class SessionMode { Snapshot, Restore, Review };
enum class SessionState { Running, Pending, Accepted, Discarded, Restored, Failed };
enum class ChangeKind { Added, Modified, Deleted, TypeChanged, ModeChanged };
enum class FileType { Regular, Directory, Symlink, Fifo, Socket, CharDevice, BlockDevice };

// The journal's spelling of each value ("run", "review", "pending", "type_changed", "dir").
std::string_view to_string(SessionKind v);
std::string_view to_string(SessionMode v);
std::string_view to_string(SessionState v);
std::string_view to_string(ChangeKind v);
std::string_view to_string(FileType v);

// The inverse of to_string; nullopt for any other spelling.
std::optional<SessionKind> parse_session_kind(std::string_view s);
std::optional<SessionMode> parse_session_mode(std::string_view s);
std::optional<SessionState> parse_session_state(std::string_view s);
std::optional<ChangeKind> parse_change_kind(std::string_view s);
std::optional<FileType> parse_file_type(std::string_view s);

// The type bits of an st_mode; nullopt for a type Linux does not have.
std::optional<FileType> file_type_of(mode_t st_mode);

// What create_session records; the rest of a Session is filled in by the store.
struct NewSession {
  SessionKind kind = SessionKind::Run;
  SessionMode mode = SessionMode::Snapshot;
  std::vector<std::string> command;
  std::string cwd;
  std::vector<std::string> roots;  // tracked roots, in overlay order (upper/N)
  std::optional<std::string> policy;
  std::optional<std::string> parent;  // for kind Restore: the session being restored
};

// One row of `sessions`.
struct Session {
  std::string id;
  SessionKind kind = SessionKind::Run;
  SessionMode mode = SessionMode::Snapshot;
  SessionState state = SessionState::Running;
  std::vector<std::string> command;
  std::string cwd;
  std::vector<std::string> roots;
  std::optional<std::string> policy;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::int64_t created_at = 0;  // ns since the epoch
  std::optional<std::int64_t> finished_at;
  std::optional<std::int64_t> applied_at;
  std::optional<std::string> parent;
};

// How a session's command ended, recorded by Store::finish.
struct Finish {
  SessionState state = SessionState::Pending;
  std::optional<int> exit_code;
  std::optional<int> signal;
};

// One side of a change: the file at its path before or after it (the old_* or new_*
// columns of its row). A side is present exactly when its type column is set; the other
// values are NULL where the journal has none (blobs of non-regular files, links of
// non-symlinks, sizes of what is neither).
struct FileMeta {
  FileType type = FileType::Regular;
  std::optional<std::uint32_t> mode;  // st_mode & 07777
  std::optional<std::int64_t> size;
  std::optional<std::int64_t> mtime_ns;
  std::optional<std::uint32_t> uid, gid;
  std::optional<std::string> blob;    // hash of a regular file's contents
  std::optional<std::string> link;    // symlink target
  std::optional<std::string> xattrs;  // encode_xattrs; nullopt: not recorded
  std::optional<std::int64_t> inode;  // hard-link label

  bool operator==(const FileMeta&) const = default;
};

// One row of `changes`: a path moving from `before` to `after`. An absent side is a path
// with nothing there (the before of an added file, the after of a deleted one).
struct Change {
  std::int64_t seq = 0;  // assigned by add_changes
  std::string path;      // absolute, arbitrary bytes
  ChangeKind kind = ChangeKind::Modified;
  std::optional<FileMeta> before, after;

  bool operator==(const Change&) const = default;
};

// The type of a side; nullopt when the side is absent.
inline std::optional<FileType> type_of(const std::optional<FileMeta>& side) {
  return side ? std::optional<FileType>(side->type) : std::nullopt;
}

// A directory whose host contents a session replaces as a whole (an overlay opaque
// directory), and the names its replacement held.
struct OpaqueDir {
  std::string path;  // absolute
  std::vector<std::string> names;

  bool operator==(const OpaqueDir&) const = default;
};

// Extended attributes as the journal keeps them: sorted by name, each one as the name,
// a NUL, the value's length as 4 bytes big-endian and the value.
using Xattrs = util::Xattrs;
std::string encode_xattrs(const Xattrs& x);
// nullopt for bytes that are not an encoding.
std::optional<Xattrs> decode_xattrs(std::string_view s);

// An operation on the real filesystem that was started and may not have finished
// (ARCHITECTURE.md: nothing is lost). op is "accept" or "restore"; data is the operation's own
// description (JSON), enough to finish or undo it.
struct Intent {
  std::int64_t id = 0;
  std::string session;
  std::string op;
  std::string state;
  std::string data;
};

// A blob as the journal knows it.
struct BlobInfo {
  std::string hash;  // 32 lowercase hex digits
  std::int64_t size = 0;
  std::int64_t refs = 0;
};

// True for a well-formed session id or blob hash: exactly 32 lowercase hex digits. Both
// become file names, so nothing else may reach the filesystem.
bool valid_id(std::string_view s);

// flock(LOCK_EX) on sessions/ID/lock, released on destruction. Move-only.
class SessionLock {
 public:
  SessionLock() = default;
  SessionLock(std::string id, UniqueFd fd) : m_id(std::move(id)), m_fd(std::move(fd)) {}
  const std::string& id() const { return m_id; }
  explicit operator bool() const { return static_cast<bool>(m_fd); }

 private:
  std::string m_id;
  UniqueFd m_fd;
};

// An open store: one SQLite connection and fds of its directories. Move-only. Use one
// Store per thread; separate processes each open their own.
class Store {
 public:
  // The store directory for an environment of "K=V" strings: $ZEROBOX_HOME, else
  // $XDG_STATE_HOME/zerobox, else $HOME/.local/state/zerobox. Empty variables count as
  // unset, and a relative XDG_STATE_HOME is ignored (XDG Base Directory spec). Fails
  // when ZEROBOX_HOME is relative or no HOME is usable. No system calls.
  static Result<std::string> location(const std::vector<std::string>& environ);
  // The same without ZEROBOX_HOME: the user's default store, which holds the registry of
  // all their stores (store/registry.hpp).
  static Result<std::string> default_location(const std::vector<std::string>& environ);

  // Opens the store at dir, creating it (and missing parents, mode 0700), journal.db,
  // blobs/ and sessions/ as needed, and creating or migrating the schema. A journal that
  // is not a SQLite database, or has a newer schema than this build knows, is an error
  // naming the file. With a registry, the store is listed there first, and refused (an
  // error naming the sandbox, before anything is made) while a running sandbox could
  // write it (Registry::check_reach).
  static Result<Store> open(const std::string& dir, Registry* registry = nullptr);

  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  ~Store();

  const std::string& dir() const { return m_dir; }
  // Flushes the store's file system (syncfs): blobs, their directories and the journal
  // become durable. Called once at the end of an operation rather than per blob.
  Result<void> sync();
  // meta.schema_version as stored.
  Result<int> schema_version();

  // --- Sessions ---

  // Records a new session in state `running` with a fresh id and creates
  // sessions/ID/{upper,work}.
  Result<Session> create_session(const NewSession& s);
  // The session with exactly this id; nullopt when there is none.
  Result<std::optional<Session>> get_session(std::string_view id);
  // All sessions, or those in `state`, oldest first.
  Result<std::vector<Session>> list_sessions(std::optional<SessionState> state = std::nullopt);
  // Sets the state. Fails when the session does not exist.
  Result<void> set_state(std::string_view id, SessionState state);
  // Sets the state, the exit code or signal and finished_at = now.
  Result<void> finish(std::string_view id, const Finish& f);
  // Replaces the tracked roots (the overlay order, upper/N) of a session.
  Result<void> set_roots(std::string_view id, const std::vector<std::string>& roots);
  // Sets applied_at = now (changes were applied to, or restored on, the real filesystem).
  Result<void> mark_applied(std::string_view id);
  // A unique id prefix, or "last", to a full id. "last" is the caller's newest session:
  // the most recently created one whose cwd is caller_cwd or one of whose tracked roots
  // holds caller_cwd (path boundary, as path::is_under), so that runs made in parallel
  // from other directories are never picked. When no session matches, it is the store's
  // newest and `fallback` is set, for the caller to say so.
  // Errors: "no session matches 'X'", "'X' is ambiguous: matches A, B", "no sessions yet".
  struct Resolved {
    std::string id;
    bool fallback = false;  // "last" matched none of caller_cwd's sessions
  };
  Result<Resolved> resolve_id(std::string_view prefix_or_last, std::string_view caller_cwd);
  // STORE/sessions/ID (no system call).
  std::string session_dir(std::string_view id) const;
  // Locks the session against other zerobox processes, without waiting. Fails with
  // "session ID is in use by another zerobox (pid N)" while another holds it (the pid is
  // left out when the holder has not written it yet), with ENOENT when the session
  // directory does not exist.
  Result<SessionLock> lock_session(std::string_view id);
  // Deletes the session row (its changes and intents with it), releases the blobs its
  // changes referenced and deletes sessions/ID. Locks the session first, so it fails
  // while the session is in use, including by this process: use the overload below
  // when already holding the lock.
  Result<void> remove_session(std::string_view id);
  Result<void> remove_session(SessionLock lock);

  // --- Changes ---

  // Appends changes to a session in one transaction, numbering them after the existing
  // ones (the seq of the arguments is ignored). Each non-empty blob of either side takes
  // over one reference obtained from put_blob_* or retain_blob.
  Result<void> add_changes(std::string_view session, const std::vector<Change>& changes);
  // A session's changes in seq order; empty for a session without changes or without a row.
  Result<std::vector<Change>> changes(std::string_view session);
  // The number of changes of a session, by kind (indexed by ChangeKind).
  Result<std::vector<std::int64_t>> count_changes(std::string_view session);
  // Replaces the before side of change `c.seq` with c.before (a forced accept records
  // what it really replaced). The reference of c.before's blob is taken over; the previous
  // one is released.
  Result<void> set_change_old(std::string_view session, const Change& c);

  // --- Intents ---

  // Records an intent in state "started" and returns its id.
  Result<std::int64_t> add_intent(std::string_view session, std::string_view op, std::string_view data);
  // Every intent, oldest first.
  Result<std::vector<Intent>> intents();
  // Drops an intent once its operation is complete.
  Result<void> remove_intent(std::int64_t id);

  // --- Blobs ---

  // Stores the bytes read from fd (from its current offset to EOF; a pipe works too) and
  // returns the blob with one new reference for the caller. Memory use is bounded. The
  // content is not fsynced: call sync() once the operation's blobs are all in.
  Result<BlobInfo> put_blob_from_fd(int fd);
  // Stores the regular file dir_fd/name by moving it into the store (or deleting it, when
  // the content is there already): the file is consumed either way. Falls back to copying
  // and unlinking when it is on another filesystem (EXDEV) or has other hard links (which
  // could change the content later). The caller must not modify the file meanwhile.
  // name is opened with O_NOFOLLOW; a non-regular file is an error (EINVAL).
  Result<BlobInfo> put_blob_by_rename(int dir_fd, const std::string& name);
  Result<BlobInfo> put_blob_by_rename(const std::string& path);
  // Adds one reference to an existing blob. ENOENT when the journal has no such blob.
  Result<void> retain_blob(std::string_view hash);
  // retain_blob for each, in one transaction (all or none).
  Result<void> retain_blobs(const std::vector<std::string>& hashes);
  // Opens a blob read-only. ENOENT when it is missing.
  Result<UniqueFd> open_blob(std::string_view hash);
  // The journal's row for a blob; nullopt when it has none.
  Result<std::optional<BlobInfo>> blob_info(std::string_view hash);
  // Drops one reference; at zero the row and the file are deleted. ENOENT when the
  // journal has no such blob.
  Result<void> release_blob(std::string_view hash);

  // --- Baselines, inserted changes and blob checks ---

  // Records directories whose host contents the session replaces as a whole, with the
  // names the session's directory held (table `opaque`), in one transaction.
  Result<void> add_opaque_dirs(std::string_view session, const std::vector<OpaqueDir>& dirs);
  // A session's opaque directories, by path.
  Result<std::vector<OpaqueDir>> opaque_dirs(std::string_view session);
  // Inserts changes before change `before_seq` (renumbering it and the changes after it),
  // or appends them when no change has that seq, in one transaction. Blob references are
  // taken over as by add_changes.
  Result<void> insert_changes(std::string_view session, std::int64_t before_seq, const std::vector<Change>& changes);
  // True when the blob file holds the content its name was derived from (its XXH3-128 key,
  // or the key it was moved on to after a collision). ENOENT when the file is missing.
  Result<bool> verify_blob(std::string_view hash);

 private:
  Store() = default;
  Result<void> migrate();
  // Moves src_dir_fd/src_name to the blob's place, or unlinks it when the blob is there
  // already, and takes a reference in the journal. chmod_fd (or -1) is made 0400 first.
  Result<BlobInfo> install_blob(int src_dir_fd, const std::string& src_name, int chmod_fd, const std::string& hash,
                                std::int64_t size);
  Result<void> remove_session_unlocked(const std::string& id);

  // The one owner of the connection; out of line, so this header needs no sqlite3.h.
  struct DbClose {
    void operator()(sqlite3* db) const;
  };
  std::string m_dir;
  UniqueFd m_dir_fd;
  UniqueFd m_blobs_fd;
  UniqueFd m_sessions_fd;
  std::unique_ptr<sqlite3, DbClose> m_db;
};

}  // namespace zb::store
