// Tests for src/util/beneath.cpp
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include "testutil.hpp"
#include "util/beneath.hpp"

using namespace zb;

namespace {

// The errno open_beneath gave, 0 when it opened something.
int beneath_errno(int root, const std::string& rel, int flags = O_RDONLY) {
  auto r = util::open_beneath(root, rel, flags, rel);
  return r ? 0 : r.error().err;
}

}  // namespace

TEST_CASE("util::open_beneath opens what lies below the root") {
  test::TempDir t;
  test::mkdirs(t / "root/sub");
  test::write_file(t / "root/sub/file", "x");
  UniqueFd root(::open((t / "root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(root);
  auto f = util::open_beneath(root.get(), "sub/file", O_RDONLY, "sub/file");
  REQUIRE(f);
  CHECK((::fcntl(f->get(), F_GETFD) & FD_CLOEXEC) != 0);
  CHECK(beneath_errno(root.get(), "sub/../sub/file") == 0);  // ".." that stays inside
}

TEST_CASE("util::open_beneath: '..' and absolute paths cannot leave the root") {
  test::TempDir t;
  test::mkdirs(t / "root/sub");
  test::write_file(t / "outside", "x");
  UniqueFd root(::open((t / "root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(root);
  CHECK(beneath_errno(root.get(), "../outside") == EXDEV);
  CHECK(beneath_errno(root.get(), "sub/../../outside") == EXDEV);
  CHECK(beneath_errno(root.get(), t / "outside") == EXDEV);
}

TEST_CASE("util::open_beneath follows no symlink, inside the root or out of it") {
  test::TempDir t;
  test::mkdirs(t / "root/sub");
  test::write_file(t / "root/sub/file", "x");
  test::write_file(t / "outside", "x");
  REQUIRE(::symlink("../outside", (t / "root/out").c_str()) == 0);
  REQUIRE(::symlink((t / "outside").c_str(), (t / "root/abs").c_str()) == 0);
  REQUIRE(::symlink("sub/file", (t / "root/in").c_str()) == 0);
  REQUIRE(::symlink("sub", (t / "root/dir").c_str()) == 0);
  UniqueFd root(::open((t / "root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(root);
  CHECK(beneath_errno(root.get(), "out") == ELOOP);
  CHECK(beneath_errno(root.get(), "abs") == ELOOP);
  CHECK(beneath_errno(root.get(), "in") == ELOOP);
  CHECK(beneath_errno(root.get(), "dir/file") == ELOOP);
  auto err = util::open_beneath(root.get(), "out", O_RDONLY, t / "root/out");
  REQUIRE_FALSE(err);
  CHECK(err.error().what == "open " + t / "root/out");
}

TEST_CASE("util::open_beneath follows no /proc magic link") {
  // /proc/self/cwd and /proc/self/fd/N jump to wherever they point, whatever the path
  // says: the way a sandboxed command could reach the host's files through its own fds.
  UniqueFd proc(::open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(proc);
  UniqueFd tmp(::open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(tmp);
  CHECK(beneath_errno(proc.get(), "cwd", O_PATH) == ELOOP);
  CHECK(beneath_errno(proc.get(), "fd/" + std::to_string(tmp.get()), O_PATH) == ELOOP);
  // Refused as a magic link, not only as a symlink: RESOLVE_NO_MAGICLINKS alone.
  errno = 0;
  CHECK(util::openat2_fd(proc.get(), "cwd", O_PATH, RESOLVE_NO_MAGICLINKS) == -1);
  CHECK(errno == ELOOP);
}
