// `zerobox snapshot SUBCOMMAND` (docs/usage.md "zerobox snapshot subcommands"): list, show, diff,
// accept, discard, restore and clean. Exit status: 0 done, 1 refused or failed (a
// conflict, an unknown id, a session in the wrong state), 2 usage error, 125 a running
// sandbox could write the store.
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/app.hpp"
#include "cli/cli.hpp"
#include "snapshot/apply.hpp"
#include "snapshot/diff.hpp"
#include "snapshot/journal.hpp"
#include "store/registry.hpp"
#include "store/store.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/path.hpp"

namespace zb::cli {
namespace {

using store::Session;
namespace log = zb::log;

constexpr int k_failed = 1;

constexpr const char* k_id_help =
    "ID is a unique prefix of a session id, or `last`: the newest session made in the\n"
    "working directory or tracking it (not one that a run elsewhere made meanwhile); when\n"
    "there is none, the store's newest, with a note on stderr.";
constexpr const char* k_id_option = "A unique prefix of a session id, or `last` (the newest session of this directory)";

std::string format_time(std::int64_t ns, bool utc_iso) {
  time_t t = static_cast<time_t>(ns / 1000000000);
  struct tm tm{};
  char buf[64];
  if (utc_iso) {
    ::gmtime_r(&t, &tm);
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  } else {
    ::localtime_r(&t, &tm);
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  }
  return buf;
}

std::string join_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !a.empty() && std::all_of(a.begin(), a.end(), [](unsigned char c) {
      return std::isalnum(c) || std::string_view("-_./=:,+@%").find(static_cast<char>(c)) != std::string_view::npos;
    });
    out += plain ? a : log::quote(a);
  }
  return out;
}

std::string dump(const nlohmann::json& j) {
  return snapshot::json_escape_controls(j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)) + "\n";
}

std::string short_id(const std::string& id) { return id.substr(0, 12); }

struct Ctx {
  std::vector<std::string> env;
  std::string cwd;
};

// The registry refuses the store (a running sandbox could write it, or it would hold the
// registry): the machine's state, exit 125.
struct StoreRefused {
  std::string message;
};

// Throws StoreRefused when the registry refuses the store.
Result<store::Store> open_store(const Ctx& ctx) {
  auto loc = store::Store::location(ctx.env);
  if (!loc) return std::unexpected(loc.error());
  // Listed in the user's registry, so that every sandbox masks it, and refused while a
  // running sandbox could write it.
  std::string no_registry;
  if (auto registry = store::user_registry(ctx.env, no_registry)) {
    auto lock = registry->lock();
    if (!lock) return std::unexpected(lock.error());
    if (auto r = registry->admit_store(*lock, *loc); !r) {
      if (r.error().err == 0) throw StoreRefused{r.error().message()};
      return std::unexpected(r.error());
    }
  } else {
    log::debug("store registry: none (" + no_registry + ")");
  }
  auto st = store::Store::open(*loc);
  if (!st) return st;
  auto recovered = snapshot::recover_interrupted(*st);
  if (!recovered) return std::unexpected(recovered.error());
  return st;
}

// ID or `last` (the caller's newest session: Store::resolve_id). When no session belongs
// to the caller's directory, `last` is the store's newest, which another run may have
// made: one note on stderr says which it is.
Result<Session> find_session(store::Store& st, const std::string& arg, const Ctx& ctx) {
  auto id = st.resolve_id(arg, ctx.cwd);
  if (!id) return std::unexpected(id.error());
  auto s = st.get_session(id->id);
  if (!s) return std::unexpected(s.error());
  if (!*s) return fail_msg("no session " + id->id);
  if (id->fallback) {
    log::info("note: no session was made in " + log::quote(ctx.cwd) + " or tracks it; `last` is the store's newest, " +
              short_id(id->id) + " (made in " + log::quote((*s)->cwd) + ")");
  }
  return std::move(**s);
}

nlohmann::json session_json(const Session& s, const std::vector<std::int64_t>& counts) {
  nlohmann::json j;
  j["id"] = s.id;
  j["kind"] = store::to_string(s.kind);
  j["mode"] = store::to_string(s.mode);
  j["state"] = store::to_string(s.state);
  j["command"] = s.command;
  j["cwd"] = s.cwd;
  auto policy = snapshot::SessionPolicy::from_json(s.policy.value_or(""));
  j["tracked"] = policy.tracked.empty() ? s.roots : policy.tracked;
  j["exclude"] = policy.exclude;
  j["created_at"] = format_time(s.created_at, true);
  j["finished_at"] = s.finished_at ? nlohmann::json(format_time(*s.finished_at, true)) : nlohmann::json(nullptr);
  j["applied_at"] = s.applied_at ? nlohmann::json(format_time(*s.applied_at, true)) : nlohmann::json(nullptr);
  j["exit_code"] = s.exit_code ? nlohmann::json(*s.exit_code) : nlohmann::json(nullptr);
  j["signal"] = s.signal ? nlohmann::json(*s.signal) : nlohmann::json(nullptr);
  j["parent"] = s.parent ? nlohmann::json(*s.parent) : nlohmann::json(nullptr);
  std::int64_t total = 0;
  nlohmann::json by_kind = nlohmann::json::object();
  for (std::size_t k = 0; k < counts.size(); ++k) {
    by_kind[std::string(store::to_string(static_cast<store::ChangeKind>(k)))] = counts[k];
    total += counts[k];
  }
  j["changes"] = total;
  j["changes_by_kind"] = by_kind;
  return j;
}

int cmd_list(const Ctx& ctx, bool json) {
  auto st = open_store(ctx);
  if (!st) throw SetupError{st.error().message()};
  auto sessions = st->list_sessions();
  if (!sessions) throw SetupError{sessions.error().message()};
  if (json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& s : *sessions) {
      auto counts = st->count_changes(s.id);
      arr.push_back(session_json(s, counts ? *counts : std::vector<std::int64_t>(5, 0)));
    }
    std::fputs(dump(arr).c_str(), stdout);
    return 0;
  }
  if (sessions->empty()) return 0;
  // Columns as wide as their widest cell ("discarded", "snapshot"), so every row lines up
  // whatever its state and mode; COMMAND, the last, is not padded.
  std::vector<std::array<std::string, 6>> rows;
  rows.push_back({"ID", "STATE", "MODE", "CHANGES", "CREATED", "COMMAND"});
  for (const auto& s : *sessions) {
    auto counts = st->count_changes(s.id);
    std::int64_t total = 0;
    if (counts) {
      for (auto n : *counts) total += n;
    }
    std::string mode = s.kind == store::SessionKind::Restore ? "undo" : std::string(store::to_string(s.mode));
    rows.push_back({short_id(s.id), std::string(store::to_string(s.state)), mode, std::to_string(total),
                    format_time(s.created_at, false), join_command(s.command)});
  }
  std::array<std::size_t, 6> width{};
  for (const auto& r : rows) {
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t c = 0; c < r.size(); ++c) {
      std::string pad(width[c] - r[c].size(), ' ');
      bool last_col = c + 1 == r.size();
      if (c == 3) {
        line += pad + r[c];  // CHANGES: numbers right-aligned
      } else {
        line += r[c];
        if (!last_col) line += pad;
      }
      if (!last_col) line += "  ";
    }
    line += '\n';
    std::fputs(line.c_str(), stdout);
  }
  return 0;
}

int cmd_show(const Ctx& ctx, const std::string& arg, bool json) {
  auto st = open_store(ctx);
  if (!st) throw SetupError{st.error().message()};
  auto s = find_session(*st, arg, ctx);
  if (!s) throw SetupError{s.error().message()};
  auto counts = st->count_changes(s->id);
  if (!counts) throw SetupError{counts.error().message()};
  auto j = session_json(*s, *counts);
  if (json) {
    std::fputs(dump(j).c_str(), stdout);
    return 0;
  }
  std::printf("session   %s\n", s->id.c_str());
  std::printf("state     %s\n", std::string(store::to_string(s->state)).c_str());
  if (s->kind == store::SessionKind::Restore) {
    std::printf("kind      restore of %s\n", s->parent.value_or("?").c_str());
  } else {
    std::printf("mode      %s\n", std::string(store::to_string(s->mode)).c_str());
  }
  std::printf("command   %s\n", join_command(s->command).c_str());
  std::printf("cwd       %s\n", log::quote(s->cwd).c_str());
  for (const auto& t : j["tracked"]) std::printf("tracked   %s\n", log::quote(t.get<std::string>()).c_str());
  for (const auto& e : j["exclude"]) std::printf("exclude   %s\n", log::quote(e.get<std::string>()).c_str());
  std::printf("created   %s\n", format_time(s->created_at, false).c_str());
  if (s->finished_at) std::printf("finished  %s\n", format_time(*s->finished_at, false).c_str());
  if (s->applied_at) std::printf("applied   %s\n", format_time(*s->applied_at, false).c_str());
  if (s->exit_code) std::printf("exit      %d\n", *s->exit_code);
  if (s->signal) std::printf("exit      killed by signal %d\n", *s->signal);
  std::printf("changes   %lld (%lld added, %lld modified, %lld deleted, %lld type changed, %lld mode changed)\n",
              static_cast<long long>(j["changes"].get<std::int64_t>()), static_cast<long long>((*counts)[0]),
              static_cast<long long>((*counts)[1]), static_cast<long long>((*counts)[2]),
              static_cast<long long>((*counts)[3]), static_cast<long long>((*counts)[4]));
  return 0;
}

int cmd_diff(const Ctx& ctx, const std::string& arg, const std::string& format, const std::string& color,
             const std::vector<std::string>& paths) {
  auto st = open_store(ctx);
  if (!st) throw SetupError{st.error().message()};
  auto s = find_session(*st, arg, ctx);
  if (!s) throw SetupError{s.error().message()};
  auto changes = st->changes(s->id);
  if (!changes) throw SetupError{changes.error().message()};
  // As git: by path (the journal's order is the order of application).
  std::stable_sort(changes->begin(), changes->end(),
                   [](const store::Change& a, const store::Change& b) { return a.path < b.path; });
  snapshot::DiffOptions o;
  o.format = format == "stat"          ? snapshot::DiffFormat::Stat
             : format == "name-status" ? snapshot::DiffFormat::NameStatus
             : format == "json"        ? snapshot::DiffFormat::Json
                                       : snapshot::DiffFormat::Patch;
  bool tty = ::isatty(1) == 1;
  bool no_color = false;
  for (const auto& e : ctx.env) {
    if (e.rfind("NO_COLOR=", 0) == 0 && e.size() > 9) no_color = true;
    if (e == "TERM=dumb") no_color = true;
  }
  o.color = color == "always" || (color == "auto" && tty && !no_color);
  // A file's bytes reach a terminal only as visible text: a carriage return or an escape
  // sequence in it could otherwise hide what the session wrote. Pipes get the exact bytes.
  o.visible_controls = tty;
  o.cwd = s->cwd;
  o.session_id = s->id;
  for (const auto& p : paths) o.filters.push_back(path::absolute(p, ctx.cwd, path::parent(ctx.cwd)));
  // Progress only where it cannot mix with the diff itself: stderr a terminal, stdout not
  // (or --stat, which prints after its scan).
  bool show_progress = ::isatty(2) == 1 && changes->size() >= 200 && (!tty || o.format == snapshot::DiffFormat::Stat);
  bool shown = false;
  std::chrono::steady_clock::time_point last{};
  if (show_progress) {
    o.progress = [&](std::size_t done, std::size_t total) {
      if (done == total) {  // cleared before --stat prints its table
        if (shown) std::fputs("\r\x1b[K", stderr);
        shown = false;
        return;
      }
      auto now = std::chrono::steady_clock::now();
      if (now - last < std::chrono::milliseconds(100)) return;
      last = now;
      std::fprintf(stderr, "\rzerobox: diff: %zu/%zu changes (%zu%%)", done, total, done * 100 / total);
      shown = true;
    };
  }
  auto r = snapshot::write_diff(stdout, *st, *changes, o);
  if (shown) std::fputs("\r\x1b[K", stderr);
  std::fflush(stdout);
  if (!r) throw SetupError{r.error().message()};
  return 0;
}

int report_conflicts(const std::vector<std::string>& conflicts, const std::string& what, const std::string& id) {
  for (const auto& c : conflicts) log::error("conflict: " + c);
  log::error(what + " of session " + short_id(id) + " refused: " + std::to_string(conflicts.size()) +
             (conflicts.size() == 1 ? " conflict" : " conflicts") + "; nothing was changed (--force overwrites)");
  return k_failed;
}

int cmd_accept(const Ctx& ctx, const std::string& arg, bool force) {
  auto st = open_store(ctx);
  if (!st) throw SetupError{st.error().message()};
  auto s = find_session(*st, arg, ctx);
  if (!s) throw SetupError{s.error().message()};
  auto r = snapshot::accept_session(*st, s->id, {.force = force, .progress = true});
  if (!r) throw SetupError{r.error().message()};
  if (!r->conflicts.empty()) return report_conflicts(r->conflicts, "accept", s->id);
  log::info("accepted session " + short_id(s->id) + " (" + std::to_string(r->applied) +
            (r->applied == 1 ? " change" : " changes") + " applied)");
  return 0;
}

int cmd_restore(const Ctx& ctx, const std::string& arg, bool force) {
  auto st = open_store(ctx);
  if (!st) throw SetupError{st.error().message()};
  auto s = find_session(*st, arg, ctx);
  if (!s) throw SetupError{s.error().message()};
  auto r = snapshot::restore_session(*st, s->id, {.force = force, .progress = true});
  if (!r) throw SetupError{r.error().message()};
  if (!r->conflicts.empty()) return report_conflicts(r->conflicts, "restore", s->id);
  log::info("restored session " + short_id(s->id) + " (" + std::to_string(r->applied) +
            (r->applied == 1 ? " change" : " changes") + " undone); undo with `zerobox snapshot restore " +
            short_id(r->session) + "`");
  return 0;
}

int cmd_discard(const Ctx& ctx, const std::string& arg) {
  auto st = open_store(ctx);
  if (!st) throw SetupError{st.error().message()};
  auto s = find_session(*st, arg, ctx);
  if (!s) throw SetupError{s.error().message()};
  if (auto r = snapshot::discard_session(*st, s->id); !r) throw SetupError{r.error().message()};
  log::info("discarded session " + short_id(s->id));
  return 0;
}

int cmd_clean(const Ctx& ctx, const std::string& days_text) {
  long days = -1;
  {
    char* end = nullptr;
    errno = 0;
    days = std::strtol(days_text.c_str(), &end, 10);
    if (days_text.empty() || *end != '\0' || errno != 0 || days < 0 || days > 100000) {
      throw UsageError{"--older-than: expected a number of days, not " + log::quote(days_text)};
    }
  }
  auto st = open_store(ctx);
  if (!st) throw SetupError{st.error().message()};
  auto sessions = st->list_sessions();
  if (!sessions) throw SetupError{sessions.error().message()};
  struct timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  std::int64_t cutoff = (static_cast<std::int64_t>(now.tv_sec) - days * 86400) * 1000000000 + now.tv_nsec;
  int removed = 0;
  for (const auto& s : *sessions) {
    if (s.state == store::SessionState::Running || s.state == store::SessionState::Pending) continue;
    if (s.created_at > cutoff) continue;
    if (auto r = st->remove_session(s.id); !r) {
      log::warning("kept session " + short_id(s.id) + ": " + r.error().message());
      continue;
    }
    ++removed;
  }
  log::info("removed " + std::to_string(removed) + (removed == 1 ? " session" : " sessions"));
  return 0;
}

}  // namespace

std::unique_ptr<CLI::App> make_snapshot_app(SnapshotFlags& f) {
  auto app_owner = std::make_unique<CLI::App>(
      "Review, apply and undo the changes recorded by --snapshot, --restore and --review.", "zerobox snapshot");
  CLI::App& app = *app_owner;
  app.require_subcommand(1);
  app.footer(std::string(k_id_help) + "\nExit status: 0 done; 1 refused or failed; 2 usage error.");

  auto* list = app.add_subcommand("list", "List sessions, oldest first");
  list->add_flag("--json", f.json, "Machine-readable output");
  auto* show =
      app.add_subcommand("show", "Command, working directory, times, exit status, counts and state of a session");
  show->add_option("ID", f.id, k_id_option)->required();
  show->footer(k_id_help);
  show->add_flag("--json", f.json, "Machine-readable output");
  auto* diff = app.add_subcommand("diff",
                                  "What a session changed, as a unified diff; on a terminal, control characters in "
                                  "contents show as `cat -v` shows them (^M, ^[, M-^[)");
  diff->add_option("ID", f.id, k_id_option)->required();
  diff->footer(k_id_help);
  diff->add_option("PATH", f.paths, "Only changes at or below these paths");
  diff->add_flag("--json", f.json, "Machine-readable output");
  diff->add_flag("--stat", f.stat, "A diffstat");
  diff->add_flag("--name-status", f.name_status, "One line per change: A, M, D or T, a tab and the path");
  diff->add_option("--color", f.color, "When to colour the output")->check(CLI::IsMember({"auto", "always", "never"}));
  auto* accept = app.add_subcommand("accept", "Apply a pending session to the real filesystem");
  accept->add_option("ID", f.id, k_id_option)->required();
  accept->footer(k_id_help);
  accept->add_flag("--force", f.force, "Overwrite files that changed since the session recorded them");
  auto* discard = app.add_subcommand("discard", "Drop a pending session's changes (its diff stays available)");
  discard->add_option("ID", f.id, k_id_option)->required();
  discard->footer(k_id_help);
  auto* restore =
      app.add_subcommand("restore", "Put the real filesystem back as it was before the session (journaled: undoable)");
  restore->add_option("ID", f.id, k_id_option)->required();
  restore->footer(k_id_help);
  restore->add_flag("--force", f.force, "Overwrite files that changed since the session was applied");
  auto* clean = app.add_subcommand("clean", "Remove finished sessions older than DAYS (never running or pending ones)");
  clean->add_option("--older-than", f.older, "Age in days")->required()->type_name("DAYS");
  return app_owner;
}

int snapshot_main(const std::vector<std::string>& args, const std::vector<std::string>& environ) {
  SnapshotFlags f;
  std::unique_ptr<CLI::App> app_owner = make_snapshot_app(f);
  CLI::App& app = *app_owner;
  auto &json = f.json, &force = f.force, &stat = f.stat, &name_status = f.name_status;
  auto &id = f.id, &color = f.color, &older = f.older;
  auto& paths = f.paths;
  CLI::App *list = app.get_subcommand("list"), *show = app.get_subcommand("show"), *diff = app.get_subcommand("diff"),
           *accept = app.get_subcommand("accept"), *discard = app.get_subcommand("discard"),
           *restore = app.get_subcommand("restore"), *clean = app.get_subcommand("clean");

  std::vector<std::string> rev(args.rbegin(), args.rend());
  try {
    app.parse(rev);
  } catch (const CLI::CallForHelp&) {
    const CLI::App* sub = app.get_subcommands().empty() ? &app : app.get_subcommands().front();
    std::fputs(sub->help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    if (app.get_subcommands().empty() && !args.empty() && args[0][0] != '-') {
      msg =
          "unknown snapshot subcommand " + log::quote(args[0]) + " (list, show, diff, accept, discard, restore, clean)";
    } else if (args.empty()) {
      msg = "a snapshot subcommand is required (list, show, diff, accept, discard, restore, clean)";
    }
    throw UsageError{msg};
  }
  if (int(stat) + int(name_status) + int(json && app.got_subcommand(diff)) > 1) {
    throw UsageError{"--stat, --name-status and --json exclude each other"};
  }
  Ctx ctx{environ, "/"};
  char buf[4096];
  if (::getcwd(buf, sizeof buf) != nullptr) ctx.cwd = buf;
  try {
    if (list->parsed()) return cmd_list(ctx, json);
    if (show->parsed()) return cmd_show(ctx, id, json);
    if (diff->parsed())
      return cmd_diff(ctx, id, stat ? "stat" : name_status ? "name-status" : json ? "json" : "patch", color, paths);
    if (accept->parsed()) return cmd_accept(ctx, id, force);
    if (discard->parsed()) return cmd_discard(ctx, id);
    if (restore->parsed()) return cmd_restore(ctx, id, force);
    if (clean->parsed()) return cmd_clean(ctx, older);
  } catch (const StoreRefused& e) {
    log::error(e.message);
    return k_exit_setup;
  } catch (const SetupError& e) {
    log::error(e.message);
    return k_failed;
  }
  return 0;
}

}  // namespace zb::cli
