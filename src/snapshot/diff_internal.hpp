// What the files of `zerobox snapshot diff` share (diff.hpp has the contract): diff.cpp
// (the entry point: selection, rename detection, dispatch), diff_content.cpp (the two
// sides of a change, their contents and the line diff), diff_patch.cpp (patch text),
// diff_stat.cpp (--stat and --name-status), diff_json.cpp (--json) and diff_quote.cpp
// (names and lines made safe to print). Internal to src/snapshot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "snapshot/diff.hpp"
#include "store/store.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace zb::snapshot::diff_detail {

using store::Change;
using store::ChangeKind;
using store::FileType;

// --- Output (diff.cpp) -------------------------------------------------------------

struct Colors {
  const char* meta = "";
  const char* frag = "";
  const char* old_line = "";
  const char* new_line = "";
  const char* reset = "";
};

inline void put(std::FILE* out, std::string_view s) { std::fwrite(s.data(), 1, s.size(), out); }

// One line in a colour (none when color is empty), then the newline.
inline void put_line(std::FILE* out, const char* color, std::string_view s, const char* reset) {
  bool coloured = *color != '\0';
  if (coloured) put(out, color);
  put(out, s);
  if (coloured) put(out, reset);
  std::fputc('\n', out);
}

inline std::string decimal(std::int64_t v) { return std::to_string(v); }

// The path as human output shows it: relative to cwd where it lies under it.
std::string shown_path(const std::string& path, const std::string& cwd);

// Exact renames among the chosen changes: `from_of` maps the index of each added file to
// the index of the deleted one it came from; `sources` holds those deleted ones, which
// are shown under their new names only.
struct Renames {
  std::map<std::size_t, std::size_t> from_of;
  std::set<std::size_t> sources;
};

// --- The two sides of a change (diff_content.cpp) ----------------------------------

using Side = store::FileMeta;

// What one `diff --git` section compares. A change of type is two sections, a deletion
// and an addition, as git shows it.
struct Pair {
  std::optional<Side> a, b;
};

std::vector<Pair> pairs_of(const Change& c);

enum class Body {
  None,     // no contents to compare: directories, FIFOs, sockets, devices
  Text,     // a line diff
  Binary,   // a NUL among the first bytes, or too large
  NotKept,  // a blob the store no longer has (or never recorded)
};

struct Content {
  Body body = Body::None;
  std::string text;       // Text: the bytes (only the first k_sniff_bytes while fd is open)
  std::int64_t size = 0;  // in bytes
  UniqueFd fd;            // the blob, open while text holds only its beginning
};

// One line of the edit script: ' ' kept, '-' removed, '+' added. The line keeps its '\n'
// so that "x" at the end of a file differs from "x\n", as in git.
struct Op {
  char sign = ' ';
  std::string_view line;
};

// The ops point into a.text and b.text, which a move would invalidate (a short string
// moves its bytes), so a PairDiff stays where it was made.
struct PairDiff {
  PairDiff() = default;
  PairDiff(const PairDiff&) = delete;
  PairDiff& operator=(const PairDiff&) = delete;

  Body body = Body::None;
  Content a, b;
  std::vector<Op> ops;  // Body::Text
  std::int64_t insertions = 0, deletions = 0;
};

// Compares the two sides of p, reading their blobs only as far as it takes.
Result<void> diff_pair(store::Store& store, const Pair& p, ChangeKind kind, PairDiff& d);

// --- The formats (diff_patch.cpp, diff_stat.cpp, diff_json.cpp) ---------------------

Result<void> write_patch(std::FILE* out, store::Store& store, const std::vector<const Change*>& chosen,
                         const Renames& renames, const DiffOptions& options, const Colors& col);
Result<void> write_stat(std::FILE* out, store::Store& store, const std::vector<const Change*>& chosen,
                        const Renames& renames, const DiffOptions& options, const Colors& col);
void write_name_status(std::FILE* out, const std::vector<const Change*>& chosen, const DiffOptions& options);
Result<void> write_json(std::FILE* out, const std::vector<const Change*>& changes, const DiffOptions& options);

}  // namespace zb::snapshot::diff_detail
