// zb_docs_gen's model of zerobox's command line, read from the CLI11 Apps that zerobox
// itself parses with (src/cli/app.hpp), and the writers that turn it into the man page
// and the shell completions.
//
// What a flag's value completes to follows its metavariable (the CLI11 type name): P, PATH
// and FILE complete file names, DIR directory names, {a,b} (an IsMember check) those words,
// anything else nothing. A positional ID completes to `last`, the one id every store has.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace zb::docs_gen {

// None: a flag. Required: takes a value, as the next word or after "=". Optional: takes
// one after "=" or as the next word when that does not start with "-" (bare, it means
// "everything").
enum class Value { None, Required, Optional };
enum class Complete { Nothing, Files, Dirs, Words };

struct Opt {
  std::string short_name;  // "-A", or empty
  std::string long_name;   // "--allow-all", or empty
  std::string group;
  std::string description;
  std::string metavar;  // "P[,P...]"; for an optional value, what goes after "="
  Value value = Value::None;
  bool required = false;    // the option itself must be given
  bool repeatable = false;  // each use adds a value
  Complete complete = Complete::Nothing;
  std::vector<std::string> words;  // Complete::Words

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    if (!short_name.empty()) out.push_back(short_name);
    if (!long_name.empty()) out.push_back(long_name);
    return out;
  }
  const std::string& main_name() const { return long_name.empty() ? short_name : long_name; }
};

struct Positional {
  std::string name;
  std::string description;
  bool required = false;
  bool many = false;
  Complete complete = Complete::Nothing;
  std::vector<std::string> words;
};

struct Command {
  std::string name;  // "zerobox", or the snapshot subcommand
  std::string description;
  std::vector<Opt> opts;
  std::vector<Positional> positionals;
  std::vector<std::string> groups;  // in the order --help shows them
};

Command read_command(const CLI::App& app, std::string name);

std::string join(const std::vector<std::string>& v, std::string_view sep);
// 'text' for sh-like shells.
std::string sq(std::string_view s);
std::vector<std::string> all_names(const Command& c);
std::vector<std::string> names_with(const Command& c, Value v);

// docs/flags.toml: the long description of each flag (one row or more a flag) and of each
// snapshot command, the one source of the flag tables of the man page and of
// docs/cli-reference.md.
struct RunRow {
  std::string flag;   // "--allow-net", "-C"; empty for a row about the whole group
  std::string group;  // the flag's --help group
  std::string form;   // how the row writes the option; empty: as the CLI definition does
  std::string text;   // one paragraph, `x` is code
  bool is_new = false;
};
struct SnapshotRow {
  std::string name;
  std::string text;
};
struct Reference {
  std::vector<RunRow> run;  // in the file's order
  std::vector<SnapshotRow> snapshot;
};

// Reads PATH and checks it against the CLI definition: every option and snapshot command
// has an entry, and every entry names one. Throws std::runtime_error naming what is wrong.
Reference read_reference(const std::string& path, const Command& run, const std::vector<Command>& snapshot);
const std::string* snapshot_text(const Reference& ref, std::string_view name);

// docs/cli-reference.md, from its template (docs/cli-reference.md.in): a line
// "@FLAGS:G[,G...]@" becomes the table of the flags of those --help groups,
// "@SNAPSHOT_TABLE@" that of the snapshot commands, "@SNAPSHOT_SYNOPSIS@" their usage.
std::string write_markdown(const std::string& template_text, const Command& run, const std::vector<Command>& snapshot,
                           const Reference& ref);

// The man page, from its template (docs/man/zerobox.1.in, read from `template_text`).
std::string write_man(const std::string& template_text, const Command& run, const std::vector<Command>& snapshot,
                      const CLI::App& snapshot_app, const Reference& ref);
std::string write_bash(const Command& run, const std::vector<Command>& snapshot);
std::string write_zsh(const Command& run, const std::vector<Command>& snapshot, const CLI::App& snapshot_app);
std::string write_fish(const Command& run, const std::vector<Command>& snapshot, const CLI::App& snapshot_app);

}  // namespace zb::docs_gen
