// Tests for src/snapshot/exclude.cpp and, at the end ("copy:" cases), src/util/copy.cpp.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include "snapshot/exclude.hpp"
#include "testutil.hpp"
#include "util/copy.hpp"
#include "util/fd.hpp"

using zb::UniqueFd;
using zb::snapshot::Excludes;
using zb::test::TempDir;

namespace {

Excludes make(std::vector<std::string> patterns) {
  auto ex = Excludes::compile(patterns);
  REQUIRE_MESSAGE(ex, (ex ? "" : ex.error().message()));
  return *ex;
}

std::string compile_error(std::vector<std::string> patterns) {
  auto ex = Excludes::compile(patterns);
  return ex ? std::string("(compiled)") : ex.error().message();
}

}  // namespace

TEST_CASE("exclude: no patterns match nothing") {
  auto ex = make({});
  CHECK(ex.empty());
  CHECK_FALSE(ex.matches("a", false));
  CHECK_FALSE(make({"x"}).empty());
}

TEST_CASE("exclude: a name without a slash matches at any depth") {
  auto ex = make({"node_modules"});
  CHECK(ex.matches("node_modules", true));
  CHECK(ex.matches("node_modules", false));
  CHECK(ex.matches("a/b/node_modules", true));
  CHECK_FALSE(ex.matches("node_modules2", true));
  CHECK_FALSE(ex.matches("a/xnode_modules", true));
  CHECK_FALSE(ex.matches("", true));
}

TEST_CASE("exclude: wildcards in a name match at any depth, dot files included") {
  auto ex = make({"*.log"});
  CHECK(ex.matches("x.log", false));
  CHECK(ex.matches("a/b/x.log", false));
  CHECK(ex.matches(".hidden.log", false));
  CHECK_FALSE(ex.matches("x.log.gz", false));
  auto q = make({"?.[ch]"});
  CHECK(q.matches("src/a.c", false));
  CHECK(q.matches("b.h", false));
  CHECK_FALSE(q.matches("ab.c", false));
  CHECK_FALSE(q.matches("a.o", false));
  CHECK(make({"[!a]x"}).matches("bx", false));
  CHECK_FALSE(make({"[!a]x"}).matches("ax", false));
}

TEST_CASE("exclude: a match on a directory covers everything below it") {
  auto ex = make({"build/"});
  CHECK(ex.matches("build", true));
  CHECK(ex.matches("build/x/y.o", false));
  CHECK(ex.matches("sub/build/y.o", false));
  CHECK(make({"node_modules"}).matches("a/node_modules/pkg/index.js", false));
  CHECK(make({"src/gen"}).matches("src/gen/deep/f.c", false));
}

TEST_CASE("exclude: a trailing slash matches directories only") {
  auto ex = make({"build/"});
  CHECK_FALSE(ex.matches("build", false));
  CHECK_FALSE(ex.matches("a/build", false));
  CHECK(ex.matches("a/build", true));
  // The parents of rel are directories even when rel is not.
  CHECK(ex.matches("a/build/file", false));
  auto anchored = make({"a/build/"});
  CHECK(anchored.matches("a/build", true));
  CHECK_FALSE(anchored.matches("a/build", false));
  CHECK(anchored.matches("a/build/f", false));
}

TEST_CASE("exclude: a leading slash anchors at the root") {
  auto ex = make({"/dist"});
  CHECK(ex.matches("dist", true));
  CHECK(ex.matches("dist", false));
  CHECK(ex.matches("dist/bundle.js", false));
  CHECK_FALSE(ex.matches("web/dist", true));
  CHECK_FALSE(ex.matches("web/dist/bundle.js", false));
  CHECK(make({"/dist/"}).matches("dist/x", false));
  CHECK_FALSE(make({"/dist/"}).matches("dist", false));
}

TEST_CASE("exclude: a slash in the middle anchors at the root") {
  auto ex = make({"a/*.tmp"});
  CHECK(ex.matches("a/x.tmp", false));
  CHECK(ex.matches("a/.x.tmp", false));
  CHECK_FALSE(ex.matches("b/a/x.tmp", false));
  CHECK_FALSE(ex.matches("a/b/x.tmp", false));  // '*' does not cross '/'
  CHECK(make({"src/gen"}).matches("src/gen", true));
  CHECK_FALSE(make({"src/gen"}).matches("x/src/gen", true));
}

TEST_CASE("exclude: '*', '?' and '[...]' do not cross '/'") {
  CHECK_FALSE(make({"a*b"}).matches("a/b", false));  // and no slash: each name alone
  CHECK_FALSE(make({"a/*"}).matches("a", true));
  CHECK(make({"a/*"}).matches("a/b/c", false));  // "a/b" matches; c is below it
  CHECK_FALSE(make({"x/a?b"}).matches("x/a/b", false));
  CHECK_FALSE(make({"x/a[/]b"}).matches("x/a/b", false));
  CHECK_FALSE(make({"*/x"}).matches("a/b/x", false));
  CHECK(make({"*/x"}).matches("a/x", false));
}

TEST_CASE("exclude: leading **/ matches at any depth, including the root") {
  auto ex = make({"**/cache"});
  CHECK(ex.matches("cache", true));
  CHECK(ex.matches("a/cache", true));
  CHECK(ex.matches("a/b/c/cache/f", false));
  CHECK_FALSE(ex.matches("a/cachex", true));
  auto two = make({"**/a/b"});
  CHECK(two.matches("a/b", false));
  CHECK(two.matches("x/y/a/b", false));
  CHECK_FALSE(two.matches("x/a/c/b", false));
}

TEST_CASE("exclude: middle /**/ matches zero or more components") {
  auto ex = make({"src/**/gen"});
  CHECK(ex.matches("src/gen", true));
  CHECK(ex.matches("src/a/gen", true));
  CHECK(ex.matches("src/a/b/c/gen/x.c", false));
  CHECK_FALSE(ex.matches("lib/src/a/gen", true));
  CHECK_FALSE(ex.matches("src/a/genx", true));
  CHECK_FALSE(ex.matches("src", true));
  auto many = make({"a/**/b/**/c"});
  CHECK(many.matches("a/b/c", false));
  CHECK(many.matches("a/x/b/y/z/c", false));
  CHECK(many.matches("a/b/b/b/c", false));
  CHECK_FALSE(many.matches("a/x/c", false));
  CHECK(make({"a/**/*.o"}).matches("a/x/y/z.o", false));
  CHECK_FALSE(make({"a/**/*.o"}).matches("b/x/z.o", false));
}

TEST_CASE("exclude: trailing /** matches what is inside, not the directory itself") {
  auto ex = make({"build/**"});
  CHECK_FALSE(ex.matches("build", true));
  CHECK(ex.matches("build/x", false));
  CHECK(ex.matches("build/x/y/z", false));
  CHECK_FALSE(ex.matches("a/build/x", false));
  auto dirs = make({"build/**/"});
  CHECK(dirs.matches("build/d", true));
  CHECK_FALSE(dirs.matches("build/f", false));
  CHECK(dirs.matches("build/d/f", false));
}

TEST_CASE("exclude: ** alone matches everything; elsewhere it is two '*'") {
  CHECK(make({"**"}).matches("a/b", false));
  CHECK(make({"/**"}).matches("a", false));
  CHECK(make({"**/"}).matches("a/f", false));
  CHECK_FALSE(make({"**/"}).matches("f", false));
  CHECK(make({"a**b"}).matches("x/axyb", false));
  CHECK_FALSE(make({"x/a**b"}).matches("x/a/b", false));
}

TEST_CASE("exclude: names with spaces, newlines and other bytes") {
  auto ex = make({"my dir/", "*\n*", "weird name.txt", "\\!bang", "\\*"});
  CHECK(ex.matches("my dir", true));
  CHECK(ex.matches("x/my dir/f", false));
  CHECK_FALSE(ex.matches("my dir", false));
  CHECK_FALSE(ex.matches("mydir", true));
  CHECK(ex.matches("a/line1\nline2", false));
  CHECK_FALSE(ex.matches("a/line1line2", false));
  CHECK(ex.matches("weird name.txt", false));
  CHECK_FALSE(ex.matches("weird  name.txt", false));
  CHECK(ex.matches("!bang", false));  // escaped '!' is a literal
  CHECK(ex.matches("d/*", false));
  CHECK_FALSE(ex.matches("d/x", false));
  auto anchored = make({"a b/c\nd/*"});
  CHECK(anchored.matches("a b/c\nd/e f", false));
  CHECK_FALSE(anchored.matches("a b/c d/e", false));
  CHECK(make({" "}).matches("x/ ", false));  // whitespace is not trimmed
  CHECK_FALSE(make({" x"}).matches("x", false));
}

TEST_CASE("exclude: several patterns, any one matches") {
  auto ex = make({"node_modules", "*.log", "build/", "/dist", "src/**/gen", "**/cache", "a/*.tmp"});
  CHECK(ex.matches("web/node_modules/x", false));
  CHECK(ex.matches("x.log", false));
  CHECK(ex.matches("dist/a", false));
  CHECK(ex.matches("src/gen", true));
  CHECK(ex.matches("q/cache", true));
  CHECK(ex.matches("a/z.tmp", false));
  CHECK_FALSE(ex.matches("src/main.cpp", false));
  CHECK_FALSE(ex.matches("b/z.tmp", false));
  CHECK_FALSE(ex.matches("build", false));
}

TEST_CASE("exclude: negated, empty and malformed patterns are rejected") {
  CHECK(compile_error({"!x"}) == "--snapshot-exclude: negated patterns ('!x') are not supported: '!x'");
  CHECK(compile_error({"ok", "!build/"}).find("negated patterns ('!x') are not supported") != std::string::npos);
  CHECK(compile_error({""}) == "--snapshot-exclude: empty pattern");
  CHECK(compile_error({"a", ""}) == "--snapshot-exclude: empty pattern");
  CHECK(compile_error({"/"}).find("'/'") != std::string::npos);
  CHECK(compile_error({"//"}).starts_with("--snapshot-exclude: '//'"));
  CHECK(compile_error({"a//b"}).starts_with("--snapshot-exclude: 'a//b': "));
  CHECK(compile_error({"./a"}).starts_with("--snapshot-exclude: './a': "));
  CHECK(compile_error({"a/../b"}).starts_with("--snapshot-exclude: 'a/../b': "));
  CHECK(compile_error({"a\\"}).starts_with("--snapshot-exclude: 'a\\': "));
  CHECK(compile_error({"a\\\\"}) == "(compiled)");
  CHECK(compile_error({"build//"}) == "(compiled)");
  auto err = Excludes::compile({"!x"});
  REQUIRE_FALSE(err);
  CHECK(err.error().err == 0);
}

// ---- src/util/copy.cpp ----

namespace {

UniqueFd open_rw(const std::string& p) {
  UniqueFd fd(::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  REQUIRE(fd);
  return fd;
}

void pwrite_all(int fd, const std::string& data, off_t off) {
  REQUIRE(::pwrite(fd, data.data(), data.size(), off) == static_cast<ssize_t>(data.size()));
}

std::string pread_n(int fd, std::size_t n, off_t off) {
  std::string s(n, '\0');
  auto got = ::pread(fd, s.data(), n, off);
  REQUIRE(got >= 0);
  s.resize(static_cast<std::size_t>(got));
  return s;
}

struct stat fstat_of(int fd) {
  struct stat st{};
  REQUIRE(::fstat(fd, &st) == 0);
  return st;
}

std::string whole(int fd) { return pread_n(fd, static_cast<std::size_t>(fstat_of(fd).st_size), 0); }

constexpr off_t k_mib = off_t{1} << 20;

}  // namespace

TEST_CASE("copy: a normal file, whatever the fds' offsets") {
  TempDir t;
  auto in = open_rw(t / "in");
  std::string content;
  for (int i = 0; i < 50000; ++i) content += "line " + std::to_string(i) + "\n";
  pwrite_all(in.get(), content, 0);
  REQUIRE(::lseek(in.get(), 1234, SEEK_SET) == 1234);
  auto out = open_rw(t / "out");
  REQUIRE(::lseek(out.get(), 99, SEEK_SET) == 99);
  auto n = zb::util::copy_sparse(in.get(), out.get());
  REQUIRE_MESSAGE(n, (n ? "" : n.error().message()));
  CHECK(*n == static_cast<std::int64_t>(content.size()));
  CHECK(whole(out.get()) == content);
  CHECK(::lseek(out.get(), 0, SEEK_CUR) == 99);
}

TEST_CASE("copy: an empty file") {
  TempDir t;
  auto in = open_rw(t / "in");
  auto out = open_rw(t / "out");
  auto n = zb::util::copy_sparse(in.get(), out.get());
  REQUIRE_MESSAGE(n, (n ? "" : n.error().message()));
  CHECK(*n == 0);
  CHECK(fstat_of(out.get()).st_size == 0);
}

TEST_CASE("copy: a 1 GiB sparse file stays sparse") {
  TempDir t;
  auto in = open_rw(t / "in");
  REQUIRE(::ftruncate(in.get(), 1024 * k_mib) == 0);
  pwrite_all(in.get(), "head of the file", 0);
  pwrite_all(in.get(), "middle of the file", 512 * k_mib);
  auto out = open_rw(t / "out");
  auto n = zb::util::copy_sparse(in.get(), out.get());
  REQUIRE_MESSAGE(n, (n ? "" : n.error().message()));
  CHECK(*n == 1024 * k_mib);
  auto st = fstat_of(out.get());
  CHECK(st.st_size == 1024 * k_mib);
  CHECK(st.st_blocks * 512 < k_mib);
  CHECK(pread_n(out.get(), 16, 0) == "head of the file");
  CHECK(pread_n(out.get(), 18, 512 * k_mib) == "middle of the file");
  CHECK(pread_n(out.get(), 4, 256 * k_mib) == std::string(4, '\0'));
  CHECK(pread_n(out.get(), 4, 1024 * k_mib - 4) == std::string(4, '\0'));
}

TEST_CASE("copy: longer earlier content of the output is gone, holes included") {
  TempDir t;
  auto in = open_rw(t / "in");
  // data, a 1 MiB hole, data; the output held 4 MiB of 'x' before.
  REQUIRE(::ftruncate(in.get(), 3 * k_mib) == 0);
  pwrite_all(in.get(), std::string(1000, 'a'), 0);
  pwrite_all(in.get(), std::string(1000, 'b'), 2 * k_mib);
  auto out = open_rw(t / "out");
  pwrite_all(out.get(), std::string(static_cast<std::size_t>(4 * k_mib), 'x'), 0);
  auto n = zb::util::copy_sparse(in.get(), out.get());
  REQUIRE_MESSAGE(n, (n ? "" : n.error().message()));
  CHECK(*n == 3 * k_mib);
  CHECK(fstat_of(out.get()).st_size == 3 * k_mib);
  CHECK(whole(out.get()) == whole(in.get()));
}

TEST_CASE("copy: across filesystems (read/write fallback) zero blocks become holes") {
  // A memfd lives on tmpfs; copying into it from the temp dir's filesystem is EXDEV for
  // copy_file_range on current kernels, which is what sends copy_sparse to the fallback.
  TempDir t;
  auto in = open_rw(t / "in");
  UniqueFd out(::memfd_create("zerobox-unit-copy", MFD_CLOEXEC));
  REQUIRE(out);
  if (fstat_of(in.get()).st_dev == fstat_of(out.get()).st_dev) {
    MESSAGE("skipped: the temp dir is on tmpfs too");
    return;
  }
  // Explicit zeros (allocated, not a hole) between two pieces of data, at odd offsets.
  std::string content = "start" + std::string(static_cast<std::size_t>(4 * k_mib), '\0') + "end";
  pwrite_all(in.get(), content, 7);
  REQUIRE(::fsync(in.get()) == 0);
  auto n = zb::util::copy_sparse(in.get(), out.get());
  REQUIRE_MESSAGE(n, (n ? "" : n.error().message()));
  CHECK(*n == static_cast<std::int64_t>(content.size() + 7));
  CHECK(whole(out.get()) == whole(in.get()));
  // Did copy_file_range refuse (so the fallback ran)? Only then are holes promised.
  loff_t off_in = 0;
  loff_t off_out = 0;
  UniqueFd probe(::memfd_create("zerobox-unit-probe", MFD_CLOEXEC));
  REQUIRE(probe);
  if (::copy_file_range(in.get(), &off_in, probe.get(), &off_out, 1, 0) < 0 &&
      (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
    CHECK(fstat_of(out.get()).st_blocks * 512 < k_mib);
  } else {
    MESSAGE("copy_file_range works across filesystems here; hole check skipped");
  }
}

TEST_CASE("copy: a failure names the call and keeps errno") {
  TempDir t;
  auto in = open_rw(t / "in");
  pwrite_all(in.get(), "data", 0);
  UniqueFd write_only(::open((t / "in").c_str(), O_WRONLY | O_CLOEXEC));
  REQUIRE(write_only);
  auto out = open_rw(t / "out");
  auto r = zb::util::copy_sparse(write_only.get(), out.get());
  REQUIRE_FALSE(r);
  CHECK(r.error().err == EBADF);
  CHECK(r.error().message().starts_with("copy_file_range: "));
  UniqueFd read_only(::open((t / "out").c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(read_only);
  auto r2 = zb::util::copy_sparse(in.get(), read_only.get());
  REQUIRE_FALSE(r2);
  CHECK(r2.error().what == "ftruncate");
  CHECK(r2.error().err != 0);
}
