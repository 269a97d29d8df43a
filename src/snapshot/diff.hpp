// Rendering a session's changes for `zerobox snapshot diff` (docs/usage.md "Snapshot
// subcommands", "Diff output"): unified diffs of text files, --stat, --name-status and
// --json.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "store/store.hpp"
#include "util/error.hpp"

namespace zb::snapshot {

enum class DiffFormat { Patch, Stat, NameStatus, Json };

struct DiffOptions {
  DiffFormat format = DiffFormat::Patch;
  bool color = false;                // ANSI colours as git uses them (meta bold, hunk cyan, -red, +green)
  std::string cwd;                   // the session's working directory: human output shows paths
                                     // relative to it where they lie under it
  std::vector<std::string> filters;  // absolute paths; when non-empty, only changes at or
                                     // under one of them are shown
  std::string session_id;            // carried in --json output
  bool visible_controls = false;     // Patch: contents through visible_controls() (for a terminal)
  // Called after each change is rendered (done, total); may be empty.
  std::function<void(std::size_t, std::size_t)> progress;
};

// Writes the changes of one session to out. Old contents come from the blob of each
// change's before side, new ones from its after side, opened through store.open_blob.
// Changes are shown in the order given (the journal's seq order); a change is shown when
// its path equals a filter or lies under one (path boundary: "/a" selects "/a/b", not
// "/ab"). Human output names a path relative to options.cwd where it lies under it ("."
// for cwd itself), else absolutely.
//
// Patch, as `git diff`:
//   diff --git a/REL b/REL        "a/REL" and "b/REL" each quoted by git_quote; an
//                                 absolute REL follows "a/" with one slash, as git
//                                 prints it ("a/etc/x" for /etc/x outside cwd)
//   new file mode M | deleted file mode M | old mode M + new mode M
//   old owner U:G + new owner U:G  (not in git) when uid or gid changed
//   --- a/REL or /dev/null, +++ b/REL or /dev/null, then hunks with 3 lines of context
// M is git's mode: 120000 for a symlink, otherwise the octal st_mode type bits and the
// permission bits as recorded (100644, 100755, 100600, 040755, 010644 for a FIFO ...).
// There is no `index` line (the store hashes with XXH3, not git's object ids).
//   - Text: a line diff (dtl); "\ No newline at end of file" after a last line without
//     one. A symlink's content is its target, without a newline, as in git.
//   - Binary, when either side has a NUL in its first 8000 bytes (git's heuristic) or
//     is over 64 MiB: "Binary files a/REL and b/REL differ" (/dev/null for an absent
//     side). Only the first 8000 bytes of such a file are read.
//   - A side whose blob is missing from the store (or was never recorded for a
//     non-empty file): "Files a/REL and b/REL differ (contents not kept)".
//   - Directories, FIFOs, sockets and devices have no contents: their sections are
//     header lines only, so an added empty directory still shows ("new file mode
//     040755"), unlike in git. Contents added below a directory come as their own
//     changes.
//   - type_changed is two sections for the same path, as git shows it: the deletion of
//     the old entry, then the addition of the new one.
//   - mode_changed shows the header only: its contents are the same on both sides.
// With options.visible_controls, each content line (and symlink target) goes through
// visible_controls() before it is coloured; header lines need not, as git_quote leaves no
// control byte in a name.
// With options.color: meta lines bold, hunk headers cyan, removed lines red, added lines
// green, each followed by a reset (\x1b[m); context lines and the "Binary files" and
// "\ No newline" lines are plain, as in git.
//
// Stat, as `git diff --stat` at 80 columns: one " REL | N +++--" line per change (REL
// git-quoted; every change counts as a file, directories and FIFOs with 0, and a
// type_changed change is one line summing both sides), " REL | Bin OLD -> NEW bytes"
// for binary or not-kept contents, then git's summary line (" 1 file changed, 2
// insertions(+), 1 deletion(-)"; binary files add to the file count only). Nothing at
// all when no change is shown. With options.color the graph and the byte counts are
// coloured as in git.
//
// NameStatus: "X\tREL\n" per change, X = A added, M modified or mode_changed, D deleted,
// T type_changed; REL quoted by git_quote.
//
// Json: one line holding {"session": ID, "changes": [...]}, through json_escape_controls. Each change is an object with
// every key present, null where the journal has no value (old_* of an added file, new_*
// of a deleted one, links of non-symlinks):
//   "path" (absolute) - or "path_b64" (standard base64) instead when it is not UTF-8,
//   "kind" (added | modified | deleted | type_changed | mode_changed),
//   "old_type", "new_type" (file | dir | symlink | fifo | socket | char | block),
//   "old_mode", "new_mode" (permission bits, st_mode & 07777, as integers),
//   "old_size", "new_size",
//   "old_link", "new_link" - or "old_link_b64" / "new_link_b64" instead for a target
//   that is not UTF-8,
//   "old_mtime_ns", "new_mtime_ns", "old_uid", "old_gid", "new_uid", "new_gid".
//
// Errors: a blob that cannot be read (other than missing), a write error on out, a
// session id that is not UTF-8. Nothing is thrown.
Result<void> write_diff(std::FILE* out, store::Store& store, const std::vector<store::Change>& changes,
                        const DiffOptions& options);

// A path as git prints it with core.quotePath=true: unchanged when it holds only printable
// ASCII other than '"' and '\\'; otherwise in double quotes with C escapes (\n, \t, \", \\)
// and octal escapes (\303\251) for control and non-ASCII bytes.
std::string git_quote(std::string_view path);

// Control characters made visible, as `cat -v` shows them, for text bound for a terminal:
// C0 codes other than TAB and LF as ^@ .. ^_ (CR is ^M, ESC ^[), DEL as ^?, and the C1
// codes as M-^@ .. M-^_, both the code points U+0080..U+009F written in UTF-8 (0xC2 0x9B
// is M-^[) and the bytes 0x80..0x9F that are not part of a valid UTF-8 sequence. Every
// other byte, valid UTF-8 above U+009F included, is unchanged.
std::string visible_controls(std::string_view s);

// UTF-8 JSON text with DEL and the C1 code points U+0080..U+009F written as \u007f and
// \u0080..\u009f: the same JSON value, with nothing a terminal acts on (nlohmann's dump()
// escapes only U+0000..U+001F). Other bytes are unchanged.
std::string json_escape_controls(std::string_view json);

}  // namespace zb::snapshot
