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

TEST_CASE("path::walk_links lists every link met and where the chain ends") {
  test::TempDir t;
  test::mkdirs(t / "real");
  test::write_file(t / "real/file", "x");
  ::symlink("real", (t / "dl").c_str());
  ::symlink("dl/file", (t / "mid").c_str());
  ::symlink("mid", (t / "entry").c_str());
  auto w = path::walk_links(t / "entry");
  CHECK(w.exists);
  CHECK(!w.loop);
  CHECK(w.target == t / "real/file");
  REQUIRE(w.links.size() == 3);
  CHECK(w.links[0] == t / "entry");
  CHECK(w.links[1] == t / "mid");
  CHECK(w.links[2] == t / "dl");
  // A dangling link: where it points, absent.
  ::symlink("../gone/x", (t / "real/dangling").c_str());
  auto d = path::walk_links(t / "real/dangling");
  CHECK(!d.exists);
  CHECK(d.target == t / "gone/x");
  CHECK(d.links.size() == 1);
  // ".." after a missing component: where it leads depends on what that becomes.
  ::symlink("nodir/../real/x", (t / "odd").c_str());
  auto o = path::walk_links(t / "odd");
  CHECK(o.open_end == t / "nodir");
  CHECK(d.open_end.empty());
  // A loop.
  ::symlink("b", (t / "a").c_str());
  ::symlink("a", (t / "b").c_str());
  CHECK(path::walk_links(t / "a").loop);
  // No link at all.
  auto plain = path::walk_links(t / "real/file");
  CHECK(plain.links.empty());
  CHECK(plain.exists);
}
