// The long descriptions of docs/flags.toml, checked against the CLI definition, and the
// markdown reference (docs/cli-reference.md) made from them and its template.
#include <toml++/toml.h>

#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "model.hpp"

namespace zb::docs_gen {
namespace {

const Opt* find_opt(const Command& c, std::string_view name) {
  for (const auto& o : c.opts) {
    if (o.long_name == name || o.short_name == name) return &o;
  }
  return nullptr;
}

std::string text_of(const toml::table& t, std::string_view key, const std::string& where) {
  auto v = t[key].value<std::string>();
  if (!v) throw std::runtime_error(where + ": no " + std::string(key) + " (a string)");
  return *v;
}

// A markdown table cell: "|" would end it.
std::string cell(std::string_view s) {
  std::string out;
  for (char ch : s) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return out;
}

// "`-A`, `--allow-all`", "`--allow-write[=P,...]`", "`--allow-read=P[,P...]`".
std::string md_option(const Opt& o) {
  std::string out;
  const std::vector<std::string> names = o.names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::string one = names[i];
    if (i + 1 == names.size()) {  // the value goes with the last name: "-A, --allow-all"
      if (o.value == Value::Optional) one += "[=" + o.metavar + "]";
      if (o.value == Value::Required) one += (o.long_name.empty() ? " " : "=") + o.metavar;
    }
    out += (out.empty() ? "" : ", ") + ("`" + cell(one) + "`");
  }
  return out;
}

std::string md_run_table(const Command& run, const Reference& ref, const std::vector<std::string>& groups) {
  std::string out = "| flag | meaning |\n|---|---|\n";
  for (const auto& g : groups) {
    bool any = false;
    for (const auto& r : ref.run) {
      if (r.group != g) continue;
      any = true;
      std::string form;
      if (!r.form.empty()) {
        form = r.flag.empty() ? cell(r.form) : "`" + cell(r.form) + "`";
      } else {
        form = md_option(*find_opt(run, r.flag));
      }
      out += "| " + form + (r.is_new ? " (new)" : "") + " | " + cell(r.text) + " |\n";
    }
    if (!any) throw std::runtime_error("cli-reference template: no flag is in the group " + g);
  }
  return out;
}

std::string md_usage(const Command& s) {
  std::string line = "zerobox snapshot " + s.name;
  for (const auto& o : s.opts) {
    if (o.long_name == "--help") continue;
    std::string one = o.long_name;
    if (o.value == Value::Required) one += "=" + o.metavar;
    line += " " + (o.required ? one : "[" + one + "]");
  }
  for (const auto& p : s.positionals) {
    std::string one = p.name + (p.many ? "..." : "");
    line += " " + (p.required ? one : "[" + one + "]");
  }
  return line;
}

std::string md_snapshot_table(const std::vector<Command>& snapshot, const Reference& ref) {
  std::string out = "| command | what it does |\n|---|---|\n";
  for (const auto& r : ref.snapshot) {
    for (const auto& s : snapshot) {
      if (s.name == r.name) out += "| `" + cell(md_usage(s)) + "` | " + cell(r.text) + " |\n";
    }
  }
  return out;
}

}  // namespace

Reference read_reference(const std::string& path, const Command& run, const std::vector<Command>& snapshot) {
  toml::table doc;
  try {
    doc = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(path + ": " + std::string(e.description()));
  }
  Reference ref;
  std::set<std::string> documented;
  if (const auto* rows = doc["run"].as_array()) {
    for (const auto& node : *rows) {
      const auto* t = node.as_table();
      if (t == nullptr) throw std::runtime_error(path + ": [[run]] must be a table");
      RunRow r;
      r.flag = text_of(*t, "flag", path);
      std::string where = path + ": [[run]] " + (r.flag.empty() ? "\"\"" : r.flag);
      r.text = text_of(*t, "text", where);
      r.form = (*t)["form"].value_or(std::string());
      r.is_new = (*t)["new"].value_or(false);
      if (r.flag.empty()) {
        r.group = text_of(*t, "group", where);
        if (r.form.empty()) throw std::runtime_error(where + ": a row without a flag needs a form");
      } else {
        const Opt* o = find_opt(run, r.flag);
        if (o == nullptr) throw std::runtime_error(where + ": zerobox has no such option");
        r.group = o->group;
        for (const auto& n : o->names()) documented.insert(n);
      }
      ref.run.push_back(std::move(r));
    }
  }
  for (const auto& o : run.opts) {
    if (documented.count(o.main_name()) == 0) {
      throw std::runtime_error(path + ": no [[run]] entry for " + o.main_name());
    }
  }
  std::set<std::string> subs;
  if (const auto* rows = doc["snapshot"].as_array()) {
    for (const auto& node : *rows) {
      const auto* t = node.as_table();
      if (t == nullptr) throw std::runtime_error(path + ": [[snapshot]] must be a table");
      SnapshotRow r;
      r.name = text_of(*t, "name", path);
      r.text = text_of(*t, "text", path + ": [[snapshot]] " + r.name);
      bool known = false;
      for (const auto& s : snapshot) known = known || s.name == r.name;
      if (!known)
        throw std::runtime_error(path + ": [[snapshot]] " + r.name + ": zerobox snapshot has no such command");
      subs.insert(r.name);
      ref.snapshot.push_back(std::move(r));
    }
  }
  for (const auto& s : snapshot) {
    if (subs.count(s.name) == 0) throw std::runtime_error(path + ": no [[snapshot]] entry for " + s.name);
  }
  return ref;
}

const std::string* snapshot_text(const Reference& ref, std::string_view name) {
  for (const auto& r : ref.snapshot) {
    if (r.name == name) return &r.text;
  }
  return nullptr;
}

std::string write_markdown(const std::string& template_text, const Command& run, const std::vector<Command>& snapshot,
                           const Reference& ref) {
  std::string synopsis;
  for (const auto& s : snapshot) synopsis += "    " + md_usage(s) + "\n";
  std::string out;
  std::size_t start = 0;
  while (start < template_text.size()) {
    std::size_t end = template_text.find('\n', start);
    end = end == std::string::npos ? template_text.size() : end + 1;
    std::string line = template_text.substr(start, end - start);
    start = end;
    if (line.starts_with("<!--#")) continue;  // the template's own comments
    std::string_view bare = std::string_view(line).substr(0, line.find_last_not_of('\n') + 1);
    if (bare.starts_with("@FLAGS:") && bare.ends_with("@")) {
      std::vector<std::string> groups;
      std::string_view list = bare.substr(7, bare.size() - 8);
      while (!list.empty()) {
        auto comma = list.find(',');
        groups.emplace_back(list.substr(0, comma));
        list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
      }
      out += md_run_table(run, ref, groups);
    } else if (bare == "@SNAPSHOT_TABLE@") {
      out += md_snapshot_table(snapshot, ref);
    } else if (bare == "@SNAPSHOT_SYNOPSIS@") {
      out += synopsis;
    } else {
      if (line.find('@') != std::string::npos && line.find("@FLAGS") != std::string::npos) {
        throw std::runtime_error("cli-reference template: a slot must be alone on its line: " + line);
      }
      out += line;
    }
  }
  return out;
}

}  // namespace zb::docs_gen
