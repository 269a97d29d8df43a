// Tests for src/cli/cli.cpp and src/cli/profile.cpp
#include <doctest/doctest.h>

#include <algorithm>
#include <utility>

#include "cli/app.hpp"
#include "cli/cli.hpp"
#include "testutil.hpp"
#include "util/error.hpp"

using namespace zb;
using zerobox::NetMode;

namespace {
cli::Parsed parse(std::vector<std::string> args, std::vector<std::string> env = {}) {
  return cli::parse_args(args, env);
}
// argv as one string, for CAPTURE.
std::string show(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += (out.empty() ? "'" : " '") + a + "'";
  return out;
}
}  // namespace

TEST_CASE("an optional value is the next word when it does not start with -") {
  // As upstream Zerobox reads it: the value, not the command, and never "everything".
  auto p = parse({"--allow-write", "/out", "--", "touch", "x"}).policy;
  CHECK_FALSE(p.write_all);
  CHECK(p.allow_write == std::vector<std::string>{"/out"});
  CHECK(p.argv == std::vector<std::string>{"touch", "x"});
  auto q = parse({"--allow-write", "/out", "touch", "x"}).policy;
  CHECK_FALSE(q.write_all);
  CHECK(q.allow_write == std::vector<std::string>{"/out"});
  CHECK(q.argv == std::vector<std::string>{"touch", "x"});
  auto r = parse({"--allow-write=a", "--allow-write", "b", "--", "cmd"}).policy;
  CHECK_FALSE(r.write_all);
  CHECK(r.allow_write == std::vector<std::string>{"a", "b"});
  auto n = parse({"--allow-net", "example.com", "--", "curl"}).policy;
  CHECK(n.net == NetMode::None);  // filtered once finalized; never the host's network
  CHECK(n.allow_net == std::vector<std::string>{"example.com"});
  auto e = parse({"--allow-env", "FOO", "--", "env"}).policy;
  CHECK_FALSE(e.env_all);
  CHECK(e.allow_env == std::vector<std::string>{"FOO"});
  // The value alone, and no command: a usage error that says so.
  try {
    parse({"--allow-write", "make"});
    FAIL("no usage error");
  } catch (const UsageError& err) {
    CHECK(err.message.find("no command given") != std::string::npos);
    CHECK(err.message.find("--allow-write -- make") != std::string::npos);
  }
}

TEST_CASE("a bare optional-value flag is one followed by -- or another option") {
  auto p = parse({"--allow-write", "--", "touch"}).policy;
  CHECK(p.write_all);
  CHECK(p.allow_write.empty());
  CHECK(p.argv == std::vector<std::string>{"touch"});
  auto n = parse({"--allow-net", "--", "curl"}).policy;
  CHECK(n.net == NetMode::Host);
  CHECK(n.allow_net.empty());
  CHECK(n.argv == std::vector<std::string>{"curl"});
  auto parsed_q = parse({"--allow-write", "-C", "/", "--allow-env", "--debug", "--", "true"});
  auto q = parsed_q.policy;
  CHECK(q.write_all);
  CHECK(q.cwd == "/");
  CHECK(q.env_all);
  CHECK(parsed_q.options.debug);
  auto d = parse({"--allow-write", "-", "x"}).policy;  // "-" starts with "-": the command
  CHECK(d.write_all);
  CHECK(d.argv == std::vector<std::string>{"-", "x"});
}

TEST_CASE("after -- nothing is an option, whatever comes before it") {
  const std::vector<std::vector<std::string>> befores = {
      {},
      {"--allow-write=/d"},
      {"--allow-write", "/d"},
      {"--allow-write"},
      {"--allow-read=/d"},
      {"--allow-read", "/d"},
      {"--deny-read=/a,/b"},
      {"--deny-write", "/d"},
      {"--allow-net=a.com"},
      {"--allow-net", "a.com"},
      {"--deny-net=x.com"},
      {"--allow-env=A"},
      {"--deny-env", "B"},
      {"--env", "A=1"},
      {"--env=A=1"},
      {"--resolve=a.com:127.0.0.1"},
      {"--snapshot", "--snapshot-exclude=*.o"},
      {"-C", "/"},
      {"-C/"},
      {"--debug", "--quiet"},
  };
  const std::vector<std::vector<std::string>> afters = {
      {"--allow-all", "sh", "-c", "touch X"},
      {"-A", "sh"},
      {"--version"},
      {"-V"},
      {"--help"},
      {"--allow-net=evil.com", "curl"},
      {"--allow-net", "curl"},
      {"--allow-write", "sh"},
      {"--no-sandbox", "sh"},
      {"--", "sh"},
  };
  for (const auto& before : befores) {
    for (const auto& after : afters) {
      std::vector<std::string> args = before;
      args.emplace_back("--");
      args.insert(args.end(), after.begin(), after.end());
      CAPTURE(show(args));
      auto parsed = parse(args);
      REQUIRE(parsed.action == cli::Action::Run);
      const auto& p = parsed.policy;
      CHECK(p.argv == after);
      CHECK_FALSE(p.allow_all);
      CHECK_FALSE(p.no_sandbox);
      CHECK(std::find(p.allow_net.begin(), p.allow_net.end(), "evil.com") == p.allow_net.end());
      if (std::find(before.begin(), before.end(), "--allow-write") == before.end()) CHECK_FALSE(p.write_all);
      CHECK(p.net == NetMode::None);  // an --allow-net after "--" is the command's
    }
  }
  // An option that still wants its value does not take the "--": it has none.
  for (const char* flag : {"--env", "--allow-read", "-C", "--profile", "--secret", "--status-fd", "--deny-net"}) {
    CAPTURE(flag);
    CHECK_THROWS_AS(parse({flag, "--", "--allow-all", "sh"}), UsageError);
  }
  auto p = parse({"--", "--allow-all"}).policy;
  CHECK(p.argv == std::vector<std::string>{"--allow-all"});
  CHECK_FALSE(p.allow_all);
  auto parsed_q = parse({"echo", "--debug"});
  auto q = parsed_q.policy;
  CHECK(q.argv == std::vector<std::string>{"echo", "--debug"});
  CHECK_FALSE(parsed_q.options.debug);
  auto r = parse({"--allow-read", "/a", "ls", "/b", "--allow-all"}).policy;  // a list option takes one word
  CHECK(r.allow_read == std::vector<std::string>{"/a"});
  CHECK(r.argv == std::vector<std::string>{"ls", "/b", "--allow-all"});
  CHECK_FALSE(r.allow_all);
}

TEST_CASE("an empty value is a usage error naming the flag") {
  auto message = [](std::vector<std::string> args) {
    try {
      parse(std::move(args), {"K=v"});
    } catch (const UsageError& e) {
      return e.message;
    }
    return std::string("(no usage error)");
  };
  for (std::string flag :
       {"--allow-write", "--allow-net", "--allow-env", "--allow-read", "--deny-read", "--deny-write", "--deny-net",
        "--deny-env", "--env", "--secret", "--secret-file", "--secret-host", "--resolve", "--upstream-ca",
        "--status-fd", "--profile", "--snapshot-path", "--snapshot-exclude"}) {
    CAPTURE(flag);
    for (const auto& args : std::vector<std::vector<std::string>>{
             {flag + "=", "--", "true"}, {flag + "=", "true"}, {flag, "", "--", "true"}, {flag, "", "true"}}) {
      CAPTURE(show(args));
      std::string m = message(args);
      CHECK(m.find(flag) != std::string::npos);
      CHECK(m.find("empty value") != std::string::npos);
    }
  }
  CHECK(message({"-C", "", "true"}) == "-C: empty value");
  // A list with no entry is as empty, and must not mean "no list".
  for (std::string flag : {"--allow-write", "--allow-net", "--allow-env", "--allow-read", "--deny-write"}) {
    CAPTURE(flag);
    CHECK(message({flag + "=,", "--", "true"}) == flag + ": empty value");
    CHECK(message({flag, ",", "--", "true"}) == flag + ": empty value");
  }
  CHECK(message({"--secret", "K", "--secret-host=K=", "--", "true"}).find("empty value") != std::string::npos);
  CHECK(message({"--secret", "K", "--secret-host", "K=,", "--", "true"}).find("empty value") != std::string::npos);
}

TEST_CASE("the scan knows which options take a value, as the CLI11 definition does") {
  cli::RunFlags f;
  auto app = cli::make_run_app(f);
  int checked = 0;
  for (const CLI::Option* o : std::as_const(*app).get_options()) {
    if (o->get_group().empty()) continue;  // internal twins
    std::vector<std::string> names;
    for (const auto& s : o->get_snames()) names.push_back("-" + s);
    for (const auto& l : o->get_lnames()) names.push_back("--" + l);
    for (const auto& name : names) {
      CAPTURE(name);
      ++checked;
      if (name == "-h" || name == "--help" || name == "-V" || name == "--version") continue;
      if (o->get_expected_max() == 0) {  // a flag: the next word is the command
        CHECK(parse({name, "zbword"}).policy.argv == std::vector<std::string>{"zbword"});
      } else {  // the next word is its value: no command
        CHECK_FALSE(cli::guess_new_net({name, "zbword"}).has_value());
        CHECK_THROWS(parse({name, "zbword"}));
      }
    }
  }
  CHECK(checked > 20);
}

TEST_CASE("guess_new_net reads the options as the parser does") {
  const std::vector<std::vector<std::string>> cases = {
      {"--allow-net", "example.com", "--", "curl"},
      {"--allow-net", "--", "curl"},
      {"--allow-net", "-C", "/", "curl"},
      {"--allow-net=a.com", "--", "--allow-net", "curl"},
      {"--allow-write", "/out", "--", "-A"},
      {"--allow-write=/out", "--", "--allow-all", "sh"},
      {"-A", "--", "curl"},
      {"-A", "--deny-net=x.com", "curl"},
      {"--allow-net", "--secret", "K", "--", "curl"},
      {"--snapshot-exclude", "--allow-net", "--", "true"},
      {"-C", "--allow-net", "true"},
      {"--allow-env", "--allow-net", "--", "true"},
      {"--allow-env", "A", "--allow-net", "--", "x"},
      {"--allow-env", "A", "--allow-net", "x", "y"},  // x is the value of --allow-net
  };
  for (const auto& args : cases) {
    CAPTURE(show(args));
    auto guess = cli::guess_new_net(args);
    REQUIRE(guess.has_value());
    const auto& p = parse(args, {"K=v"}).policy;
    bool host =
        (p.net == NetMode::Host || p.allow_all) && p.allow_net.empty() && p.deny_net.empty() && p.secrets.empty();
    CHECK(*guess == !host);
  }
  // Nothing to guess from where the parse fails on the options.
  CHECK_FALSE(cli::guess_new_net({"--allow-net=", "--", "curl"}).has_value());
  CHECK_FALSE(cli::guess_new_net({"--allow-write", "make"}).has_value());
}

TEST_CASE("--help names the snapshot commands") {
  auto h = parse({"--help"}).text;
  CHECK(h.find("zerobox snapshot COMMAND") != std::string::npos);
  for (const char* sub : {"list", "show", "diff", "accept", "discard", "restore", "clean"}) {
    CAPTURE(sub);
    CHECK(h.find(std::string("\n  ") + sub + " ") != std::string::npos);
  }
  CHECK(h.find("Exit status") != std::string::npos);
}

TEST_CASE("--allow-write=LIST splits on commas, honours \\, and repeats add") {
  auto p = parse({"--allow-write=/a,/b\\,c", "--allow-write=/d", "--", "true"}).policy;
  CHECK_FALSE(p.write_all);
  CHECK(p.allow_write == std::vector<std::string>{"/a", "/b,c", "/d"});
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

  // An empty entry is an error, not the working directory.
  for (const char* text : {"allow-write = \"\"\n", "allow-write = [\"/w\", \"\"]\n", "allow-write = \"/a,,/b\"\n",
                           "allow-read = [\"\"]\n", "deny-write = \"\"\n", "allow-net = \"\"\n"}) {
    CAPTURE(text);
    test::write_file(t / "empty.toml", text);
    try {
      parse({"--profile", t / "empty.toml", "--", "true"});
      FAIL("no usage error");
    } catch (const UsageError& e) {
      CHECK(e.message.find("empty value") != std::string::npos);
    }
  }
  test::write_file(t / "none.toml", "allow-write = []\n");
  CHECK(parse({"--profile", t / "none.toml", "--", "true"}).policy.allow_write.empty());

  test::write_file(t / "bad.toml", "no-such-key = 1\n");
  CHECK_THROWS_AS(parse({"--profile", t / "bad.toml", "--", "true"}), UsageError);
  test::write_file(t / "broken.toml", "allow-write = [\n");
  CHECK_THROWS_AS(parse({"--profile", t / "broken.toml", "--", "true"}), UsageError);
  CHECK_THROWS_AS(parse({"--profile", t / "missing.toml", "--", "true"}), SetupError);
}
