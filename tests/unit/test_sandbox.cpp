// Tests for the sandbox started ahead of its spec (exec::Prestart in src/exec/sandbox.cpp)
// and the CLI's guess of its network mode (cli::guess_new_net). The runs are real
// sandboxes; they are skipped where user namespaces are unavailable.
#include <doctest/doctest.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "exec/blocked.hpp"
#include "run/run.hpp"
#include "exec/sandbox.hpp"
#include "testutil.hpp"

using namespace zb;

namespace {

std::vector<std::string> words(std::initializer_list<const char*> l) { return {l.begin(), l.end()}; }

bool userns_available() {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(::unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0 ? 0 : 1);
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int host_interfaces() {
  std::ifstream in("/proc/net/dev");
  std::string line;
  int n = 0;
  while (std::getline(in, line)) ++n;
  return n - 2;  // two header lines
}

// Runs `sh -c SCRIPT` under the CLI's parse of FLAGS, with a sandbox prestarted for
// `prestart_net` (its guess, right or wrong); returns the exit status.
int run_with(std::vector<std::string> flags, const std::string& script, bool prestart_net) {
  std::vector<std::string> env = {"PATH=/usr/bin:/bin"};
  flags.insert(flags.end(), {"--quiet", "--", "/bin/sh", "-c", script});
  auto parsed = cli::parse_args(flags, env);
  return zerobox::run_prestarted(std::move(parsed.policy), env, {}, exec::Prestart::launch(prestart_net));
}

bool no_children_left() {
  errno = 0;
  return ::waitpid(-1, nullptr, WNOHANG) < 0 && errno == ECHILD;
}

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

TEST_CASE("a prestarted sandbox that is never used is killed and reaped" * doctest::skip(!userns_available())) {
  REQUIRE(no_children_left());
  for (bool net : {true, false}) {
    auto p = exec::Prestart::launch(net);
    p.reset();
    CHECK(no_children_left());
  }
}

TEST_CASE("a sandbox prestarted for the other network mode is replaced" * doctest::skip(!userns_available())) {
  REQUIRE(no_children_left());
  int host = host_interfaces();
  REQUIRE(host >= 1);
  std::string only_lo = "test \"$(grep -c : /proc/net/dev)\" -eq 1 && grep -q ' lo:' /proc/net/dev";
  std::string hosts = "test \"$(grep -c : /proc/net/dev)\" -eq " + std::to_string(host);
  // The right guess and the wrong one give the same sandbox.
  CHECK(run_with({}, only_lo, true) == 0);
  CHECK(run_with({}, only_lo, false) == 0);
  CHECK(run_with({"--allow-net"}, hosts, false) == 0);
  CHECK(run_with({"--allow-net"}, hosts, true) == 0);
  // The command's status comes through, and nothing is left behind.
  CHECK(run_with({}, "exit 7", false) == 7);
  CHECK(no_children_left());
}

TEST_CASE("a spec larger than the prestarted child's shared memory gets a child with more" *
          doctest::skip(!userns_available())) {
  // About 5 MB of environment (the arena starts at 4 MiB). execve takes that much only
  // with a large stack limit, which the sandbox inherits.
  rlimit old{};
  REQUIRE(::getrlimit(RLIMIT_STACK, &old) == 0);
  rlimit big{RLIM_INFINITY, RLIM_INFINITY};
  REQUIRE(::setrlimit(RLIMIT_STACK, &big) == 0);
  std::vector<std::string> flags;
  for (int i = 0; i < 40000; ++i) {
    flags.push_back("--env");
    flags.push_back("ZB_BIG_" + std::to_string(i) + "=" + std::string(110, 'x'));
  }
  CHECK(run_with(flags, "test \"$(env | grep -c '^ZB_BIG_')\" -eq 40000", true) == 0);
  ::setrlimit(RLIMIT_STACK, &old);
  CHECK(no_children_left());
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
