// The steps of accept and restore (apply.hpp) as the files of src/snapshot share them:
// check.cpp (step 1: where each target is, conflicts, forced captures, the journal's
// fit), write.cpp (step 3: moving a target to its after-state), apply.cpp (the operation
// as a whole) and recover.cpp (finishing an interrupted one). Internal to src/snapshot.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "snapshot/apply.hpp"
#include "snapshot/journal.hpp"
#include "snapshot/tree.hpp"
#include "store/store.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace zb::snapshot::detail {

// --- Step 1: check (check.cpp) ---------------------------------------------------

// What is at a target now.
struct Observed {
  bool exists = false;
  struct stat st{};
  std::optional<store::FileType> type;
};

// The target p as the tree sees it: absent when a parent is missing, not a directory, or
// a symlink (which is never followed).
Result<Observed> observe(Tree& tree, const std::string& p);

// Where a target is: at the change's before-state (to be changed), at its after-state
// (done already), or neither.
enum class Where { Before, After, Conflict };

struct Checked {
  Where where = Where::Conflict;
  Observed now;
};

// Compares the target of c with both sides of c (apply.hpp, step 1).
Result<Checked> check(store::Store& store, Tree& tree, const store::Change& c);

// One line for a conflict: the path and how it differs from the before-state.
std::string describe_conflict(const store::Change& c, const Observed& o);

// The current state of a target, as a change's before-state (forced accepts): its
// contents go into the store as a new blob.
Result<void> capture(store::Store& store, Tree& tree, store::Change& c, const Observed& o);

// A host entry in a directory that the session removes or replaces as a whole, which the
// session does not account for: added (or changed) on the host after the command saw the
// directory. `before_seq`: the change removing the directory (0: the directory stays).
struct Unseen {
  std::string path;
  std::int64_t before_seq = 0;
};

// Every such entry of the session's changes (those not skipped) and opaque directories.
Result<std::vector<Unseen>> find_unseen(store::Store& store, Tree& tree, const store::Session& s,
                                        const std::vector<store::Change>& changes, const std::vector<bool>& skip,
                                        const SessionPolicy& policy);

// Records the host entry p and everything below it as deletions (children first) with
// their pre-images, so that undoing the operation brings them back.
Result<void> capture_tree(store::Store& store, Tree& tree, const std::string& p, std::vector<store::Change>& out,
                          std::size_t depth = 0);

// The session a user knows an operation by: a restore by the session it restores (12
// digits).
std::string shown_session(const store::Session& s);

// Refuses a journal whose rows do not fit its session (roots, paths, blobs), before
// anything is written.
Result<void> validate_journal(store::Store& store, const store::Session& s, const std::vector<store::Change>& changes);

// --- Step 3: write (write.cpp) ---------------------------------------------------

// A directory whose metadata is set last (settle_dirs).
struct DirMeta {
  std::string path;
  store::FileMeta s;
};

// Where new contents come from: a blob, or (excluded paths) a file of the upper layer.
using OpenContent = std::function<Result<UniqueFd>(const store::FileMeta&)>;

// Moves one target to its after-state, through a temporary name with tmp_tag in it.
// Directory metadata is queued in `dirs`. link_from: another name of the same recorded
// inode, already in place, to hard-link.
Result<void> materialize(Tree& tree, const store::Change& c, const std::string& tmp_tag,
                         const OpenContent& open_content, std::vector<DirMeta>& dirs,
                         const std::string* link_from = nullptr);

// Sets the queued directories' modes, owners, xattrs and mtimes, deepest first.
Result<void> settle_dirs(Tree& tree, std::vector<DirMeta>& dirs);

// --- The operation (apply.cpp) ---------------------------------------------------

// The change that undoes c: its sides swapped, added and deleted exchanged.
store::Change inverse(const store::Change& c);

// Check, optionally capture, then apply every change of a session. The caller holds the
// session's lock and records the outcome.
// `begin` runs once the checks passed, right before the first write: it records the
// intent and returns the tag of this operation's temporary names (random, so the command
// cannot plant a file under one). on_rolled_back runs when a failure was undone
// completely (the intent is then obsolete).
Result<ApplyReport> apply_changes(store::Store& store, const store::Session& s, const std::string& verb,
                                  const ApplyOptions& opts, const std::function<Result<std::string>()>& begin,
                                  const std::function<void()>& on_rolled_back = {});

// Step 4: the session's state, then the intent removed.
Result<void> finish_accept(store::Store& store, const std::string& id, std::int64_t intent);
Result<void> finish_restore(store::Store& store, const std::string& restore_id, const std::string& restored,
                            std::int64_t intent);

}  // namespace zb::snapshot::detail
