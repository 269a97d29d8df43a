#include "cli/cli.hpp"

#include <arpa/inet.h>
#include <fcntl.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <memory>
#include <set>

#include "cli/app.hpp"
#include "exec/status_fd.hpp"
#include "net/rules.hpp"
#include "policy/policy.hpp"
#include "util/error.hpp"
#include "util/path.hpp"
#include "zerobox/zerobox.hpp"

namespace zb::cli {
namespace {

// Flags whose value is optional take it only as "--flag=VALUE": "--allow-write dir"
// must not swallow the command. Bare forms are renamed to hidden internal flags first.
const std::set<std::string> k_optional_value = {"--allow-write", "--allow-net", "--allow-env"};
// Flags that take their value as the next word.
const std::set<std::string> k_takes_value = {
    "--allow-read", "--deny-read", "--deny-write", "--deny-net", "--resolve", "--upstream-ca", "--secret",
    "--secret-file", "--secret-host", "--env", "--deny-env", "-C", "--status-fd", "--profile", "--snapshot-path",
    "--snapshot-exclude", "--tmpfs-size"};

std::vector<std::string> rewrite_optional(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--" || a.empty() || a[0] != '-' || a == "-") break;
    if (k_optional_value.count(a) != 0) {
      out.push_back(a + "-all-internal");
      continue;
    }
    out.push_back(a);
    if (k_takes_value.count(a) != 0 && i + 1 < args.size()) out.push_back(args[++i]);
  }
  for (; i < args.size(); ++i) out.push_back(args[i]);
  return out;
}

void append_list(std::vector<std::string>& dst, const std::vector<std::string>& raw) {
  for (const auto& r : raw) {
    for (auto& part : path::split_list(r)) {
      if (!part.empty()) dst.push_back(std::move(part));
    }
  }
}

std::pair<std::string, std::string> key_value(const std::string& s, const char* flag, bool value_required) {
  auto eq = s.find('=');
  std::string k = s.substr(0, eq);
  if (!policy::valid_env_name(k)) throw UsageError{std::string(flag) + ": invalid name '" + k + "' (expected KEY=VALUE)"};
  if (eq == std::string::npos) {
    if (value_required) throw UsageError{std::string(flag) + ": expected KEY=VALUE, got '" + s + "'"};
    return {k, {}};
  }
  return {k, s.substr(eq + 1)};
}

}  // namespace

std::unique_ptr<CLI::App> make_run_app(RunFlags& f) {
  auto app_owner = std::make_unique<CLI::App>(
      "Run a command in a lightweight Linux sandbox: no writes, no network and a minimal\n"
      "environment unless flags allow more.",
      "zerobox");
  CLI::App& app = *app_owner;
  app.set_version_flag("-V,--version", std::string("zerobox ") + zerobox::version());
  app.prefix_command();
  // CLI11 2.1 has no usage override: widen the "[OPTIONS]" label of the usage line.
  app.get_formatter()->label("OPTIONS", "OPTIONS] [--] COMMAND [ARGS...");
  app.footer("Exit status: the command's own; 128+N if killed by signal N; 2 usage error;\n"
             "125 zerobox could not set up the sandbox; 126 not executable; 127 not found.\n"
             "Full reference: docs/usage.md.");

  const char* fs = "Filesystem";
  app.add_option("--allow-read", f.allow_read, "Limit readable user data to these paths (system paths stay readable)")
      ->group(fs)->type_name("P[,P...]");
  app.add_option("--deny-read", f.deny_read, "These paths cannot be read; wins over --allow-read")->group(fs)->type_name("P[,P...]");
  app.add_option("--allow-write", f.allow_write, "These paths are writable; with no value, everything is")
      ->group(fs)->type_name("[=P,...]");
  app.add_flag("--allow-write-all-internal", f.write_all)->group("");
  app.add_option("--deny-write", f.deny_write, "These paths stay read-only; wins over --allow-write")->group(fs)->type_name("P[,P...]");
  app.add_flag("--no-protect", f.no_protect, "Do not protect shell start-up files, git hooks and credentials")->group(fs);
  app.add_option("--tmpfs-size", f.tmpfs_size, "Most scratch /tmp, /var/tmp and /dev/shm hold together (default: half the RAM)")
      ->group(fs)->type_name("SIZE[K|M|G]");

  const char* snap = "Snapshots";
  app.add_flag("--snapshot", f.snapshot, "Record writes in an overlay, apply them at exit, keep them undoable")->group(snap);
  app.add_flag("--restore", f.restore, "Record writes, then throw them away at exit")->group(snap);
  app.add_flag("--review", f.review, "Record writes and keep them pending until accepted")->group(snap);
  app.add_option("--snapshot-path", f.snapshot_paths, "Which writable paths are tracked")->group(snap)->type_name("P[,P...]");
  app.add_option("--snapshot-exclude", f.snapshot_exclude, "Paths never journaled (gitignore-like globs)")->group(snap)->type_name("GLOB[,...]");

  const char* net = "Network";
  app.add_option("--allow-net", f.allow_net, "Allow these domains; with no value, the full network")->group(net)->type_name("[=D,...]");
  app.add_flag("--allow-net-all-internal", f.net_all)->group("");
  app.add_option("--deny-net", f.deny_net, "Never these domains")->group(net)->type_name("D[,D...]");
  app.add_option("--resolve", f.resolve, "Connect to IP for HOST (like curl --resolve)")->group(net)->type_name("HOST:IP");
  app.add_option("--upstream-ca", f.upstream_ca, "Extra CA certificates for upstream TLS")->group(net)->type_name("FILE");

  const char* sec = "Secrets";
  app.add_option("--secret", f.secrets, "The command sees a placeholder; the proxy substitutes VALUE")->group(sec)->type_name("KEY[=VALUE]");
  app.add_option("--secret-file", f.secret_files, "Same, VALUE read from a file")->group(sec)->type_name("KEY=PATH");
  app.add_option("--secret-host", f.secret_hosts, "Restrict KEY to these hosts")->group(sec)->type_name("KEY=H[,H...]");

  const char* envg = "Environment";
  app.add_option("--env", f.envs, "Set a variable (repeatable)")->group(envg)->type_name("KEY=VALUE");
  app.add_option("--allow-env", f.allow_env, "Inherit these variables; with no value, all of them")->group(envg)->type_name("[=K,...]");
  app.add_flag("--allow-env-all-internal", f.env_all)->group("");
  app.add_option("--deny-env", f.deny_env, "Drop these variables; wins over --allow-env")->group(envg)->type_name("K[,K...]");

  const char* other = "Other";
  app.add_flag("-A,--allow-all", f.allow_all, "All filesystem and network permissions (env and secrets still apply)")->group(other);
  app.add_flag("--no-sandbox", f.no_sandbox, "No isolation at all; the environment policy still applies")->group(other);
  app.add_flag("--strict-sandbox", f.strict, "Fail (125) if any isolation layer is unavailable")->group(other);
  app.add_option("-C", f.cwd, "Working directory of the command")->group(other)->type_name("DIR");
  app.add_option("--status-fd", f.status_fd, "JSON Lines lifecycle events on fd N (N >= 3)")->group(other)->type_name("N");
  app.add_flag("--debug", f.debug, "Print the effective policy, mounts, layers and decisions on stderr")->group(other);
  app.add_option("--profile", f.profile, "Load flags from a TOML profile (~/.config/zerobox/NAME.toml or a file)")
      ->group(other)->type_name("NAME|FILE");
  app.add_flag("--quiet", f.quiet, "No zerobox messages on stderr except errors")->group(other);
  return app_owner;
}

std::optional<bool> guess_new_net(const std::vector<std::string>& args) {
  // The prestart's pipes take the lowest free fds: a --status-fd (or a /dev/fd/N path)
  // naming one that is not open yet would find one of them instead of being refused.
  // List options take several words, so every word up to "--" is checked, not only
  // those a simple reading takes for options.
  for (size_t i = 0; i < args.size() && args[i] != "--"; ++i) {
    const std::string& a = args[i];
    if (a.find("/fd/") != std::string::npos) return std::nullopt;
    if (a == "--status-fd" || a.rfind("--status-fd=", 0) == 0) {
      std::string n = a == "--status-fd" ? (i + 1 < args.size() ? args[i + 1] : "") : a.substr(12);
      char* end = nullptr;
      long fd = std::strtol(n.c_str(), &end, 10);
      if (n.empty() || *end != '\0' || fd < 0 || fd > INT_MAX || ::fcntl(static_cast<int>(fd), F_GETFD) < 0) {
        return std::nullopt;
      }
    }
  }
  bool host = false, filtered = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--" || a.empty() || a[0] != '-' || a == "-") {
      bool has_command = a != "--" || i + 1 < args.size();
      if (!has_command) return std::nullopt;
      return !host || filtered;
    }
    if (a == "--no-sandbox" || a == "-h" || a == "--help" || a == "-V" || a == "--version" ||
        a.rfind("--profile", 0) == 0 || (a[1] != '-' && a.size() > 2)) {
      return std::nullopt;
    }
    if (a == "--allow-net" || a == "-A" || a == "--allow-all") host = true;
    for (const char* f : {"--allow-net=", "--deny-net", "--secret"}) {
      if (a.rfind(f, 0) == 0) filtered = true;
    }
    if (k_takes_value.count(a) != 0) ++i;
  }
  return std::nullopt;
}

Parsed parse_args(const std::vector<std::string>& raw_args, const std::vector<std::string>& environ) {
  RunFlags f;
  std::unique_ptr<CLI::App> app_owner = make_run_app(f);
  CLI::App& app = *app_owner;
  // The checks below read the parsed values under the names of their flags.
  auto &allow_read = f.allow_read, &deny_read = f.deny_read, &allow_write = f.allow_write, &deny_write = f.deny_write,
       &allow_net = f.allow_net, &deny_net = f.deny_net, &resolve = f.resolve, &upstream_ca = f.upstream_ca,
       &secrets = f.secrets, &secret_files = f.secret_files, &secret_hosts = f.secret_hosts, &envs = f.envs,
       &allow_env = f.allow_env, &deny_env = f.deny_env, &snapshot_paths = f.snapshot_paths,
       &snapshot_exclude = f.snapshot_exclude;
  auto &write_all = f.write_all, &net_all = f.net_all, &env_all = f.env_all, &allow_all = f.allow_all,
       &no_sandbox = f.no_sandbox, &strict = f.strict, &debug = f.debug, &quiet = f.quiet, &no_protect = f.no_protect,
       &snapshot = f.snapshot, &restore = f.restore, &review = f.review;
  auto &cwd = f.cwd, &profile = f.profile, &status_fd = f.status_fd;

  std::vector<std::string> args = rewrite_optional(raw_args);
  Parsed out;
  // Help and version are answered before CLI11 parses: it reports them by throwing,
  // and the first exception in a static binary costs milliseconds of unwinder set-up.
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--" || a.empty() || a[0] != '-') break;
    if (k_takes_value.count(a) != 0) {
      ++i;  // its value, whatever it looks like
      continue;
    }
    if (a == "-h" || a == "--help") {
      out.action = Action::Help;
      out.text = app.help();
      return out;
    }
    if (a == "-V" || a == "--version") {
      out.action = Action::Version;
      out.text = std::string("zerobox ") + zerobox::version() + "\n";
      return out;
    }
  }
  std::vector<std::string> rev(args.rbegin(), args.rend());
  try {
    app.parse(rev);
  } catch (const CLI::CallForHelp&) {
    out.action = Action::Help;
    out.text = app.help();
    return out;
  } catch (const CLI::CallForVersion&) {
    out.action = Action::Version;
    out.text = std::string("zerobox ") + zerobox::version() + "\n";
    return out;
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    for (auto& c : msg) {
      if (c == '\n') c = ' ';
    }
    if (msg.rfind("The following arguments were not expected: ", 0) == 0) {
      msg = "unrecognized option '" + msg.substr(43) + "'";
    }
    throw UsageError{msg};
  }

  zerobox::Policy& p = out.policy;
  if (!profile.empty()) apply_profile(profile, p, environ);

  if (!allow_read.empty()) p.read_restricted = true;
  append_list(p.allow_read, allow_read);
  append_list(p.deny_read, deny_read);
  append_list(p.allow_write, allow_write);
  if (write_all) p.write_all = true;
  append_list(p.deny_write, deny_write);
  if (no_protect) p.protect = false;
  if (app.count("--tmpfs-size") != 0) {
    auto size = policy::parse_size(f.tmpfs_size);
    if (!size) throw UsageError{"--tmpfs-size: '" + f.tmpfs_size + "' is not a size (a number of bytes, or with K, M, G or T)"};
    p.tmpfs_size = *size;
  }

  if (net_all && p.net == zerobox::NetMode::None) p.net = zerobox::NetMode::Host;
  append_list(p.allow_net, allow_net);
  append_list(p.deny_net, deny_net);
  for (const auto& r : resolve) {
    auto colon = r.find(':');
    if (colon == std::string::npos || colon == 0) throw UsageError{"--resolve: expected HOST:IP, got '" + r + "'"};
    std::string host = r.substr(0, colon), ip = r.substr(colon + 1);
    if (ip.size() > 2 && ip.front() == '[' && ip.back() == ']') ip = ip.substr(1, ip.size() - 2);
    unsigned char buf[16];
    if (::inet_pton(AF_INET, ip.c_str(), buf) != 1 && ::inet_pton(AF_INET6, ip.c_str(), buf) != 1) {
      throw UsageError{"--resolve: '" + ip + "' is not an IP address"};
    }
    p.resolve.emplace_back(host, ip);
  }
  append_list(p.upstream_ca, upstream_ca);

  for (const auto& s : secrets) {
    auto [k, v] = key_value(s, "--secret", false);
    if (s.find('=') == std::string::npos) {
      auto fromenv = policy::find_env(environ, k);
      if (!fromenv) throw SetupError{"--secret " + k + ": no such variable in the environment"};
      v = *fromenv;
    }
    p.secrets.push_back({k, v, {}, {}});
  }
  for (const auto& s : secret_files) {
    auto [k, file] = key_value(s, "--secret-file", true);
    p.secrets.push_back({k, "", {}, file});
  }
  for (const auto& s : secret_hosts) {
    auto [k, hosts] = key_value(s, "--secret-host", true);
    bool found = false;
    for (auto& secret : p.secrets) {
      if (secret.key == k) {
        append_list(secret.hosts, {hosts});
        found = true;
      }
    }
    if (!found) throw UsageError{"--secret-host " + k + ": no --secret or --secret-file named " + k};
  }

  for (const auto& e : envs) p.env_set.push_back(key_value(e, "--env", true));
  if (env_all) p.env_all = true;
  append_list(p.allow_env, allow_env);
  append_list(p.deny_env, deny_env);

  int modes = int(snapshot) + int(restore) + int(review);
  if (modes > 1) throw UsageError{"--snapshot, --restore and --review exclude each other"};
  if (snapshot) p.snapshot = zerobox::SnapshotMode::Snapshot;
  if (restore) p.snapshot = zerobox::SnapshotMode::Restore;
  if (review) p.snapshot = zerobox::SnapshotMode::Review;
  append_list(p.snapshot_paths, snapshot_paths);
  append_list(p.snapshot_exclude, snapshot_exclude);

  if (allow_all) p.allow_all = true;
  if (no_sandbox) p.no_sandbox = true;
  if (strict) p.strict = true;
  if (debug) p.debug = true;
  if (quiet) p.quiet = true;
  if (!cwd.empty()) p.cwd = cwd;
  if (!status_fd.empty()) {
    bool digits = !status_fd.empty() && status_fd.size() <= 9 &&
                  std::all_of(status_fd.begin(), status_fd.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) throw UsageError{"--status-fd: '" + status_fd + "' is not a file descriptor number"};
    int fd = std::stoi(status_fd);
    std::string why;
    if (!exec::StatusFd::valid(fd, why)) throw UsageError{why};
    p.status_fd = fd;
  }

  // CLI11 leaves everything from the first word it did not take: "--" and the command,
  // the command alone, or an option it did not recognise.
  std::vector<std::string> rest = app.remaining();
  if (!rest.empty()) {
    const std::string& first = args[args.size() - rest.size()];
    if (first == "--") {
      rest.erase(rest.begin());
    } else if (first.size() > 1 && first[0] == '-') {
      throw UsageError{"unrecognized option '" + first + "'"};
    }
  }
  p.argv = std::move(rest);
  if (p.argv.empty()) throw UsageError{"no command given"};
  // Domain rules and --resolve names are syntax, checked here by the proxy's own grammar.
  for (const auto& r : p.allow_net) {
    if (auto rule = net::parse_rule(r); !rule) throw UsageError{"--allow-net: " + rule.error().message()};
  }
  for (const auto& r : p.deny_net) {  // denying loopback needs no port
    if (auto rule = net::parse_rule(r, false); !rule) throw UsageError{"--deny-net: " + rule.error().message()};
  }
  for (const auto& sec : p.secrets) {
    for (const auto& r : sec.hosts) {
      if (auto rule = net::parse_rule(r); !rule) {
        throw UsageError{"--secret-host " + sec.key + ": " + rule.error().message()};
      }
    }
  }
  for (const auto& [host, ip] : p.resolve) {
    if (auto h = net::parse_host(host); !h || h->kind != net::HostKind::Name) {
      throw UsageError{"--resolve: '" + host + "' is not a host name" + (h ? "" : ": " + h.error().message())};
    }
  }
  return out;
}

}  // namespace zb::cli
