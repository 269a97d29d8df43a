// --snapshot-exclude patterns; the contract is in exclude.hpp.
#include "snapshot/exclude.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cstddef>
#include <optional>

namespace zb::snapshot {
namespace {

constexpr std::string_view k_globstar = "**";

std::string quoted(std::string_view pattern) { return "'" + std::string(pattern) + "'"; }

std::unexpected<SysError> bad(std::string_view pattern, std::string_view why) {
  return fail_msg("--snapshot-exclude: " + quoted(pattern) + ": " + std::string(why));
}

// FNM_PATHNAME keeps '*', '?' and '[...]' from matching '/'. FNM_PERIOD is left out on
// purpose: as in gitignore, "*.log" also matches ".x.log".
bool glob_match(const char* glob, const char* text) { return ::fnmatch(glob, text, FNM_PATHNAME) == 0; }

std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    std::size_t slash = s.find('/', start);
    parts.emplace_back(s.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) return parts;
    start = slash + 1;
  }
}

// Whether "**" stands as a whole component somewhere in the glob.
bool has_globstar(std::string_view glob) {
  return glob == k_globstar || glob.starts_with("**/") || glob.ends_with("/**") ||
         glob.find("/**/") != std::string_view::npos;
}

// The components of an anchored glob that contains "**". A trailing "**" must match at
// least one component ("build/**" is what is inside build/, not build itself, as in
// gitignore), so it becomes "*" followed by "**".
std::vector<std::string> globstar_components(std::string_view glob) {
  auto comps = split(glob);
  if (comps.size() >= 2 && comps.back() == k_globstar) comps.insert(comps.end() - 1, "*");
  return comps;
}

// Whether the first `count` names are matched by the components of a glob, where a "**"
// component stands for zero or more names. fnmatch(3) cannot do "**", so this is the
// classic wildcard walk with backtracking to the last "**", one name at a time: linear
// unless there are several "**", and then O(names * components).
bool match_components(const std::vector<std::string>& pat, const std::vector<std::string>& names, std::size_t count) {
  std::size_t p = 0;
  std::size_t n = 0;
  std::optional<std::size_t> star;  // index of the last "**" seen
  std::size_t resume = 0;           // the name that "**" would swallow next
  while (n < count) {
    if (p < pat.size() && pat[p] == k_globstar) {
      star = p++;
      resume = n;
    } else if (p < pat.size() && glob_match(pat[p].c_str(), names[n].c_str())) {
      ++p;
      ++n;
    } else if (star) {
      p = *star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pat.size() && pat[p] == k_globstar) ++p;
  return p == pat.size();
}

}  // namespace

Result<Excludes> Excludes::compile(const std::vector<std::string>& patterns) {
  Excludes ex;
  for (const auto& text : patterns) {
    if (text.empty()) return fail_msg("--snapshot-exclude: empty pattern");
    if (text.front() == '!') {
      return fail_msg("--snapshot-exclude: negated patterns ('!x') are not supported: " + quoted(text));
    }
    Pattern p;
    std::string_view glob = text;
    while (glob.ends_with('/')) {
      p.dir_only = true;
      glob.remove_suffix(1);
    }
    if (glob.starts_with('/')) {
      p.anchored = true;
      glob.remove_prefix(1);
    }
    if (glob.empty()) return bad(text, "matches no name (only slashes)");
    if (glob.find('/') != std::string_view::npos) p.anchored = true;
    // Relative paths never hold empty, "." or ".." components, so such a pattern could
    // never match; saying so beats silently excluding nothing.
    for (const auto& c : split(glob)) {
      if (c.empty() || c == "." || c == "..") {
        return bad(text, "empty, '.' and '..' components are not supported");
      }
    }
    std::size_t backslashes = 0;
    for (auto it = glob.rbegin(); it != glob.rend() && *it == '\\'; ++it) ++backslashes;
    if (backslashes % 2 == 1) return bad(text, "ends in an escaping backslash");
    p.glob = std::string(glob);
    ex.m_patterns.push_back(std::move(p));
  }
  return ex;
}

bool Excludes::matches(std::string_view rel, bool is_dir) const {
  if (m_patterns.empty() || rel.empty()) return false;
  // Every prefix of rel ("a", "a/b", "a/b/c") is tried: a match on a directory covers
  // everything below it, and all but the last prefix are directories.
  std::string buf(rel);
  std::vector<std::string> names;  // split only for "**" patterns
  for (const auto& p : m_patterns) {
    if (p.anchored && has_globstar(p.glob)) {
      if (names.empty()) names = split(rel);
      auto comps = globstar_components(p.glob);
      for (std::size_t count = 1; count <= names.size(); ++count) {
        if (p.dir_only && count == names.size() && !is_dir) continue;
        if (match_components(comps, names, count)) return true;
      }
      continue;
    }
    // The prefix is NUL-terminated in place for fnmatch(3), which makes its last name a
    // C string too.
    bool hit = false;
    for (std::size_t start = 0; start <= buf.size() && !hit;) {
      std::size_t end = std::min(buf.find('/', start), buf.size());
      bool last = end == buf.size();
      if (!p.dir_only || !last || is_dir) {
        buf[end] = '\0';  // at buf.size() this rewrites the terminator with itself
        const char* prefix = buf.c_str();
        hit = glob_match(p.glob.c_str(), p.anchored ? prefix : prefix + start);
        if (!last) buf[end] = '/';
      }
      start = end + 1;
    }
    if (hit) return true;
  }
  return false;
}

}  // namespace zb::snapshot
