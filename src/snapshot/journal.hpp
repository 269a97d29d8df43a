// Recording a finished run: the overlay upper layers of a session become rows of the
// journal and blobs of the store (store/store.hpp).
//
// For each tracked overlay N (session.roots[N]) the upper layer STORE/sessions/ID/upper/N
// is walked once (snapshot/changeset.hpp); nothing else of the tracked tree is read, so
// the cost follows what changed. For each change:
//   - a path under a protected or denied path (SessionPolicy::protected_paths) is dropped
//     with a warning: the sandbox could not write there, so only a name created while
//     the path was absent can reach this point;
//   - a path matching --snapshot-exclude is applied to the real filesystem right away,
//     in every mode, and never journaled;
//   - otherwise the pre-image (old content, from the real file) and the new content (moved
//     out of the upper layer) become blobs, and the change becomes a journal row (with the
//     xattrs and hard-link labels of changeset.hpp).
// Directories the command replaced as a whole are recorded with what they held
// (store::OpaqueDir); entries the host added or changed during the run in a directory the
// command replaced or removed are left out (ScanOptions::since_ns is the session's start),
// so that applying the session finds them and refuses (apply.hpp).
// The upper and work directories are removed at the end: the journal alone describes the
// session from then on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "snapshot/exclude.hpp"
#include "store/store.hpp"
#include "util/error.hpp"

namespace zb::snapshot {

// What a session keeps of the run's policy (the `policy` column, JSON): the tracked roots
// as the user named them (excludes are relative to them), the exclude patterns and the
// protected paths, which accept and restore apply again.
struct SessionPolicy {
  std::vector<std::string> tracked;
  std::vector<std::string> exclude;
  std::vector<std::string> protected_paths;

  std::string to_json() const;
  static SessionPolicy from_json(const std::string& text);  // empty policy on bad input
};

// True for a change to a protected path, or one that puts a file or symlink where a
// protected path's parent directory belongs. Such changes are never applied.
bool protected_change(const std::string& abs, const store::Change& c, const std::vector<std::string>& protected_paths);

struct JournalStats {
  std::int64_t changes = 0;   // journaled
  std::int64_t excluded = 0;  // applied directly
  std::int64_t dropped = 0;   // protected
};

// Journals the changes of a session whose sandbox is gone. Warnings go to the log.
Result<JournalStats> journal_session(store::Store& store, const store::Session& session, const SessionPolicy& policy);

}  // namespace zb::snapshot
