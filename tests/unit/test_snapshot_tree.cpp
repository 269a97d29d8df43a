// Tests for src/snapshot/tree.cpp: the boundary of accept and restore (ARCHITECTURE.md,
// "Accept and restore never leave the tracked roots"). Each case builds a tracked root in
// a fresh temporary directory and plants the link or `..` a sandboxed command could.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "snapshot/tree.hpp"
#include "testutil.hpp"

using namespace zb;
using snapshot::Tree;

namespace {

// The errno of a failed result, 0 for a success.
template <class T>
int err_of(const Result<T>& r) {
  return r ? 0 : r.error().err;
}

// The inode of what fd/name is (name empty: fd itself), 0 when there is nothing.
ino_t ino_at(int fd, const std::string& name) {
  struct stat st{};
  int flags = name.empty() ? AT_EMPTY_PATH : AT_SYMLINK_NOFOLLOW;
  if (::fstatat(fd, name.c_str(), &st, flags) != 0) return 0;
  return st.st_ino;
}

ino_t ino_of(const std::string& path) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) return 0;
  return st.st_ino;
}

// A tracked root with root/a/b/file and a directory outside it holding `secret`.
struct Layout {
  test::TempDir t;
  std::string root = t / "root";
  std::string outside = t / "outside";
  Layout() {
    test::mkdirs(root + "/a/b");
    test::write_file(root + "/a/b/file", "inside");
    test::write_file(root + "/top", "inside");
    test::mkdirs(outside);
    test::write_file(outside + "/secret", "outside");
  }
};

}  // namespace

TEST_CASE("snapshot::Tree resolves nested paths beneath their root") {
  Layout l;
  Tree tree({l.root});

  auto p = tree.parent(l.root + "/a/b/file");
  REQUIRE(p);
  CHECK(p->name == "file");
  CHECK(ino_at(p->fd, p->name) == ino_of(l.root + "/a/b/file"));
  CHECK(ino_at(p->fd, "") == ino_of(l.root + "/a/b"));

  auto top = tree.parent(l.root + "/top");  // directly in the root: the root's own fd
  REQUIRE(top);
  CHECK(top->name == "top");
  CHECK(ino_at(top->fd, "") == ino_of(l.root));

  // The cached parent follows the path asked for.
  auto other = tree.parent(l.root + "/a/x");
  REQUIRE(other);
  CHECK(ino_at(other->fd, "") == ino_of(l.root + "/a"));

  auto owned = tree.open_parent(l.root + "/a/b/file");
  REQUIRE(owned);
  CHECK(owned->name == "file");
  CHECK(ino_at(owned->fd.get(), "") == ino_of(l.root + "/a/b"));

  auto dir = tree.open_dir(l.root + "/a/b");
  REQUIRE(dir);
  CHECK(ino_at(dir->get(), "") == ino_of(l.root + "/a/b"));
  auto rootdir = tree.open_dir(l.root);
  REQUIRE(rootdir);
  CHECK(ino_at(rootdir->get(), "") == ino_of(l.root));

  // A missing or non-directory parent is ENOENT / ENOTDIR, not an escape.
  CHECK(err_of(tree.parent(l.root + "/nope/file")) == ENOENT);
  CHECK(err_of(tree.parent(l.root + "/top/file")) == ENOTDIR);
}

TEST_CASE("snapshot::Tree: paths outside every root, and a root itself, have no root") {
  Layout l;
  test::mkdirs(l.root + "/a/nested");
  Tree tree({l.root, l.root + "/a/nested"});
  CHECK_FALSE(tree.root_of(l.outside + "/secret"));
  CHECK_FALSE(tree.root_of(l.root));          // a root is held by no root strictly
  CHECK_FALSE(tree.root_of(l.root + "x/f"));  // a path boundary, not a string prefix
  CHECK_FALSE(tree.parent(l.outside + "/secret"));
  auto r = tree.root_of(l.root + "/a/nested/f");
  REQUIRE(r);
  CHECK(*r == 1);  // the longest root that holds it
  r = tree.root_of(l.root + "/a/f");
  REQUIRE(r);
  CHECK(*r == 0);
}

TEST_CASE("snapshot::Tree refuses a symlink that leaves the root") {
  Layout l;
  REQUIRE(::symlink("../outside", (l.root + "/esc").c_str()) == 0);
  REQUIRE(::symlink("../../../outside", (l.root + "/a/b/deep").c_str()) == 0);
  Tree tree({l.root});
  CHECK(err_of(tree.parent(l.root + "/esc/secret")) == ELOOP);
  CHECK(err_of(tree.open_parent(l.root + "/esc/secret")) == ELOOP);
  CHECK(err_of(tree.parent(l.root + "/a/b/deep/secret")) == ELOOP);
  // The link itself as the last name is handed back for the caller's *_NOFOLLOW call;
  // as a directory to list it is refused.
  auto last = tree.parent(l.root + "/esc");
  REQUIRE(last);
  CHECK(last->name == "esc");
  int e = err_of(tree.open_dir(l.root + "/esc"));
  CHECK((e == ELOOP || e == ENOTDIR));
}

TEST_CASE("snapshot::Tree refuses a symlink even where it would stay inside") {
  Layout l;
  REQUIRE(::symlink("a/b", (l.root + "/short").c_str()) == 0);
  Tree tree({l.root});
  CHECK(err_of(tree.parent(l.root + "/short/file")) == ELOOP);
  int e = err_of(tree.open_dir(l.root + "/short"));
  CHECK((e == ELOOP || e == ENOTDIR));
}

TEST_CASE("snapshot::Tree refuses an absolute symlink") {
  Layout l;
  REQUIRE(::symlink(l.outside.c_str(), (l.root + "/a/abs").c_str()) == 0);
  REQUIRE(::symlink("/", (l.root + "/slash").c_str()) == 0);
  Tree tree({l.root});
  CHECK(err_of(tree.parent(l.root + "/a/abs/secret")) == ELOOP);
  CHECK(err_of(tree.parent(l.root + "/slash" + l.outside + "/secret")) == ELOOP);
}

TEST_CASE("snapshot::Tree refuses magic links, planted or as a root") {
  Layout l;
  UniqueFd out(::open(l.outside.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(out);
  std::string pid = std::to_string(::getpid());
  std::string fd_link = "/proc/" + pid + "/fd/" + std::to_string(out.get());
  // Symlinks into /proc's magic links: to the process's root and to an open fd.
  REQUIRE(::symlink(("/proc/self/root" + l.outside).c_str(), (l.root + "/procroot").c_str()) == 0);
  REQUIRE(::symlink(fd_link.c_str(), (l.root + "/procfd").c_str()) == 0);
  {
    Tree tree({l.root});
    CHECK(err_of(tree.parent(l.root + "/procroot/secret")) == ELOOP);
    CHECK(err_of(tree.parent(l.root + "/procfd/secret")) == ELOOP);
  }
  // A root reached through a magic link (/proc/PID/fd/N is one, below real directories)
  // is not opened: the root is opened without following any link either.
  Tree magic({fd_link});
  CHECK(err_of(magic.root_fd(0)) == ELOOP);
  CHECK(err_of(magic.parent(fd_link + "/secret")) == ELOOP);
  Tree cwd({"/proc/" + pid + "/cwd"});
  CHECK(err_of(cwd.root_fd(0)) == ELOOP);
  // And a root through an ordinary symlink.
  REQUIRE(::symlink(l.outside.c_str(), (l.t / "rootlink").c_str()) == 0);
  Tree linked({l.t / "rootlink"});
  CHECK(err_of(linked.parent(l.t / "rootlink/secret")) == ELOOP);
}

TEST_CASE("snapshot::Tree refuses '..' that leaves the root") {
  Layout l;
  Tree tree({l.root});
  CHECK(err_of(tree.parent(l.root + "/../outside/secret")) == EXDEV);
  CHECK(err_of(tree.parent(l.root + "/a/../../outside/secret")) == EXDEV);
  CHECK(err_of(tree.parent(l.root + "/a/b/../../../outside/secret")) == EXDEV);
  CHECK(err_of(tree.open_parent(l.root + "/a/../../outside/secret")) == EXDEV);
  CHECK(err_of(tree.open_dir(l.root + "/a/../../outside")) == EXDEV);
  // A '..' that stays below the root resolves there.
  auto p = tree.parent(l.root + "/a/b/../b/file");
  REQUIRE(p);
  CHECK(ino_at(p->fd, p->name) == ino_of(l.root + "/a/b/file"));
}

TEST_CASE("snapshot::Tree refuses a path whose last name is '..', '.' or empty") {
  Layout l;
  Tree tree({l.root});
  CHECK(err_of(tree.parent(l.root + "/..")) == EXDEV);
  CHECK(err_of(tree.parent(l.root + "/a/..")) == EXDEV);
  CHECK(err_of(tree.open_dir(l.root + "/..")) == EXDEV);
  CHECK(err_of(tree.open_parent(l.root + "/a/b/..")) == EXDEV);
  CHECK(err_of(tree.parent(l.root + "/a/.")) == EXDEV);
  CHECK(err_of(tree.parent(l.root + "/a/")) == EXDEV);
}
