// Tests for the sandbox started ahead of its spec (exec::Prestart in src/exec/prestart.cpp).
// The runs are real sandboxes: in unit_priv_tests, which exits 77 (skipped) where they
// cannot run (priv_main.cpp).
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "exec/sandbox.hpp"
#include "run/run.hpp"

using namespace zb;

namespace {

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
  return zb::run::run_prestarted(std::move(parsed.policy), env, parsed.options, exec::Prestart::launch(prestart_net));
}

bool no_children_left() {
  errno = 0;
  return ::waitpid(-1, nullptr, WNOHANG) < 0 && errno == ECHILD;
}

}  // namespace

TEST_CASE("a prestarted sandbox that is never used is killed and reaped") {
  REQUIRE(no_children_left());
  for (bool net : {true, false}) {
    auto p = exec::Prestart::launch(net);
    p.reset();
    CHECK(no_children_left());
  }
}

TEST_CASE("a sandbox prestarted for the other network mode is replaced") {
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

TEST_CASE("a spec larger than the prestarted child's shared memory gets a child with more") {
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
