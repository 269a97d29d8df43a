// Tests for the CLI's guess of a prestarted sandbox's network mode (cli::guess_new_net)
// and for the live blocker (exec::LiveBlocker). The prestarted sandboxes themselves
// (exec::Prestart in src/exec/prestart.cpp) are in test_sandbox_prestart.cpp
// (unit_priv_tests).
#include <doctest/doctest.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "exec/blocked.hpp"
#include "testutil.hpp"

using namespace zb;

namespace {

std::vector<std::string> words(std::initializer_list<const char*> l) { return {l.begin(), l.end()}; }

}  // namespace

TEST_CASE("guess_new_net reads only plain words before the command") {
  using cli::guess_new_net;
  CHECK(guess_new_net(words({"--", "true"})) == std::optional<bool>(true));
  CHECK(guess_new_net(words({"true"})) == std::optional<bool>(true));
  CHECK(guess_new_net(words({"--allow-write=/tmp", "-C", "/", "--", "ls"})) == std::optional<bool>(true));
  CHECK(guess_new_net(words({"--allow-net", "--", "curl"})) == std::optional<bool>(false));
  CHECK(guess_new_net(words({"-A", "make"})) == std::optional<bool>(false));
  CHECK(guess_new_net(words({"--allow-all", "--", "make"})) == std::optional<bool>(false));
  // Filtered: its own namespace, even with a bare --allow-net beside it.
  CHECK(guess_new_net(words({"--allow-net=example.com", "--", "curl"})) == std::optional<bool>(true));
  CHECK(guess_new_net(words({"--allow-net", "--deny-net=x.com", "--", "curl"})) == std::optional<bool>(true));
  CHECK(guess_new_net(words({"--allow-net", "--secret", "K=V", "--", "curl"})) == std::optional<bool>(true));
  // A value that looks like a flag is a value.
  CHECK(guess_new_net(words({"-C", "--allow-net", "--", "true"})) == std::optional<bool>(true));
  CHECK(guess_new_net(words({"--env", "X=--allow-net", "true"})) == std::optional<bool>(true));
  // No sandbox, or nothing to go on.
  CHECK_FALSE(guess_new_net(words({})).has_value());
  CHECK_FALSE(guess_new_net(words({"--"})).has_value());
  CHECK_FALSE(guess_new_net(words({"--allow-write"})).has_value());
  CHECK_FALSE(guess_new_net(words({"--help"})).has_value());
  CHECK_FALSE(guess_new_net(words({"-V"})).has_value());
  CHECK_FALSE(guess_new_net(words({"--no-sandbox", "--", "true"})).has_value());
  CHECK_FALSE(guess_new_net(words({"--profile", "dev", "--", "true"})).has_value());
  CHECK_FALSE(guess_new_net(words({"--profile=dev", "--", "true"})).has_value());
  CHECK_FALSE(guess_new_net(words({"-qA", "--", "true"})).has_value());
  // A --status-fd that is not open: the prestart's pipes could take its number.
  CHECK_FALSE(guess_new_net(words({"--status-fd=987", "--", "true"})).has_value());
  CHECK_FALSE(guess_new_net(words({"--status-fd", "987", "--", "true"})).has_value());
  CHECK_FALSE(guess_new_net(words({"--status-fd=x", "--", "true"})).has_value());
  CHECK(guess_new_net(words({"--status-fd=2", "--", "true"})) == std::optional<bool>(true));  // open; refused later
  CHECK_FALSE(guess_new_net(words({"--upstream-ca=/dev/fd/7", "--", "true"})).has_value());
  CHECK_FALSE(guess_new_net(words({"--secret-file", "K=/proc/self/fd/7", "--", "true"})).has_value());
  // List options take several words: what follows the first value is still checked.
  CHECK_FALSE(guess_new_net(words({"--env", "A=1", "B=2", "--status-fd", "987", "--", "true"})).has_value());
  CHECK_FALSE(guess_new_net(words({"--deny-read", "/a", "/dev/fd/7", "--", "true"})).has_value());
}

// Where the create guard cannot run (a kernel before 5.19), the live blocker stands in:
// a protected name the command makes is renamed aside while it runs, and said.
TEST_CASE("the live blocker moves a created protected name aside while the command runs") {
  test::TempDir t;
  std::string name = t / ".envrc";
  exec::LiveBlocker blocker({name});
  blocker.start();
  test::write_file(name, "evil");
  bool moved = false;
  for (int i = 0; i < 200 && !moved; ++i) {
    ::usleep(10000);
    moved = ::access(name.c_str(), F_OK) != 0;
  }
  CHECK(moved);
  auto lines = blocker.stop();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("moved it to") != std::string::npos);
  CHECK(exec::move_created_aside({name}).empty());
}
