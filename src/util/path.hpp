// Path helpers. No system calls beyond stat/lstat/realpath/getcwd.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace zb::path {

// Joins "a" and "b" with exactly one slash ("/" + "x" -> "/x").
std::string join(std::string_view a, std::string_view b);

// Lexically normalises an absolute path: collapses "//", removes "." and resolves ".."
// without touching the filesystem.
std::string normalize(std::string_view p);

// True when p equals root or lies beneath it ("/a/b" is under "/a", "/ab" is not).
bool is_under(std::string_view p, std::string_view root);

// The parent of an absolute normalised path ("/" for "/x" and for "/").
std::string parent(std::string_view p);

// Expands a leading "~" or "~/" to home, makes a relative path absolute against cwd.
std::string absolute(std::string_view p, std::string_view cwd, std::string_view home);

// Resolves every symlink in the existing prefix of an absolute path and appends the
// missing tail unchanged. Reports whether the whole path exists.
struct Canonical {
  std::string path;
  bool exists = false;
};
Result<Canonical> canonicalize(std::string_view abs);

// The way an absolute path resolves, one symlink at a time: every symlink met (the path's
// own components and those of the links' targets, in order), and where it ends. After a
// missing component the rest is taken as written. `loop`: more than 40 links.
struct LinkWalk {
  std::vector<std::string> links;
  std::string target;
  bool exists = false;
  bool loop = false;
  // The first missing component, when a ".." follows it: where the path goes then
  // depends on what that component becomes (a symlink would take ".." elsewhere).
  std::string open_end;
  // Directories the walk stepped out of with "..": renamed or replaced by a symlink, they
  // would take the path elsewhere.
  std::vector<std::string> left;
};
LinkWalk walk_links(const std::string& abs);

enum class Kind { Missing, Directory, File, Other };
Kind kind_of(const std::string& p);  // follows symlinks

// Whether a directory has no entries; an error (with errno) when it cannot be listed.
Result<bool> is_empty_dir(const std::string& p);

// Splits "a,b\,c" into {"a", "b,c"} (docs/cli-reference.md: "\," is a literal comma).
std::vector<std::string> split_list(std::string_view s);

}  // namespace zb::path
