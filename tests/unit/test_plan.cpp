// Tests for src/overlay/plan.cpp: the mount plan is plain data, checked without privileges.
#include <doctest/doctest.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

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
// A read-restricted policy showing t/a, whose subdirectory t/a/b is a mount point: `a` is
// walked as a skeleton.
struct Walked {
  overlay::MountTable mounts;
  policy::FsRules fs;
};
Walked walked_a(const test::TempDir& t) {
  Walked w{host_like(), {}};
  w.mounts.targets.insert(t / "a/b");
  w.fs.read_restricted = true;
  w.fs.readable = {t / "a"};
  return w;
}
bool path_is_under_for_test(const std::string& p, const std::string& root) {
  return root == "/" || p == root || p.rfind(root + "/", 0) == 0;
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
  auto [m, fs] = walked_a(t);
  auto plan = overlay::build_plan(fs, m, "/", {});
  CHECK(find(plan, OpKind::Overlay, "/newroot" + (t / "a")) < 0);
  CHECK(find(plan, OpKind::Mkdir, "/newroot" + (t / "a")) >= 0);
  CHECK(find(plan, OpKind::Overlay, "/newroot" + (t / "a/b")) >= 0);
  CHECK(find(plan, OpKind::Overlay, "/newroot" + (t / "a/c")) >= 0);
  // An empty directory is shown as the empty skeleton directory, without an overlay.
  CHECK(find(plan, OpKind::Mkdir, "/newroot" + (t / "a/empty")) >= 0);
  CHECK(find(plan, OpKind::Overlay, "/newroot" + (t / "a/empty")) < 0);
}

TEST_CASE("a host path gone before its read-only mount is skipped on the skeleton, never over a writable bind") {
  test::TempDir t;
  test::mkdirs(t / "a/b");
  test::mkdirs(t / "a/c");
  test::write_file(t / "a/c/file", "x");
  test::write_file(t / "a/top", "x");
  test::mkdirs(t / "w/ro");
  test::write_file(t / "w/ro/file", "x");
  auto [m, fs] = walked_a(t);
  fs.writable = {t / "w"};
  fs.read_only = {t / "w/ro"};
  auto plan = overlay::build_plan(fs, m, "/", {});
  auto op_at = [&](OpKind kind, const std::string& dst) -> const overlay::Op& {
    long i = find(plan, kind, dst);
    REQUIRE(i >= 0);
    return plan.ops[static_cast<size_t>(i)];
  };
  // On the read-only skeleton (sealed last), a host mount taken down meanwhile leaves an
  // empty directory or file.
  CHECK(op_at(OpKind::Overlay, "/newroot" + (t / "a/c")).optional);
  CHECK(op_at(OpKind::Bind, "/newroot" + (t / "a/top")).optional);
  CHECK(op_at(OpKind::ReadOnly, "/newroot" + (t / "a/top")).optional);
  // Over a writable bind, the read-only view is what protects: it must be there.
  CHECK_FALSE(op_at(OpKind::Overlay, "/newroot" + (t / "w/ro")).optional);
}

TEST_CASE("a masked file on a walked skeleton is never bound from the host, and its mask must land") {
  test::TempDir t;
  test::mkdirs(t / "a/b");
  test::write_file(t / "a/token", "secret");
  test::mkdirs(t / "a/hidden");
  auto [m, fs] = walked_a(t);
  fs.masked = {t / "a/token", t / "a/hidden"};
  auto plan = overlay::build_plan(fs, m, "/", {});
  std::string token = "/newroot" + (t / "a/token");
  std::string hidden = "/newroot" + (t / "a/hidden");
  CHECK(find(plan, OpKind::File, token) >= 0);
  // The only bind there is the mask's: a host file replaced after a bind of its own could
  // not be covered.
  long bind = find(plan, OpKind::Bind, token);
  REQUIRE(bind >= 0);
  CHECK(plan.ops[static_cast<size_t>(bind)].src == "/.zb/denied");
  CHECK(plan.ops[static_cast<size_t>(bind)].hides);
  CHECK(find(plan, OpKind::Overlay, hidden) < 0);  // nothing of the host's below the mask
  long tmpfs = find(plan, OpKind::Tmpfs, hidden);
  REQUIRE(tmpfs >= 0);
  CHECK(plan.ops[static_cast<size_t>(tmpfs)].hides);
}

TEST_CASE("every denied path the new root may show is checked last, and a vanished one still gets its mask") {
  // Not under /tmp, where a mask may be skipped (a scratch directory can start empty).
  char tmpl[] = "zerobox-unit-plan-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  char* real = ::realpath(tmpl, nullptr);
  REQUIRE(real != nullptr);
  struct Dir {
    std::string path;
    std::string operator/(const std::string& rel) const { return path + "/" + rel; }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } t{real};
  std::free(real);
  // In a scratch directory a mask may be skipped (it can start empty): checked elsewhere.
  bool scratch = t.path.rfind("/tmp/", 0) == 0 || t.path.rfind("/var/tmp/", 0) == 0;
  test::mkdirs(t / "d");
  test::write_file(t / "d/here", "x");
  REQUIRE(::symlink("missing", (t / "d/dangling").c_str()) == 0);
  policy::FsRules fs;
  fs.masked = {t / "d/here", t / "d/gone", t / "d/dangling"};  // gone: removed since the policy saw it
  fs.deny_read_all = {t / "d/here", t / "d/gone", t / "d/later"};
  auto plan = overlay::build_plan(fs, host_like(), "/", {});
  for (const char* p : {"d/here", "d/gone", "d/later", "d/dangling"}) {
    CHECK_MESSAGE(std::find(plan.must_hide.begin(), plan.must_hide.end(), "/newroot" + (t / p)) != plan.must_hide.end(),
                  p);
  }
  CHECK(find(plan, OpKind::Bind, "/newroot" + (t / "d/dangling")) < 0);
  if (scratch) return;
  long gone = find(plan, OpKind::Bind, "/newroot" + (t / "d/gone"));
  REQUIRE(gone >= 0);
  CHECK_FALSE(plan.ops[static_cast<size_t>(gone)].optional);  // fails the run unless it lands
  long here = find(plan, OpKind::Bind, "/newroot" + (t / "d/here"));
  REQUIRE(here >= 0);
  CHECK_FALSE(plan.ops[static_cast<size_t>(here)].optional);
}

TEST_CASE("with mounts below /var/tmp, nothing is built there for the scratch layer to cover") {
  char tmpl[] = "/var/tmp/zerobox-unit-XXXXXX";  // an entry of /var/tmp, which the walk would show
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  std::string entry = tmpl;
  overlay::MountTable m = host_like();
  m.targets.insert(entry + "/mnt");  // /var and /var/tmp now have mounts below
  policy::FsRules fs;
  auto plan = overlay::build_plan(fs, m, "/", {});
  ::rmdir(entry.c_str());
  CHECK(find(plan, OpKind::Mkdir, "/newroot/var/tmp") >= 0);  // the scratch layer's mount point
  CHECK(find(plan, OpKind::Bind, "/newroot/var/tmp") >= 0);   // it starts empty (mounts below), in the scratch tmpfs
  for (const auto& op : plan.ops) CHECK_MESSAGE(op.dst.rfind("/newroot/var/tmp/", 0) != 0, op.dst);
}

TEST_CASE("a read-only view of a directory with mounts below is a sealed skeleton that leaves its sockets out") {
  test::TempDir t;
  test::mkdirs(t / "w/ro/sub");
  test::write_file(t / "w/ro/sub/inside", "x");
  test::write_file(t / "w/ro/file", "x");
  int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(s >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string sock = t / "w/ro/agent.sock";
  REQUIRE(sock.size() < sizeof addr.sun_path);
  std::memcpy(addr.sun_path, sock.c_str(), sock.size() + 1);
  REQUIRE(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  overlay::MountTable m = host_like();
  m.targets.insert(t / "w/ro/sub");  // say, a netns handle or a tmpfs mounted there
  policy::FsRules fs;
  fs.writable = {t / "w"};
  fs.read_only = {t / "w/ro"};
  auto plan = overlay::build_plan(fs, m, "/", {});
  std::string ro = "/newroot" + (t / "w/ro");
  long skel = find(plan, OpKind::Tmpfs, ro);
  REQUIRE(skel >= 0);
  // Not a bind of the host directory, where the socket would stay connectable.
  for (const auto& op : plan.ops) CHECK_FALSE((op.kind == OpKind::Bind && op.dst == ro));
  CHECK(find(plan, OpKind::Overlay, ro + "/sub") > skel);
  CHECK(find(plan, OpKind::Bind, ro + "/file") > skel);
  CHECK(find(plan, OpKind::File, ro + "/agent.sock") < 0);
  CHECK(find(plan, OpKind::Bind, ro + "/agent.sock") < 0);
  long sealed = find(plan, OpKind::ReadOnly, ro);
  CHECK(sealed > find(plan, OpKind::Bind, ro + "/file"));
  ::close(s);
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

TEST_CASE("a protected symlink is pinned after the writable bind, and the directories on its way anchored") {
  test::TempDir t;
  test::mkdirs(t / "w/proj");
  ::symlink("../elsewhere", (t / "w/proj/.git").c_str());
  policy::FsRules fs;
  fs.writable = {t / "w"};
  fs.protected_links = {t / "w/proj/.git"};
  auto plan = overlay::build_plan(fs, host_like(), "/", {});
  long bind = find(plan, OpKind::Bind, "/newroot" + (t / "w"));
  long anchor = find(plan, OpKind::Bind, "/newroot" + (t / "w/proj"));
  long pin = find(plan, OpKind::PinLink, "/newroot" + (t / "w/proj/.git"));
  REQUIRE(bind >= 0);
  REQUIRE(anchor >= 0);
  REQUIRE(pin >= 0);
  CHECK(bind < anchor);
  CHECK(anchor < pin);
  CHECK(overlay::describe(plan.ops[static_cast<size_t>(pin)]).find("pin symlink") == 0);
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
  long scratch = find(plan, OpKind::Bind, "/newroot/tmp");  // empty: the scratch tmpfs's upper directory
  long data = find(plan, OpKind::Overlay, "/newroot" + (t / "data"));
  long cwd = find(plan, OpKind::Mkdir, "/newroot" + (t / "cwd"));
  REQUIRE(scratch >= 0);
  REQUIRE(data >= 0);
  REQUIRE(cwd >= 0);
  CHECK(scratch < data);
  CHECK(scratch < cwd);
}

TEST_CASE("a tracked path is a read-write overlay whose upper layer is in the session") {
  test::TempDir t;
  test::mkdirs(t / "proj/sub");
  policy::FsRules fs;
  fs.writable = {t / "proj"};
  fs.tracked = {t / "proj"};
  auto plan = overlay::build_plan(fs, host_like(), t / "proj", {.session_dir = "/st/sessions/ab", .store_dir = "/st"});
  REQUIRE(plan.tracked == std::vector<std::string>{t / "proj"});
  long ov = find(plan, OpKind::Overlay, "/newroot" + t / "proj");
  REQUIRE(ov >= 0);
  const auto& op = plan.ops[static_cast<size_t>(ov)];
  CHECK(op.data == "lowerdir=/oldroot" + t / "proj" +
                       ",upperdir=/oldroot/st/sessions/ab/upper/0,workdir=/oldroot/st/sessions/ab/work/0,userxattr");
  CHECK((op.flags & MS_RDONLY) == 0);
  CHECK((op.flags & MS_NOSUID) != 0);
  CHECK((op.flags & MS_NODEV) != 0);
  // The tracked path is not also bound read-write from the host.
  CHECK(find(plan, OpKind::Bind, "/newroot" + t / "proj") < 0);
}

TEST_CASE("a tracked / is one read-write overlay per top-level directory, kernel interfaces excepted") {
  test::TempDir t;
  test::mkdirs(t / "store/sessions/ab");
  test::mkdirs(t / "sibling");
  policy::FsRules fs;
  fs.write_all = true;
  fs.tracked = {"/"};
  std::string store = t / "store";
  auto plan = overlay::build_plan(fs, host_like(), "/", {.session_dir = store + "/sessions/ab", .store_dir = store});
  CHECK(std::find(plan.tracked.begin(), plan.tracked.end(), "/usr") != plan.tracked.end());
  CHECK(std::find(plan.tracked.begin(), plan.tracked.end(), "/tmp") != plan.tracked.end());
  for (const auto& dir : plan.tracked) CHECK_FALSE(path_is_under_for_test(dir, "/dev"));
  CHECK(std::find(plan.tracked.begin(), plan.tracked.end(), "/proc") == plan.tracked.end());
}

TEST_CASE("scratch /tmp, /var/tmp and /dev/shm are one size-limited tmpfs, and every other tmpfs is read-only") {
  for (bool restricted : {false, true}) {
    CAPTURE(restricted);
    policy::FsRules fs;
    fs.read_restricted = restricted;
    fs.scratch_host_content = !restricted;
    fs.readable = {"/usr"};
    auto plan = overlay::build_plan(fs, host_like(), "/", {});
    long pool = find(plan, OpKind::Tmpfs, "/.zb/scratch");
    REQUIRE(pool == 0);  // before anything that could use it
    CHECK(plan.ops[0].data == "mode=755,size=50%");
    CHECK((plan.ops[0].flags & (MS_NOSUID | MS_NODEV)) == (MS_NOSUID | MS_NODEV));
    for (const char* d : {"/.zb/scratch/tmp/upper", "/.zb/scratch/vartmp/work", "/.zb/scratch/shm"}) {
      CAPTURE(d);
      CHECK(find(plan, OpKind::Mkdir, d) > pool);
    }
    long shm = find(plan, OpKind::Bind, "/newroot/dev/shm");
    REQUIRE(shm > 0);
    CHECK(plan.ops[static_cast<size_t>(shm)].src == "/.zb/scratch/shm");
    if (restricted) {
      long tmp = find(plan, OpKind::Bind, "/newroot/tmp");
      REQUIRE(tmp > 0);
      CHECK(plan.ops[static_cast<size_t>(tmp)].src == "/.zb/scratch/tmp/upper");
    } else {
      long tmp = find(plan, OpKind::Overlay, "/newroot/tmp");
      REQUIRE(tmp > 0);
      CHECK(plan.ops[static_cast<size_t>(tmp)].data.find("upperdir=/.zb/scratch/tmp/upper,") != std::string::npos);
    }
    CHECK(plan.scratch_dirs.empty());
    // Every other tmpfs is mounted read-only or sealed later: the command can fill none.
    for (size_t i = 1; i < plan.ops.size(); ++i) {
      const auto& op = plan.ops[i];
      if (op.kind != OpKind::Tmpfs || (op.flags & MS_RDONLY) != 0) continue;
      CAPTURE(op.dst);
      bool sealed = false;
      for (size_t j = i + 1; j < plan.ops.size(); ++j) {
        sealed =
            sealed || (plan.ops[j].kind == OpKind::ReadOnly && plan.ops[j].dst == op.dst && plan.ops[j].flags == 0);
      }
      CHECK(sealed);
    }
  }
  policy::FsRules fs;
  fs.tmpfs_size = 8u << 20;
  auto plan = overlay::build_plan(fs, host_like(), "/", {});
  CHECK(plan.ops[0].data == "mode=755,size=8388608");
  CHECK(overlay::tmpfs_size_option(0) == "size=50%");
  CHECK(overlay::tmpfs_size_option(4096) == "size=4096");
}

TEST_CASE("the host's device nodes are read-only binds that keep nodev off") {
  auto plan = overlay::build_plan({}, host_like(), "/", {});
  for (const char* d : {"null", "zero", "full", "random", "urandom", "tty"}) {
    std::string dst = std::string("/newroot/dev/") + d;
    CAPTURE(dst);
    long bind = find(plan, OpKind::Bind, dst);
    long ro = find(plan, OpKind::ReadOnly, dst);
    REQUIRE(bind >= 0);
    REQUIRE(ro == bind + 1);
    CHECK(plan.ops[static_cast<size_t>(bind)].src == "/oldroot/dev/" + std::string(d));
    CHECK(plan.ops[static_cast<size_t>(ro)].flags == (MS_RDONLY | MS_NOSUID));
  }
}

TEST_CASE("a proc mounted where the plan walks is left out, never overlaid or walked") {
  // The live /proc/sys stands for a chroot's proc: a mount point (in this table) of a proc.
  overlay::MountTable m = host_like();
  m.targets.insert("/proc/sys");
  policy::FsRules fs;
  fs.read_restricted = true;
  fs.readable = {"/usr", "/proc/sys"};
  auto plan = overlay::build_plan(fs, m, "/", {});
  CHECK(find(plan, OpKind::Mkdir, "/newroot/proc/sys") >= 0);
  CHECK(find(plan, OpKind::Overlay, "/newroot/proc/sys") < 0);
  for (const auto& op : plan.ops) CHECK_FALSE(op.dst.rfind("/newroot/proc/sys/", 0) == 0);
  CHECK(std::any_of(plan.notes.begin(), plan.notes.end(),
                    [](const std::string& n) { return n.find("left out (a proc mount)") != std::string::npos; }));
}
