// Tests for src/store (store.cpp, blobs.cpp)
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "store/store.hpp"
#include "testutil.hpp"

using namespace zb::store;
using zb::test::TempDir;

namespace {

Store open_store(const std::string& dir) {
  auto s = Store::open(dir);
  REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message()));
  return std::move(*s);
}

Session new_session(Store& s, std::vector<std::string> command = {"make", "-j4"}) {
  NewSession ns;
  ns.mode = SessionMode::Review;
  ns.command = std::move(command);
  ns.cwd = "/home/u/proj";
  ns.roots = {"/home/u/proj"};
  auto r = s.create_session(ns);
  REQUIRE_MESSAGE(r.has_value(), (r ? "" : r.error().message()));
  return *r;
}

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

std::string blob_path(const TempDir& t, const std::string& hash) {
  return t / ("blobs/" + hash.substr(0, 2) + "/" + hash.substr(2));
}

BlobInfo put_string(Store& s, const TempDir& t, const std::string& content) {
  std::string src = t / "src.tmp";
  zb::test::write_file(src, content);
  zb::UniqueFd fd(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(fd);
  auto b = s.put_blob_from_fd(fd.get());
  REQUIRE_MESSAGE(b.has_value(), (b ? "" : b.error().message()));
  return *b;
}

size_t count_files(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("Store::location: ZEROBOX_HOME, then XDG_STATE_HOME, then HOME") {
  CHECK(*Store::location({"HOME=/h", "XDG_STATE_HOME=/x", "ZEROBOX_HOME=/z"}) == "/z");
  CHECK(*Store::location({"HOME=/h", "XDG_STATE_HOME=/x"}) == "/x/zerobox");
  CHECK(*Store::location({"HOME=/h"}) == "/h/.local/state/zerobox");
  // Empty counts as unset; a relative XDG_STATE_HOME is ignored, as the XDG spec says.
  CHECK(*Store::location({"HOME=/h", "XDG_STATE_HOME=", "ZEROBOX_HOME="}) == "/h/.local/state/zerobox");
  CHECK(*Store::location({"HOME=/h", "XDG_STATE_HOME=rel"}) == "/h/.local/state/zerobox");
  CHECK_FALSE(Store::location({"ZEROBOX_HOME=rel", "HOME=/h"}).has_value());
  CHECK_FALSE(Store::location({}).has_value());
  CHECK_FALSE(Store::location({"HOME="}).has_value());
}

TEST_CASE("Store::open creates the layout and current schema version") {
  TempDir t;
  std::string dir = t / "a/b/store";
  auto s = open_store(dir);
  CHECK(s.dir() == dir);
  struct stat st{};
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  for (const char* sub : {"blobs", "sessions"}) {
    REQUIRE(::stat((dir + "/" + sub).c_str(), &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
    CHECK((st.st_mode & 07777) == 0700);
  }
  CHECK(::stat((dir + "/journal.db").c_str(), &st) == 0);
  CHECK(*s.schema_version() == 2);
  CHECK(k_schema_version == 2);
}

TEST_CASE("Store::open twice is idempotent and keeps the data") {
  TempDir t;
  std::string id;
  {
    auto s = open_store(t.path());
    id = new_session(s).id;
  }
  auto s2 = open_store(t.path());
  auto s3 = open_store(t.path());  // two connections at once
  CHECK(*s2.schema_version() == 2);
  auto got = s3.get_session(id);
  REQUIRE(got.has_value());
  CHECK(got->has_value());
  CHECK(s2.list_sessions()->size() == 1);
}

TEST_CASE("Store::open on a journal that is not SQLite names the file") {
  TempDir t;
  std::string junk(4096, 'x');
  zb::test::write_file(t / "journal.db", "this is not a database\n" + junk);
  auto s = Store::open(t.path());
  REQUIRE_FALSE(s.has_value());
  std::string msg = s.error().message();
  CHECK(msg.find(t / "journal.db") != std::string::npos);
  CHECK(msg.find("not a database") != std::string::npos);
}

TEST_CASE("Store sessions: create, get, list, set_state, finish") {
  TempDir t;
  auto s = open_store(t.path());
  // A command that is not UTF-8 and has a newline survives the JSON column.
  std::vector<std::string> cmd = {"sh", "-c", "echo \"hi\"\n", std::string("bad\xff\xfe", 5), ""};
  Session a = new_session(s, cmd);
  CHECK(valid_id(a.id));
  CHECK(a.state == SessionState::Running);
  CHECK(a.created_at > 0);
  struct stat st{};
  CHECK(::stat((s.session_dir(a.id) + "/upper").c_str(), &st) == 0);
  CHECK(::stat((s.session_dir(a.id) + "/work").c_str(), &st) == 0);
  CHECK(s.session_dir(a.id) == t.path() + "/sessions/" + a.id);

  auto got = s.get_session(a.id);
  REQUIRE(got.has_value());
  REQUIRE(got->has_value());
  Session g = **got;
  CHECK(g.command == cmd);
  CHECK(g.cwd == "/home/u/proj");
  CHECK(g.roots == std::vector<std::string>{"/home/u/proj"});
  CHECK(g.mode == SessionMode::Review);
  CHECK(g.kind == SessionKind::Run);
  CHECK_FALSE(g.exit_code.has_value());
  CHECK_FALSE(g.finished_at.has_value());

  auto missing = s.get_session("0123456789abcdef0123456789abcdef");
  REQUIRE(missing.has_value());
  CHECK_FALSE(missing->has_value());

  REQUIRE(s.finish(a.id, {SessionState::Pending, 3, std::nullopt}).has_value());
  REQUIRE(s.set_state(a.id, SessionState::Accepted).has_value());
  REQUIRE(s.mark_applied(a.id).has_value());
  g = **s.get_session(a.id);
  CHECK(g.state == SessionState::Accepted);
  CHECK(g.exit_code == 3);
  CHECK_FALSE(g.signal.has_value());
  CHECK(g.finished_at.has_value());
  CHECK(g.applied_at.has_value());
  CHECK_FALSE(s.set_state("0123456789abcdef0123456789abcdef", SessionState::Failed).has_value());

  NewSession r;
  r.kind = SessionKind::Restore;
  r.mode = SessionMode::Snapshot;
  r.command = {"zerobox", "snapshot", "restore", a.id};
  r.cwd = "/";
  r.parent = a.id;
  r.policy = "{}";
  auto b = s.create_session(r);
  REQUIRE(b.has_value());
  auto all = s.list_sessions();
  REQUIRE(all.has_value());
  REQUIRE(all->size() == 2);
  CHECK((*all)[0].id == a.id);
  CHECK((*all)[1].id == b->id);
  CHECK((*all)[1].parent == a.id);
  CHECK((*all)[1].kind == SessionKind::Restore);
  CHECK((*all)[1].policy == "{}");
}

TEST_CASE("Store::resolve_id: prefix, last, ambiguous, unknown, empty store") {
  TempDir t;
  auto s = open_store(t.path());
  auto none = s.resolve_id("last", "/home/u/proj");
  REQUIRE_FALSE(none.has_value());
  CHECK(none.error().message() == "no sessions yet");

  std::vector<std::string> ids;
  for (int i = 0; i < 40; ++i) ids.push_back(new_session(s).id);
  CHECK(s.resolve_id("last", "/home/u/proj")->id == ids.back());
  CHECK(s.resolve_id(ids[3], "/home/u/proj")->id == ids[3]);
  // 40 random ids: some share a first digit, every one is unique in 8.
  CHECK(s.resolve_id(ids[5].substr(0, 8), "/home/u/proj")->id == ids[5]);
  std::set<char> firsts;
  std::string ambiguous;
  for (const auto& id : ids) {
    if (!firsts.insert(id[0]).second) ambiguous = id.substr(0, 1);
  }
  REQUIRE_FALSE(ambiguous.empty());
  auto amb = s.resolve_id(ambiguous, "/home/u/proj");
  REQUIRE_FALSE(amb.has_value());
  CHECK(amb.error().message().starts_with("'" + ambiguous + "' is ambiguous: matches "));

  std::string unused;
  for (char c : std::string("0123456789abcdef")) {
    std::string p = ids[0].substr(0, 3) + c;
    bool used = false;
    for (const auto& id : ids) used = used || id.starts_with(p);
    if (!used) unused = p;
  }
  REQUIRE_FALSE(unused.empty());
  auto unk = s.resolve_id(unused, "/home/u/proj");
  REQUIRE_FALSE(unk.has_value());
  CHECK(unk.error().message() == "no session matches '" + unused + "'");
  auto bad = s.resolve_id("zz", "/home/u/proj");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message() == "no session matches 'zz'");
  CHECK_FALSE(s.resolve_id("", "/home/u/proj").has_value());
  CHECK(s.resolve_id("x\ny", "/home/u/proj").error().message() == "no session matches 'x\\ny'");
}

TEST_CASE("Store::resolve_id: last is the newest session of the caller's directory") {
  TempDir t;
  auto s = open_store(t.path());
  auto make = [&](std::string cwd, std::vector<std::string> roots) {
    NewSession ns;
    ns.command = {"true"};
    ns.cwd = std::move(cwd);
    ns.roots = std::move(roots);
    auto r = s.create_session(ns);
    REQUIRE_MESSAGE(r.has_value(), (r ? "" : r.error().message()));
    return r->id;
  };
  std::string a = make("/w/a", {"/w/a"});
  std::string tracked = make("/w/c", {"/w/c/src", "/w/shared"});  // started in c, tracks two trees
  std::string b = make("/w/b", {"/w/b"});
  std::string b_sub = make("/w/b/sub", {});  // nothing tracked: matched by its cwd only
  auto last = [&](std::string_view cwd) {
    auto r = s.resolve_id("last", cwd);
    REQUIRE_MESSAGE(r.has_value(), (r ? "" : r.error().message()));
    return *r;
  };
  CHECK(last("/w/a").id == a);
  CHECK_FALSE(last("/w/a").fallback);
  CHECK(last("/w/a/deep/er").id == a);  // inside a's tracked root
  CHECK(last("/w/b").id == b);
  CHECK(last("/w/b/sub").id == b_sub);
  CHECK(last("/w/b/sub/x").id == b);  // b_sub tracks nothing; b's root holds it
  CHECK(last("/w/c").id == tracked);  // its cwd, though no root holds it
  CHECK(last("/w/shared/lib").id == tracked);
  CHECK(last("/w/c/src").id == tracked);
  // A path boundary: /w/ab is not inside /w/a.
  auto other = last("/w/ab");
  CHECK(other.id == b_sub);  // the store's newest
  CHECK(other.fallback);
  CHECK(last("/").fallback);
  // A session that tracks / belongs to every directory.
  std::string root = make("/", {"/"});
  CHECK(last("/w/ab").id == root);
  CHECK_FALSE(last("/w/ab").fallback);
  std::string newer_a = make("/w/a", {"/w/a"});
  CHECK(last("/w/a").id == newer_a);
  CHECK(last("/w/b").id == root);
  // An id prefix ignores the caller's directory.
  auto by_id = s.resolve_id(a.substr(0, 12), "/w/b");
  REQUIRE(by_id.has_value());
  CHECK(by_id->id == a);
  CHECK_FALSE(by_id->fallback);
}

TEST_CASE("Store changes round trip, with a path that is not UTF-8 and has a newline") {
  TempDir t;
  auto s = open_store(t.path());
  Session a = new_session(s);
  Change c1;
  c1.path = std::string("/home/u/proj/we\nird\xff\x80", 18);
  c1.kind = ChangeKind::Added;
  c1.after = FileMeta{.type = FileType::Regular,
                      .mode = 0644,
                      .size = 12,
                      .mtime_ns = 1'700'000'000'123'456'789,
                      .uid = 1000,
                      .gid = 4294967294u,
                      .blob = std::string(32, 'a')};
  Change c2;
  c2.path = "/home/u/proj/link";
  c2.kind = ChangeKind::TypeChanged;
  c2.before = FileMeta{.type = FileType::Directory, .mode = 0755, .link = ""};
  c2.after = FileMeta{.type = FileType::Symlink, .link = std::string("tar\0get", 7)};
  REQUIRE(s.add_changes(a.id, {c1, c2}).has_value());
  Change c3;
  c3.path = "/home/u/proj/gone";
  c3.kind = ChangeKind::Deleted;
  c3.before = FileMeta{.type = FileType::Fifo};
  REQUIRE(s.add_changes(a.id, {c3}).has_value());

  auto got = s.changes(a.id);
  REQUIRE(got.has_value());
  REQUIRE(got->size() == 3);
  c1.seq = 1;
  c2.seq = 2;
  c3.seq = 3;
  CHECK((*got)[0] == c1);
  CHECK((*got)[1] == c2);
  CHECK((*got)[2] == c3);
  CHECK((*got)[1].before.value().link.has_value());  // empty, not NULL

  CHECK_FALSE(s.add_changes("0123456789abcdef0123456789abcdef", {c1}).has_value());
  CHECK(s.changes("0123456789abcdef0123456789abcdef")->empty());
}

TEST_CASE("Store blobs: put, dedup, open, release") {
  TempDir t;
  auto s = open_store(t.path());
  auto a = put_string(s, t, "hello blob\n");
  CHECK(a.hash.size() == 32);
  CHECK(valid_id(a.hash));
  CHECK(a.size == 11);
  CHECK(a.refs == 1);
  auto b = put_string(s, t, "hello blob\n");
  CHECK(b.hash == a.hash);
  CHECK(b.refs == 2);
  CHECK(count_files(t / "blobs") == 1);  // no temporary left behind either
  auto other = put_string(s, t, "other");
  CHECK(other.hash != a.hash);
  struct stat st{};
  REQUIRE(::stat(blob_path(t, a.hash).c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0400);

  auto fd = s.open_blob(a.hash);
  REQUIRE(fd.has_value());
  CHECK(read_all(fd->get()) == "hello blob\n");
  CHECK(s.blob_info(a.hash)->value().refs == 2);

  REQUIRE(s.release_blob(a.hash).has_value());
  CHECK(::stat(blob_path(t, a.hash).c_str(), &st) == 0);
  CHECK(s.blob_info(a.hash)->value().refs == 1);
  REQUIRE(s.release_blob(a.hash).has_value());
  CHECK(::stat(blob_path(t, a.hash).c_str(), &st) != 0);
  CHECK_FALSE(s.blob_info(a.hash)->has_value());
  auto gone = s.open_blob(a.hash);
  REQUIRE_FALSE(gone.has_value());
  CHECK(gone.error().err == ENOENT);
  CHECK(s.release_blob(a.hash).error().err == ENOENT);
  CHECK_FALSE(s.open_blob("../../../etc/passwd").has_value());

  // The empty file is a blob like any other.
  auto e = put_string(s, t, "");
  CHECK(e.size == 0);
  CHECK(read_all(s.open_blob(e.hash)->get()).empty());

  REQUIRE(s.retain_blob(other.hash).has_value());
  CHECK(s.blob_info(other.hash)->value().refs == 2);
}

TEST_CASE("Store blobs: a 20 MB blob is streamed") {
  TempDir t;
  auto s = open_store(t.path());
  std::string src = t / "big";
  {
    zb::UniqueFd fd(::open(src.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
    REQUIRE(fd);
    std::string chunk(1 << 20, '\0');
    for (int i = 0; i < 20; ++i) {
      for (size_t k = 0; k < chunk.size(); k += 4096) chunk[k] = static_cast<char>(i + 1);
      REQUIRE(::write(fd.get(), chunk.data(), chunk.size()) == static_cast<ssize_t>(chunk.size()));
    }
  }
  zb::UniqueFd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
  auto b = s.put_blob_from_fd(in.get());
  REQUIRE(b.has_value());
  CHECK(b->size == 20 * (1 << 20));
  struct stat st{};
  REQUIRE(::stat(blob_path(t, b->hash).c_str(), &st) == 0);
  CHECK(st.st_size == 20 * (1 << 20));
  CHECK(std::filesystem::file_size(src) == std::filesystem::file_size(blob_path(t, b->hash)));

  // From a pipe too: no size known in advance.
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  REQUIRE(::write(p[1], "piped", 5) == 5);
  ::close(p[1]);
  auto piped = s.put_blob_from_fd(p[0]);
  ::close(p[0]);
  REQUIRE(piped.has_value());
  CHECK(read_all(s.open_blob(piped->hash)->get()) == "piped");
}

TEST_CASE("Store::put_blob_by_rename moves the file in, or deletes it when present") {
  TempDir t;
  auto s = open_store(t / "store");
  zb::test::write_file(t / "store/f1", "same content");
  ::chmod((t / "store/f1").c_str(), 0);  // an unreadable-by-mode file is still ours to move
  auto a = s.put_blob_by_rename(t / "store/f1");
  if (::geteuid() != 0 && !a) {
    // Without CAP_DAC_OVERRIDE a mode-0 file cannot be hashed: fine, but say so.
    CHECK(a.error().err == EACCES);
    ::chmod((t / "store/f1").c_str(), 0600);
    a = s.put_blob_by_rename(t / "store/f1");
  }
  REQUIRE_MESSAGE(a.has_value(), (a ? "" : a.error().message()));
  struct stat st{};
  CHECK(::stat((t / "store/f1").c_str(), &st) != 0);
  CHECK(read_all(s.open_blob(a->hash)->get()) == "same content");

  zb::test::write_file(t / "store/f2", "same content");
  auto b = s.put_blob_by_rename(t / "store/f2");
  REQUIRE(b.has_value());
  CHECK(b->hash == a->hash);
  CHECK(b->refs == 2);
  CHECK(::stat((t / "store/f2").c_str(), &st) != 0);

  // A file with another hard link is copied, so the link cannot change the blob later.
  zb::test::write_file(t / "store/f3", "linked");
  REQUIRE(::link((t / "store/f3").c_str(), (t / "store/f3b").c_str()) == 0);
  auto c = s.put_blob_by_rename(t / "store/f3");
  REQUIRE(c.has_value());
  CHECK(::stat((t / "store/f3").c_str(), &st) != 0);
  zb::test::write_file(t / "store/f3b", "changed");
  CHECK(read_all(s.open_blob(c->hash)->get()) == "linked");

  // Symlinks and directories are refused.
  REQUIRE(::symlink("f3b", (t / "store/sl").c_str()) == 0);
  CHECK_FALSE(s.put_blob_by_rename(t / "store/sl").has_value());
  zb::test::mkdirs(t / "store/d");
  CHECK(s.put_blob_by_rename(t / "store/d").error().err == EINVAL);
}

TEST_CASE("Store::remove_session releases its blobs and deletes its directory") {
  TempDir t;
  auto s = open_store(t.path());
  Session a = new_session(s);
  Session b = new_session(s);
  auto shared = put_string(s, t, "shared");
  auto shared2 = put_string(s, t, "shared");  // one reference for each change below
  auto own = put_string(s, t, "own");
  Change c;
  c.path = "/p";
  c.kind = ChangeKind::Modified;
  c.before = FileMeta{.type = FileType::Regular, .blob = shared.hash};
  c.after = FileMeta{.type = FileType::Regular, .blob = own.hash};
  REQUIRE(s.add_changes(a.id, {c}).has_value());
  Change d;
  d.path = "/q";
  d.kind = ChangeKind::Deleted;
  d.before = FileMeta{.type = FileType::Regular, .blob = shared2.hash};
  REQUIRE(s.add_changes(b.id, {d}).has_value());
  // Leave something awkward in the upper layer: a read-only directory with a file.
  zb::test::mkdirs(s.session_dir(a.id) + "/upper/0/ro");
  zb::test::write_file(s.session_dir(a.id) + "/upper/0/ro/f", "x");
  ::chmod((s.session_dir(a.id) + "/upper/0/ro").c_str(), 0500);
  ::chmod((s.session_dir(a.id) + "/work").c_str(), 0);

  REQUIRE(s.remove_session(a.id).has_value());
  CHECK_FALSE(s.get_session(a.id)->has_value());
  CHECK(s.changes(a.id)->empty());
  CHECK_FALSE(std::filesystem::exists(s.session_dir(a.id)));
  CHECK(s.blob_info(shared.hash)->value().refs == 1);
  CHECK_FALSE(s.blob_info(own.hash)->has_value());
  CHECK_FALSE(std::filesystem::exists(blob_path(t, own.hash)));
  CHECK(std::filesystem::exists(blob_path(t, shared.hash)));

  auto lock = s.lock_session(b.id);
  REQUIRE(lock.has_value());
  CHECK_FALSE(s.remove_session(b.id).has_value());  // in use
  REQUIRE(s.remove_session(std::move(*lock)).has_value());
  CHECK_FALSE(std::filesystem::exists(blob_path(t, shared.hash)));
  CHECK(s.remove_session(b.id).error().err == ENOENT);
}

TEST_CASE("Store::lock_session is exclusive until released") {
  TempDir t;
  auto s = open_store(t.path());
  auto other = open_store(t.path());
  Session a = new_session(s);
  {
    auto l1 = s.lock_session(a.id);
    REQUIRE(l1.has_value());
    CHECK(l1->id() == a.id);
    auto l2 = other.lock_session(a.id);
    REQUIRE_FALSE(l2.has_value());
    CHECK(l2.error().message() ==
          "session " + a.id + " is in use by another zerobox (pid " + std::to_string(::getpid()) + ")");
    SessionLock moved = std::move(*l1);
    CHECK_FALSE(other.lock_session(a.id).has_value());
  }
  CHECK(other.lock_session(a.id).has_value());
  CHECK(s.lock_session("0123456789abcdef0123456789abcdef").error().err == ENOENT);
  CHECK_FALSE(s.lock_session("../../etc").has_value());
}

TEST_CASE("Store: sessions created concurrently by 8 processes are all recorded") {
  TempDir t;
  std::string dir = t / "store";  // created by the children, racing
  constexpr int k_children = 8;
  std::vector<pid_t> pids;
  for (int i = 0; i < k_children; ++i) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int code = 0;
      {
        auto s = Store::open(dir);
        if (!s) {
          code = 1;
        } else {
          for (int k = 0; k < 5 && code == 0; ++k) {
            NewSession ns;
            ns.command = {"child", std::to_string(i)};
            ns.cwd = "/";
            auto r = s->create_session(ns);
            if (!r) code = 2;
            else if (!s->finish(r->id, {SessionState::Pending, 0, std::nullopt})) code = 3;
          }
          std::string content = "blob " + std::to_string(i % 2);
          int p[2];
          if (code == 0 && ::pipe(p) == 0) {
            (void)!::write(p[1], content.data(), content.size());
            ::close(p[1]);
            if (!s->put_blob_from_fd(p[0])) code = 4;
            ::close(p[0]);
          }
        }
      }
      ::_exit(code);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  auto s = open_store(dir);
  auto all = s.list_sessions();
  REQUIRE(all.has_value());
  CHECK(all->size() == k_children * 5);
  for (const auto& sess : *all) CHECK(sess.state == SessionState::Pending);
  size_t refs = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir + "/blobs")) {
    if (!e.is_regular_file()) continue;
    std::string hash = e.path().parent_path().filename().string() + e.path().filename().string();
    auto info = s.blob_info(hash);
    REQUIRE(info.has_value());
    REQUIRE(info->has_value());
    refs += static_cast<size_t>((*info)->refs);
  }
  CHECK(count_files(dir + "/blobs") == 2);
  CHECK(refs == k_children);
}

TEST_CASE("store spellings round trip") {
  for (auto v : {SessionState::Running, SessionState::Pending, SessionState::Accepted, SessionState::Discarded,
                 SessionState::Restored, SessionState::Failed}) {
    CHECK(parse_session_state(to_string(v)) == v);
  }
  CHECK(to_string(ChangeKind::TypeChanged) == "type_changed");
  CHECK(to_string(FileType::Directory) == "dir");
  CHECK(file_type_of(S_IFLNK | 0777) == FileType::Symlink);
  CHECK_FALSE(parse_session_mode("bogus").has_value());
}
