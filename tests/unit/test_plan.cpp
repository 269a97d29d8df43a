// Tests for src/overlay/plan.cpp: the mount plan is plain data, checked without privileges.
#include <doctest/doctest.h>
#include <sys/mount.h>

#include <algorithm>

#include "overlay/plan.hpp"
#include "testutil.hpp"

using namespace zb;
using overlay::OpKind;

namespace {
overlay::MountTable host_like() {
  overlay::MountTable m;
  m.targets = {"/", "/proc", "/sys", "/dev", "/dev/shm", "/dev/pts"};
  return m;
}
// Index of the first op of `kind` on `dst`, or -1.
long find(const overlay::Plan& p, OpKind kind, const std::string& dst) {
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (p.ops[i].kind == kind && p.ops[i].dst == dst) return static_cast<long>(i);
  }
  return -1;
}
}  // namespace

TEST_CASE("the default root is read-only overlays of each top-level directory") {
  policy::FsRules fs;
  auto plan = overlay::build_plan(fs, host_like(), "/", {});
  long usr = find(plan, OpKind::Overlay, "/newroot/usr");
  REQUIRE(usr >= 0);
  const auto& op = plan.ops[static_cast<size_t>(usr)];
  CHECK(op.data == "lowerdir=/oldroot/usr:/.zb/empty");
  CHECK((op.flags & MS_RDONLY) != 0);
  CHECK((op.flags & MS_NOSUID) != 0);
  // Special mounts are fresh, not overlays of the host's.
  CHECK(find(plan, OpKind::Overlay, "/newroot/proc") < 0);
  CHECK(find(plan, OpKind::Proc, "/newroot/proc") >= 0);
  CHECK(find(plan, OpKind::Devpts, "/newroot/dev/pts") >= 0);
  // The skeleton is sealed last.
  CHECK(plan.ops.back().kind == OpKind::ReadOnly);
  CHECK(find(plan, OpKind::ReadOnly, "/newroot") >= 0);
  // Scratch /tmp: the host's files under a private upper layer.
  long tmp = find(plan, OpKind::Overlay, "/newroot/tmp");
  REQUIRE(tmp >= 0);
  CHECK(plan.ops[static_cast<size_t>(tmp)].data.find("upperdir=/.zb/scratch/tmp/upper") != std::string::npos);
}

TEST_CASE("a directory with mounts below it becomes a skeleton walked one level down") {
  test::TempDir t;
  test::mkdirs(t / "a/b");
  test::mkdirs(t / "a/c");
  test::write_file(t / "a/c/file", "x");
  test::write_file(t / "a/b/file", "x");
  test::mkdirs(t / "a/empty");
  overlay::MountTable m = host_like();
  m.targets.insert(t / "a/b");
  policy::FsRules fs;
  fs.read_restricted = true;
  fs.readable = {t / "a"};
  auto plan = overlay::build_plan(fs, m, "/", {});
  CHECK(find(plan, OpKind::Overlay, "/newroot" + (t / "a")) < 0);
  CHECK(find(plan, OpKind::Mkdir, "/newroot" + (t / "a")) >= 0);
  CHECK(find(plan, OpKind::Overlay, "/newroot" + (t / "a/b")) >= 0);
  CHECK(find(plan, OpKind::Overlay, "/newroot" + (t / "a/c")) >= 0);
  // An empty directory is shown as the empty skeleton directory, without an overlay.
  CHECK(find(plan, OpKind::Mkdir, "/newroot" + (t / "a/empty")) >= 0);
  CHECK(find(plan, OpKind::Overlay, "/newroot" + (t / "a/empty")) < 0);
}

TEST_CASE("writable binds come before the read-only views and masks inside them") {
  test::TempDir t;
  test::mkdirs(t / "w/.git/hooks");
  test::write_file(t / "w/secret", "x");
  policy::FsRules fs;
  fs.writable = {t / "w"};
  fs.read_only = {t / "w/.git/hooks"};
  fs.masked = {t / "w/secret"};
  auto plan = overlay::build_plan(fs, host_like(), "/", {});
  long bind = find(plan, OpKind::Bind, "/newroot" + (t / "w"));
  long ro = find(plan, OpKind::Overlay, "/newroot" + (t / "w/.git/hooks"));
  long mask = find(plan, OpKind::Bind, "/newroot" + (t / "w/secret"));
  REQUIRE(bind >= 0);
  REQUIRE(ro >= 0);
  REQUIRE(mask >= 0);
  CHECK(plan.ops[static_cast<size_t>(bind)].recursive);
  CHECK(plan.ops[static_cast<size_t>(mask)].src == overlay::k_denied_file);
  CHECK(bind < ro);
  CHECK(bind < mask);
}

TEST_CASE("a denied directory is an empty read-only tmpfs that cannot be listed") {
  test::TempDir t;
  test::mkdirs(t / "d");
  policy::FsRules fs;
  fs.masked = {t / "d"};
  auto plan = overlay::build_plan(fs, host_like(), "/", {});
  long i = find(plan, OpKind::Tmpfs, "/newroot" + (t / "d"));
  REQUIRE(i >= 0);
  CHECK((plan.ops[static_cast<size_t>(i)].flags & MS_RDONLY) != 0);
  CHECK(plan.ops[static_cast<size_t>(i)].data.find("mode=000") == 0);
}

TEST_CASE("bare --allow-write binds the host root and covers socket directories") {
  policy::FsRules fs;
  fs.write_all = true;
  fs.tmp_writable = fs.var_tmp_writable = fs.shm_writable = true;
  fs.socket_dirs = {"/run"};
  auto plan = overlay::build_plan(fs, host_like(), "/", {});
  REQUIRE(!plan.ops.empty());
  CHECK(plan.ops[0].kind == OpKind::Bind);
  CHECK(plan.ops[0].dst == "/newroot");
  CHECK(plan.ops[0].recursive);
  CHECK(find(plan, OpKind::Overlay, "/newroot/run") >= 0);
  CHECK(find(plan, OpKind::ReadOnly, "/newroot") < 0);
}

TEST_CASE("overlay_escape protects the option separators") {
  CHECK(overlay::overlay_escape("/a,b:c\\d") == "/a\\,b\\:c\\\\d");
}

TEST_CASE("--allow-read paths under /tmp are mounted on top of the scratch layer") {
  test::TempDir t;  // under /tmp
  test::mkdirs(t / "data");
  test::write_file(t / "data/f", "x");
  policy::FsRules fs;
  fs.read_restricted = true;
  fs.scratch_host_content = false;
  fs.readable = {"/usr", t / "data"};
  auto plan = overlay::build_plan(fs, host_like(), t / "cwd", {});
  long scratch = find(plan, OpKind::Tmpfs, "/newroot/tmp");
  long data = find(plan, OpKind::Overlay, "/newroot" + (t / "data"));
  long cwd = find(plan, OpKind::Mkdir, "/newroot" + (t / "cwd"));
  REQUIRE(scratch >= 0);
  REQUIRE(data >= 0);
  REQUIRE(cwd >= 0);
  CHECK(scratch < data);
  CHECK(scratch < cwd);
}
