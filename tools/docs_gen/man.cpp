#include "model.hpp"

#include <string>
#include <string_view>
#include <vector>

#include "zerobox/zerobox.hpp"

namespace zb::docs_gen {
namespace {

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

}  // namespace

std::string write_man(const std::string& template_text, const Command& run, const std::vector<Command>& snapshot,
                      const CLI::App& snapshot_app) {
  std::string synopsis;
  for (const auto& s : snapshot) {
    synopsis += ".br\n.B zerobox snapshot " + s.name + "\n";
    std::string line;
    for (const auto& o : s.opts) {
      if (o.long_name == "--help") continue;
      line += (line.empty() ? "" : " ") + (o.required ? man_option(o) : "[" + man_option(o) + "]");
    }
    for (const auto& p : s.positionals) {
      std::string one = "\\fI" + roff(p.name) + "\\fR" + (p.many ? "..." : "");
      line += (line.empty() ? "" : " ") + (p.required ? one : "[" + one + "]");
    }
    if (!line.empty()) synopsis += line + "\n";
  }
  std::string repeatable;
  for (const auto& o : run.opts) {
    if (o.repeatable) repeatable += (repeatable.empty() ? "" : ", ") + o.main_name();
  }
  std::string options;
  for (const auto& g : run.groups) {
    options += ".SS " + roff(g == "Options" ? "General" : g) + "\n";
    for (const auto& o : run.opts) {
      if (o.group != g) continue;
      options += ".TP\n" + man_option(o) + "\n" + roff(o.description) + "\n";
    }
  }
  std::string commands;
  for (const auto& s : snapshot) {
    commands += ".TP\n\\fBzerobox snapshot " + s.name + "\\fR\n" + roff(s.description) + "\n";
    bool any = false;
    for (const auto& p : s.positionals) {
      if (p.description.empty()) continue;
      commands += std::string(any ? "" : ".RS\n") + ".TP\n\\fI" + roff(p.name) + "\\fR\n" + roff(p.description) + "\n";
      any = true;
    }
    for (const auto& o : s.opts) {
      if (o.long_name == "--help") continue;
      commands += std::string(any ? "" : ".RS\n") + ".TP\n" + man_option(o) + "\n" + roff(o.description) + "\n";
      any = true;
    }
    if (any) commands += ".RE\n";
  }
  // A slot alone on its line stands for whole lines (what it holds ends with one).
  const std::vector<std::pair<std::string, std::string>> slots = {
      {"@VERSION@", zerobox::version()},
      {"@SNAPSHOT_SYNOPSIS@\n", synopsis},
      {"@DESCRIPTION@", roff(run.description)},
      {"@OPTIONAL_VALUE_OPTIONS@", roff(joined_names(run.opts, Value::Optional, ", "))},
      {"@REPEATABLE_OPTIONS@", roff(repeatable)},
      {"@OPTIONS@\n", options},
      {"@SNAPSHOT_DESCRIPTION@", roff(snapshot_app.get_description())},
      {"@SNAPSHOT_FOOTER@", roff(snapshot_app.get_footer())},
      {"@SNAPSHOT_COMMANDS@\n", commands},
  };
  std::string m;
  std::size_t start = 0;
  while (start < template_text.size()) {
    std::size_t end = template_text.find('\n', start);
    end = end == std::string::npos ? template_text.size() : end + 1;
    std::string line = template_text.substr(start, end - start);
    start = end;
    if (line.starts_with(".\\\"#")) continue;  // the template's own comments
    for (const auto& [slot, value] : slots) {
      for (std::size_t at = line.find(slot); at != std::string::npos; at = line.find(slot, at + value.size())) {
        line.replace(at, slot.size(), value);
      }
    }
    m += line;
  }
  return m;
}

}  // namespace zb::docs_gen
