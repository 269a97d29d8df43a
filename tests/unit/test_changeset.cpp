// Tests for src/snapshot/changeset.cpp on hand-made layers, with no mount. The cases on
// real overlays are in test_changeset_overlay.cpp (unit_priv_tests).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "changeset_testutil.hpp"
#include "snapshot/changeset.hpp"
#include "testutil.hpp"

using namespace zb::snapshot;
using zb::store::ChangeKind;
using zb::test::dump;
using zb::test::put;
using zb::test::TempDir;

TEST_CASE("changeset: same_content skips shared holes and sees zeros equal to holes") {
  TempDir t;
  auto make = [&](const std::string& name) {
    int fd = ::open((t / name).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::ftruncate(fd, off_t{1} << 26) == 0);
    return zb::UniqueFd(fd);
  };
  auto a = make("a");
  auto b = make("b");
  std::string zeros(8192, '\0');
  REQUIRE(::pwrite(a.get(), zeros.data(), zeros.size(), 1 << 20) == 8192);  // data vs hole
  REQUIRE(::pwrite(a.get(), "q", 1, 1 << 25) == 1);
  REQUIRE(::pwrite(b.get(), "q", 1, 1 << 25) == 1);
  auto same = same_content(a.get(), b.get(), off_t{1} << 26);
  REQUIRE(same.has_value());
  CHECK(*same);
  REQUIRE(::pwrite(b.get(), "r", 1, (1 << 25) + 4096) == 1);
  same = same_content(a.get(), b.get(), off_t{1} << 26);
  REQUIRE(same.has_value());
  CHECK_FALSE(*same);
}

// Hand-made upper layers (no mount needed): the xattr forms of whiteouts and opacity, and
// that only the mount's own xattr namespace is believed.
TEST_CASE("changeset: xattr whiteouts and the namespace of overlay xattrs") {
  TempDir t;
  std::string lower = t / "L", upper = t / "U";
  zb::test::mkdirs(lower + "/d");
  zb::test::mkdirs(upper + "/d");
  REQUIRE(put(lower + "/gone", "g"));
  REQUIRE(put(lower + "/d/hidden", "h"));
  REQUIRE(put(upper + "/gone", ""));
  if (::setxattr((upper + "/gone").c_str(), "user.overlay.whiteout", "", 0, 0) != 0 ||
      ::setxattr((upper + "/d").c_str(), "user.overlay.opaque", "y", 1, 0) != 0) {
    WARN_MESSAGE(false, "user xattrs unsupported on " << t.path() << "; not tested");
    return;
  }
  auto r = collect_changes(upper, lower);
  REQUIRE(r.has_value());
  REQUIRE_MESSAGE(r->size() == 2, dump(*r));
  EXPECT_CHANGE(*r, "gone", ChangeKind::Deleted);
  EXPECT_CHANGE(*r, "d/hidden", ChangeKind::Deleted);

  // In a privileged overlay user.overlay.* are ordinary xattrs the command may set.
  auto tr = collect_changes(upper, lower, ScanOptions{OverlayXattrs::Trusted});
  REQUIRE(tr.has_value());
  REQUIRE_MESSAGE(tr->size() == 1, dump(*tr));
  EXPECT_CHANGE(*tr, "gone", ChangeKind::Modified);  // an emptied file
}

TEST_CASE("changeset: the sink's error stops the scan") {
  TempDir t;
  zb::test::mkdirs(t / "L");
  zb::test::mkdirs(t / "U");
  REQUIRE(put(t / "U/a", "a"));
  REQUIRE(put(t / "U/b", "b"));
  int calls = 0;
  auto r = for_each_change(t / "U", t / "L", [&](const ScannedChange&) -> zb::Result<void> {
    ++calls;
    return zb::fail_msg("stop");
  });
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().what == "stop");
  CHECK(calls == 1);
  auto missing = collect_changes(t / "nope", t / "L");
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().err == ENOENT);
}

TEST_CASE("changeset: encode_xattrs and decode_xattrs round-trip; bad bytes are refused") {
  zb::util::Xattrs x{{"user.z", std::string("\0\1", 2)}, {"security.selinux", "label"}, {"user.empty", ""}};
  auto enc = zb::store::encode_xattrs(x);
  auto dec = zb::store::decode_xattrs(enc);
  REQUIRE(dec.has_value());
  std::sort(x.begin(), x.end());
  CHECK(*dec == x);
  CHECK(zb::store::decode_xattrs("")->empty());
  CHECK_FALSE(zb::store::decode_xattrs(std::string("user.a\0\0\0\0\5ab", 12)).has_value());
  CHECK_FALSE(zb::store::decode_xattrs("no-nul").has_value());
}
