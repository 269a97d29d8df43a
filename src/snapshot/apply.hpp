// Changing the real filesystem: accept, restore and discard of a session, and recovery
// of one that was interrupted (docs/usage.md "zerobox snapshot subcommands").
//
// Every change describes its target before (Change::before) and after (Change::after).
// Applying a session moves each target from its before-state to its after-state:
//   1. Check. Each target is compared with both states: at the before-state it will be
//      changed, at the after-state it is done already (a resumed operation), anything
//      else is a conflict. A regular file is at a state when its type, size, mode and
//      mtime match, or, when only the mtime differs, its bytes match the blob. Conflicts
//      are all listed, and nothing is changed, unless `force`: then each conflicting
//      target's actual state is recorded as the change's before-state (its content as a
//      new blob) so that undoing the session returns to exactly what was replaced.
//      A directory the session removes (its changes say what it held), or replaces as a
//      whole (an opaque directory of a run, store::OpaqueDir), is listed too: a host entry
//      in it that the session does not account for was added or changed after the command
//      saw the directory, and is a conflict. Forced, it and everything below it are
//      recorded as deletions with their pre-images (inserted before the change removing
//      the directory), so nothing is removed that the journal does not hold.
//      Then every blob about to be written is checked against its hash
//      (Store::verify_blob): one that does not match fails the operation before anything
//      is written.
//   2. Intent. An intent row names the session and the operation before the first write.
//   3. Apply, in journal order (deletions bottom-up, additions top-down). Every path is
//      resolved below its tracked root with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS
//      | RESOLVE_NO_MAGICLINKS): a symlink planted by the sandboxed command never
//      redirects a write. Files, symlinks and FIFOs are created under a temporary name in
//      their directory (".zerobox-tmp-SEQ-TAG", TAG random per operation and kept in the intent) with their mode, owner
//      (as root only) and mtime, then renamed over the target, so each target is always either before or after.
//      setuid/setgid bits are dropped; the recorded xattrs are set (a run's new side holds only user.* ones, so no file
//      capability leaves a sandbox; a pre-image holds every one the journal could read, set where permitted, with a
//      warning otherwise); the names of a pre-image's inode (FileMeta::inode) become hard links again; device nodes are
//      never created and unix sockets are skipped, with a warning. Directory modes, xattrs and mtimes are set last.
//   4. The session's state changes and the intent is removed in one step each.
// A crash (or kill) anywhere leaves the intent behind; the next zerobox that opens the
// store (recover_interrupted) finishes the operation: done targets are at their
// after-state and are skipped, the rest are applied.
//
// Test hook: with ZEROBOX_TEST_CRASH_AFTER=N in the environment, zerobox kills itself
// (SIGKILL) after its N-th write to the filesystem or the journal during an accept or
// restore, so tests can interrupt it at every step.
#pragma once

#include <string>
#include <vector>

#include "store/store.hpp"
#include "util/error.hpp"

namespace zb::snapshot {

struct ApplyOptions {
  bool force = false;
  bool progress = false;  // a progress line on stderr (a terminal)
};

// The outcome of an accept or restore that did not fail outright.
struct ApplyReport {
  std::vector<std::string> conflicts;  // one line each; non-empty means nothing was done
  std::string session;                 // for restore: the new session recording it
  std::int64_t applied = 0;
};

// Applies a pending session (state pending → accepted).
Result<ApplyReport> accept_session(store::Store& store, const std::string& id, const ApplyOptions& options);

// Undoes an applied session: records a new session of kind `restore` holding the inverse
// changes and applies it (the restored session becomes `restored`, the new one
// `accepted`, so restoring the new one undoes the restore).
Result<ApplyReport> restore_session(store::Store& store, const std::string& id, const ApplyOptions& options);

// Applies the changes of a session that is already locked and in state running (the end
// of a --snapshot run). Conflicts are possible only with concurrent writers on the host.
Result<ApplyReport> apply_locked(store::Store& store, const store::Session& session, const ApplyOptions& options);

// Drops a pending session's changes (state → discarded); the journal keeps its diff.
Result<void> discard_session(store::Store& store, const std::string& id);

// Finishes every operation left unfinished by a crash, and journals the layers of runs
// whose zerobox was killed. Says so in the log, one line per operation; one that cannot
// be finished yet is a warning, and is tried again next time.
Result<void> recover_interrupted(store::Store& store);

// Applies the after-state of one change whose new content is the file at content_path
// (an overlay upper layer) rather than a blob: used for excluded paths, which are applied
// at exit and never journaled. Missing parent directories are created.
Result<void> apply_from_file(const std::string& root, const store::Change& change, const std::string& content_path);

// Calls the crash hook: counts one write and kills the process at the configured count.
void crash_point();

}  // namespace zb::snapshot
