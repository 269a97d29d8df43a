// Tests for src/cli/cli.cpp and src/cli/profile.cpp
#include <doctest/doctest.h>

#include "cli/cli.hpp"
#include "testutil.hpp"
#include "util/error.hpp"

using namespace zb;
using zerobox::NetMode;

namespace {
cli::Parsed parse(std::vector<std::string> args, std::vector<std::string> env = {}) { return cli::parse_args(args, env); }
}  // namespace

TEST_CASE("a bare --allow-write does not swallow the command") {
  auto p = parse({"--allow-write", "touch", "x"}).policy;
  CHECK(p.write_all);
  CHECK(p.argv == std::vector<std::string>{"touch", "x"});
  auto q = parse({"--allow-write", "--", "touch"}).policy;
  CHECK(q.write_all);
  CHECK(q.argv == std::vector<std::string>{"touch"});
}

TEST_CASE("--allow-write=LIST splits on commas, honours \\, and repeats add") {
  auto p = parse({"--allow-write=/a,/b\\,c", "--allow-write=/d", "--", "true"}).policy;
  CHECK_FALSE(p.write_all);
  CHECK(p.allow_write == std::vector<std::string>{"/a", "/b,c", "/d"});
}

TEST_CASE("everything after -- is the command, even flags") {
  auto p = parse({"--", "--allow-all"}).policy;
  CHECK(p.argv == std::vector<std::string>{"--allow-all"});
  CHECK_FALSE(p.allow_all);
  auto q = parse({"echo", "--debug"}).policy;
  CHECK(q.argv == std::vector<std::string>{"echo", "--debug"});
  CHECK_FALSE(q.debug);
}

TEST_CASE("usage errors") {
  CHECK_THROWS_AS(parse({"--no-such-flag", "--", "true"}), UsageError);
  CHECK_THROWS_AS(parse({"--debug"}), UsageError);
  CHECK_THROWS_AS(parse({"--env", "FOO", "--", "true"}), UsageError);
  CHECK_THROWS_AS(parse({"--env", "1X=2", "--", "true"}), UsageError);
  CHECK_THROWS_AS(parse({"--status-fd=abc", "--", "true"}), UsageError);
  CHECK_THROWS_AS(parse({"--status-fd=1", "--", "true"}), UsageError);
  CHECK_THROWS_AS(parse({"--status-fd=987", "--", "true"}), UsageError);
  CHECK_THROWS_AS(parse({"--resolve=nocolon", "--", "true"}), UsageError);
  CHECK_THROWS_AS(parse({"--resolve=h:not-an-ip", "--", "true"}), UsageError);
  CHECK_THROWS_AS(parse({"--snapshot", "--restore", "--", "true"}), UsageError);
  CHECK_THROWS_AS(parse({"--secret-host=K=a.com", "--", "true"}), UsageError);
}

TEST_CASE("network flags") {
  CHECK(parse({"--", "true"}).policy.net == NetMode::None);
  CHECK(parse({"--allow-net", "--", "true"}).policy.net == NetMode::Host);
  auto p = parse({"--allow-net=a.com,*.b.com", "--deny-net=x.b.com", "--resolve=a.com:127.0.0.1", "--", "true"}).policy;
  CHECK(p.allow_net == std::vector<std::string>{"a.com", "*.b.com"});
  CHECK(p.deny_net == std::vector<std::string>{"x.b.com"});
  CHECK(p.resolve.at(0).second == "127.0.0.1");
}

TEST_CASE("secrets take their value from the caller's environment, never argv") {
  auto p = parse({"--secret", "TOKEN", "--secret-host=TOKEN=api.x.com", "--", "true"}, {"TOKEN=s3cret"}).policy;
  REQUIRE(p.secrets.size() == 1);
  CHECK(p.secrets[0].value == "s3cret");
  CHECK(p.secrets[0].hosts == std::vector<std::string>{"api.x.com"});
  CHECK_THROWS_AS(parse({"--secret", "MISSING", "--", "true"}), SetupError);
}

TEST_CASE("environment flags") {
  auto p = parse({"--env", "A=1", "--env=B=x=y", "--allow-env=C,D", "--deny-env=D", "--", "true"}).policy;
  CHECK(p.env_set == std::vector<std::pair<std::string, std::string>>{{"A", "1"}, {"B", "x=y"}});
  CHECK(p.allow_env == std::vector<std::string>{"C", "D"});
  CHECK(p.deny_env == std::vector<std::string>{"D"});
  CHECK(parse({"--allow-env", "--", "true"}).policy.env_all);
}

TEST_CASE("help and version") {
  CHECK(parse({"--help"}).action == cli::Action::Help);
  CHECK(parse({"-V"}).action == cli::Action::Version);
  CHECK(parse({"-V"}).text.find("zerobox ") == 0);
}

TEST_CASE("profiles add to the command line, which wins") {
  test::TempDir t;
  test::write_file(t / "p.toml",
                   "allow-write = [\"/w1\"]\nallow-net = true\nenv = { A = \"from-profile\" }\ndeny-env = \"X\"\n");
  auto p = parse({"--profile", t / "p.toml", "--allow-write=/w2", "--env", "A=cli", "--", "true"}).policy;
  CHECK(p.allow_write == std::vector<std::string>{"/w1", "/w2"});
  CHECK(p.net == NetMode::Host);
  CHECK(p.env_set.back() == std::pair<std::string, std::string>{"A", "cli"});
  CHECK(p.deny_env == std::vector<std::string>{"X"});

  test::mkdirs(t / "cfg/zerobox");
  test::write_file(t / "cfg/zerobox/dev.toml", "strict-sandbox = true\n");
  auto q = parse({"--profile=dev", "--", "true"}, {"XDG_CONFIG_HOME=" + (t / "cfg")}).policy;
  CHECK(q.strict);

  test::write_file(t / "bad.toml", "no-such-key = 1\n");
  CHECK_THROWS_AS(parse({"--profile", t / "bad.toml", "--", "true"}), UsageError);
  test::write_file(t / "broken.toml", "allow-write = [\n");
  CHECK_THROWS_AS(parse({"--profile", t / "broken.toml", "--", "true"}), UsageError);
  CHECK_THROWS_AS(parse({"--profile", t / "missing.toml", "--", "true"}), SetupError);
}
