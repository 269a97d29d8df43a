// `zerobox snapshot diff --stat` and `--name-status` (diff.hpp, "Stat", "NameStatus"):
// git's per-file lines and summary.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "snapshot/diff_internal.hpp"

namespace zb::snapshot::diff_detail {
namespace {

// git's --stat width when it does not ask the terminal.
constexpr std::int64_t k_stat_width = 80;

int decimal_width(std::int64_t v) { return static_cast<int>(decimal(v).size()); }

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
void write_stat_table(std::FILE* out, const std::vector<FileStat>& files, const Colors& col) {
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

// --- --name-status ---------------------------------------------------------------

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

}  // namespace

Result<void> write_stat(std::FILE* out, store::Store& store, const std::vector<const Change*>& chosen,
                        const Renames& renames, const DiffOptions& options, const Colors& col) {
  std::vector<FileStat> stats;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    const Change* c = chosen[i];
    if (renames.sources.count(i) != 0) continue;
    if (auto r = renames.from_of.find(i); r != renames.from_of.end()) {
      FileStat f;
      f.name = git_quote(shown_path(chosen[r->second]->path, options.cwd)) + " => " +
               git_quote(shown_path(c->path, options.cwd));
      stats.push_back(std::move(f));
      continue;
    }
    auto f = stat_change(store, *c, shown_path(c->path, options.cwd));
    if (!f) return std::unexpected(f.error());
    stats.push_back(std::move(*f));
    if (options.progress) options.progress(i + 1, chosen.size());
  }
  write_stat_table(out, stats, col);
  return {};
}

void write_name_status(std::FILE* out, const std::vector<const Change*>& chosen, const DiffOptions& options) {
  for (const Change* c : chosen) {
    put(out, std::string(1, status_letter(c->kind)) + "\t" + git_quote(shown_path(c->path, options.cwd)) + "\n");
  }
}

}  // namespace zb::snapshot::diff_detail
