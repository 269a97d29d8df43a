// Tests for src/snapshot/changeset.cpp on real overlays. Each case mounts one (user
// namespace, `userxattr`) in a child, makes its changes through the merged view, and
// scans the upper layer in the parent. In unit_priv_tests, which exits 77 (skipped)
// where no overlay can be mounted in a user namespace (priv_main.cpp).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "changeset_testutil.hpp"
#include "overlay_testutil.hpp"
#include "snapshot/changeset.hpp"
#include "testutil.hpp"

using namespace zb::snapshot;
using zb::store::ChangeKind;
using zb::store::FileType;
using zb::test::dump;
using zb::test::find;
using zb::test::index_of;
using zb::test::put;
using zb::test::TempDir;

namespace {

// In the forked child: report the failed step and exit, so the parent's CHECK shows it.
#define MUST(cond)                                                                             \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "child: line %d: %s: %s\n", __LINE__, #cond, std::strerror(errno)); \
      ::_exit(1);                                                                              \
    }                                                                                          \
  } while (0)

bool write_str(const std::string& path, const std::string& s) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, s.data(), s.size()) == static_cast<ssize_t>(s.size());
  return ::close(fd) == 0 && ok;
}

// A lower, upper, work and mount directory in a fresh temp dir.
struct Layers {
  TempDir t;
  std::string lower = t / "L", upper = t / "U", work = t / "W", merged = t / "M";
  Layers() {
    for (const auto& d : {lower, upper, work, merged}) ::mkdir(d.c_str(), 0755);
  }
  // Overlay leaves W/work with mode 000, which only root could remove as it is.
  ~Layers() { ::chmod((work + "/work").c_str(), 0700); }
  Layers(const Layers&) = delete;
  Layers& operator=(const Layers&) = delete;

  // Runs `ops(merged)` in a child that mounted the overlay (zb::test::through_overlay).
  // The binary's probe saw an overlay mount work here, so one that fails is a failure.
  void run(const std::function<void(const std::string&)>& ops) const {
    int status = zb::test::through_overlay(lower, upper, work, merged, ops);
    REQUIRE(WIFEXITED(status));
    REQUIRE_MESSAGE(WEXITSTATUS(status) != 77, "the overlay could not be mounted (the child's stderr says why)");
    REQUIRE_MESSAGE(WEXITSTATUS(status) == 0, "the child's file operations failed");
  }

  std::vector<ScannedChange> scan(const ScanOptions& opts = {}) const {
    auto r = collect_changes(upper, lower, opts);
    REQUIRE_MESSAGE(r.has_value(), (r ? "" : r.error().message()));
    return *r;
  }
};

}  // namespace

TEST_CASE("changeset: created files and directories are added, parents first") {
  Layers l;
  l.run([](const std::string& m) {
    MUST(put(m + "/new.txt", "hi"));
    MUST(::mkdir((m + "/d").c_str(), 0750) == 0);
    MUST(::mkdir((m + "/d/e").c_str(), 0755) == 0);
    MUST(put(m + "/d/e/f", "deep", 0600));
  });
  auto v = l.scan();
  REQUIRE_MESSAGE(v.size() == 4, dump(v));
  const auto* f = find(v, "new.txt");
  REQUIRE(f != nullptr);
  CHECK(f->change.kind == ChangeKind::Added);
  CHECK(f->change.after.value().type == FileType::Regular);
  CHECK(f->change.after.value().size == 2);
  CHECK(f->change.after.value().mode == 0644U);
  CHECK(f->change.after.value().uid == ::getuid());
  CHECK_FALSE(f->change.before.has_value());
  CHECK(f->new_nlink == 1);
  EXPECT_CHANGE(v, "d", ChangeKind::Added);
  CHECK(find(v, "d")->change.after.value().type == FileType::Directory);
  CHECK(find(v, "d")->change.after.value().mode == 0750U);
  EXPECT_CHANGE(v, "d/e/f", ChangeKind::Added);
  CHECK(find(v, "d/e/f")->change.after.value().mode == 0600U);
  CHECK(index_of(v, "d") < index_of(v, "d/e"));
  CHECK(index_of(v, "d/e") < index_of(v, "d/e/f"));
}

TEST_CASE("changeset: modified contents, same and different sizes") {
  Layers l;
  REQUIRE(put(l.lower + "/same-size", "old"));
  REQUIRE(put(l.lower + "/grown", "old"));
  REQUIRE(symlink("target-a", (l.lower + "/link").c_str()) == 0);
  REQUIRE(put(l.lower + "/untouched", "u"));
  l.run([](const std::string& m) {
    MUST(write_str(m + "/same-size", "new"));
    MUST(put(m + "/grown", "old and more"));
    MUST(::unlink((m + "/link").c_str()) == 0);
    MUST(::symlink("target-b", (m + "/link").c_str()) == 0);
  });
  auto v = l.scan();
  REQUIRE_MESSAGE(v.size() == 3, dump(v));
  EXPECT_CHANGE(v, "same-size", ChangeKind::Modified);
  EXPECT_CHANGE(v, "grown", ChangeKind::Modified);
  const auto* g = find(v, "grown");
  CHECK(g->change.before.value().size == 3);
  CHECK(g->change.after.value().size == 12);
  CHECK(g->change.before.value().type == FileType::Regular);
  CHECK(g->change.after.value().type == FileType::Regular);
  EXPECT_CHANGE(v, "link", ChangeKind::Modified);
  CHECK(find(v, "link")->change.before.value().link == "target-a");
  CHECK(find(v, "link")->change.after.value().link == "target-b");
}

TEST_CASE("changeset: deletions are whiteouts; a deleted tree is reported bottom-up") {
  Layers l;
  REQUIRE(put(l.lower + "/f", "gone"));
  zb::test::mkdirs(l.lower + "/x/z");
  REQUIRE(put(l.lower + "/x/y", "y"));
  REQUIRE(put(l.lower + "/x/z/w", "w"));
  REQUIRE(symlink("f", (l.lower + "/s").c_str()) == 0);
  l.run([](const std::string& m) {
    MUST(::unlink((m + "/f").c_str()) == 0);
    MUST(::unlink((m + "/s").c_str()) == 0);
    std::filesystem::remove_all(m + "/x");
    MUST(put(m + "/temp", "short-lived"));  // created and deleted: no trace
    MUST(::unlink((m + "/temp").c_str()) == 0);
  });
  auto v = l.scan();
  REQUIRE_MESSAGE(v.size() == 6, dump(v));
  EXPECT_CHANGE(v, "f", ChangeKind::Deleted);
  CHECK(find(v, "f")->change.before.value().type == FileType::Regular);
  CHECK(find(v, "f")->change.before.value().size == 4);
  CHECK_FALSE(find(v, "f")->change.after.has_value());
  EXPECT_CHANGE(v, "s", ChangeKind::Deleted);
  CHECK(find(v, "s")->change.before.value().link == "f");
  for (const char* p : {"x", "x/y", "x/z", "x/z/w"}) EXPECT_CHANGE(v, p, ChangeKind::Deleted);
  CHECK(find(v, "x")->change.before.value().type == FileType::Directory);
  CHECK(index_of(v, "x/z/w") < index_of(v, "x/z"));
  CHECK(index_of(v, "x/z") < index_of(v, "x"));
  CHECK(index_of(v, "x/y") < index_of(v, "x"));
}

TEST_CASE("changeset: rm -rf then recreate makes an opaque directory; net changes only") {
  Layers l;
  zb::test::mkdirs(l.lower + "/d/sub");
  ::chmod((l.lower + "/d").c_str(), 0755);
  REQUIRE(put(l.lower + "/d/keep", "same"));
  REQUIRE(put(l.lower + "/d/gone", "g"));
  REQUIRE(put(l.lower + "/d/changed", "before"));
  REQUIRE(put(l.lower + "/d/sub/deep", "deep"));
  l.run([](const std::string& m) {
    std::filesystem::remove_all(m + "/d");
    MUST(::mkdir((m + "/d").c_str(), 0755) == 0);
    MUST(put(m + "/d/keep", "same"));
    MUST(put(m + "/d/changed", "after!"));
    MUST(put(m + "/d/new", "n"));
    MUST(::mkdir((m + "/d/sub").c_str(), 0755) == 0);  // recreated empty: deep is gone
  });
  char val[4] = {};
  REQUIRE(::getxattr((l.upper + "/d").c_str(), "user.overlay.opaque", val, sizeof val) == 1);
  CHECK(val[0] == 'y');
  auto v = l.scan();
  REQUIRE_MESSAGE(v.size() == 4, dump(v));
  EXPECT_CHANGE(v, "d/gone", ChangeKind::Deleted);
  EXPECT_CHANGE(v, "d/sub/deep", ChangeKind::Deleted);
  EXPECT_CHANGE(v, "d/changed", ChangeKind::Modified);
  EXPECT_CHANGE(v, "d/new", ChangeKind::Added);
  CHECK(find(v, "d") == nullptr);
  CHECK(find(v, "d/keep") == nullptr);
  CHECK(find(v, "d/sub") == nullptr);
}

TEST_CASE("changeset: a renamed directory is a deletion and an addition") {
  Layers l;
  zb::test::mkdirs(l.lower + "/a/inner");
  REQUIRE(put(l.lower + "/a/inner/f", "f"));
  l.run([](const std::string& m) {
    // redirect_dir is off: rename(2) of a lower directory fails with EXDEV and mv copies.
    if (::rename((m + "/a").c_str(), (m + "/b").c_str()) != 0) {
      MUST(errno == EXDEV);
      std::filesystem::copy(m + "/a", m + "/b", std::filesystem::copy_options::recursive);
      std::filesystem::remove_all(m + "/a");
    }
  });
  auto v = l.scan();
  REQUIRE_MESSAGE(v.size() == 6, dump(v));
  for (const char* p : {"a", "a/inner", "a/inner/f"}) EXPECT_CHANGE(v, p, ChangeKind::Deleted);
  for (const char* p : {"b", "b/inner", "b/inner/f"}) EXPECT_CHANGE(v, p, ChangeKind::Added);
  CHECK(index_of(v, "b") < index_of(v, "b/inner/f"));
}

TEST_CASE("changeset: type changes between file, directory and symlink") {
  Layers l;
  REQUIRE(put(l.lower + "/f2d", "file"));
  zb::test::mkdirs(l.lower + "/d2f");
  REQUIRE(put(l.lower + "/d2f/child", "c"));
  REQUIRE(symlink("f2d", (l.lower + "/s2f").c_str()) == 0);
  REQUIRE(put(l.lower + "/f2s", "file"));
  l.run([](const std::string& m) {
    MUST(::unlink((m + "/f2d").c_str()) == 0);
    MUST(::mkdir((m + "/f2d").c_str(), 0755) == 0);
    MUST(put(m + "/f2d/inner", "i"));
    std::filesystem::remove_all(m + "/d2f");
    MUST(put(m + "/d2f", "now a file"));
    MUST(::unlink((m + "/s2f").c_str()) == 0);
    MUST(put(m + "/s2f", "now a file"));
    MUST(::unlink((m + "/f2s").c_str()) == 0);
    MUST(::symlink("elsewhere", (m + "/f2s").c_str()) == 0);
  });
  auto v = l.scan();
  REQUIRE_MESSAGE(v.size() == 6, dump(v));
  auto check_type = [&](const char* p, FileType from, FileType to) {
    const auto* c = find(v, p);
    REQUIRE_MESSAGE(c != nullptr, p);
    CHECK(c->change.kind == ChangeKind::TypeChanged);
    CHECK(c->change.before.value().type == from);
    CHECK(c->change.after.value().type == to);
  };
  check_type("f2d", FileType::Regular, FileType::Directory);
  check_type("d2f", FileType::Directory, FileType::Regular);
  check_type("s2f", FileType::Symlink, FileType::Regular);
  check_type("f2s", FileType::Regular, FileType::Symlink);
  CHECK(find(v, "s2f")->change.before.value().link == "f2d");
  CHECK(find(v, "f2s")->change.after.value().link == "elsewhere");
  EXPECT_CHANGE(v, "f2d/inner", ChangeKind::Added);
  EXPECT_CHANGE(v, "d2f/child", ChangeKind::Deleted);
  CHECK(index_of(v, "f2d") < index_of(v, "f2d/inner"));
  CHECK(index_of(v, "d2f/child") < index_of(v, "d2f"));
}

TEST_CASE("changeset: symlinks out of the tree are reported, never followed") {
  Layers l;
  zb::test::mkdirs(l.lower + "/d");
  REQUIRE(put(l.lower + "/d/x", "x"));
  l.run([](const std::string& m) {
    MUST(::symlink("/etc/passwd", (m + "/abs").c_str()) == 0);
    MUST(::symlink("../../../../../../etc", (m + "/rel").c_str()) == 0);
    std::filesystem::remove_all(m + "/d");
    MUST(::symlink("/etc", (m + "/d").c_str()) == 0);  // was a directory
  });
  auto v = l.scan();
  REQUIRE_MESSAGE(v.size() == 4, dump(v));
  EXPECT_CHANGE(v, "abs", ChangeKind::Added);
  CHECK(find(v, "abs")->change.after.value().type == FileType::Symlink);
  CHECK(find(v, "abs")->change.after.value().link == "/etc/passwd");
  CHECK(find(v, "abs")->change.after.value().size == 11);
  EXPECT_CHANGE(v, "rel", ChangeKind::Added);
  EXPECT_CHANGE(v, "d", ChangeKind::TypeChanged);
  CHECK(find(v, "d")->change.after.value().link == "/etc");
  EXPECT_CHANGE(v, "d/x", ChangeKind::Deleted);
  for (const auto& c : v) CHECK(c.change.path.find("passwd") == std::string::npos);
}

TEST_CASE("changeset: a chmod alone is mode_changed") {
  Layers l;
  REQUIRE(put(l.lower + "/f", "content", 0644));
  zb::test::mkdirs(l.lower + "/d");
  ::chmod((l.lower + "/d").c_str(), 0755);
  l.run([](const std::string& m) {
    MUST(::chmod((m + "/f").c_str(), 0600) == 0);
    MUST(::chmod((m + "/d").c_str(), 0700) == 0);
  });
  auto v = l.scan();
  REQUIRE_MESSAGE(v.size() == 2, dump(v));
  EXPECT_CHANGE(v, "f", ChangeKind::ModeChanged);
  const ScannedChange* f = find(v, "f");
  REQUIRE(f != nullptr);
  CHECK(f->change.before.value().mode == 0644U);
  CHECK(f->change.after.value().mode == 0600U);
  CHECK(f->change.after.value().size == 7);
  EXPECT_CHANGE(v, "d", ChangeKind::ModeChanged);
  const ScannedChange* d = find(v, "d");
  REQUIRE(d != nullptr);
  CHECK(d->change.after.value().mode == 0700U);
}

TEST_CASE("changeset: a copy-up that changed nothing is not reported") {
  Layers l;
  REQUIRE(put(l.lower + "/opened", "same"));
  REQUIRE(put(l.lower + "/touched", "same"));
  REQUIRE(put(l.lower + "/rewritten", "same"));
  zb::test::mkdirs(l.lower + "/d/e");
  REQUIRE(put(l.lower + "/d/e/f", "same"));
  l.run([](const std::string& m) {
    int fd = ::open((m + "/opened").c_str(), O_WRONLY | O_CLOEXEC);
    MUST(fd >= 0);
    ::close(fd);
    struct timespec ts[2] = {{1, 0}, {1, 0}};
    MUST(::utimensat(AT_FDCWD, (m + "/touched").c_str(), ts, 0) == 0);
    MUST(write_str(m + "/rewritten", "same"));
    MUST(::chmod((m + "/d/e/f").c_str(), 0644) == 0);  // copies up d and d/e as well
  });
  struct stat st{};
  REQUIRE(::lstat((l.upper + "/opened").c_str(), &st) == 0);  // the copy-up happened
  REQUIRE(::lstat((l.upper + "/d/e/f").c_str(), &st) == 0);
  auto v = l.scan();
  CHECK_MESSAGE(v.empty(), dump(v));
}

TEST_CASE("changeset: hard links, FIFOs and sockets") {
  Layers l;
  REQUIRE(put(l.lower + "/lowerfile", "l"));
  REQUIRE(::mkfifo((l.lower + "/oldfifo").c_str(), 0644) == 0);
  l.run([](const std::string& m) {
    MUST(put(m + "/a", "x"));
    MUST(::link((m + "/a").c_str(), (m + "/b").c_str()) == 0);
    MUST(::link((m + "/lowerfile").c_str(), (m + "/c").c_str()) == 0);
    MUST(::mkfifo((m + "/fifo").c_str(), 0640) == 0);
    MUST(::mknod((m + "/sock").c_str(), S_IFSOCK | 0755, 0) == 0);
    MUST(::unlink((m + "/oldfifo").c_str()) == 0);
  });
  auto v = l.scan();
  REQUIRE_MESSAGE(v.size() == 6, dump(v));
  EXPECT_CHANGE(v, "a", ChangeKind::Added);
  EXPECT_CHANGE(v, "b", ChangeKind::Added);
  CHECK(find(v, "a")->new_nlink == 2);
  CHECK(find(v, "a")->new_ino == find(v, "b")->new_ino);
  EXPECT_CHANGE(v, "c", ChangeKind::Added);
  CHECK(find(v, "c")->new_nlink == 2);  // linked to the copied-up, unchanged lowerfile
  CHECK(find(v, "lowerfile") == nullptr);
  EXPECT_CHANGE(v, "fifo", ChangeKind::Added);
  CHECK(find(v, "fifo")->change.after.value().type == FileType::Fifo);
  CHECK(find(v, "fifo")->change.after.value().mode == 0640U);
  CHECK_FALSE(find(v, "fifo")->change.after.value().size.has_value());
  EXPECT_CHANGE(v, "sock", ChangeKind::Added);
  CHECK(find(v, "sock")->change.after.value().type == FileType::Socket);
  EXPECT_CHANGE(v, "oldfifo", ChangeKind::Deleted);
  CHECK(find(v, "oldfifo")->change.before.value().type == FileType::Fifo);
}

TEST_CASE("changeset: names are arbitrary bytes") {
  Layers l;
  const std::string weird_old = "old\n\xff";
  const std::string nl = "a\nb";
  const std::string bad = "\xfe\xff.txt";
  REQUIRE(put(l.lower + "/" + weird_old, "x"));
  zb::test::mkdirs(l.lower + "/" + nl);
  l.run([&](const std::string& m) {
    MUST(::unlink((m + "/" + weird_old).c_str()) == 0);
    MUST(put(m + "/" + nl + "/" + bad, "y"));
  });
  auto v = l.scan();
  REQUIRE_MESSAGE(v.size() == 2, dump(v));
  EXPECT_CHANGE(v, weird_old, ChangeKind::Deleted);
  EXPECT_CHANGE(v, nl + "/" + bad, ChangeKind::Added);
}

TEST_CASE("changeset: a 1 GiB sparse file is compared without reading its holes") {
  constexpr off_t k_gib = off_t{1} << 30;
  Layers l;
  for (const char* name : {"/big-same", "/big-changed"}) {
    int fd = ::open((l.lower + name).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::ftruncate(fd, k_gib) == 0);
    REQUIRE(::pwrite(fd, "tail", 4, k_gib - 4) == 4);
    ::close(fd);
  }
  l.run([&](const std::string& m) {
    int fd = ::open((m + "/big-same").c_str(), O_WRONLY | O_CLOEXEC);  // copy-up only
    MUST(fd >= 0);
    ::close(fd);
    fd = ::open((m + "/big-changed").c_str(), O_WRONLY | O_CLOEXEC);
    MUST(fd >= 0);
    MUST(::pwrite(fd, "x", 1, k_gib / 2) == 1);
    ::close(fd);
  });
  auto start = std::chrono::steady_clock::now();
  auto v = l.scan();
  auto took = std::chrono::steady_clock::now() - start;
  REQUIRE_MESSAGE(v.size() == 1, dump(v));
  EXPECT_CHANGE(v, "big-changed", ChangeKind::Modified);
  const ScannedChange* big = find(v, "big-changed");
  REQUIRE(big != nullptr);
  CHECK(big->change.after.value().size == k_gib);
  CHECK(took < std::chrono::seconds(2));
}

TEST_CASE("changeset: opaque directories report what they hold; entries newer than the run are left out") {
  Layers l;
  zb::test::mkdirs(l.lower + "/d/sub");
  REQUIRE(put(l.lower + "/d/keep", "same"));
  REQUIRE(put(l.lower + "/d/gone", "g"));
  REQUIRE(put(l.lower + "/d/sub/deep", "deep"));
  zb::test::mkdirs(l.lower + "/rm");
  REQUIRE(put(l.lower + "/rm/old", "o"));
  l.run([](const std::string& m) {
    std::filesystem::remove_all(m + "/d");
    MUST(::mkdir((m + "/d").c_str(), 0755) == 0);
    MUST(put(m + "/d/keep", "same"));
    MUST(::mkdir((m + "/d/sub").c_str(), 0755) == 0);
    MUST(put(m + "/d/sub/n", "n"));
    std::filesystem::remove_all(m + "/rm");
  });
  struct timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  std::int64_t since = static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
  // The host, after the run started: a new file in each directory the command replaced or
  // removed, and a change to one the command removed with its directory.
  ::usleep(20'000);  // past the coarse clock's tick, so the ctimes are after `since`
  REQUIRE(put(l.lower + "/d/host_new", "h"));
  REQUIRE(put(l.lower + "/d/sub/host_new", "h"));
  REQUIRE(put(l.lower + "/rm/host_new", "h"));
  REQUIRE(put(l.lower + "/rm/old", "changed on the host"));

  std::vector<std::pair<std::string, std::vector<std::string>>> opaque;
  ScanOptions opts;
  opts.since_ns = since;
  opts.on_opaque = [&](const std::string& rel, const std::vector<std::string>& names) -> zb::Result<void> {
    auto sorted = names;
    std::sort(sorted.begin(), sorted.end());
    opaque.emplace_back(rel, sorted);
    return {};
  };
  auto v = l.scan(opts);
  EXPECT_CHANGE(v, "d/gone", ChangeKind::Deleted);
  EXPECT_CHANGE(v, "d/sub/deep", ChangeKind::Deleted);
  EXPECT_CHANGE(v, "d/sub/n", ChangeKind::Added);
  EXPECT_CHANGE(v, "rm", ChangeKind::Deleted);
  CHECK(find(v, "d/host_new") == nullptr);
  CHECK(find(v, "d/sub/host_new") == nullptr);
  CHECK(find(v, "rm/host_new") == nullptr);
  CHECK(find(v, "rm/old") == nullptr);
  std::sort(opaque.begin(), opaque.end());
  REQUIRE(opaque.size() == 2);
  CHECK(opaque[0].first == "d");
  CHECK(opaque[0].second == std::vector<std::string>{"keep", "sub"});
  CHECK(opaque[1].first == "d/sub");
  CHECK(opaque[1].second == std::vector<std::string>{"n"});

  // Without since_ns every hidden entry is reported, as before.
  auto all = l.scan();
  EXPECT_CHANGE(all, "d/host_new", ChangeKind::Deleted);
  EXPECT_CHANGE(all, "rm/old", ChangeKind::Deleted);
}

TEST_CASE("changeset: xattrs of both sides and inode labels of the lower side") {
  Layers l;
  REQUIRE(put(l.lower + "/f", "old"));
  if (::setxattr((l.lower + "/f").c_str(), "user.a", "1", 1, 0) != 0) {
    MESSAGE("user xattrs unsupported here");
    return;
  }
  REQUIRE(put(l.lower + "/h1", "linked"));
  REQUIRE(::link((l.lower + "/h1").c_str(), (l.lower + "/h2").c_str()) == 0);
  l.run([](const std::string& m) {
    MUST(put(m + "/f", "new!"));
    MUST(::setxattr((m + "/f").c_str(), "user.b", "2", 1, 0) == 0);
    MUST(::unlink((m + "/h1").c_str()) == 0);
    MUST(::unlink((m + "/h2").c_str()) == 0);
  });
  auto v = l.scan();
  const ScannedChange* f = find(v, "f");
  REQUIRE(f != nullptr);
  auto old_x = zb::store::decode_xattrs(f->change.before.value().xattrs.value_or("?"));
  auto new_x = zb::store::decode_xattrs(f->change.after.value().xattrs.value_or("?"));
  REQUIRE(old_x.has_value());
  REQUIRE(new_x.has_value());
  CHECK(*old_x == zb::util::Xattrs{{"user.a", "1"}});
  // The upper copy holds user.a (copied up) and user.b; never overlay's own.
  CHECK(*new_x == zb::util::Xattrs{{"user.a", "1"}, {"user.b", "2"}});
  const ScannedChange* h1 = find(v, "h1");
  const ScannedChange* h2 = find(v, "h2");
  REQUIRE(h1 != nullptr);
  REQUIRE(h2 != nullptr);
  REQUIRE(h1->change.before.value().inode.has_value());
  CHECK(h1->change.before.value().inode == h2->change.before.value().inode);
  CHECK_FALSE(f->change.before.value().inode.has_value());
}
