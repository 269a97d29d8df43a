#include "cli/cli.hpp"

#include <arpa/inet.h>
#include <fcntl.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "cli/app.hpp"
#include "exec/status_fd.hpp"
#include "net/rules.hpp"
#include "policy/policy.hpp"
#include "util/env.hpp"
#include "util/error.hpp"
#include "util/path.hpp"
#include "zerobox/zerobox.hpp"

namespace zb::cli {
namespace {

// Flags whose value is optional: "--flag=VALUE", or "--flag VALUE" when VALUE does not
// start with "-" (as upstream Zerobox reads them). Bare, they mean "everything" and reach
// CLI11 as their hidden twin "--flag-all-internal" (app.hpp).
const std::set<std::string> k_optional_value = {"--allow-write", "--allow-net", "--allow-env"};
// Long options that take their value after "=" or as the next word.
const std::set<std::string> k_takes_value = {"--allow-read",  "--deny-read",     "--deny-write",       "--deny-net",
                                             "--resolve",     "--upstream-ca",   "--secret",           "--secret-file",
                                             "--secret-host", "--env",           "--deny-env",         "--status-fd",
                                             "--profile",     "--snapshot-path", "--snapshot-exclude", "--tmpfs-size"};
// Short options: those that take a value (attached, "-CDIR", or as the next word) and flags.
constexpr std::string_view k_short_value = "C";
constexpr std::string_view k_short_flags = "AhV";

// One option as the scan reads it.
struct Word {
  std::string name;                  // "--allow-write", "-C", "-AC" (a cluster of short options)
  std::optional<std::string> value;  // attached or the next word; none for a flag or a bare optional value
  std::vector<std::string> typed;    // the words it was given as (one or two)
};

// argv split where zerobox's options end. This is the one reading of argv: the answer to
// --help and --version, the words CLI11 parses and guess_new_net all come from it, so they
// cannot disagree on what is an option. Options end at the first "--", even where an
// option still wants its value (it is left without one, and CLI11 says so), or at the
// first word that does not start with "-" ("-" itself is such a word). CLI11 never sees
// the command: left to itself it would let a list option eat the words after its value,
// and "--" with them.
struct Scan {
  std::vector<Word> options;
  std::vector<std::string> command;
  std::string error;  // the first usage error of the scan itself: an empty value
};

Scan scan_args(const std::vector<std::string>& args) {
  Scan s;
  size_t i = 0;
  // The next word as the value of the option at i, if it can be one.
  auto next_value = [&](Word& w, bool optional) {
    if (i + 1 >= args.size() || args[i + 1] == "--") return;
    if (optional && args[i + 1].starts_with('-')) return;
    w.value = args[++i];
    w.typed.push_back(*w.value);
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--" || a.size() < 2 || a[0] != '-') {
      s.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i + (a == "--" ? 1 : 0)), args.end());
      break;
    }
    Word w{.name = a, .value = std::nullopt, .typed = {a}};
    bool takes_value = false;
    if (a[1] == '-') {
      size_t eq = a.find('=');
      w.name = a.substr(0, eq);
      bool optional = k_optional_value.count(w.name) != 0;
      takes_value = optional || k_takes_value.count(w.name) != 0;
      if (eq != std::string::npos) {
        w.value = a.substr(eq + 1);
      } else if (takes_value) {
        next_value(w, optional);
      }
    } else {
      // A cluster, as CLI11 reads it: flags, then perhaps one option with a value
      // ("-AC DIR", "-ACDIR"). An unknown letter ends it (CLI11 refuses the word).
      for (size_t j = 1; j < a.size(); ++j) {
        if (k_short_value.find(a[j]) != std::string_view::npos) {
          takes_value = true;
          if (j + 1 < a.size()) {
            w.value = a.substr(j + 1);
          } else {
            next_value(w, false);
          }
          break;
        }
        if (k_short_flags.find(a[j]) == std::string_view::npos) break;
      }
    }
    if (takes_value && w.value && w.value->empty() && s.error.empty()) s.error = w.name + ": empty value";
    s.options.push_back(std::move(w));
  }
  return s;
}

// A list value, split. One with no entry at all ("", ",") is a usage error: it is a
// mistake, and read as "no value" it would widen the policy.
void append_list(std::vector<std::string>& dst, const std::vector<std::string>& raw, const std::string& flag) {
  for (const auto& r : raw) {
    size_t before = dst.size();
    for (auto& part : path::split_list(r)) {
      if (!part.empty()) dst.push_back(std::move(part));
    }
    if (dst.size() == before) throw UsageError{flag + ": empty value"};
  }
}

std::pair<std::string, std::string> key_value(const std::string& s, const char* flag, bool value_required) {
  auto eq = s.find('=');
  std::string k = s.substr(0, eq);
  if (!env::valid_name(k)) throw UsageError{std::string(flag) + ": invalid name '" + k + "' (expected KEY=VALUE)"};
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
  // Like git's list of commands: `zerobox snapshot` is a subcommand --help should name.
  app.footer([] {
    SnapshotFlags unused;
    auto snapshot_app = make_snapshot_app(unused);
    std::string out = "Snapshot commands: zerobox snapshot COMMAND [ARGS...] (each has --help):\n";
    for (const CLI::App* sub : std::as_const(*snapshot_app).get_subcommands([](const CLI::App*) { return true; })) {
      std::string name = sub->get_name();
      out += "  " + name + std::string(name.size() < 10 ? 10 - name.size() : 1, ' ') + sub->get_description() + "\n";
    }
    return out;
  });
  app.footer(
      "Exit status: the command's own; 128+N if killed by signal N; 2 usage error;\n"
      "125 zerobox could not set up the sandbox; 126 not executable; 127 not found.\n"
      "Full reference: docs/usage.md.");

  const char* fs = "Filesystem";
  app.add_option("--allow-read", f.allow_read, "Limit readable user data to these paths (system paths stay readable)")
      ->group(fs)
      ->type_name("P[,P...]");
  app.add_option("--deny-read", f.deny_read, "These paths cannot be read; wins over --allow-read")
      ->group(fs)
      ->type_name("P[,P...]");
  app.add_option("--allow-write", f.allow_write, "These paths are writable; with no value, everything is")
      ->group(fs)
      ->type_name("[=P,...]");
  app.add_flag("--allow-write-all-internal", f.write_all)->group("");
  app.add_option("--deny-write", f.deny_write, "These paths stay read-only; wins over --allow-write")
      ->group(fs)
      ->type_name("P[,P...]");
  app.add_flag("--no-protect", f.no_protect, "Do not protect shell start-up files, git hooks and credentials")
      ->group(fs);
  app.add_option("--tmpfs-size", f.tmpfs_size,
                 "Most scratch /tmp, /var/tmp and /dev/shm hold together (default: half the RAM)")
      ->group(fs)
      ->type_name("SIZE[K|M|G]");

  const char* snap = "Snapshots";
  app.add_flag("--snapshot", f.snapshot, "Record writes in an overlay, apply them at exit, keep them undoable")
      ->group(snap);
  app.add_flag("--restore", f.restore, "Record writes, then throw them away at exit")->group(snap);
  app.add_flag("--review", f.review, "Record writes and keep them pending until accepted")->group(snap);
  app.add_option("--snapshot-path", f.snapshot_paths, "Which writable paths are tracked")
      ->group(snap)
      ->type_name("P[,P...]");
  app.add_option("--snapshot-exclude", f.snapshot_exclude, "Paths never journaled (gitignore-like globs)")
      ->group(snap)
      ->type_name("GLOB[,...]");

  const char* net = "Network";
  app.add_option("--allow-net", f.allow_net, "Allow these domains; with no value, the full network")
      ->group(net)
      ->type_name("[=D,...]");
  app.add_flag("--allow-net-all-internal", f.net_all)->group("");
  app.add_option("--deny-net", f.deny_net, "Never these domains")->group(net)->type_name("D[,D...]");
  app.add_option("--resolve", f.resolve, "Connect to IP for HOST (like curl --resolve)")
      ->group(net)
      ->type_name("HOST:IP");
  app.add_option("--upstream-ca", f.upstream_ca, "Extra CA certificates for upstream TLS")
      ->group(net)
      ->type_name("FILE");

  const char* sec = "Secrets";
  app.add_option("--secret", f.secrets, "The command sees a placeholder; the proxy substitutes VALUE")
      ->group(sec)
      ->type_name("KEY[=VALUE]");
  app.add_option("--secret-file", f.secret_files, "Same, VALUE read from a file")->group(sec)->type_name("KEY=PATH");
  app.add_option("--secret-host", f.secret_hosts, "Restrict KEY to these hosts")->group(sec)->type_name("KEY=H[,H...]");

  const char* envg = "Environment";
  app.add_option("--env", f.envs, "Set a variable (repeatable)")->group(envg)->type_name("KEY=VALUE");
  app.add_option("--allow-env", f.allow_env, "Inherit these variables; with no value, all of them")
      ->group(envg)
      ->type_name("[=K,...]");
  app.add_flag("--allow-env-all-internal", f.env_all)->group("");
  app.add_option("--deny-env", f.deny_env, "Drop these variables; wins over --allow-env")
      ->group(envg)
      ->type_name("K[,K...]");

  const char* other = "Other";
  app.add_flag("-A,--allow-all", f.allow_all, "All filesystem and network permissions (env and secrets still apply)")
      ->group(other);
  app.add_flag("--no-sandbox", f.no_sandbox, "No isolation at all; the environment policy still applies")->group(other);
  app.add_flag("--strict-sandbox", f.strict, "Fail (125) if any isolation layer is unavailable")->group(other);
  app.add_option("-C", f.cwd, "Working directory of the command")->group(other)->type_name("DIR");
  app.add_option("--status-fd", f.status_fd, "JSON Lines lifecycle events on fd N (N >= 3)")
      ->group(other)
      ->type_name("N");
  app.add_flag("--debug", f.debug, "Print the effective policy, mounts, layers and decisions on stderr")->group(other);
  app.add_option("--profile", f.profile, "Load flags from a TOML profile (~/.config/zerobox/NAME.toml or a file)")
      ->group(other)
      ->type_name("NAME|FILE");
  app.add_flag("--quiet", f.quiet, "No zerobox messages on stderr except errors")->group(other);
  // A list option takes one value per use: left to itself, CLI11 would let it take the
  // words after that value too, and a "--" with them.
  for (CLI::Option* o : app.get_options()) {
    if (o->get_items_expected_max() > 1) o->allow_extra_args(false);
  }
  return app_owner;
}

std::optional<bool> guess_new_net(const std::vector<std::string>& args) {
  // The prestart's pipes take the lowest free fds: a --status-fd (or a /dev/fd/N path)
  // naming one that is not open yet would find one of them instead of being refused.
  // Every word up to the first "--" is checked, a superset of the options the scan finds.
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
  // The network mode, from the options as parse_args() reads them.
  Scan s = scan_args(args);
  if (!s.error.empty() || s.command.empty()) return std::nullopt;
  bool host = false, filtered = false;
  for (const Word& w : s.options) {
    const std::string& n = w.name;
    if (n == "--no-sandbox" || n == "-h" || n == "--help" || n == "-V" || n == "--version" || n == "--profile" ||
        (n[1] != '-' && n.size() > 2)) {
      return std::nullopt;
    }
    if (n == "-A" || n == "--allow-all" || (n == "--allow-net" && !w.value)) host = true;
    if ((n == "--allow-net" && w.value) || n == "--deny-net" || n.starts_with("--secret")) filtered = true;
  }
  return !host || filtered;
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

  Scan scan = scan_args(raw_args);
  Parsed out;
  // Help and version are answered before CLI11 parses: it reports them by throwing,
  // and the first exception in a static binary costs milliseconds of unwinder set-up.
  for (const Word& w : scan.options) {
    if (w.value) continue;
    if (w.name == "-h" || w.name == "--help") {
      out.action = Action::Help;
      out.text = app.help();
      return out;
    }
    if (w.name == "-V" || w.name == "--version") {
      out.action = Action::Version;
      out.text = std::string("zerobox ") + zerobox::version() + "\n";
      return out;
    }
  }
  if (!scan.error.empty()) throw UsageError{scan.error};
  // CLI11 gets the options alone, each with its value, in the words it was given as;
  // an optional value always after "=", a bare optional-value flag as its twin.
  std::vector<std::string> words;
  for (const Word& w : scan.options) {
    if (k_optional_value.count(w.name) != 0) {
      words.push_back(w.value ? w.name + "=" + *w.value : w.name + "-all-internal");
    } else {
      words.insert(words.end(), w.typed.begin(), w.typed.end());
    }
  }
  std::vector<std::string> rev(words.rbegin(), words.rend());
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
  // Every word is an option or its value: anything CLI11 left is one it does not know.
  if (std::vector<std::string> rest = app.remaining(); !rest.empty()) {
    throw UsageError{"unrecognized option '" + rest.front() + "'"};
  }
  if (scan.command.empty()) {
    // "--allow-write make": the word was the flag's value.
    const Word* last = scan.options.empty() ? nullptr : &scan.options.back();
    if (last != nullptr && k_optional_value.count(last->name) != 0 && last->typed.size() == 2) {
      throw UsageError{"no command given ('" + *last->value + "' was taken as the value of " + last->name +
                       "; to give it no value, write " + last->name + " -- " + *last->value + ")"};
    }
    throw UsageError{"no command given"};
  }

  zerobox::Policy& p = out.policy;
  if (!profile.empty()) {
    apply_profile(profile, p, out.options, environ);
    // As on the command line, an empty entry is a mistake, and as a path it would mean
    // the working directory.
    const std::pair<const char*, const std::vector<std::string>*> lists[] = {{"allow-read", &p.allow_read},
                                                                             {"deny-read", &p.deny_read},
                                                                             {"allow-write", &p.allow_write},
                                                                             {"deny-write", &p.deny_write},
                                                                             {"allow-net", &p.allow_net},
                                                                             {"deny-net", &p.deny_net},
                                                                             {"allow-env", &p.allow_env},
                                                                             {"deny-env", &p.deny_env},
                                                                             {"upstream-ca", &p.upstream_ca},
                                                                             {"snapshot-path", &p.snapshot_paths},
                                                                             {"snapshot-exclude", &p.snapshot_exclude}};
    for (const auto& [key, list] : lists) {
      if (std::find(list->begin(), list->end(), "") != list->end()) {
        throw UsageError{"--profile " + profile + ": " + key + ": empty value"};
      }
    }
  }

  if (!allow_read.empty()) p.read_restricted = true;
  append_list(p.allow_read, allow_read, "--allow-read");
  append_list(p.deny_read, deny_read, "--deny-read");
  append_list(p.allow_write, allow_write, "--allow-write");
  if (write_all) p.write_all = true;
  append_list(p.deny_write, deny_write, "--deny-write");
  if (no_protect) p.protect = false;
  if (app.count("--tmpfs-size") != 0) {
    auto size = policy::parse_size(f.tmpfs_size);
    if (!size)
      throw UsageError{"--tmpfs-size: '" + f.tmpfs_size + "' is not a size (a number of bytes, or with K, M, G or T)"};
    p.tmpfs_size = *size;
  }

  if (net_all && p.net == zerobox::NetMode::None) p.net = zerobox::NetMode::Host;
  append_list(p.allow_net, allow_net, "--allow-net");
  append_list(p.deny_net, deny_net, "--deny-net");
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
  append_list(p.upstream_ca, upstream_ca, "--upstream-ca");

  for (const auto& s : secrets) {
    auto [k, v] = key_value(s, "--secret", false);
    if (s.find('=') == std::string::npos) {
      auto fromenv = env::find(environ, k);
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
        append_list(secret.hosts, {hosts}, "--secret-host " + k);
        found = true;
      }
    }
    if (!found) throw UsageError{"--secret-host " + k + ": no --secret or --secret-file named " + k};
  }

  for (const auto& e : envs) p.env_set.push_back(key_value(e, "--env", true));
  if (env_all) p.env_all = true;
  append_list(p.allow_env, allow_env, "--allow-env");
  append_list(p.deny_env, deny_env, "--deny-env");

  int modes = int(snapshot) + int(restore) + int(review);
  if (modes > 1) throw UsageError{"--snapshot, --restore and --review exclude each other"};
  if (snapshot) p.snapshot = zerobox::SnapshotMode::Snapshot;
  if (restore) p.snapshot = zerobox::SnapshotMode::Restore;
  if (review) p.snapshot = zerobox::SnapshotMode::Review;
  append_list(p.snapshot_paths, snapshot_paths, "--snapshot-path");
  append_list(p.snapshot_exclude, snapshot_exclude, "--snapshot-exclude");

  if (allow_all) p.allow_all = true;
  if (no_sandbox) p.no_sandbox = true;
  if (strict) p.strict = true;
  if (debug) out.options.debug = true;
  if (quiet) out.options.quiet = true;
  if (!cwd.empty()) p.cwd = cwd;
  if (!status_fd.empty()) {
    bool digits = !status_fd.empty() && status_fd.size() <= 9 &&
                  std::all_of(status_fd.begin(), status_fd.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) throw UsageError{"--status-fd: '" + status_fd + "' is not a file descriptor number"};
    int fd = std::stoi(status_fd);
    std::string why;
    if (!exec::StatusFd::valid(fd, why)) throw UsageError{why};
    out.options.status_fd = fd;
  }

  p.argv = std::move(scan.command);
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
