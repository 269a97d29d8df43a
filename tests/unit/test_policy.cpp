// Tests for src/policy/ (finalize.cpp, fs_rules.cpp, policy.cpp)
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>

#include "policy/policy.hpp"
#include "testutil.hpp"

using namespace zb;

namespace {
policy::Caller caller_in(const std::string& cwd, const std::string& home) {
  policy::Caller c;
  c.cwd = cwd;
  c.home = home;
  c.env = {{"PATH", "/usr/bin:/bin"}, {"HOME", home}, {"USER", "u"}, {"SECRET", "x"}, {"LANG", "C"}};
  return c;
}
bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}
}  // namespace

TEST_CASE("finalize canonicalises allow paths and creates a missing leaf only for writes") {
  test::TempDir t;
  test::mkdirs(t / "a");
  zerobox::Policy p;
  p.argv = {"true"};
  p.allow_write = {"a/../a", "newdir"};
  auto c = caller_in(t.path(), t.path());
  auto resolved = policy::finalize(p, c);
  REQUIRE(resolved);
  CHECK(p.allow_write == std::vector<std::string>{t / "a", t / "newdir"});
  struct stat st{};
  CHECK(::stat((t / "newdir").c_str(), &st) == 0);
}

TEST_CASE("finalize refuses an allow path whose parent is missing, and a cwd inside a denied path") {
  test::TempDir t;
  auto c = caller_in(t.path(), t.path());
  zerobox::Policy p;
  p.argv = {"true"};
  p.allow_write = {"no/such"};
  auto r = policy::finalize(p, c);
  REQUIRE_FALSE(r);
  CHECK(r.error().message().find("--allow-write") != std::string::npos);

  zerobox::Policy q;
  q.argv = {"true"};
  q.deny_read = {t.path()};
  auto r2 = policy::finalize(q, c);
  REQUIRE_FALSE(r2);
  CHECK(r2.error().message().find("inside denied path") != std::string::npos);

  zerobox::Policy m;
  m.argv = {"true"};
  m.cwd = t / "missing";
  CHECK_FALSE(policy::finalize(m, c));
}

TEST_CASE("domain rules and secrets mean filtered mode; secrets get placeholders") {
  test::TempDir t;
  auto c = caller_in(t.path(), t.path());
  zerobox::Policy p;
  p.argv = {"true"};
  p.allow_net = {"example.com"};
  auto rp = policy::finalize(p, c);
  REQUIRE(rp);
  CHECK(p.net == zerobox::NetMode::Filtered);
  auto env = policy::build_env(p, *rp, c);
  CHECK(has(env, "HTTPS_PROXY=http://127.0.0.1:3128"));
  CHECK(has(env, "all_proxy=http://127.0.0.1:3128"));
  CHECK(has(env, "NODE_USE_ENV_PROXY=1"));
  zerobox::Policy q;
  q.argv = {"true"};
  q.net = zerobox::NetMode::Host;  // bare --allow-net
  q.deny_net = {"evil.com"};
  auto rq = policy::finalize(q, c);
  REQUIRE(rq);
  CHECK(q.net == zerobox::NetMode::Filtered);
  CHECK(rq->allow_net_all);
  zerobox::Policy s;
  s.argv = {"true"};
  s.secrets = {{"K", "value-1234", {}, {}}};
  auto rs = policy::finalize(s, c);
  REQUIRE(rs);
  CHECK(s.net == zerobox::NetMode::Filtered);
  const std::string& ph = rs->placeholders[0];
  REQUIRE(ph.size() == 15 + 64);
  CHECK(ph.starts_with("ZEROBOX_SECRET_"));
  CHECK(ph.find_first_not_of("0123456789abcdef", 15) == std::string::npos);
  auto senv = policy::build_env(s, *rs, c);
  CHECK(has(senv, "K=" + ph));
  for (const auto& kv : senv) CHECK(kv.find("value-1234") == std::string::npos);
}

TEST_CASE("secrets: files, conflicts and bad values") {
  test::TempDir t;
  auto c = caller_in(t.path(), t.path());
  policy::Resolved last;  // of the last call that succeeded
  auto with = [&](std::vector<zerobox::Secret> secrets, auto&& edit) {
    zerobox::Policy p;
    p.argv = {"true"};
    p.secrets = std::move(secrets);
    edit(p);
    auto r = policy::finalize(p, c);
    if (r) last = *r;
    return std::make_pair(r ? std::string() : r.error().message(), p);
  };
  auto none = [](zerobox::Policy&) {};

  test::write_file(t / "key", "from-a-file\n");
  auto [err, p] = with({{"K", "", {}, t / "key"}}, none);
  CHECK(err == "");
  CHECK(p.secrets[0].value == "from-a-file");  // one trailing newline stripped
  CHECK(std::find(p.deny_read.begin(), p.deny_read.end(), t / "key") != p.deny_read.end());

  CHECK(with({{"K", "", {}, t / "missing"}}, none).first.find("--secret-file K") != std::string::npos);
  CHECK(with({{"K", "", {}, {}}}, none).first.find("empty") != std::string::npos);
  CHECK(with({{"K", "a\r\nX-Evil: 1", {}, {}}}, none).first.find("control character") != std::string::npos);
  CHECK(with({{"K", "one-value", {}, {}}, {"K", "two-value", {}, {}}}, none).first.find("more than once") !=
        std::string::npos);
  CHECK(with({{"K", "one-value", {}, {}}}, [](zerobox::Policy& q) {
          q.env_set = {{"K", "x"}};
        }).first.find("--env K") != std::string::npos);
  CHECK(with({{"K", "one-value", {}, {}}}, [](zerobox::Policy& q) {
          q.no_sandbox = true;
        }).first.find("--no-sandbox") != std::string::npos);
  // -A or a bare --allow-net with a secret: everything through the proxy.
  auto [err2, all] = with({{"K", "one-value", {}, {}}}, [](zerobox::Policy& q) { q.allow_all = true; });
  CHECK(err2 == "");
  CHECK(all.net == zerobox::NetMode::Filtered);
  CHECK(last.allow_net_all);
}

TEST_CASE("protected names inside writable roots are read-only or reported absent") {
  test::TempDir t;
  test::mkdirs(t / "repo/.git/hooks");
  test::write_file(t / "repo/.git/config", "");
  test::write_file(t / "repo/.bashrc", "");
  test::mkdirs(t / "home/.ssh");
  auto c = caller_in(t / "repo", t / "home");
  zerobox::Policy p;
  p.argv = {"true"};
  p.allow_write = {t / "repo"};
  auto resolved = policy::finalize(p, c);
  REQUIRE(resolved);
  auto fs = policy::compute_fs(p, *resolved, c);
  CHECK(has(fs.writable, t / "repo"));
  CHECK(has(fs.read_only, t / "repo/.git/hooks"));
  CHECK(has(fs.read_only, t / "repo/.git/config"));
  CHECK(has(fs.read_only, t / "repo/.bashrc"));
  CHECK(has(fs.absent_protected, t / "repo/.envrc"));
  CHECK(has(fs.masked, t / "home/.ssh"));

  SUBCASE("--no-protect lifts them") {
    p.protect = false;
    auto fs2 = policy::compute_fs(p, *resolved, c);
    CHECK(fs2.read_only.empty());
    CHECK_FALSE(has(fs2.masked, t / "home/.ssh"));
  }
  SUBCASE("naming one explicitly lifts only that one") {
    p.allow_write.push_back(t / "repo/.bashrc");
    p.allow_read.push_back(t / "home/.ssh");
    auto fs2 = policy::compute_fs(p, *resolved, c);
    CHECK_FALSE(has(fs2.read_only, t / "repo/.bashrc"));
    CHECK(has(fs2.read_only, t / "repo/.git/hooks"));
    CHECK_FALSE(has(fs2.masked, t / "home/.ssh"));
  }
}

TEST_CASE("deny wins over allow") {
  test::TempDir t;
  test::mkdirs(t / "w/inner");
  auto c = caller_in(t.path(), t.path());
  zerobox::Policy p;
  p.argv = {"true"};
  p.allow_write = {t / "w/inner"};
  p.deny_write = {t / "w"};
  p.deny_read = {t / "w/inner"};
  auto resolved = policy::finalize(p, c);
  REQUIRE(resolved);
  auto fs = policy::compute_fs(p, *resolved, c);
  CHECK(fs.writable.empty());
  CHECK(has(fs.masked, t / "w/inner"));
}

TEST_CASE("--allow-read keeps system paths and adds writable paths and the binary") {
  test::TempDir t;
  test::mkdirs(t / "data");
  test::mkdirs(t / "out");
  auto c = caller_in(t.path(), t.path());
  zerobox::Policy p;
  p.argv = {"sh"};
  p.read_restricted = true;
  p.allow_read = {t / "data"};
  p.allow_write = {t / "out"};
  auto resolved = policy::finalize(p, c);
  REQUIRE(resolved);
  auto fs = policy::compute_fs(p, *resolved, c);
  CHECK(has(fs.readable, "/usr"));
  CHECK(has(fs.readable, "/etc"));
  CHECK(has(fs.readable, t / "data"));
  CHECK(has(fs.readable, t / "out"));
  CHECK_FALSE(fs.scratch_host_content);
}

TEST_CASE("build_env: the default allowlist, then allow, deny and set") {
  auto c = caller_in("/", "/home/u");
  zerobox::Policy p;
  auto env = policy::build_env(p, {}, c);
  CHECK(has(env, "PATH=/usr/bin:/bin"));
  CHECK(has(env, "USER=u"));
  CHECK_FALSE(has(env, "SECRET=x"));
  p.allow_env = {"SECRET"};
  CHECK(has(policy::build_env(p, {}, c), "SECRET=x"));
  p.deny_env = {"SECRET", "USER"};
  env = policy::build_env(p, {}, c);
  CHECK_FALSE(has(env, "SECRET=x"));
  CHECK_FALSE(has(env, "USER=u"));
  p.env_set = {{"NEW", "1"}, {"PATH", "/x"}};
  env = policy::build_env(p, {}, c);
  CHECK(has(env, "NEW=1"));
  CHECK(has(env, "PATH=/x"));
  p.env_all = true;
  p.deny_env = {};
  CHECK(has(policy::build_env(p, {}, c), "SECRET=x"));
}

TEST_CASE("resolve_command searches PATH like execvp") {
  CHECK(policy::resolve_command("sh", "/nonexistent:/bin:/usr/bin", "/") != "");
  CHECK(policy::resolve_command("no-such-command-zb", "/bin:/usr/bin", "/") == "");
  CHECK(policy::resolve_command("/bin/sh", "", "/") == "/bin/sh");
}

TEST_CASE("a denied path that does not exist gets a mask anchor when its parent is writable") {
  test::TempDir t;
  test::mkdirs(t / "w");
  auto c = caller_in(t.path(), t.path());
  zerobox::Policy p;
  p.argv = {"true"};
  p.allow_write = {t / "w"};
  p.deny_write = {t / "w/later", t / "w/missing/deeper"};
  p.deny_read = {t / "w/secret", t / "elsewhere"};
  auto resolved = policy::finalize(p, c);
  REQUIRE(resolved);
  auto fs = policy::compute_fs(p, *resolved, c);
  CHECK(fs.mask_anchors == std::vector<std::string>{t / "w/later", t / "w/secret"});
  CHECK(has(fs.read_only, t / "w/later"));
  CHECK(has(fs.masked, t / "w/secret"));
  // Its parent is missing too: moved aside at exit instead.
  CHECK(has(fs.absent_protected, t / "w/missing/deeper"));
  // Outside every writable path nothing can create it: nothing to do.
  CHECK_FALSE(has(fs.mask_anchors, t / "elsewhere"));
  CHECK_FALSE(has(fs.absent_protected, t / "elsewhere"));
}

TEST_CASE("snapshots track the working directory, the writable paths inside it, or what --snapshot-path names") {
  test::TempDir t;
  test::mkdirs(t / "proj/out");
  test::mkdirs(t / "proj/gen");
  test::mkdirs(t / "elsewhere");
  auto c = caller_in(t / "proj", t.path());
  auto tracked = [&](zerobox::Policy p) {
    p.argv = {"true"};
    p.snapshot = zerobox::SnapshotMode::Review;
    auto r = policy::finalize(p, c);
    REQUIRE(r);
    return p.snapshot_paths;
  };
  zerobox::Policy p;
  p.allow_write = {"."};
  CHECK(tracked(p) == std::vector<std::string>{t / "proj"});
  p.allow_write = {"out", "gen", t / "elsewhere"};
  CHECK(tracked(p) == std::vector<std::string>{t / "proj/gen", t / "proj/out"});
  p.allow_write = {t / "elsewhere"};
  CHECK(tracked(p) == std::vector<std::string>{t / "elsewhere"});
  p.allow_write = {"."};
  p.snapshot_paths = {"out", "out/../out", t / "proj"};
  CHECK(tracked(p) == std::vector<std::string>{t / "proj"});
  p = {};
  p.write_all = true;
  CHECK(tracked(p) == std::vector<std::string>{"/"});
  p = {};
  p.allow_write = {"."};
  p.deny_write = {"gen"};
  p.snapshot_paths = {"gen"};
  p.argv = {"true"};
  p.snapshot = zerobox::SnapshotMode::Snapshot;
  auto r = policy::finalize(p, c);
  REQUIRE_FALSE(r);
  CHECK(r.error().message().find("not writable") != std::string::npos);
  p.snapshot_paths = {"missing"};
  CHECK_FALSE(policy::finalize(p, c));
  p = {};
  p.argv = {"true"};
  p.snapshot_exclude = {"*.o"};
  CHECK_FALSE(policy::finalize(p, c));  // needs a snapshot mode
  p = {};
  p.argv = {"true"};
  p.snapshot = zerobox::SnapshotMode::Snapshot;
  p.no_sandbox = true;
  CHECK_FALSE(policy::finalize(p, c));
}

TEST_CASE("bound unix sockets are read from /proc/net/unix: absolute paths only") {
  test::TempDir t;
  test::write_file(t / "unix",
                   "Num       RefCount Protocol Flags    Type St Inode Path\n"
                   "0000000000000000: 00000002 00000000 00010000 0001 01 6689200 /tmp/a b.sock\n"
                   "0000000000000000: 00000002 00000000 00000000 0002 01 6689201 /run/systemd/journal/dev-log\n"
                   "0000000000000000: 00000002 00000000 00010000 0001 01 6689202 @/tmp/.X11-unix/X0\n"
                   "0000000000000000: 00000003 00000000 00000000 0001 03 6689203\n"
                   "0000000000000000: 00000002 00000000 00010000 0001 01 6689204 relative.sock\n"
                   "0000000000000000: 00000002 00000000 00010000 0001 01 6689205 /tmp/a b.sock\n");
  auto socks = policy::bound_unix_sockets(t / "unix");
  CHECK(socks == std::vector<std::string>{"/run/systemd/journal/dev-log", "/tmp/a b.sock"});
  CHECK(policy::bound_unix_sockets(t / "missing").empty());
}

TEST_CASE("profile directories: $XDG_CONFIG_HOME/zerobox when absolute, and ~/.config/zerobox always") {
  CHECK(policy::profile_lookup_dir("/home/u", "") == "/home/u/.config/zerobox");
  CHECK(policy::profile_lookup_dir("/home/u", "/cfg/") == "/cfg/zerobox");
  CHECK(policy::profile_lookup_dir("/home/u", "rel/cfg") == "/home/u/.config/zerobox");
  CHECK(policy::profile_lookup_dir("", "") == "/.config/zerobox");
  CHECK(policy::profile_dirs("/home/u", "") == std::vector<std::string>{"/home/u/.config/zerobox"});
  CHECK(policy::profile_dirs("/home/u", "/home/u/.config") == std::vector<std::string>{"/home/u/.config/zerobox"});
  CHECK(policy::profile_dirs("/home/u", "/x") == std::vector<std::string>{"/home/u/.config/zerobox", "/x/zerobox"});
}

TEST_CASE("profile directories are never writable: read-only when there, guarded when not") {
  test::TempDir t;
  test::mkdirs(t / "home/.config/zerobox");
  test::write_file(t / "home/.config/zerobox/p.toml", "");
  auto c = caller_in(t.path(), t / "home");
  c.env["XDG_CONFIG_HOME"] = t / "home/xdg";
  for (int variant = 0; variant < 3; ++variant) {
    CAPTURE(variant);
    zerobox::Policy p;
    p.argv = {"true"};
    if (variant == 0) p.allow_write = {t / "home"};
    if (variant == 1) p.write_all = true;
    if (variant == 2) {
      p.allow_write = {t / "home/.config"};
      p.protect = false;  // --no-protect does not lift them
    }
    auto resolved = policy::finalize(p, c);
    REQUIRE(resolved);
    auto fs = policy::compute_fs(p, *resolved, c);
    CHECK(has(fs.read_only, t / "home/.config/zerobox"));
    if (variant != 2) CHECK(has(fs.absent_protected, t / "home/xdg/zerobox"));
  }

  SUBCASE("naming one, or a path inside one, in --allow-write is an error") {
    for (const auto& w : {t / "home/.config/zerobox", t / "home/.config/zerobox/sub", t / "home/xdg/zerobox"}) {
      zerobox::Policy p;
      p.argv = {"true"};
      p.allow_write = {w};
      auto r = policy::finalize(p, c);
      REQUIRE_FALSE(r);
      CHECK(r.error().message().find("never writable") != std::string::npos);
    }
    struct stat st{};
    CHECK(::lstat((t / "home/.config/zerobox/sub").c_str(), &st) != 0);
    CHECK(::lstat((t / "home/xdg").c_str(), &st) != 0);
  }
  SUBCASE("a symlinked profile directory: its target is read-only, the link pinned") {
    test::mkdirs(t / "home/dotfiles/zerobox");
    std::filesystem::remove_all(t / "home/.config/zerobox");
    std::filesystem::create_directory_symlink("../dotfiles/zerobox", t / "home/.config/zerobox");
    zerobox::Policy p;
    p.argv = {"true"};
    p.allow_write = {t / "home"};
    auto resolved = policy::finalize(p, c);
    REQUIRE(resolved);
    auto fs = policy::compute_fs(p, *resolved, c);
    CHECK(has(fs.read_only, t / "home/dotfiles/zerobox"));
    CHECK(has(fs.protected_links, t / "home/.config/zerobox"));
  }
  SUBCASE("outside the writable paths there is nothing to protect") {
    zerobox::Policy p;
    p.argv = {"true"};
    p.allow_write = {t / "home/xdg-other"};
    auto resolved = policy::finalize(p, c);
    REQUIRE(resolved);
    auto fs = policy::compute_fs(p, *resolved, c);
    CHECK_FALSE(has(fs.read_only, t / "home/.config/zerobox"));
    CHECK_FALSE(has(fs.absent_protected, t / "home/xdg/zerobox"));
  }
}

TEST_CASE("credentials, histories and browser profiles are unreadable unless named") {
  test::TempDir t;
  test::mkdirs(t / "home");
  for (const char* f : {".npmrc", ".bash_history", ".vault-token"})
    test::write_file(t / (std::string("home/") + f), "");
  for (const char* d : {".docker", ".mozilla", ".config/google-chrome", ".local/share/keyrings"})
    test::mkdirs(t / (std::string("home/") + d));
  test::write_file(t / "home/.docker/config.json", "");
  test::write_file(t / "home/notes.txt", "");
  auto c = caller_in(t.path(), t / "home");
  zerobox::Policy p;
  p.argv = {"true"};
  p.allow_read = {t / "home/.npmrc"};  // named, as --allow-read names it
  auto resolved = policy::finalize(p, c);
  REQUIRE(resolved);
  auto fs = policy::compute_fs(p, *resolved, c);
  for (const char* m :
       {".bash_history", ".vault-token", ".docker", ".mozilla", ".config/google-chrome", ".local/share/keyrings"}) {
    CHECK(has(fs.masked, t / (std::string("home/") + m)));
  }
  CHECK_FALSE(has(fs.masked, t / "home/.docker/config.json"));  // inside a masked directory
  CHECK_FALSE(has(fs.masked, t / "home/.npmrc"));
  CHECK_FALSE(has(fs.masked, t / "home/notes.txt"));
}

TEST_CASE("the store is masked only where the view shows it") {
  policy::FsRules fs;
  policy::mask_where_shown(fs, "/home/u/.local/state/zerobox");
  CHECK(fs.masked == std::vector<std::string>{"/home/u/.local/state/zerobox"});
  policy::FsRules restricted;
  restricted.read_restricted = true;
  restricted.readable = {"/usr", "/home/u/project"};
  policy::mask_where_shown(restricted, "/home/u/.local/state/zerobox");
  CHECK(restricted.masked.empty());
  restricted.readable.push_back("/home/u");
  policy::mask_where_shown(restricted, "/home/u/.local/state/zerobox");
  CHECK(restricted.masked == std::vector<std::string>{"/home/u/.local/state/zerobox"});
}
