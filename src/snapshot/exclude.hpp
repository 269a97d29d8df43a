// --snapshot-exclude: gitignore-like patterns matched against paths relative to a tracked
// root (docs/usage.md "Snapshots").
//
// The rules are gitignore's, without negation:
//   - a pattern without a slash (a trailing one aside) matches a name at any depth:
//     "node_modules", "*.log";
//   - a pattern with a slash is anchored at the tracked root: "src/gen", "a/*.tmp"; a
//     leading slash only anchors: "/dist" matches "dist" but not "x/dist";
//   - a trailing slash matches directories only: "build/";
//   - '*', '?' and "[...]" never match '/' (fnmatch(3) with FNM_PATHNAME, backslash
//     escapes as there); a leading '.' is not special, so "*.log" matches ".x.log";
//   - "**" as a whole component matches zero or more components: "**/cache",
//     "src/**/gen"; a trailing "/**" matches everything inside ("build/**" matches
//     "build/x" but not "build" itself); elsewhere "**" is just two '*';
//   - a match on a directory covers everything below it.
// Rejected: empty patterns, negated patterns ("!x"; "\!x" is a literal '!'), patterns
// that are only slashes, that have empty, "." or ".." components, or that end in an
// escaping backslash. Whitespace is part of the name (no trimming, no comments).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace zb::snapshot {

class Excludes {
 public:
  // Compiles the patterns; an empty or malformed pattern is an error naming it.
  static Result<Excludes> compile(const std::vector<std::string>& patterns);

  bool empty() const { return m_patterns.empty(); }
  // True when rel (relative to the tracked root, no leading slash, '/'-separated) or one
  // of its parent directories matches a pattern. is_dir says whether rel itself is a
  // directory (patterns ending in '/' match directories only).
  bool matches(std::string_view rel, bool is_dir) const;

 private:
  struct Pattern {
    std::string glob;  // without the trailing '/' and leading '/'
    bool dir_only = false;
    bool anchored = false;  // contains a '/' (other than a trailing one): matched against
                            // the whole relative path, else against each name
  };
  std::vector<Pattern> m_patterns;
};

}  // namespace zb::snapshot
