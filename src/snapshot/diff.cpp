// Rendering a session's changes as git renders a diff; the contract is in diff.hpp.
#include "snapshot/diff.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <dtl/dtl.hpp>
#include <nlohmann/json.hpp>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "util/fd.hpp"
#include "util/text.hpp"
#include "util/path.hpp"

namespace zb::snapshot {
namespace {

using store::Change;
using store::ChangeKind;
using store::FileType;
using store::type_of;

// Larger files are shown as binary without being read: the line diff holds the whole of
// both sides in memory.
constexpr std::int64_t k_max_text = std::int64_t{64} << 20;
// git's buffer_is_binary() looks for a NUL in this many leading bytes.
constexpr std::size_t k_sniff_bytes = 8000;
constexpr std::size_t k_context = 3;
// git's --stat width when it does not ask the terminal.
constexpr std::int64_t k_stat_width = 80;

// --- Output -----------------------------------------------------------------------

struct Colors {
  const char* meta = "";
  const char* frag = "";
  const char* old_line = "";
  const char* new_line = "";
  const char* reset = "";
};

Colors colors_for(bool on) {
  if (!on) return {};
  return {"\x1b[1m", "\x1b[36m", "\x1b[31m", "\x1b[32m", "\x1b[m"};
}

void put(std::FILE* out, std::string_view s) { std::fwrite(s.data(), 1, s.size(), out); }

// One line in a colour (none when color is empty), then the newline.
void put_line(std::FILE* out, const char* color, std::string_view s, const char* reset) {
  bool coloured = *color != '\0';
  if (coloured) put(out, color);
  put(out, s);
  if (coloured) put(out, reset);
  std::fputc('\n', out);
}

std::string decimal(std::int64_t v) { return std::to_string(v); }

int decimal_width(std::int64_t v) { return static_cast<int>(decimal(v).size()); }

std::string octal6(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%06o", static_cast<unsigned>(v));
  return buf;
}

// --- Text helpers -----------------------------------------------------------------


// The path as human output shows it: relative to cwd where it lies under it.
std::string shown_path(const std::string& path, const std::string& cwd) {
  if (cwd.empty() || !path::is_under(path, cwd)) return path;
  if (path.size() == cwd.size()) return ".";
  if (cwd == "/") return path.substr(1);
  return path.substr(cwd.size() + 1);
}

// --- The two sides of a change ----------------------------------------------------

using Side = store::FileMeta;

// What one `diff --git` section compares. A change of type is two sections, a deletion
// and an addition, as git shows it.
struct Pair {
  std::optional<Side> a, b;
};

std::vector<Pair> pairs_of(const Change& c) {
  const auto& a = c.before;
  const auto& b = c.after;
  if (a && b && a->type != b->type) return {Pair{a, std::nullopt}, Pair{std::nullopt, b}};
  return {Pair{a, b}};
}

// git's mode: 120000 for every symlink, otherwise the type bits and the permission bits.
std::string git_mode(const Side& s) {
  std::uint32_t type_bits = 0;
  switch (s.type) {
    case FileType::Regular: type_bits = S_IFREG; break;
    case FileType::Directory: type_bits = S_IFDIR; break;
    case FileType::Symlink: return "120000";
    case FileType::Fifo: type_bits = S_IFIFO; break;
    case FileType::Socket: type_bits = S_IFSOCK; break;
    case FileType::CharDevice: type_bits = S_IFCHR; break;
    case FileType::BlockDevice: type_bits = S_IFBLK; break;
  }
  return octal6(type_bits | (s.mode.value_or(0) & 07777));
}

// True when the two sides are known to hold the same bytes, so only the header differs.
bool same_content(const Pair& p, ChangeKind kind) {
  if (!p.a || !p.b) return false;
  if (p.a->type == FileType::Symlink) return p.a->link == p.b->link;
  if (p.a->type != FileType::Regular) return true;
  if (p.a->blob && p.b->blob) return *p.a->blob == *p.b->blob;
  // A mode_changed change has equal contents by definition (changeset.hpp), whether or
  // not they were kept.
  if (kind == ChangeKind::ModeChanged) return true;
  return !p.a->blob && !p.b->blob && p.a->size.value_or(0) == 0 && p.b->size.value_or(0) == 0;
}

// --- Contents -----------------------------------------------------------------------

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

// Appends bytes from fd to out until out holds limit bytes or the file ends.
Result<void> read_into(int fd, std::string& out, std::size_t limit, const std::string& hash) {
  while (out.size() < limit) {
    std::size_t want = std::min<std::size_t>(limit - out.size(), std::size_t{1} << 16);
    std::size_t had = out.size();
    out.resize(had + want);
    ssize_t n = ::read(fd, out.data() + had, want);
    if (n < 0) {
      int err = errno;
      out.resize(had);
      if (err == EINTR) continue;
      return fail("read blob " + hash, err);
    }
    out.resize(had + static_cast<std::size_t>(n));
    if (n == 0) break;
  }
  return {};
}

// Reads no more of a side than it takes to tell text from binary.
Result<Content> probe(store::Store& store, const std::optional<Side>& side) {
  Content c;
  if (!side) return c;
  if (side->type == FileType::Symlink) {
    c.body = Body::Text;
    c.text = side->link.value_or("");
    c.size = static_cast<std::int64_t>(c.text.size());
    return c;
  }
  if (side->type != FileType::Regular) return c;
  c.size = side->size.value_or(0);
  if (!side->blob) {
    c.body = c.size == 0 ? Body::Text : Body::NotKept;
    return c;
  }
  auto fd = store.open_blob(*side->blob);
  if (!fd) {
    if (fd.error().err != ENOENT) return std::unexpected(fd.error());
    c.body = Body::NotKept;
    return c;
  }
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return fail("fstat blob " + *side->blob);
  c.size = st.st_size;
  if (c.size > k_max_text) {
    c.body = Body::Binary;
    return c;
  }
  if (auto r = read_into(fd->get(), c.text, k_sniff_bytes, *side->blob); !r) return std::unexpected(r.error());
  if (c.text.find('\0') != std::string::npos) {
    c.body = Body::Binary;
    c.text.clear();
    return c;
  }
  c.body = Body::Text;
  if (c.text.size() == k_sniff_bytes) c.fd = std::move(*fd);
  return c;
}

// Reads the rest of a text blob.
Result<void> finish(Content& c, const std::optional<Side>& side) {
  if (!c.fd) return {};
  const std::string& hash = *side->blob;
  c.text.reserve(static_cast<std::size_t>(c.size));
  if (auto r = read_into(c.fd.get(), c.text, static_cast<std::size_t>(k_max_text) + 1, hash); !r) return r;
  c.fd.reset();
  c.size = static_cast<std::int64_t>(c.text.size());
  if (c.size > k_max_text) {  // grew after the fstat: blobs do not, but stay bounded
    c.body = Body::Binary;
    c.text = std::string();
  }
  return {};
}

// --- Line diff ----------------------------------------------------------------------

// One line of the edit script: ' ' kept, '-' removed, '+' added. The line keeps its '\n'
// so that "x" at the end of a file differs from "x\n", as in git.
struct Op {
  char sign = ' ';
  std::string_view line;
};

std::vector<std::string_view> split_lines(std::string_view s) {
  std::vector<std::string_view> lines;
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t nl = s.find('\n', i);
    std::size_t end = nl == std::string_view::npos ? s.size() : nl + 1;
    lines.push_back(s.substr(i, end - i));
    i = end;
  }
  return lines;
}

std::vector<Op> diff_lines(std::string_view old_text, std::string_view new_text) {
  auto a = split_lines(old_text);
  auto b = split_lines(new_text);
  // The common head and tail are cut before dtl sees the rest: most edits touch a small
  // part of a file, and dtl's cost grows with the length of what it compares.
  std::size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  std::size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head && a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) {
    ++tail;
  }
  std::vector<Op> ops;
  ops.reserve(std::max(a.size(), b.size()));
  for (std::size_t i = 0; i < head; ++i) ops.push_back({' ', a[i]});
  auto at = [](const std::vector<std::string_view>& v, std::size_t i) {
    return v.begin() + static_cast<std::ptrdiff_t>(i);
  };
  std::vector<std::string_view> mid_a(at(a, head), at(a, a.size() - tail));
  std::vector<std::string_view> mid_b(at(b, head), at(b, b.size() - tail));
  if (mid_a.empty() || mid_b.empty()) {
    for (auto l : mid_a) ops.push_back({'-', l});
    for (auto l : mid_b) ops.push_back({'+', l});
  } else {
    dtl::Diff<std::string_view, std::vector<std::string_view>> d(mid_a, mid_b);
    d.compose();
    for (const auto& [line, info] : d.getSes().getSequence()) {
      char sign = info.type == dtl::SES_ADD ? '+' : info.type == dtl::SES_DELETE ? '-' : ' ';
      ops.push_back({sign, line});
    }
  }
  for (std::size_t i = a.size() - tail; i < a.size(); ++i) ops.push_back({' ', a[i]});
  return ops;
}

// "-3,2" / "+7" as in a hunk header: the count is left out when it is 1, and an empty
// range names the line before it.
std::string hunk_range(std::size_t before, std::size_t count) {
  std::string s = decimal(static_cast<std::int64_t>(count != 0 ? before + 1 : before));
  if (count != 1) s += "," + decimal(static_cast<std::int64_t>(count));
  return s;
}

void write_op(std::FILE* out, const Op& op, const Colors& col, bool visible) {
  bool newline = !op.line.empty() && op.line.back() == '\n';
  std::string_view body = newline ? op.line.substr(0, op.line.size() - 1) : op.line;
  std::string made_visible;
  if (visible) {
    made_visible = visible_controls(body);
    body = made_visible;
  }
  const char* color = op.sign == '-' ? col.old_line : op.sign == '+' ? col.new_line : "";
  if (*color != '\0') put(out, color);
  std::fputc(op.sign, out);
  put(out, body);
  if (*color != '\0') put(out, col.reset);
  std::fputc('\n', out);
  if (!newline) put(out, "\\ No newline at end of file\n");
}

// Unified hunks with k_context lines of context; changes fewer than 2 * k_context + 1
// unchanged lines apart share a hunk, as in git. Within a run of changes the removed
// lines come first.
void write_hunks(std::FILE* out, const std::vector<Op>& ops, const Colors& col, bool visible) {
  const std::size_t n = ops.size();
  std::vector<bool> shown(n, false);
  for (std::size_t j = 0; j < n; ++j) {
    if (ops[j].sign == ' ') continue;
    std::size_t from = j >= k_context ? j - k_context : 0;
    std::size_t to = std::min(n, j + k_context + 1);
    for (std::size_t k = from; k < to; ++k) shown[k] = true;
  }
  std::size_t a_line = 0, b_line = 0;  // lines of each side before ops[i]
  std::size_t i = 0;
  while (i < n) {
    if (!shown[i]) {
      a_line += 1;
      b_line += 1;  // only kept lines are outside hunks
      ++i;
      continue;
    }
    std::size_t end = i, a_count = 0, b_count = 0;
    for (; end < n && shown[end]; ++end) {
      if (ops[end].sign != '+') ++a_count;
      if (ops[end].sign != '-') ++b_count;
    }
    put_line(out, col.frag, "@@ -" + hunk_range(a_line, a_count) + " +" + hunk_range(b_line, b_count) + " @@",
             col.reset);
    for (std::size_t k = i; k < end;) {
      if (ops[k].sign == ' ') {
        write_op(out, ops[k++], col, visible);
        continue;
      }
      std::size_t run_end = k;
      while (run_end < end && ops[run_end].sign != ' ') ++run_end;
      for (std::size_t m = k; m < run_end; ++m) {
        if (ops[m].sign == '-') write_op(out, ops[m], col, visible);
      }
      for (std::size_t m = k; m < run_end; ++m) {
        if (ops[m].sign == '+') write_op(out, ops[m], col, visible);
      }
      k = run_end;
    }
    a_line += a_count;
    b_line += b_count;
    i = end;
  }
}

// --- One section ------------------------------------------------------------------

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

Result<void> diff_pair(store::Store& store, const Pair& p, ChangeKind kind, PairDiff& d) {
  if (same_content(p, kind)) return {};
  auto a = probe(store, p.a);
  if (!a) return std::unexpected(a.error());
  auto b = probe(store, p.b);
  if (!b) return std::unexpected(b.error());
  d.a = std::move(*a);
  d.b = std::move(*b);
  auto either = [&](Body x) { return d.a.body == x || d.b.body == x; };
  if (either(Body::NotKept)) {
    d.body = Body::NotKept;
  } else if (either(Body::Binary)) {
    d.body = Body::Binary;
  } else if (either(Body::Text)) {
    d.body = Body::Text;
    if (auto r = finish(d.a, p.a); !r) return std::unexpected(r.error());
    if (auto r = finish(d.b, p.b); !r) return std::unexpected(r.error());
    if (d.a.body == Body::Binary || d.b.body == Body::Binary) {
      d.body = Body::Binary;
      return {};
    }
    d.ops = diff_lines(d.a.text, d.b.text);
    for (const auto& op : d.ops) {
      if (op.sign == '+') ++d.insertions;
      if (op.sign == '-') ++d.deletions;
    }
  }
  return {};
}

Result<void> write_patch_pair(std::FILE* out, store::Store& store, const Change& c, const Pair& p,
                              const std::string& shown, const Colors& col, bool visible) {
  // git prints an absolute path, too, behind "a/" with a single slash.
  std::string_view tail = shown;
  if (!tail.empty() && tail.front() == '/') tail.remove_prefix(1);
  std::string a_name = git_quote("a/" + std::string(tail));
  std::string b_name = git_quote("b/" + std::string(tail));
  auto meta = [&](const std::string& s) { put_line(out, col.meta, s, col.reset); };

  meta("diff --git " + a_name + " " + b_name);
  if (!p.a && p.b) {
    meta("new file mode " + git_mode(*p.b));
  } else if (p.a && !p.b) {
    meta("deleted file mode " + git_mode(*p.a));
  } else if (p.a && p.b) {
    if (git_mode(*p.a) != git_mode(*p.b)) {
      meta("old mode " + git_mode(*p.a));
      meta("new mode " + git_mode(*p.b));
    }
    if (p.a->uid && p.a->gid && p.b->uid && p.b->gid && (*p.a->uid != *p.b->uid || *p.a->gid != *p.b->gid)) {
      meta("old owner " + decimal(*p.a->uid) + ":" + decimal(*p.a->gid));
      meta("new owner " + decimal(*p.b->uid) + ":" + decimal(*p.b->gid));
    }
  }

  PairDiff d;
  if (auto r = diff_pair(store, p, c.kind, d); !r) return r;
  std::string from = p.a ? a_name : "/dev/null";
  std::string to = p.b ? b_name : "/dev/null";
  switch (d.body) {
    case Body::None:
      break;
    case Body::Binary:
      put(out, "Binary files " + from + " and " + to + " differ\n");
      break;
    case Body::NotKept:
      put(out, "Files " + from + " and " + to + " differ (contents not kept)\n");
      break;
    case Body::Text:
      if (d.insertions == 0 && d.deletions == 0) break;
      meta("--- " + from);
      meta("+++ " + to);
      write_hunks(out, d.ops, col, visible);
      break;
  }
  return {};
}

// --- --stat -----------------------------------------------------------------------

struct FileStat {
  std::string name;  // quoted
  bool binary = false;
  std::int64_t added = 0;    // lines; bytes of the new side when binary
  std::int64_t deleted = 0;  // lines; bytes of the old side when binary
};

Result<FileStat> stat_change(store::Store& store, const Change& c, const std::string& shown) {
  FileStat f;
  f.name = git_quote(shown);
  std::int64_t lines_added = 0, lines_deleted = 0, old_bytes = 0, new_bytes = 0;
  for (const auto& p : pairs_of(c)) {
    PairDiff d;
    if (auto r = diff_pair(store, p, c.kind, d); !r) return std::unexpected(r.error());
    if (d.body == Body::Binary || d.body == Body::NotKept) f.binary = true;
    lines_added += d.insertions;
    lines_deleted += d.deletions;
    old_bytes += p.a ? (d.body == Body::None ? p.a->size.value_or(0) : d.a.size) : 0;
    new_bytes += p.b ? (d.body == Body::None ? p.b->size.value_or(0) : d.b.size) : 0;
  }
  f.added = f.binary ? new_bytes : lines_added;
  f.deleted = f.binary ? old_bytes : lines_deleted;
  return f;
}

// At least one column for any change: scaled as if one column fewer, plus one (git).
std::int64_t scale_linear(std::int64_t it, std::int64_t width, std::int64_t max_change) {
  if (it == 0) return 0;
  return 1 + (it * (width - 1) / max_change);
}

void put_graph(std::FILE* out, char ch, std::int64_t count, const char* color, const char* reset) {
  if (count <= 0) return;
  put(out, color);
  put(out, std::string(static_cast<std::size_t>(count), ch));
  put(out, reset);
}

std::string pad_left(std::string s, std::int64_t width) {
  if (static_cast<std::int64_t>(s.size()) < width) s.insert(0, static_cast<std::size_t>(width) - s.size(), ' ');
  return s;
}

// git's show_stats() and print_stat_summary() with a width of 80 columns.
void write_stat(std::FILE* out, const std::vector<FileStat>& files, const Colors& col) {
  if (files.empty()) return;
  std::int64_t max_change = 0, max_len = 0, bin_width = 0, number_width = 0;
  std::int64_t insertions = 0, deletions = 0;
  for (const auto& f : files) {
    max_len = std::max(max_len, static_cast<std::int64_t>(f.name.size()));
    if (f.binary) {
      // "Bin 1024 -> 2048 bytes": the two sizes plus 14 fixed characters
      bin_width = std::max<std::int64_t>(bin_width, 14 + decimal_width(f.added) + decimal_width(f.deleted));
      number_width = 3;  // counts align with "Bin"
      continue;
    }
    max_change = std::max(max_change, f.added + f.deleted);
    insertions += f.added;
    deletions += f.deleted;
  }
  number_width = std::max<std::int64_t>(number_width, decimal_width(max_change));
  std::int64_t width = std::max(k_stat_width, 16 + 6 + number_width);
  std::int64_t graph_width = max_change + 4 > bin_width ? max_change : bin_width - 4;
  std::int64_t name_width = max_len;
  if (name_width + number_width + 6 + graph_width > width) {
    if (graph_width > width * 3 / 8 - number_width - 6) {
      graph_width = std::max<std::int64_t>(width * 3 / 8 - number_width - 6, 6);
    }
    if (name_width > width - number_width - 6 - graph_width) {
      name_width = width - number_width - 6 - graph_width;
    } else {
      graph_width = width - number_width - 6 - name_width;
    }
  }

  for (const auto& f : files) {
    // Too long a name keeps its end, from a slash on where it can, behind "...".
    std::string prefix;
    std::string_view name = f.name;
    std::int64_t len = name_width;
    if (name_width < static_cast<std::int64_t>(name.size())) {
      prefix = "...";
      len = std::max<std::int64_t>(len - 3, 0);
      name.remove_prefix(name.size() - static_cast<std::size_t>(len));
      if (auto slash = name.find('/'); slash != std::string_view::npos) name.remove_prefix(slash);
    }
    std::int64_t padding = std::max<std::int64_t>(len - static_cast<std::int64_t>(name.size()), 0);
    std::string line = " " + prefix + std::string(name) + std::string(static_cast<std::size_t>(padding), ' ') + " | ";
    if (f.binary) {
      put(out, line + pad_left("Bin", number_width));
      if (f.added != 0 || f.deleted != 0) {
        put(out, " ");
        put(out, col.old_line);
        put(out, decimal(f.deleted));
        put(out, col.reset);
        put(out, " -> ");
        put(out, col.new_line);
        put(out, decimal(f.added));
        put(out, col.reset);
        put(out, " bytes");
      }
      std::fputc('\n', out);
      continue;
    }
    std::int64_t add = f.added, del = f.deleted;
    if (graph_width <= max_change) {
      std::int64_t total = scale_linear(add + del, graph_width, max_change);
      if (total < 2 && add != 0 && del != 0) total = 2;
      if (add < del) {
        add = scale_linear(add, graph_width, max_change);
        del = total - add;
      } else {
        del = scale_linear(del, graph_width, max_change);
        add = total - del;
      }
    }
    put(out, line + pad_left(decimal(f.added + f.deleted), number_width) + (f.added + f.deleted != 0 ? " " : ""));
    put_graph(out, '+', add, col.new_line, col.reset);
    put_graph(out, '-', del, col.old_line, col.reset);
    std::fputc('\n', out);
  }

  auto n = static_cast<std::int64_t>(files.size());
  std::string summary = " " + decimal(n) + (n == 1 ? " file changed" : " files changed");
  if (insertions != 0 || deletions == 0) {
    summary += ", " + decimal(insertions) + (insertions == 1 ? " insertion(+)" : " insertions(+)");
  }
  if (deletions != 0 || insertions == 0) {
    summary += ", " + decimal(deletions) + (deletions == 1 ? " deletion(-)" : " deletions(-)");
  }
  put_line(out, "", summary, "");
}

// --- --name-status and --json -------------------------------------------------------

char status_letter(ChangeKind k) {
  switch (k) {
    case ChangeKind::Added: return 'A';
    case ChangeKind::Modified: return 'M';
    case ChangeKind::Deleted: return 'D';
    case ChangeKind::TypeChanged: return 'T';
    case ChangeKind::ModeChanged: return 'M';
  }
  return 'M';
}

using Json = nlohmann::ordered_json;

// Bytes as `key` when they are UTF-8, else base64 as `key_b64`; absent as `key: null`.
void put_bytes(Json& o, const std::string& key, const std::optional<std::string>& v) {
  if (!v) {
    o[key] = nullptr;
  } else if (text::valid_utf8(*v)) {
    o[key] = *v;
  } else {
    o[key + "_b64"] = text::base64(*v);
  }
}

template <class T>
Json or_null(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// The keys come in the order diff.hpp lists them: the old_ and new_ key of each value side
// by side, but old_uid, old_gid, new_uid, new_gid. An absent side's values are all null.
Json change_json(const Change& c) {
  const std::optional<Side>* sides[2] = {&c.before, &c.after};
  const std::string prefix[2] = {"old_", "new_"};
  Json o = Json::object();
  auto both = [&](const char* key, auto value) {
    for (int i = 0; i < 2; ++i) o[prefix[i] + key] = *sides[i] ? value(**sides[i]) : Json(nullptr);
  };
  put_bytes(o, "path", c.path);
  o["kind"] = std::string(store::to_string(c.kind));
  both("type", [](const Side& s) { return Json(std::string(store::to_string(s.type))); });
  both("mode", [](const Side& s) { return or_null(s.mode); });
  both("size", [](const Side& s) { return or_null(s.size); });
  for (int i = 0; i < 2; ++i) put_bytes(o, prefix[i] + "link", *sides[i] ? (*sides[i])->link : std::nullopt);
  both("mtime_ns", [](const Side& s) { return or_null(s.mtime_ns); });
  for (int i = 0; i < 2; ++i) {
    o[prefix[i] + "uid"] = *sides[i] ? or_null((*sides[i])->uid) : Json(nullptr);
    o[prefix[i] + "gid"] = *sides[i] ? or_null((*sides[i])->gid) : Json(nullptr);
  }
  return o;
}

Result<void> write_json(std::FILE* out, const std::vector<const Change*>& changes, const DiffOptions& options) {
  if (!text::valid_utf8(options.session_id)) return fail_msg("session id is not UTF-8");
  Json doc = Json::object();
  doc["session"] = options.session_id;
  Json list = Json::array();
  for (const Change* c : changes) list.push_back(change_json(*c));
  doc["changes"] = std::move(list);
  std::string text;
  try {
    text = doc.dump();  // every string was checked above, so this does not throw
  } catch (const nlohmann::json::exception& e) {
    return fail_msg(std::string("diff --json: ") + e.what());
  }
  put_line(out, "", json_escape_controls(text), "");
  return {};
}

bool selected(const Change& c, const std::vector<std::string>& filters) {
  if (filters.empty()) return true;
  return std::any_of(filters.begin(), filters.end(), [&](const std::string& f) { return path::is_under(c.path, f); });
}

}  // namespace

std::string git_quote(std::string_view path) {
  auto special = [](unsigned char c) { return c < 0x20 || c == '"' || c == '\\' || c >= 0x7f; };
  if (std::none_of(path.begin(), path.end(), [&](char c) { return special(static_cast<unsigned char>(c)); })) {
    return std::string(path);
  }
  std::string out = "\"";
  for (char ch : path) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\a': out += "\\a"; break;
      case '\b': out += "\\b"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\v': out += "\\v"; break;
      case '\f': out += "\\f"; break;
      case '\r': out += "\\r"; break;
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      default:
        if (special(c)) {
          out += '\\';
          out += static_cast<char>('0' + ((c >> 6) & 7));
          out += static_cast<char>('0' + ((c >> 3) & 7));
          out += static_cast<char>('0' + (c & 7));
        } else {
          out += ch;
        }
    }
  }
  out += '"';
  return out;
}

namespace {

// The length of the strict UTF-8 sequence (no overlong form, surrogate or code point
// above U+10FFFF) that starts at s[i], with its code point in cp; 0 when there is none.
std::size_t utf8_at(std::string_view s, std::size_t i, std::uint32_t& cp) {
  auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = 0;
  std::uint32_t min = 0;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2, cp = c & 0x1fU, min = 0x80;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3, cp = c & 0x0fU, min = 0x800;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4, cp = c & 0x07U, min = 0x10000;
  } else {
    return 0;
  }
  if (s.size() - i < n) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3fU);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

// ^X for a C0 code or DEL, after "M-" for a C1 one (its value less 0x80), as cat -v.
void put_caret(std::string& out, unsigned c) {
  out += '^';
  out += c == 0x7f ? '?' : static_cast<char>(c + 0x40);
}

}  // namespace

std::string visible_controls(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) {
        put_caret(out, c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    std::uint32_t cp = 0;
    std::size_t n = utf8_at(s, i, cp);
    if (n == 0) {  // a stray byte: a C1 code to a terminal that reads bytes as Latin-1
      if (c <= 0x9f) {
        out += "M-";
        put_caret(out, c - 0x80U);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    if (cp <= 0x9f) {
      out += "M-";
      put_caret(out, cp - 0x80U);
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

std::string json_escape_controls(std::string_view json) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(json.size());
  for (std::size_t i = 0; i < json.size(); ++i) {
    auto c = static_cast<unsigned char>(json[i]);
    unsigned cp = 0x100;  // none
    if (c == 0x7f) {
      cp = c;
    } else if (c == 0xc2 && i + 1 < json.size() && static_cast<unsigned char>(json[i + 1]) <= 0x9f &&
               static_cast<unsigned char>(json[i + 1]) >= 0x80) {
      cp = static_cast<unsigned char>(json[++i]);
    }
    if (cp == 0x100) {
      out += static_cast<char>(c);
      continue;
    }
    out += "\\u00";
    out += hex[cp >> 4];
    out += hex[cp & 15];
  }
  return out;
}

namespace {

// Exact renames, as git finds them at 100% similarity: a deleted regular file and an
// added one with the same content. Maps the index of each added file to the index of the
// deleted one it came from.
std::map<std::size_t, std::size_t> find_renames(const std::vector<const Change*>& chosen) {
  std::multimap<std::string, std::size_t> deleted;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    const Change& c = *chosen[i];
    if (c.kind == ChangeKind::Deleted && type_of(c.before) == FileType::Regular && c.before->blob) {
      deleted.emplace(*c.before->blob, i);
    }
  }
  std::map<std::size_t, std::size_t> out;
  if (deleted.empty()) return out;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    const Change& c = *chosen[i];
    if (c.kind != ChangeKind::Added || type_of(c.after) != FileType::Regular || !c.after->blob) continue;
    auto it = deleted.find(*c.after->blob);
    if (it == deleted.end()) continue;
    out.emplace(i, it->second);
    deleted.erase(it);
  }
  return out;
}

void write_rename(std::FILE* out, const Change& from, const Change& to, const std::string& from_shown, const std::string& to_shown,
                  const Colors& col) {
  auto meta = [&](const std::string& s) { put_line(out, col.meta, s, col.reset); };
  auto strip = [](const std::string& p) { return p.empty() || p.front() != '/' ? p : p.substr(1); };
  meta("diff --git " + git_quote("a/" + strip(from_shown)) + " " + git_quote("b/" + strip(to_shown)));
  auto mode = [](const std::optional<Side>& s) { return s && s->mode ? *s->mode : 0644u; };
  std::uint32_t a = mode(from.before), b = mode(to.after);
  if (a != b) {
    meta("old mode " + octal6(0100000 | a));
    meta("new mode " + octal6(0100000 | b));
  }
  meta("similarity index 100%");
  meta("rename from " + git_quote(from_shown));
  meta("rename to " + git_quote(to_shown));
}

}  // namespace

Result<void> write_diff(std::FILE* out, store::Store& store, const std::vector<store::Change>& changes,
                        const DiffOptions& options) {
  std::vector<const Change*> chosen;
  for (const auto& c : changes) {
    if (selected(c, options.filters)) chosen.push_back(&c);
  }
  const Colors col = colors_for(options.color);
  std::map<std::size_t, std::size_t> renames;
  std::set<std::size_t> renamed_from;
  if (options.format == DiffFormat::Patch || options.format == DiffFormat::Stat) {
    renames = find_renames(chosen);
    for (const auto& [to, from] : renames) renamed_from.insert(from);
  }

  switch (options.format) {
    case DiffFormat::Patch:
      for (std::size_t i = 0; i < chosen.size(); ++i) {
        const Change* c = chosen[i];
        std::string shown = shown_path(c->path, options.cwd);
        if (renamed_from.count(i) != 0) continue;  // shown with its new name
        if (auto r = renames.find(i); r != renames.end()) {
          const Change* from = chosen[r->second];
          write_rename(out, *from, *c, shown_path(from->path, options.cwd), shown, col);
          if (options.progress) options.progress(i + 1, chosen.size());
          continue;
        }
        for (const auto& p : pairs_of(*c)) {
          if (auto r = write_patch_pair(out, store, *c, p, shown, col, options.visible_controls); !r) return r;
        }
        if (options.progress) options.progress(i + 1, chosen.size());
      }
      break;
    case DiffFormat::Stat: {
      std::vector<FileStat> stats;
      for (std::size_t i = 0; i < chosen.size(); ++i) {
        const Change* c = chosen[i];
        if (renamed_from.count(i) != 0) continue;
        if (auto r = renames.find(i); r != renames.end()) {
          FileStat f;
          f.name = git_quote(shown_path(chosen[r->second]->path, options.cwd)) + " => " + git_quote(shown_path(c->path, options.cwd));
          stats.push_back(std::move(f));
          continue;
        }
        auto f = stat_change(store, *c, shown_path(c->path, options.cwd));
        if (!f) return std::unexpected(f.error());
        stats.push_back(std::move(*f));
        if (options.progress) options.progress(i + 1, chosen.size());
      }
      write_stat(out, stats, col);
      break;
    }
    case DiffFormat::NameStatus:
      for (const Change* c : chosen) {
        put(out, std::string(1, status_letter(c->kind)) + "\t" + git_quote(shown_path(c->path, options.cwd)) + "\n");
      }
      break;
    case DiffFormat::Json:
      if (auto r = write_json(out, chosen, options); !r) return r;
      break;
  }
  if (std::fflush(out) != 0 || std::ferror(out) != 0) return fail("write diff");
  return {};
}

}  // namespace zb::snapshot
