// Tests for step 1 of accept and restore (src/snapshot/check.cpp: observe, check,
// describe_conflict, capture, validate_journal) and for inverse() (src/snapshot/apply.cpp),
// through apply_internal.hpp. ARCHITECTURE.md: "Nothing is lost": a target is changed only
// at its before-state, is left alone at its after-state, and anything else is a conflict.
// Each case makes a tracked root and a store in a fresh temporary directory.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "snapshot/apply_internal.hpp"
#include "store/store.hpp"
#include "testutil.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"

using namespace zb;
using snapshot::Tree;
using snapshot::detail::Where;
using store::Change;
using store::ChangeKind;
using store::FileMeta;
using store::FileType;

namespace {

// A file holding `content` with exactly `mode` and an mtime of `mtime` seconds.
void set_file(const std::string& p, const std::string& content, mode_t mode, std::time_t mtime) {
  std::error_code ec;
  std::filesystem::remove_all(p, ec);
  UniqueFd fd(::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  REQUIRE(fd);
  REQUIRE(::write(fd.get(), content.data(), content.size()) == static_cast<ssize_t>(content.size()));
  REQUIRE(::fchmod(fd.get(), mode) == 0);
  struct timespec times[2] = {{mtime, 0}, {mtime, 0}};
  REQUIRE(::futimens(fd.get(), times) == 0);
}

void set_link(const std::string& p, const std::string& target) {
  std::error_code ec;
  std::filesystem::remove_all(p, ec);
  REQUIRE(::symlink(target.c_str(), p.c_str()) == 0);
}

void set_dir(const std::string& p, mode_t mode) {
  std::error_code ec;
  std::filesystem::remove_all(p, ec);
  REQUIRE(::mkdir(p.c_str(), 0700) == 0);
  REQUIRE(::chmod(p.c_str(), mode) == 0);
}

void remove_all(const std::string& p) {
  std::error_code ec;
  std::filesystem::remove_all(p, ec);
}

struct Fixture {
  test::TempDir t;
  std::string root = t / "root";
  store::Store store = open_store(t / "store");
  Tree tree{{root}};

  Fixture() { test::mkdirs(root); }

  static store::Store open_store(const std::string& dir) {
    auto s = store::Store::open(dir);
    REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message()));
    return std::move(*s);
  }

  // What is at p now, as a change's side records it (the contents go into the store).
  FileMeta meta_of(const std::string& p) {
    struct stat st{};
    REQUIRE(::lstat(p.c_str(), &st) == 0);
    FileMeta m;
    m.type = *store::file_type_of(st.st_mode);
    m.mode = st.st_mode & 07777u;
    m.size = st.st_size;
    m.mtime_ns = util::mtime_ns(st);
    m.uid = st.st_uid;
    m.gid = st.st_gid;
    if (m.type == FileType::Regular) {
      UniqueFd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
      REQUIRE(fd);
      auto b = store.put_blob_from_fd(fd.get());
      REQUIRE_MESSAGE(b.has_value(), (b ? "" : b.error().message()));
      m.blob = b->hash;
    } else if (m.type == FileType::Symlink) {
      std::string target(static_cast<std::size_t>(st.st_size), '\0');
      REQUIRE(::readlink(p.c_str(), target.data(), target.size()) == st.st_size);
      m.link = target;
    }
    return m;
  }

  Where where(const Change& c) {
    tree.forget();  // the tests replace directories between calls
    auto r = snapshot::detail::check(store, tree, c);
    REQUIRE_MESSAGE(r.has_value(), (r ? "" : r.error().message()));
    return r->where;
  }

  // describe_conflict's line for c, the target as it is now.
  std::string conflict(const Change& c) {
    tree.forget();
    auto o = snapshot::detail::observe(tree, c.path);
    REQUIRE(o);
    return snapshot::detail::describe_conflict(c, *o);
  }
};

Change change(std::string path, ChangeKind kind, std::optional<FileMeta> before, std::optional<FileMeta> after) {
  Change c;
  c.seq = 7;
  c.path = std::move(path);
  c.kind = kind;
  c.before = std::move(before);
  c.after = std::move(after);
  return c;
}

std::string name(Where w) {
  switch (w) {
    case Where::Before: return "Before";
    case Where::After: return "After";
    case Where::Conflict: return "Conflict";
  }
  return "?";
}

}  // namespace

#define CHECK_WHERE(f, c, w) \
  CHECK_MESSAGE((f).where(c) == (w), "expected " << name(w) << ", got " << name((f).where(c)))

TEST_CASE("snapshot check: a modified file is Before at its old contents, After at its new, else a conflict") {
  Fixture f;
  std::string p = f.root + "/file";
  set_file(p, "old\n", 0644, 1000);
  FileMeta before = f.meta_of(p);
  set_file(p, "new!\n", 0644, 2000);
  FileMeta after = f.meta_of(p);
  Change c = change(p, ChangeKind::Modified, before, after);

  CHECK_WHERE(f, c, Where::After);
  set_file(p, "old\n", 0644, 1000);
  CHECK_WHERE(f, c, Where::Before);
  set_file(p, "old\n", 0644, 5000);  // touched: the same contents are still the before-state
  CHECK_WHERE(f, c, Where::Before);
  set_file(p, "new!\n", 0644, 5000);
  CHECK_WHERE(f, c, Where::After);

  set_file(p, "odd\n", 0644, 5000);  // the old size, other bytes
  CHECK_WHERE(f, c, Where::Conflict);
  CHECK(f.conflict(c) == log::quote(p) + " changed since the session recorded it");
  set_file(p, "longer\n", 0644, 1000);  // the old mtime, another size
  CHECK_WHERE(f, c, Where::Conflict);
  set_file(p, "old\n", 0600, 1000);  // the old contents, another mode
  CHECK_WHERE(f, c, Where::Conflict);

  remove_all(p);
  CHECK_WHERE(f, c, Where::Conflict);
  CHECK(f.conflict(c) == log::quote(p) + " is missing");
  set_dir(p, 0755);
  CHECK_WHERE(f, c, Where::Conflict);
  CHECK(f.conflict(c) == log::quote(p) + " changed type");
  // A symlink to a file at the before-state is not that file: links are never followed.
  set_file(f.root + "/twin", "old\n", 0644, 1000);
  set_link(p, "twin");
  CHECK_WHERE(f, c, Where::Conflict);
  CHECK(f.conflict(c) == log::quote(p) + " changed type");
}

TEST_CASE("snapshot check: an added file is Before while absent, After once in place") {
  Fixture f;
  std::string p = f.root + "/new";
  set_file(p, "made\n", 0644, 3000);
  Change c = change(p, ChangeKind::Added, std::nullopt, f.meta_of(p));

  CHECK_WHERE(f, c, Where::After);
  remove_all(p);
  CHECK_WHERE(f, c, Where::Before);
  set_file(p, "host's\n", 0644, 3000);  // something else appeared there meanwhile
  CHECK_WHERE(f, c, Where::Conflict);
  CHECK(f.conflict(c) == log::quote(p) + " exists, but the session expected it absent");
  set_dir(p, 0755);
  CHECK_WHERE(f, c, Where::Conflict);
}

TEST_CASE("snapshot check: a deleted file is Before while there, After once gone") {
  Fixture f;
  std::string p = f.root + "/gone";
  set_file(p, "was here\n", 0640, 4000);
  Change c = change(p, ChangeKind::Deleted, f.meta_of(p), std::nullopt);

  CHECK_WHERE(f, c, Where::Before);
  remove_all(p);
  CHECK_WHERE(f, c, Where::After);
  set_file(p, "was edited\n", 0640, 4000);
  CHECK_WHERE(f, c, Where::Conflict);
}

TEST_CASE("snapshot check: a mode change compares the mode") {
  Fixture f;
  std::string p = f.root + "/script";
  set_file(p, "#!/bin/sh\n", 0644, 1000);
  FileMeta before = f.meta_of(p);
  REQUIRE(::chmod(p.c_str(), 0755) == 0);
  Change c = change(p, ChangeKind::ModeChanged, before, f.meta_of(p));

  CHECK_WHERE(f, c, Where::After);
  REQUIRE(::chmod(p.c_str(), 0644) == 0);
  CHECK_WHERE(f, c, Where::Before);
  REQUIRE(::chmod(p.c_str(), 0700) == 0);
  CHECK_WHERE(f, c, Where::Conflict);
}

TEST_CASE("snapshot check: a directory's mode change is Before only at the old mode") {
  Fixture f;
  std::string p = f.root + "/dir";
  set_dir(p, 0755);
  FileMeta before = f.meta_of(p);
  set_dir(p, 0700);
  Change c = change(p, ChangeKind::ModeChanged, before, f.meta_of(p));

  CHECK_WHERE(f, c, Where::After);
  REQUIRE(::chmod(p.c_str(), 0755) == 0);
  CHECK_WHERE(f, c, Where::Before);
  remove_all(p);
  CHECK_WHERE(f, c, Where::Conflict);
}

TEST_CASE("snapshot check: a symlink compares its target") {
  Fixture f;
  std::string p = f.root + "/link";
  set_link(p, "a");
  FileMeta before = f.meta_of(p);
  set_link(p, "b");
  Change c = change(p, ChangeKind::Modified, before, f.meta_of(p));

  CHECK_WHERE(f, c, Where::After);
  set_link(p, "a");
  CHECK_WHERE(f, c, Where::Before);
  set_link(p, "c");
  CHECK_WHERE(f, c, Where::Conflict);
  set_file(p, "a", 0644, 1000);
  CHECK_WHERE(f, c, Where::Conflict);
}

TEST_CASE("snapshot check: a type change stopped between removal and creation is Before") {
  Fixture f;
  std::string p = f.root + "/f2d";
  set_file(p, "file\n", 0644, 1000);
  FileMeta before = f.meta_of(p);
  set_dir(p, 0755);
  Change c = change(p, ChangeKind::TypeChanged, before, f.meta_of(p));

  CHECK_WHERE(f, c, Where::After);
  set_file(p, "file\n", 0644, 1000);
  CHECK_WHERE(f, c, Where::Before);
  remove_all(p);  // the old entry removed, the new one not made yet
  CHECK_WHERE(f, c, Where::Before);
  set_link(p, "elsewhere");
  CHECK_WHERE(f, c, Where::Conflict);
}

TEST_CASE("snapshot check: a target behind a planted symlink is absent, whatever the link reaches") {
  Fixture f;
  test::mkdirs(f.root + "/real");
  set_file(f.root + "/real/x", "contents\n", 0644, 1000);
  FileMeta m = f.meta_of(f.root + "/real/x");
  set_link(f.root + "/via", "real");
  set_link(f.root + "/out", f.t.path());

  // Through the link the after-state is there, but the tree does not look: not done yet.
  CHECK_WHERE(f, change(f.root + "/via/x", ChangeKind::Added, std::nullopt, m), Where::Before);
  Change mod = change(f.root + "/via/x", ChangeKind::Modified, m, m);
  mod.after->mode = 0600;
  CHECK_WHERE(f, mod, Where::Conflict);
  CHECK(f.conflict(mod) == log::quote(f.root + "/via/x") + " is missing");
  // And '..' out of the root is nowhere.
  CHECK_WHERE(f, change(f.root + "/../root/real/x", ChangeKind::Deleted, m, std::nullopt), Where::After);
}

TEST_CASE("snapshot check: a restore is the accept of the inverse changes") {
  Fixture f;
  std::string p = f.root + "/file";
  set_file(p, "old\n", 0644, 1000);
  FileMeta before = f.meta_of(p);
  set_file(p, "new\n", 0644, 2000);
  Change c = change(p, ChangeKind::Modified, before, f.meta_of(p));
  Change back = snapshot::detail::inverse(c);
  CHECK_WHERE(f, c, Where::After);
  CHECK_WHERE(f, back, Where::Before);
  set_file(p, "old\n", 0644, 1000);
  CHECK_WHERE(f, c, Where::Before);
  CHECK_WHERE(f, back, Where::After);
  set_file(p, "other\n", 0644, 1000);
  CHECK_WHERE(f, c, Where::Conflict);
  CHECK_WHERE(f, back, Where::Conflict);
}

TEST_CASE("snapshot capture: a forced operation's before-state is what is there now") {
  Fixture f;
  std::string p = f.root + "/file";
  set_file(p, "session's\n", 0644, 2000);
  Change c = change(p, ChangeKind::Modified, std::nullopt, f.meta_of(p));
  set_file(p, "base\n", 0644, 1000);
  c.before = c.after;  // a before-state the host is not at
  REQUIRE(f.where(c) == Where::Conflict);
  f.tree.forget();
  auto o = snapshot::detail::observe(f.tree, p);
  REQUIRE(o);
  REQUIRE(snapshot::detail::capture(f.store, f.tree, c, *o));
  REQUIRE(c.before);
  CHECK(c.before->type == FileType::Regular);
  CHECK(c.before->size == 5);
  CHECK(c.before->blob == f.meta_of(p).blob);
  CHECK_WHERE(f, c, Where::Before);

  // Nothing there: the before-state is absent.
  remove_all(p);
  f.tree.forget();
  o = snapshot::detail::observe(f.tree, p);
  REQUIRE(o);
  CHECK_FALSE(o->exists);
  REQUIRE(snapshot::detail::capture(f.store, f.tree, c, *o));
  CHECK_FALSE(c.before);
  CHECK_WHERE(f, c, Where::Before);
}

TEST_CASE("snapshot validate_journal: rows outside the roots or not normalised are refused") {
  Fixture f;
  set_file(f.root + "/kept", "kept\n", 0644, 1000);
  FileMeta m = f.meta_of(f.root + "/kept");
  store::Session s;
  s.id = "0123456789abcdef0123";
  s.roots = {f.root};
  auto ok = [&](const std::string& path, std::optional<FileMeta> after = std::nullopt) {
    std::vector<Change> rows{change(path, ChangeKind::Added, std::nullopt, std::move(after))};
    return snapshot::detail::validate_journal(f.store, s, rows).has_value();
  };
  CHECK(ok(f.root + "/a"));
  CHECK(ok(f.root + "/a/b", m));
  CHECK_FALSE(ok(f.root));  // the root itself
  CHECK_FALSE(ok(f.t / "outside"));
  CHECK_FALSE(ok(f.root + "x"));
  CHECK_FALSE(ok(f.root + "/.."));
  CHECK_FALSE(ok(f.root + "/a/../../outside"));
  CHECK_FALSE(ok(f.root + "/a/./b"));
  CHECK_FALSE(ok(f.root + "/a/"));
  CHECK_FALSE(ok("relative"));
  FileMeta missing = m;
  missing.blob = std::string(32, 'a');
  CHECK_FALSE(ok(f.root + "/a", missing));  // a blob the store does not hold

  s.roots = {f.root + "/"};
  CHECK_FALSE(ok(f.root + "/a"));
  s.roots = {f.root + "/sub/.."};
  CHECK_FALSE(ok(f.root + "/a"));
}

TEST_CASE("snapshot inverse: sides swapped, added and deleted exchanged") {
  FileMeta a;
  a.type = FileType::Regular;
  a.mode = 0644;
  a.size = 3;
  a.blob = "aaaa";
  FileMeta b = a;
  b.mode = 0755;
  b.blob = "bbbb";
  FileMeta d;
  d.type = FileType::Directory;
  d.mode = 0755;

  struct Case {
    ChangeKind kind, inverse_kind;
    std::optional<FileMeta> before, after;
  };
  const Case cases[] = {
      {ChangeKind::Added, ChangeKind::Deleted, std::nullopt, a},
      {ChangeKind::Deleted, ChangeKind::Added, a, std::nullopt},
      {ChangeKind::Modified, ChangeKind::Modified, a, b},
      {ChangeKind::ModeChanged, ChangeKind::ModeChanged, a, b},
      {ChangeKind::TypeChanged, ChangeKind::TypeChanged, a, d},
  };
  for (const auto& k : cases) {
    CAPTURE(store::to_string(k.kind));
    Change c = change("/r/p", k.kind, k.before, k.after);
    Change r = snapshot::detail::inverse(c);
    CHECK(r.kind == k.inverse_kind);
    CHECK(r.before == c.after);
    CHECK(r.after == c.before);
    CHECK(r.path == c.path);
    CHECK(r.seq == c.seq);
    CHECK(snapshot::detail::inverse(r) == c);
  }
}
