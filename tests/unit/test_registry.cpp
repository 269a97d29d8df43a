// Tests for src/store/registry.cpp
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "store/registry.hpp"
#include "store/store.hpp"
#include "testutil.hpp"

using namespace zb::store;
using zb::test::TempDir;

namespace {

Registry open_registry(const std::string& dir) {
  auto r = Registry::open(dir);
  REQUIRE_MESSAGE(r.has_value(), (r ? "" : r.error().message()));
  return std::move(*r);
}

std::string canonical(const std::string& p) { return std::filesystem::canonical(p).string(); }

}  // namespace

TEST_CASE("encode_paths and decode_paths round-trip any bytes but NUL") {
  std::vector<std::string> paths = {"/a", "/with\nnewline", "/with space/and\\backslash", "/\xff\xfe", "/x,y"};
  std::string bytes = encode_paths(paths);
  CHECK(bytes.size() == 5 + paths[0].size() + paths[1].size() + paths[2].size() + paths[3].size() + paths[4].size());
  CHECK(decode_paths(bytes) == paths);
  CHECK(decode_paths("").empty());
  CHECK(encode_paths({}).empty());
  // Empty entries are dropped; a last entry without its NUL counts.
  CHECK(decode_paths(std::string("/a\0\0/b", 6)) == std::vector<std::string>{"/a", "/b"});
}

TEST_CASE("encode_record and decode_record") {
  RunRecord r{
      .pid = 1234, .start_time = 987654321, .writable = {"/home/u/p", "/var/tmp/a\nb"}, .masked = {"/home/u/.ssh"}};
  auto back = decode_record(encode_record(r));
  REQUIRE(back);
  CHECK(*back == r);
  std::string bytes = encode_record(r);
  CHECK_FALSE(decode_record(bytes.substr(0, bytes.size() - 1)));  // cut short
  CHECK_FALSE(decode_record(""));
  CHECK_FALSE(
      decode_record(std::string("zerobox-run 2\0"
                                "1\0"
                                "1\0",
                                18)));
  CHECK_FALSE(
      decode_record(std::string("zerobox-run 1\0"
                                "x\0"
                                "1\0",
                                18)));
  CHECK_FALSE(
      decode_record(std::string("zerobox-run 1\0"
                                "1\0"
                                "1\0"
                                "wrel\0",
                                23)));
  CHECK_FALSE(
      decode_record(std::string("zerobox-run 1\0"
                                "1\0"
                                "1\0"
                                "q/x\0",
                                22)));
}

TEST_CASE("reached_through: writable paths that hold the store or lie in it, unless masked") {
  RunRecord r{.pid = 1, .start_time = 1, .writable = {"/var/tmp", "/home/u/store/blobs"}, .masked = {"/var/tmp/old"}};
  CHECK(reached_through(r, "/var/tmp/new") == "/var/tmp");
  CHECK(reached_through(r, "/var/tmp") == "/var/tmp");
  CHECK_FALSE(reached_through(r, "/var/tmp/old"));
  CHECK_FALSE(reached_through(r, "/var/tmp/old/x"));
  CHECK_FALSE(reached_through(r, "/var/tmpx"));
  CHECK(reached_through(r, "/home/u/store") == "/home/u/store/blobs");
  CHECK_FALSE(reached_through(r, "/home/u/other"));
}

TEST_CASE("process_start_time: this process, and none for a pid that is gone") {
  auto self = process_start_time(::getpid());
  REQUIRE(self);
  CHECK(process_start_time(::getpid()) == self);
  CHECK_FALSE(process_start_time(0x3ffffff));
}

TEST_CASE("Registry: stores are listed once, the registry itself never, vanished ones pruned") {
  TempDir t;
  auto reg = open_registry(t / "reg");
  struct stat st{};
  REQUIRE(::stat((t / "reg").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  auto lock = reg.lock();
  REQUIRE(lock);
  zb::test::mkdirs(t / "s1");
  zb::test::mkdirs(t / "s2");
  std::string s1 = canonical(t / "s1"), s2 = canonical(t / "s2");
  REQUIRE(reg.add_store(*lock, s1));
  REQUIRE(reg.add_store(*lock, s1));
  REQUIRE(reg.add_store(*lock, reg.dir()));
  CHECK(*reg.stores(*lock) == std::vector<std::string>{s1});
  std::filesystem::remove(t / "s1");
  REQUIRE(reg.add_store(*lock, s2));
  CHECK(*reg.stores(*lock) == std::vector<std::string>{s2});
  // A store that would hold the registry (HOME, /) is refused: every run would mask it.
  CHECK_FALSE(reg.admit_store(*lock, t.path()));
  CHECK_FALSE(reg.admit_store(*lock, "/"));
  // admit_store makes a missing store directory and lists it.
  REQUIRE(reg.admit_store(*lock, t / "s3/deeper"));
  CHECK(std::filesystem::is_directory(t / "s3/deeper"));
  CHECK(reg.stores(*lock)->back() == canonical(t / "s3/deeper"));
}

TEST_CASE("Registry: a store is refused while a running sandbox could write it") {
  TempDir t;
  auto reg = open_registry(t / "reg");
  zb::test::mkdirs(t / "shared/listed");
  std::string shared = canonical(t / "shared");
  {
    auto lock = reg.lock();
    REQUIRE(lock);
    auto entry = reg.record_run(*lock, {.writable = {shared}, .masked = {shared + "/listed"}});
    REQUIRE_MESSAGE(entry.has_value(), (entry ? "" : entry.error().message()));
    auto refused = reg.admit_store(*lock, shared + "/new");
    REQUIRE_FALSE(refused);
    CHECK(refused.error().err == 0);
    CHECK(refused.error().message().find("zerobox pid " + std::to_string(::getpid())) != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(t / "shared/new"));  // nothing made
    CHECK(reg.admit_store(*lock, shared + "/listed"));       // that run masks it
    CHECK(reg.admit_store(*lock, t / "elsewhere"));
    entry->remove();
    CHECK(reg.admit_store(*lock, shared + "/new"));
  }
  // A record whose process is gone is stale: ignored and removed.
  RunRecord dead{.pid = 0x3ffffff, .start_time = 1, .writable = {"/"}, .masked = {}};
  zb::test::write_file(t / "reg/running/67108863.00", encode_record(dead));
  zb::test::write_file(t / "reg/running/5.cut", "zerobox-run 1");
  auto lock = reg.lock();
  REQUIRE(lock);
  CHECK(reg.check_reach(*lock, t / "anywhere"));
  CHECK(std::filesystem::is_empty(t / "reg/running"));
}

TEST_CASE("Store::open with a registry lists the store, and refuses one a sandbox could write") {
  TempDir t;
  auto reg = open_registry(t / "reg");
  {
    auto s = Store::open(t / "store", &reg);
    REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message()));
  }
  std::optional<Registry::Entry> entry;
  {
    auto lock = reg.lock();
    REQUIRE(lock);
    CHECK(*reg.stores(*lock) == std::vector<std::string>{canonical(t / "store")});
    auto e = reg.record_run(*lock, {.writable = {canonical(t.path())}, .masked = {canonical(t / "store")}});
    REQUIRE(e);
    entry.emplace(std::move(*e));
  }
  CHECK(Store::open(t / "store", &reg));  // masked by that run
  auto refused = Store::open(t / "other", &reg);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message().find("lies where a running sandbox can write") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(t / "other"));
  entry.reset();
  CHECK(Store::open(t / "other", &reg));
}

TEST_CASE("Store::default_location ignores ZEROBOX_HOME") {
  CHECK(*Store::default_location({"HOME=/h", "ZEROBOX_HOME=/z"}) == "/h/.local/state/zerobox");
  CHECK(*Store::default_location({"HOME=/h", "XDG_STATE_HOME=/x", "ZEROBOX_HOME=/z"}) == "/x/zerobox");
  CHECK_FALSE(Store::default_location({"ZEROBOX_HOME=/z"}));
}
