// Tests for src/util/path.cpp
#include <doctest/doctest.h>

#include "testutil.hpp"
#include "util/path.hpp"

using namespace zb;

TEST_CASE("path::normalize collapses slashes, dots and dot-dots") {
  CHECK(path::normalize("/") == "/");
  CHECK(path::normalize("//a//b/") == "/a/b");
  CHECK(path::normalize("/a/./b/../c") == "/a/c");
  CHECK(path::normalize("/../..") == "/");
}

TEST_CASE("path::is_under compares whole components") {
  CHECK(path::is_under("/a/b", "/a"));
  CHECK(path::is_under("/a", "/a"));
  CHECK_FALSE(path::is_under("/ab", "/a"));
  CHECK(path::is_under("/x", "/"));
}

TEST_CASE("path::absolute expands ~ and relative paths") {
  CHECK(path::absolute("~", "/cwd", "/home/u") == "/home/u");
  CHECK(path::absolute("~/x", "/cwd", "/home/u") == "/home/u/x");
  CHECK(path::absolute("a/../b", "/cwd", "/home/u") == "/cwd/b");
  CHECK(path::absolute("/abs", "/cwd", "/home/u") == "/abs");
}

TEST_CASE("path::canonicalize resolves symlinks in the existing prefix") {
  test::TempDir t;
  test::mkdirs(t / "real/sub");
  REQUIRE(::symlink((t / "real").c_str(), (t / "link").c_str()) == 0);
  auto c = path::canonicalize(t / "link/sub");
  REQUIRE(c);
  CHECK(c->exists);
  CHECK(c->path == t / "real/sub");
  auto missing = path::canonicalize(t / "link/none/deeper");
  REQUIRE(missing);
  CHECK_FALSE(missing->exists);
  CHECK(missing->path == t / "real/none/deeper");
}

TEST_CASE("path::split_list honours escaped commas") {
  CHECK(path::split_list("a,b") == std::vector<std::string>{"a", "b"});
  CHECK(path::split_list("a\\,b,c") == std::vector<std::string>{"a,b", "c"});
  CHECK(path::split_list("") == std::vector<std::string>{""});
}
