#include "model.hpp"

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace zb::docs_gen {
namespace {

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

}  // namespace

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : std::string(sep)) + s;
  return out;
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

}  // namespace zb::docs_gen
