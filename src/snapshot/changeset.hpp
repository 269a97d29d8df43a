// Reading an overlayfs upper layer back into the list of changes the sandboxed command
// made to one tracked root: the scan at exit walks only the upper layer, never the tree.
//
// The upper layer must come from an overlay mounted with `userxattr` (inside a user
// namespace) or, privileged, with `redirect_dir=off,metacopy=off`: then every entry of the
// upper layer is complete (no redirects, no metadata-only copies) and its meaning is
// decided by its own type and overlay xattrs:
//
//   upper entry                                  reported as
//   ------------------------------------------   -----------------------------------------
//   char device 0:0, or a zero-size regular      `deleted` of the lower entry (whatever its
//   file with xattr overlay.whiteout             type); ignored when the lower has none
//   absent from the lower                        `added`; a directory is reported, then
//                                                everything below it as `added`
//   same type as the lower, content differs      `modified` (regular files: size, then the
//   (bytes, symlink target, device number)       bytes; symlinks: the target)
//   same type, same content, other permission    `mode_changed`
//   bits, uid or gid, or other user.* xattrs
//   (util::XattrScope::Carried)
//   same type, content, mode, owner and user.*   nothing: a copy-up that changed nothing
//   xattrs                                       (an mtime alone is not a change)
//   another type than the lower                  `type_changed`
//   a directory present in both                  `mode_changed` if its mode, owner or
//                                                user.* xattrs changed, else nothing; then
//                                                recursed into
//
// Every reported side carries its xattrs (Change::before: every one readable, from the
// lower entry; Change::after: user.* other than user.overlay.*, util::XattrScope::Carried);
// a lower regular file with other hard links carries an inode label (before->inode), so
// that a restore links its names again. Hard links the command made are not labelled: accept
// writes them as separate files.
//
// Opaque directories (xattr overlay.opaque = "y") hide the whole lower directory: every
// lower entry without an upper entry of the same name is `deleted`. Upper entries below an
// opaque directory are still compared with the lower entry of the same name, so the result
// is the net difference between the lower tree and the merged view: `rm -rf d; mkdir d;
// echo x > d/f` over a lower d/f holding "x" reports nothing for d/f, and d/g (lower only)
// as deleted. A directory below an opaque one (or one replacing a non-directory) hides its
// lower counterpart too, even without the xattr.
//
// Deletions are reported recursively: a deleted lower directory yields one `deleted`
// change per entry of the lower subtree, children before their directory (post-order), so
// applying the changes in order can unlink bottom-up. A `type_changed` directory → other
// type likewise comes after the deletions of the lower directory's contents; a
// `type_changed` other → directory comes before the `added` changes of its contents. Apart
// from that, siblings come in readdir order: within one directory the deletions of lower
// entries hidden by opacity come first, then the upper entries.
//
// The root directory itself is never reported (its upper attributes are those of the
// store's upper/N, not a copy-up).
//
// Safety: every lookup is openat/fstatat relative to a directory fd with O_NOFOLLOW /
// AT_SYMLINK_NOFOLLOW; no symlink of either layer is ever followed, and the lower tree is
// only looked at where the upper layer names an entry (plus the listing of lower
// directories that are hidden by opacity or deleted, whose entries are reported).
//
// Cost: the walk is streaming and depth-first. Memory and open fds grow with the depth of
// the upper tree (two to three fds per level), not with the number of changes; file
// contents are compared through a bounded buffer and holes shared by both files
// (SEEK_DATA/SEEK_HOLE) are skipped without reading.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "store/store.hpp"
#include "util/error.hpp"

namespace zb::snapshot {

// Which xattr namespace the overlay used for its private xattrs. An overlay mounted with
// `userxattr` writes `user.overlay.*`; a privileged one `trusted.overlay.*`. Only the
// namespace of the mount is trusted: in a privileged overlay the sandboxed command may set
// `user.overlay.opaque` on its own files, and that must not be read as an opaque marker.
enum class OverlayXattrs { User, Trusted };

// A directory of the upper layer that hides a lower directory of the same path (opaque,
// or below one): rel as in ScannedChange, and the names of its upper entries other than
// whiteouts, the whole contents of the merged directory.
using OpaqueSink = std::function<Result<void>(const std::string& rel, const std::vector<std::string>& names)>;

struct ScanOptions {
  OverlayXattrs xattrs = OverlayXattrs::User;
  // Lower entries that are not directories and that the merged view hides wholesale (in
  // an opaque directory without an upper entry of their name, or below a deleted
  // directory) are not reported when their ctime is at or after this time (ns since the
  // epoch; 0: never): they were added or changed on the host while the command ran, so it
  // cannot have seen them as they are. Accept finds them and refuses (apply.hpp). Entries
  // the command deleted by name (a whiteout of their own) are always reported.
  std::int64_t since_ns = 0;
  // Called once per directory that hides a lower directory, after its entries.
  OpaqueSink on_opaque;
};

// A label shared by the names of one inode (dev and ino), for store::FileMeta::inode.
std::int64_t inode_label(const struct stat& st);

// One change found in the upper layer.
//
// change.path is relative to the tracked root, without a leading slash ("a/b"), exact
// bytes (may hold newlines and invalid UTF-8); the caller joins it with the root before
// journaling it (store::Change::path is absolute). seq and the blob hashes are left empty:
// hashing contents is the caller's business. Sizes are set for regular files and symlinks;
// links for symlinks; modes are st_mode & 07777.
struct ScannedChange {
  store::Change change;
  // Of the upper entry (0 for `deleted`): upper entries sharing an inode are hard links
  // made by the command; each name is reported separately.
  std::uint64_t new_nlink = 0;
  std::uint64_t new_ino = 0;
};

// Receives each change as it is found. Returning an error stops the scan, and
// for_each_change returns that error unchanged.
using ChangeSink = std::function<Result<void>(const ScannedChange&)>;

// Walks the upper layer `upper_dir` (an fd of the upper directory of the tracked root)
// against `lower_dir` (an fd of the tracked root itself, the overlay's lower directory)
// and passes every change to `sink`. Fails on the first system call that fails (naming
// the relative path), except that an entry vanishing from the lower tree during the scan
// counts as absent.
Result<void> for_each_change(int upper_dir, int lower_dir, const ChangeSink& sink, const ScanOptions& options = {});

// The same, opening both directories by path (O_DIRECTORY, following symlinks only in
// the paths given here).
Result<void> for_each_change(const std::string& upper_dir, const std::string& lower_dir, const ChangeSink& sink,
                             const ScanOptions& options = {});

// Collects every change into a vector, in the order for_each_change reports them.
Result<std::vector<ScannedChange>> collect_changes(const std::string& upper_dir, const std::string& lower_dir,
                                                   const ScanOptions& options = {});

// True when two open regular files hold the same bytes. Reads through a bounded buffer and
// skips ranges that are holes in both. Exposed for the tests and for accept, which must
// re-check a file before moving it.
Result<bool> same_content(int a, int b, std::int64_t size);

}  // namespace zb::snapshot
