#include "model.hpp"

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "zerobox/zerobox.hpp"

namespace zb::docs_gen {
namespace {

// roff text: every "-" is "\-" (an option dash, which Debian renders as ASCII), "\" is
// "\e", a line may not begin with a control character, `x` becomes bold, and a character
// beyond ASCII (UTF-8) is written as its code point, "\[u2026]", which groff reads.
std::string roff(std::string_view s) {
  std::string out;
  bool bold = false, line_start = true;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char ch = s[i];
    if (line_start && (ch == '.' || ch == '\'')) out += "\\&";
    line_start = ch == '\n';
    if (auto lead = static_cast<unsigned char>(ch); lead >= 0xc0) {
      std::size_t n = lead >= 0xf0 ? 3 : lead >= 0xe0 ? 2 : 1;
      unsigned cp = lead & (0x3fu >> n);
      for (std::size_t k = 1; k <= n && i + 1 < s.size(); ++k)
        cp = (cp << 6) | (static_cast<unsigned char>(s[++i]) & 0x3fu);
      char hex[16];
      std::snprintf(hex, sizeof hex, "\\[u%04X]", cp);
      out += hex;
    } else if (ch == '-') {
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

// A docs/flags.toml form: the option's name in bold, its value in italics.
std::string man_form(std::string_view form) {
  std::size_t cut = form.find_first_of(" =");
  std::string out = "\\fB" + roff(form.substr(0, cut)) + "\\fR";
  if (cut == std::string_view::npos) return out;
  return out + form[cut] + "\\fI" + roff(form.substr(cut + 1)) + "\\fR";
}

// A table cell of docs/flags.toml as a man paragraph: a sentence.
std::string sentence(std::string_view text) {
  std::string s(text);
  if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 'a' + 'A');
  if (!s.empty() && s.back() != '.') s += '.';
  return roff(s);
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
                      const CLI::App& snapshot_app, const Reference& ref) {
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
    for (const auto& r : ref.run) {
      if (r.group != g) continue;
      std::string head;
      if (r.flag.empty()) {
        head = roff(r.form);
      } else if (!r.form.empty()) {
        head = man_form(r.form);
      } else {
        for (const auto& o : run.opts) {
          if (o.long_name == r.flag || o.short_name == r.flag) head = man_option(o);
        }
      }
      options += ".TP\n" + head + "\n" + sentence(r.text) + "\n";
    }
  }
  std::string commands;
  for (const auto& s : snapshot) {
    const std::string* text = snapshot_text(ref, s.name);
    commands +=
        ".TP\n\\fBzerobox snapshot " + s.name + "\\fR\n" + (text ? sentence(*text) : roff(s.description)) + "\n";
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
