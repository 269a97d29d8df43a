// Rendering a session's changes as git renders a diff; the contract is in diff.hpp. This
// file chooses the changes, finds the renames and hands them to the format's writer
// (diff_internal.hpp).
#include "snapshot/diff.hpp"

#include <algorithm>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "snapshot/diff_internal.hpp"
#include "util/path.hpp"

namespace zb::snapshot {
namespace diff_detail {

// The path as human output shows it: relative to cwd where it lies under it.
std::string shown_path(const std::string& path, const std::string& cwd) {
  if (cwd.empty() || !path::is_under(path, cwd)) return path;
  if (path.size() == cwd.size()) return ".";
  if (cwd == "/") return path.substr(1);
  return path.substr(cwd.size() + 1);
}

}  // namespace diff_detail

using namespace diff_detail;

namespace {

using store::type_of;

Colors colors_for(bool on) {
  if (!on) return {};
  return {"\x1b[1m", "\x1b[36m", "\x1b[31m", "\x1b[32m", "\x1b[m"};
}

bool selected(const Change& c, const std::vector<std::string>& filters) {
  if (filters.empty()) return true;
  return std::any_of(filters.begin(), filters.end(), [&](const std::string& f) { return path::is_under(c.path, f); });
}

// Exact renames, as git finds them at 100% similarity: a deleted regular file and an
// added one with the same content.
Renames find_renames(const std::vector<const Change*>& chosen) {
  std::multimap<std::string, std::size_t> deleted;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    const Change& c = *chosen[i];
    if (c.kind == ChangeKind::Deleted && type_of(c.before) == FileType::Regular && c.before->blob) {
      deleted.emplace(*c.before->blob, i);
    }
  }
  Renames out;
  if (deleted.empty()) return out;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    const Change& c = *chosen[i];
    if (c.kind != ChangeKind::Added || type_of(c.after) != FileType::Regular || !c.after->blob) continue;
    auto it = deleted.find(*c.after->blob);
    if (it == deleted.end()) continue;
    out.from_of.emplace(i, it->second);
    out.sources.insert(it->second);
    deleted.erase(it);
  }
  return out;
}

}  // namespace

Result<void> write_diff(std::FILE* out, store::Store& store, const std::vector<store::Change>& changes,
                        const DiffOptions& options) {
  std::vector<const Change*> chosen;
  for (const auto& c : changes) {
    if (selected(c, options.filters)) chosen.push_back(&c);
  }
  const Colors col = colors_for(options.color);
  Renames renames;
  if (options.format == DiffFormat::Patch || options.format == DiffFormat::Stat) renames = find_renames(chosen);

  switch (options.format) {
    case DiffFormat::Patch:
      if (auto r = write_patch(out, store, chosen, renames, options, col); !r) return r;
      break;
    case DiffFormat::Stat:
      if (auto r = write_stat(out, store, chosen, renames, options, col); !r) return r;
      break;
    case DiffFormat::NameStatus: write_name_status(out, chosen, options); break;
    case DiffFormat::Json:
      if (auto r = write_json(out, chosen, options); !r) return r;
      break;
  }
  if (std::fflush(out) != 0 || std::ferror(out) != 0) return fail("write diff");
  return {};
}

}  // namespace zb::snapshot
