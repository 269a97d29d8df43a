// `zerobox snapshot diff` as patch text (diff.hpp, "Patch"): each section's header lines,
// its hunks, and the header of an exact rename.
#include <sys/stat.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "snapshot/diff_internal.hpp"

namespace zb::snapshot::diff_detail {
namespace {

constexpr std::size_t k_context = 3;

std::string octal6(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%06o", static_cast<unsigned>(v));
  return buf;
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

// --- Hunks ------------------------------------------------------------------------

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
    case Body::None: break;
    case Body::Binary: put(out, "Binary files " + from + " and " + to + " differ\n"); break;
    case Body::NotKept: put(out, "Files " + from + " and " + to + " differ (contents not kept)\n"); break;
    case Body::Text:
      if (d.insertions == 0 && d.deletions == 0) break;
      meta("--- " + from);
      meta("+++ " + to);
      write_hunks(out, d.ops, col, visible);
      break;
  }
  return {};
}

void write_rename(std::FILE* out, const Change& from, const Change& to, const std::string& from_shown,
                  const std::string& to_shown, const Colors& col) {
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

Result<void> write_patch(std::FILE* out, store::Store& store, const std::vector<const Change*>& chosen,
                         const Renames& renames, const DiffOptions& options, const Colors& col) {
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    const Change* c = chosen[i];
    std::string shown = shown_path(c->path, options.cwd);
    if (renames.sources.count(i) != 0) continue;  // shown with its new name
    if (auto r = renames.from_of.find(i); r != renames.from_of.end()) {
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
  return {};
}

}  // namespace zb::snapshot::diff_detail
