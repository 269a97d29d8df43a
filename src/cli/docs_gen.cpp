// Build-time generator: writes zerobox's man page and its bash, zsh and fish completions
// from the CLI11 Apps that zerobox itself parses with (src/cli/app.hpp), so a flag cannot
// be added, renamed or re-described in one and not in the others.
//
//   zb_docs_gen OUTDIR    writes OUTDIR/zerobox.1, zerobox.bash, _zerobox and zerobox.fish
//
// What a flag's value completes to follows its metavariable (the CLI11 type name): P, PATH
// and FILE complete file names, DIR directory names, {a,b} (an IsMember check) those words,
// anything else nothing. A positional ID completes to `last`, the one id every store has.
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/app.hpp"
#include "zerobox/zerobox.hpp"

namespace {

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

// ---- The model, read from the Apps ----------------------------------------------------

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t end = s.find(sep, start);
    out.emplace_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : std::string(sep)) + s;
  return out;
}

bool has_word(std::string_view s, std::string_view word) {
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isalnum(static_cast<unsigned char>(s[i])) == 0) ++i;
    size_t j = i;
    while (j < s.size() && std::isalnum(static_cast<unsigned char>(s[j])) != 0) ++j;
    if (s.substr(i, j - i) == word) return true;
    i = j;
  }
  return false;
}

// Splits CLI11's type name ("P[,P...]", "TEXT:{auto,always,never}") into the metavariable
// shown to users and what its value completes to.
void read_type(std::string type, std::string& metavar, Complete& complete, std::vector<std::string>& words) {
  if (auto brace = type.find(":{"); brace != std::string::npos && type.back() == '}') {
    words = split(std::string_view(type).substr(brace + 2, type.size() - brace - 3), ',');
    complete = Complete::Words;
    type = type.substr(0, brace);
  }
  metavar = type == "TEXT" ? "" : type;
  if (complete == Complete::Words) return;
  // Only the start of a value can be completed: "KEY=PATH" begins with a name.
  std::string_view head = metavar;
  head = head.substr(0, head.find_first_of("=:"));
  if (has_word(head, "DIR")) {
    complete = Complete::Dirs;
  } else if (has_word(head, "P") || has_word(head, "PATH") || has_word(head, "FILE")) {
    complete = Complete::Files;
  }
}

Command read_command(const CLI::App& app, std::string name) {
  Command c;
  c.name = std::move(name);
  c.description = app.get_description();
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_group().empty()) continue;  // internal (app.hpp)
    if (!o->nonpositional()) {
      Positional p;
      p.name = o->get_name(true);
      p.description = o->get_description();
      p.required = o->get_required();
      p.many = o->get_items_expected_max() > 1;
      std::string metavar;
      read_type(p.name, metavar, p.complete, p.words);
      if (p.name == "ID") {
        p.complete = Complete::Words;
        p.words = {"last"};
      }
      c.positionals.push_back(std::move(p));
      continue;
    }
    Opt x;
    if (!o->get_snames().empty()) x.short_name = "-" + o->get_snames().front();
    if (!o->get_lnames().empty()) x.long_name = "--" + o->get_lnames().front();
    x.group = o->get_group();
    x.description = o->get_description();
    x.required = o->get_required();
    if (o->get_expected_max() > 0) {  // flags expect no value
      x.value = Value::Required;
      std::string type = o->get_type_name();
      // A flag whose value is optional has a hidden twin its bare form becomes (app.hpp);
      // its type name is "[=P,...]".
      if (!x.long_name.empty() && app.get_option_no_throw(x.long_name + "-all-internal") != nullptr) {
        x.value = Value::Optional;
        if (type.starts_with("[=") && type.ends_with("]")) type = type.substr(2, type.size() - 3);
      }
      read_type(type, x.metavar, x.complete, x.words);
      if (x.metavar.empty() && x.complete == Complete::Words) x.metavar = join(x.words, "|");
      x.repeatable = o->get_expected_max() > 1;
    }
    bool seen = false;
    for (const auto& g : c.groups) seen = seen || g == x.group;
    if (!seen) c.groups.push_back(x.group);
    c.opts.push_back(std::move(x));
  }
  return c;
}

// ---- Man page --------------------------------------------------------------------------

// roff text: every "-" is "\-" (an option dash, which Debian renders as ASCII), "\" is
// "\e", a line may not begin with a control character, and `x` becomes bold.
std::string roff(std::string_view s) {
  std::string out;
  bool bold = false, line_start = true;
  for (char ch : s) {
    if (line_start && (ch == '.' || ch == '\'')) out += "\\&";
    line_start = ch == '\n';
    if (ch == '-') {
      out += "\\-";
    } else if (ch == '\\') {
      out += "\\e";
    } else if (ch == '`') {
      out += bold ? "\\fR" : "\\fB";
      bold = !bold;
    } else {
      out += ch;
    }
  }
  return out;
}

// "\fB\-\-allow\-write\fR[=\fIP,...\fR]"
std::string man_option(const Opt& o) {
  std::string out;
  for (const auto& n : o.names()) out += (out.empty() ? "" : ", ") + std::string("\\fB") + roff(n) + "\\fR";
  if (o.value == Value::None) return out;
  std::string mv = "\\fI" + roff(o.metavar) + "\\fR";
  if (o.value == Value::Optional) return out + "[=" + mv + "]";
  return out + (o.long_name.empty() ? " " : "=") + mv;
}

std::string joined_names(const std::vector<Opt>& opts, Value v, std::string_view sep) {
  std::string out;
  for (const auto& o : opts) {
    if (o.value == v && !o.long_name.empty()) out += (out.empty() ? "" : std::string(sep)) + o.long_name;
  }
  return out;
}

std::string write_man(const Command& run, const std::vector<Command>& snapshot, const CLI::App& snapshot_app) {
  std::string m;
  m += ".\\\" Generated by zb_docs_gen from zerobox's CLI definition (src/cli/cli.cpp,\n";
  m += ".\\\" src/cli/snapshot_cmd.cpp). Do not edit: change the definition and rebuild.\n";
  m += ".TH ZEROBOX 1 \"\" \"zerobox " + std::string(zerobox::version()) + "\" \"User Commands\"\n";
  m += ".nh\n";  // no hyphenation: option names must survive line breaks intact
  m += ".SH NAME\nzerobox \\- run a command in a lightweight Linux sandbox\n";

  m += ".SH SYNOPSIS\n.B zerobox\n[\\fIOPTIONS\\fR] [\\fB\\-\\-\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR...]\n";
  for (const auto& s : snapshot) {
    m += ".br\n.B zerobox snapshot " + s.name + "\n";
    std::string line;
    for (const auto& o : s.opts) {
      if (o.long_name == "--help") continue;
      line += (line.empty() ? "" : " ") + (o.required ? man_option(o) : "[" + man_option(o) + "]");
    }
    for (const auto& p : s.positionals) {
      std::string one = "\\fI" + roff(p.name) + "\\fR" + (p.many ? "..." : "");
      line += (line.empty() ? "" : " ") + (p.required ? one : "[" + one + "]");
    }
    if (!line.empty()) m += line + "\n";
  }

  m += ".SH DESCRIPTION\n" + roff(run.description) + "\n";
  m += ".PP\nBy default the command can read the host's filesystem except credentials, writes nowhere (every "
       "host path is a read-only view; /tmp and /var/tmp show the host's files but take writes into a private "
       "layer, and /dev/shm is a fresh tmpfs, all thrown away at exit), has no network (a new network namespace "
       "with only lo), and sees only PATH, HOME, USER, SHELL, TERM and LANG from the caller's environment. It runs "
       "as the caller's own uid in new user, mount, pid, ipc, uts, cgroup and network namespaces, with no "
       "capabilities, no_new_privs, Landlock and a seccomp filter. It needs no daemon and no setuid helper, and "
       "works the same for root and ordinary users.\n";
  m += ".PP\n" + roff("Options end at the first `--` or at the first word that is not an option, so "
                      "`zerobox -- --allow-all` runs a program named --allow-all; after `--` nothing is an "
                      "option, whatever comes before it. ") +
       roff("Options whose value is optional (" + joined_names(run.opts, Value::Optional, ", ") +
            ") take it after \"=\" or as the next word when that word does not begin with \"-\": "
            "`zerobox --allow-write build -- make` makes only build writable, "
            "`zerobox --allow-write -- make` everything. Other options take their value as the next word "
            "(never the `--`) or after \"=\". An empty value is a usage error.") +
       "\n";
  std::string repeatable;
  for (const auto& o : run.opts) {
    if (o.repeatable) repeatable += (repeatable.empty() ? "" : ", ") + o.main_name();
  }
  m += ".PP\n" + roff("These options can be repeated, each use adding to the previous ones: " + repeatable + ". ") +
       roff("Lists are comma-separated (\\, is a literal comma). Paths may be relative to the directory zerobox is started in (also with -C) and may "
                      "begin with ~ ($HOME); they are canonicalised before use. A path given to an --allow option "
                      "that does not exist is an error unless its parent exists.") +
       "\n";
  m += ".PP\n" + roff("Protected paths, on by default (--no-protect turns them off; naming one exactly in "
                      "--allow-read or --allow-write lifts that one): git hooks and config, shell start-up "
                      "files, .envrc, editor and agent configurations that run code, .npmrc and .gitconfig are "
                      "never writable, even inside a writable path, and cannot be created where they do not "
                      "exist (naming the directory one starts with, such as DIR/.git, lifts those below it); ~/.ssh, ~/.gnupg, ~/.aws, ~/.kube, "
                      "~/.netrc, ~/.git-credentials, /etc/shadow, /etc/ssh/*key* and other credentials are "
                      "never readable; the host's unix sockets (docker, D-Bus, ssh-agent, X11) are never "
                      "reachable.") +
       "\n";

  m += ".SH OPTIONS\n";
  for (const auto& g : run.groups) {
    m += ".SS " + roff(g == "Options" ? "General" : g) + "\n";
    for (const auto& o : run.opts) {
      if (o.group != g) continue;
      m += ".TP\n" + man_option(o) + "\n" + roff(o.description) + "\n";
    }
  }

  m += ".SH SNAPSHOT COMMANDS\n" + roff(snapshot_app.get_description()) + "\n";
  m += ".PP\n" + roff("Sessions are made by runs with --snapshot, --restore or --review; their states are "
                      "running, pending, accepted, discarded, restored and failed. ") +
       roff(snapshot_app.get_footer()) + "\n";
  for (const auto& s : snapshot) {
    m += ".TP\n\\fBzerobox snapshot " + s.name + "\\fR\n" + roff(s.description) + "\n";
    bool any = false;
    for (const auto& p : s.positionals) {
      if (p.description.empty()) continue;
      m += std::string(any ? "" : ".RS\n") + ".TP\n\\fI" + roff(p.name) + "\\fR\n" + roff(p.description) + "\n";
      any = true;
    }
    for (const auto& o : s.opts) {
      if (o.long_name == "--help") continue;
      m += std::string(any ? "" : ".RS\n") + ".TP\n" + man_option(o) + "\n" + roff(o.description) + "\n";
      any = true;
    }
    if (any) m += ".RE\n";
  }

  m += R"(.SH EXIT STATUS
.TP
.I N
The command exited with status \fIN\fR.
.TP
.I 128+N
The command was killed by signal \fIN\fR.
.TP
.B 2
Usage error: an unknown option, a missing command, a malformed KEY=VALUE, HOST:IP or
number, or a bad profile. One line on stderr, then a hint to \fB\-\-help\fR.
.TP
.B 125
zerobox could not set up the sandbox (one \fBzerobox: error:\fR line naming what
failed and why); nothing ran.
.TP
.B 126
The command was found but could not be executed.
.TP
.B 127
The command was not found.
.PP
\fBzerobox snapshot\fR exits 0 when done, 1 when refused or failed (a conflict, an
unknown or ambiguous id, a session in the wrong state), 2 on a usage error, 125 when
a running sandbox could write the store, or it would hold the store registry.
.SH ENVIRONMENT
.TP
.B ZEROBOX_HOME
The store (journal, blobs and session layers); an absolute path.
.TP
.B XDG_STATE_HOME
Without \fBZEROBOX_HOME\fR, the store is \fI$XDG_STATE_HOME/zerobox\fR, else
\fI~/.local/state/zerobox\fR. That directory, whatever \fBZEROBOX_HOME\fR says, also
holds the registry of the user's stores.
.TP
.B XDG_CONFIG_HOME
Profiles named with \fB\-\-profile\fR=\fINAME\fR are read from
\fI$XDG_CONFIG_HOME/zerobox/NAME.toml\fR (default \fI~/.config/zerobox/\fR).
.TP
.B HOME
What \fB~\fR means in paths, and the base of the default store and profile directories.
.TP
.BR PATH ", " HOME ", " USER ", " SHELL ", " TERM ", " LANG
The only variables the command inherits by default (see \fB\-\-allow\-env\fR).
.TP
.BR NO_COLOR ", " TERM=dumb
\fBzerobox snapshot diff\fR does not colour its output.
.TP
.BR HTTP_PROXY ", " HTTPS_PROXY ", " ALL_PROXY ", " NO_PROXY
Set inside the sandbox (also in lower case, with \fBNODE_USE_ENV_PROXY=1\fR) when the
network is filtered: they name zerobox's proxy on 127.0.0.1:3128, the only way out.
.SH FILES
.TP
.I $ZEROBOX_HOME/journal.db
The SQLite journal of sessions and their changes.
.TP
.I $ZEROBOX_HOME/blobs/
File contents by XXH3\-128 hash, shared between sessions.
.TP
.I $ZEROBOX_HOME/sessions/ID/
The overlay layers of a session while it runs or is pending.
.TP
.I ~/.local/state/zerobox/stores
The registry: every store zerobox opened (NUL\-separated), each masked in every
sandbox; \fIrunning/\fR beside it holds one record per running sandbox, and a store
that one of them could write is refused. Under \fI$XDG_STATE_HOME/zerobox/\fR when that
is set.
.TP
.I ~/.config/zerobox/NAME.toml
A profile: the long option names as keys, e.g. \fBallow\-write = ["build"]\fR.
.SH EXAMPLES
A write outside the allowed paths fails:
.PP
.RS
.nf
$ zerobox \-\- sh \-c 'echo pwned >> ~/.bashrc'
sh: 1: cannot create /root/.bashrc: Read\-only file system
.fi
.RE
.PP
Build with writes only to ./build, and run the tests with no network:
.PP
.RS
.nf
$ zerobox \-\-allow\-write=./build \-\- make
$ zerobox \-\-allow\-write=. \-\- make test
.fi
.RE
.PP
See what an installer would change, then apply it, and undo it later:
.PP
.RS
.nf
$ zerobox \-\-review \-\-allow\-write \-\- ./install.sh
zerobox: session 7f3a1c2d9e0b (12 changes, pending)
$ zerobox snapshot diff last
$ zerobox snapshot accept last
$ zerobox snapshot restore 7f3a
.fi
.RE
.PP
Reach only one host, through zerobox's proxy:
.PP
.RS
.nf
$ zerobox \-\-allow\-net=deb.debian.org \-\- curl \-sI https://deb.debian.org
.fi
.RE
.SH SEE ALSO
.BR bwrap (1),
.BR unshare (1),
.BR namespaces (7),
.BR user_namespaces (7),
.BR landlock (7),
.BR seccomp (2).
.PP
The full reference, recipes and the security model are in the zerobox documentation
(\fI/usr/share/doc/zerobox/\fR, or \fIdocs/\fR in the source tree).
)";
  return m;
}

// ---- Shell helpers ---------------------------------------------------------------------

// 'text' for sh-like shells.
std::string sq(std::string_view s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

std::vector<std::string> all_names(const Command& c) {
  std::vector<std::string> out;
  for (const auto& o : c.opts) {
    for (const auto& n : o.names()) out.push_back(n);
  }
  return out;
}

std::vector<std::string> names_with(const Command& c, Value v) {
  std::vector<std::string> out;
  for (const auto& o : c.opts) {
    if (o.value != v) continue;
    for (const auto& n : o.names()) out.push_back(n);
  }
  return out;
}

// ---- bash ------------------------------------------------------------------------------

// `compgen -W` over WORDS. The functions set IFS to a newline, so that file names with
// spaces survive, and "${candidates[*]}" joins the words with it.
std::string bash_words(const std::vector<std::string>& words, const std::string& cur) {
  std::string list;
  for (const auto& w : words) list += (list.empty() ? "" : " ") + sq(w);
  return "local candidates=(" + list + "); COMPREPLY=($(compgen -W \"${candidates[*]}\" -- " + cur + "))";
}

std::string bash_complete(Complete how, const std::vector<std::string>& words, const std::string& cur) {
  switch (how) {
    case Complete::Files: return "compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- " + cur + "))";
    case Complete::Dirs: return "compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- " + cur + "))";
    case Complete::Words: return bash_words(words, cur);
    case Complete::Nothing: break;
  }
  return "COMPREPLY=()";
}

// A `case` over the flags of `c` that take a value, completing that value ($2).
std::string bash_value_cases(const Command& c, const std::string& indent) {
  std::string out;
  for (const auto& o : c.opts) {
    if (o.value == Value::None) continue;
    out += indent + join(o.names(), "|") + ") " + bash_complete(o.complete, o.words, "\"$2\"") + " ;;\n";
  }
  return out + indent + "*) COMPREPLY=() ;;\n";
}

// The loop that walks the words before the cursor. For each flag with a value it either
// completes that value (the cursor is on it; FN FLAG PREFIX) or skips it. `=` arrives as
// a word of its own, as COMP_WORDBREAKS splits "--flag=value" into three.
std::string bash_skip_cases(const Command& c, const std::string& fn, const std::string& indent) {
  std::string out;
  auto required = names_with(c, Value::Required), optional = names_with(c, Value::Optional);
  std::string after_eq = indent + "  if [[ ${COMP_WORDS[i+1]} == = ]]; then\n" + indent +
                         "    if (( COMP_CWORD == i + 1 )); then " + fn + " \"$w\" \"\"; return; fi\n" + indent +
                         "    if (( COMP_CWORD == i + 2 )); then " + fn + " \"$w\" \"$cur\"; return; fi\n" + indent +
                         "    (( i += 3 ))\n";
  if (!required.empty()) {
    out += indent + join(required, "|") + ")\n" + after_eq + indent + "  else\n" + indent +
           "    if (( COMP_CWORD == i + 1 )); then " + fn + " \"$w\" \"$cur\"; return; fi\n" + indent +
           "    (( i += 2 ))\n" + indent + "  fi ;;\n";
  }
  // An optional value is the next word when that does not start with "-".
  if (!optional.empty()) {
    out += indent + join(optional, "|") + ")\n" + after_eq + indent + "  else\n" + indent +
           "    if (( COMP_CWORD == i + 1 )) && [[ $cur != -* ]]; then " + fn + " \"$w\" \"$cur\"; return; fi\n" +
           indent + "    if (( COMP_CWORD > i + 1 )) && [[ ${COMP_WORDS[i+1]} != -* ]]; then (( i += 2 )); else (( i += 1 )); fi\n" +
           indent + "  fi ;;\n";
  }
  return out;
}

std::string write_bash(const Command& run, const std::vector<Command>& snapshot) {
  std::string b;
  b += "# bash completion for zerobox(1).\n";
  b += "# Generated by zb_docs_gen from zerobox's CLI definition. Do not edit.\n\n";

  b += "# Completes the value of the run flag $1, typed so far as $2.\n";
  b += "_zerobox_value() {\n  local IFS=$'\\n'\n  case $1 in\n" + bash_value_cases(run, "    ") + "  esac\n}\n\n";

  b += "# Completes the command (its first word is COMP_WORDS[$1]) and its arguments.\n";
  b += R"(_zerobox_command() {
  local IFS=$'\n' cur=${COMP_WORDS[COMP_CWORD]}
  if (( COMP_CWORD == $1 )); then
    COMPREPLY=($(compgen -c -- "$cur"))
    if (( $1 == 1 )) && [[ snapshot == "$cur"* ]]; then COMPREPLY+=(snapshot); fi
    return
  fi
  if declare -F _command_offset >/dev/null; then
    _command_offset "$1"
    return
  fi
  compopt -o filenames 2>/dev/null
  COMPREPLY=($(compgen -f -- "$cur"))
}

)";

  // zerobox snapshot SUBCOMMAND
  std::vector<std::string> subs;
  for (const auto& s : snapshot) subs.push_back(s.name);
  b += "_zerobox_snapshot_value() {\n  local IFS=$'\\n'\n  case $sub in\n";
  for (const auto& s : snapshot) {
    b += "    " + s.name + ")\n      case $1 in\n" + bash_value_cases(s, "        ") + "      esac ;;\n";
  }
  b += "  esac\n}\n\n";
  b += "_zerobox_snapshot() {\n  local IFS=$'\\n' cur=${COMP_WORDS[COMP_CWORD]}\n";
  subs.insert(subs.end(), {"-h", "--help"});
  b += "  if (( COMP_CWORD == 2 )); then\n    " + bash_words(subs, "\"$cur\"") + "\n    return\n  fi\n";
  b += "  local sub=${COMP_WORDS[2]} i=3 w n=0\n";
  b += "  if [[ $cur == --*=* ]]; then\n    _zerobox_snapshot_value \"${cur%%=*}\" \"${cur#*=}\"\n"
       "    COMPREPLY=(\"${COMPREPLY[@]/#/${cur%%=*}=}\")\n    return\n  fi\n";
  b += "  # n counts the positional arguments before the cursor.\n";
  b += "  while (( i < COMP_CWORD )); do\n    w=${COMP_WORDS[i]}\n    case $sub in\n";
  for (const auto& s : snapshot) {
    b += "      " + s.name + ")\n        case $w in\n" + bash_skip_cases(s, "_zerobox_snapshot_value", "          ") +
         "          -*) (( i += 1 )) ;;\n          *) (( i += 1, n += 1 )) ;;\n        esac ;;\n";
  }
  b += "      *) return ;;\n    esac\n  done\n";
  b += "  if [[ $cur == -* ]]; then\n    case $sub in\n";
  for (const auto& s : snapshot) {
    b += "      " + s.name + ") " + bash_words(all_names(s), "\"$cur\"") + " ;;\n";
  }
  b += "    esac\n    return\n  fi\n  case $sub in\n";
  for (const auto& s : snapshot) {
    if (s.positionals.empty()) continue;
    b += "    " + s.name + ")\n";
    for (size_t k = 0; k < s.positionals.size(); ++k) {
      const auto& p = s.positionals[k];
      std::string test = p.many ? "n >= " + std::to_string(k) : "n == " + std::to_string(k);
      b += std::string(k == 0 ? "      if" : "      elif") + " (( " + test + " )); then " +
           bash_complete(p.complete, p.words, "\"$cur\"") + "\n";
    }
    b += "      fi ;;\n";
  }
  b += "  esac\n}\n\n";

  b += "_zerobox() {\n  local IFS=$'\\n' cur=${COMP_WORDS[COMP_CWORD]} i=1 w\n  COMPREPLY=()\n";
  b += "  if (( COMP_CWORD > 1 )) && [[ ${COMP_WORDS[1]} == snapshot ]]; then\n    _zerobox_snapshot\n    return\n  fi\n";
  b += "  # --flag=value in one word (when \"=\" is not in COMP_WORDBREAKS).\n";
  b += "  if [[ $cur == --*=* ]]; then\n    _zerobox_value \"${cur%%=*}\" \"${cur#*=}\"\n"
       "    COMPREPLY=(\"${COMPREPLY[@]/#/${cur%%=*}=}\")\n    return\n  fi\n";
  b += "  # The options before the cursor; the first other word is the command.\n";
  b += "  while (( i < COMP_CWORD )); do\n    w=${COMP_WORDS[i]}\n    case $w in\n";
  b += "      --) _zerobox_command $(( i + 1 )); return ;;\n";
  b += bash_skip_cases(run, "_zerobox_value", "      ");
  b += "      -*) (( i += 1 )) ;;\n      *) _zerobox_command \"$i\"; return ;;\n    esac\n  done\n";
  b += "  if [[ $cur == -* ]]; then\n    " + bash_words(all_names(run), "\"$cur\"") + "\n    return\n  fi\n";
  b += "  _zerobox_command \"$COMP_CWORD\"\n}\n\n";
  b += "complete -F _zerobox zerobox\n";
  return b;
}

// ---- zsh -------------------------------------------------------------------------------

// Text inside an _arguments description ("[...]").
std::string zsh_desc(std::string_view s) {
  std::string out;
  for (char ch : s) {
    if (ch == '[' || ch == ']' || ch == '\\') out += '\\';
    out += ch;
  }
  return out;
}

// Text between colons: an _arguments message, a (( word\:description )) description.
std::string zsh_msg(std::string_view s) {
  std::string out;
  for (char ch : s) {
    if (ch == ':' || ch == '\\') out += '\\';
    out += ch;
  }
  return out;
}

std::string zsh_action(Complete how, const std::vector<std::string>& words) {
  switch (how) {
    case Complete::Files: return "_files";
    case Complete::Dirs: return "_files -/";
    case Complete::Words: return "(" + join(words, " ") + ")";
    case Complete::Nothing: break;
  }
  return " ";
}

// One _arguments spec per option, e.g. '*--allow-read=[Limit ...]:P[,P...]:_files'.
std::vector<std::string> zsh_specs(const Command& c) {
  std::vector<std::string> out;
  for (const auto& o : c.opts) {
    auto names = o.names();
    std::string exclusion = names.size() > 1 ? "(" + join(names, " ") + ")" : "";
    if (o.long_name == "--help" || o.long_name == "--version") exclusion = "(- *)";
    std::string suffix;  // how the value is attached
    if (o.value == Value::Required) suffix = "=";
    if (o.value == Value::Optional) suffix = "=";
    std::string value;
    if (o.value != Value::None) {
      value = std::string(o.value == Value::Optional ? "::" : ":") + zsh_msg(o.metavar.empty() ? "value" : o.metavar) +
              ":" + zsh_action(o.complete, o.words);
    }
    std::string desc = "[" + zsh_desc(o.description) + "]";
    std::string rep = o.repeatable ? "*" : "";
    for (const auto& n : names) {
      std::string sfx = suffix;
      if (n.size() == 2 && o.value == Value::Required) sfx = "+";  // -C DIR or -CDIR
      out.push_back(sq(exclusion + rep + n + sfx + desc + value));
    }
  }
  return out;
}

std::string write_zsh(const Command& run, const std::vector<Command>& snapshot, const CLI::App& snapshot_app) {
  std::string z;
  z += "#compdef zerobox\n";
  z += "# zsh completion for zerobox(1).\n";
  z += "# Generated by zb_docs_gen from zerobox's CLI definition. Do not edit.\n\n";
  z += "_zerobox_snapshot() {\n  local -a subcommands\n  subcommands=(\n";
  for (const auto& s : snapshot) z += "    " + sq(s.name + ":" + s.description) + "\n";
  z += "  )\n  if (( CURRENT == 2 )); then\n    _describe -t commands 'snapshot subcommand' subcommands\n    return\n  fi\n";
  z += "  local sub=$words[2]\n  shift words\n  (( CURRENT-- ))\n  case $sub in\n";
  for (const auto& s : snapshot) {
    z += "    " + s.name + ")\n      _arguments -s -S : \\\n";
    for (const auto& spec : zsh_specs(s)) z += "        " + spec + " \\\n";
    for (size_t k = 0; k < s.positionals.size(); ++k) {
      const auto& p = s.positionals[k];
      std::string pos = p.many ? "*" : std::to_string(k + 1);
      z += "        " + sq(pos + ":" + zsh_msg(p.name) + ":" + zsh_action(p.complete, p.words)) + " \\\n";
    }
    z += "      ;;\n";
  }
  z += "  esac\n}\n\n";
  std::string about = snapshot_app.get_description();
  if (about.ends_with(".")) about.pop_back();
  z += "_zerobox_command() {\n  _alternative \\\n    " +
       sq("zerobox:zerobox subcommand:((snapshot\\:\"" + zsh_msg(about) + "\"))") +
       " \\\n    'commands:command:_command_names -e'\n}\n\n";
  z += "_zerobox() {\n";
  z += "  if (( CURRENT > 2 )) && [[ $words[2] == snapshot ]]; then\n    shift words\n    (( CURRENT-- ))\n"
       "    _zerobox_snapshot\n    return\n  fi\n";
  z += "  _arguments -s -S : \\\n";
  for (const auto& spec : zsh_specs(run)) z += "    " + spec + " \\\n";
  z += "    '(-)1:command:_zerobox_command' \\\n    '*::arguments:_normal'\n}\n\n";
  z += "_zerobox \"$@\"\n";
  return z;
}

// ---- fish ------------------------------------------------------------------------------

std::string fish_complete_args(const Opt& o) {
  std::string out;
  if (!o.short_name.empty()) out += " -s " + o.short_name.substr(1);
  if (!o.long_name.empty()) out += " -l " + o.long_name.substr(2);
  if (o.value == Value::Optional && o.complete == Complete::Files) out += " -F";  // --flag=VALUE
  if (o.value == Value::Required) {
    switch (o.complete) {
      case Complete::Files: out += " -r -F"; break;
      case Complete::Dirs: out += " -x -a '(__fish_complete_directories)'"; break;
      case Complete::Words: out += " -x -a " + sq(join(o.words, " ")); break;
      case Complete::Nothing: out += " -x"; break;
    }
  }
  return out + " -d " + sq(o.description);
}

std::string write_fish(const Command& run, const std::vector<Command>& snapshot, const CLI::App& snapshot_app) {
  std::string value_flags = join(names_with(run, Value::Required), " ");
  std::string optional_flags = join(names_with(run, Value::Optional), " ");
  std::string f;
  f += "# fish completion for zerobox(1).\n";
  f += "# Generated by zb_docs_gen from zerobox's CLI definition. Do not edit.\n\n";
  f += "# True while the words before the cursor are zerobox's own options (no command yet).\n";
  f += "function __zerobox_in_options\n    set -l tokens (commandline -opc)\n    set -e tokens[1]\n";
  // skip 1: the token is a value; skip 2: it is one unless it starts with "-" (an optional value).
  f += "    test \"$tokens[1]\" = snapshot; and return 1\n    set -l skip 0\n    for t in $tokens\n";
  f += "        if test $skip = 1\n            set skip 0\n            continue\n        end\n";
  f += "        if test $skip = 2\n            set skip 0\n            string match -q -- '-*' $t; or continue\n"
       "        end\n";
  f += "        switch $t\n            case --\n                return 1\n            case " + value_flags +
       "\n                set skip 1\n            case " + optional_flags +
       "\n                set skip 2\n            case '-*'\n                continue\n            case '*'\n"
       "                return 1\n        end\n    end\n    return 0\nend\n\n";
  f += "# True where the command or its arguments are being typed.\n";
  f += "function __zerobox_in_command\n    set -l tokens (commandline -opc)\n    test \"$tokens[2]\" = snapshot; and return 1\n"
       "    __zerobox_in_options; or return 0\n    not string match -q -- '-*' (commandline -ct)\nend\n\n";
  f += "# The command and its arguments typed so far, the token under the cursor last.\n";
  f += "function __zerobox_command_line\n    set -l tokens (commandline -opc) (commandline -ct)\n    set -e tokens[1]\n"
       "    set -l skip 0\n    while set -q tokens[2]\n        set -l t $tokens[1]\n"
       "        if test $skip = 2; and string match -q -- '-*' $t\n            set skip 0\n        end\n"
       "        if test $skip != 0\n            set skip 0\n            set -e tokens[1]\n            continue\n"
       "        end\n        switch $t\n            case --\n                set -e tokens[1]\n                break\n"
       "            case " + value_flags + "\n                set skip 1\n            case " + optional_flags +
       "\n                set skip 2\n            case '-*'\n            case '*'\n                break\n"
       "        end\n        set -e tokens[1]\n    end\n    printf '%s\\n' $tokens\nend\n\n";
  f += "# `zerobox snapshot` followed by SUB (\"\": no subcommand yet).\n";
  f += "function __zerobox_snapshot\n    set -l tokens (commandline -opc)\n    test \"$tokens[2]\" = snapshot; or return 1\n"
       "    if test -z \"$argv[1]\"\n        test (count $tokens) -eq 2\n    else\n        test \"$tokens[3]\" = \"$argv[1]\"\n"
       "    end\nend\n\n";

  f += "complete -c zerobox -n __zerobox_in_options -f\n";
  for (const auto& o : run.opts) f += "complete -c zerobox -n __zerobox_in_options" + fish_complete_args(o) + "\n";
  f += "complete -c zerobox -n '__zerobox_in_options; and test (count (commandline -opc)) -eq 1' -f -a snapshot -d " +
       sq(snapshot_app.get_description()) + "\n";
  f += "complete -c zerobox -n __zerobox_in_command -f -a " +
       sq("(__fish_complete_subcommand --commandline (__zerobox_command_line))") + "\n\n";

  for (const auto& s : snapshot) {
    f += "complete -c zerobox -n '__zerobox_snapshot \"\"' -f -a " + s.name + " -d " + sq(s.description) + "\n";
  }
  for (const auto& s : snapshot) {
    std::string cond = " -n " + sq("__zerobox_snapshot " + s.name);
    bool files = false;
    for (const auto& p : s.positionals) {
      if (p.complete == Complete::Words) {
        f += "complete -c zerobox" + cond + " -f -a " + sq(join(p.words, " ")) + " -d " + sq(p.name) + "\n";
      }
      files = files || p.complete == Complete::Files;
    }
    if (!files) f += "complete -c zerobox" + cond + " -f\n";
    for (const auto& o : s.opts) f += "complete -c zerobox" + cond + fish_complete_args(o) + "\n";
  }
  return f;
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "zb_docs_gen: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: zb_docs_gen OUTDIR\n");
    return 2;
  }
  std::string dir = argv[1];
  zb::cli::RunFlags run_flags;
  auto run_app = zb::cli::make_run_app(run_flags);
  zb::cli::SnapshotFlags snapshot_flags;
  auto snapshot_app = zb::cli::make_snapshot_app(snapshot_flags);

  Command run = read_command(*run_app, "zerobox");
  std::vector<Command> snapshot;
  for (const CLI::App* sub : std::as_const(*snapshot_app).get_subcommands([](const CLI::App*) { return true; })) {
    snapshot.push_back(read_command(*sub, sub->get_name()));
  }
  bool ok = write_file(dir + "/zerobox.1", write_man(run, snapshot, *snapshot_app)) &&
            write_file(dir + "/zerobox.bash", write_bash(run, snapshot)) &&
            write_file(dir + "/_zerobox", write_zsh(run, snapshot, *snapshot_app)) &&
            write_file(dir + "/zerobox.fish", write_fish(run, snapshot, *snapshot_app));
  return ok ? 0 : 1;
}
