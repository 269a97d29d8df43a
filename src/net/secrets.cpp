#include "net/secrets.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include "util/text.hpp"

namespace zb::net {

SecretSet::SecretSet(std::vector<SecretEntry> entries, NetPolicy allow_net)
    : m_entries(std::move(entries)), m_allow_net(std::move(allow_net)) {}

std::vector<const SecretEntry*> SecretSet::for_host(const HostPort& hp) const {
  std::vector<const SecretEntry*> out;
  if (m_allow_net.denied(hp)) return out;
  std::optional<bool> allowed;  // decided once, and only if a secret without rules asks
  for (const auto& e : m_entries) {
    bool applies = false;
    if (!e.hosts.empty()) {
      applies = std::any_of(e.hosts.begin(), e.hosts.end(), [&](const Rule& r) { return matches(r, hp); });
    } else {
      if (!allowed) allowed = m_allow_net.decide(hp).allowed;
      applies = *allowed;
    }
    if (applies) out.push_back(&e);
  }
  return out;
}

namespace {

// Replaces every occurrence of each placeholder, leftmost first; `encode` turns a value, and
// the place of its placeholder in s, into what is written in its place.
template <class Encode>
std::string replace_placeholders(std::string_view s, const Approved& subs, Encode encode) {
  if (subs.empty() || s.find(k_placeholder_prefix) == std::string_view::npos) return std::string(s);
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t at = s.find(k_placeholder_prefix, i);
    if (at == std::string_view::npos) break;
    const SecretEntry* hit = nullptr;
    for (const SecretEntry* e : subs) {
      if (s.substr(at, e->placeholder.size()) == e->placeholder) {
        hit = e;
        break;
      }
    }
    out.append(s.substr(i, at - i));
    if (hit) {
      out += encode(hit->value, at);
      i = at + hit->placeholder.size();
    } else {
      out.append(k_placeholder_prefix);
      i = at + k_placeholder_prefix.size();
    }
  }
  out.append(s.substr(std::min(i, s.size())));
  return out;
}

constexpr char k_hex_upper[] = "0123456789ABCDEF";

bool is_hex(char ch) { return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F'); }

bool is_unreserved(unsigned char u) {
  if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9')) return true;
  return u == '-' || u == '.' || u == '_' || u == '~';
}

// Percent-encodes the bytes `which` selects.
template <class Which>
std::string percent(std::string_view v, const char* hex, Which which) {
  std::string out;
  for (char ch : v) {
    auto u = static_cast<unsigned char>(ch);
    if (!which(u)) {
      out += ch;
    } else {
      out += '%';
      out += hex[u >> 4];
      out += hex[u & 15];
    }
  }
  return out;
}

bool iequals_ascii(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto l = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
           return l(x) == l(y);
         });
}

}  // namespace

std::string substitute(std::string_view s, const Approved& subs) {
  return replace_placeholders(s, subs, [](const std::string& v, std::size_t) { return v; });
}

std::string substitute_target(std::string_view target, const Approved& subs) {
  std::size_t query = target.find('?');
  auto in_path = [](unsigned char u) {
    return !is_unreserved(u) && std::string_view("!$&'()*+,=:@").find(static_cast<char>(u)) == std::string_view::npos;
  };
  auto in_query = [](unsigned char u) {
    return !is_unreserved(u) && std::string_view("!$'()*,:@/?").find(static_cast<char>(u)) == std::string_view::npos;
  };
  return replace_placeholders(target, subs, [&](const std::string& v, std::size_t at) {
    return at < query ? percent(v, k_hex_upper, in_path) : percent(v, k_hex_upper, in_query);
  });
}

std::string escaped_placeholder(std::string_view text, const Approved& subs) {
  for (const SecretEntry* e : subs) {
    for (std::size_t at = text.find(e->placeholder); at != std::string_view::npos;
         at = text.find(e->placeholder, at + 1)) {
      std::string_view before = text.substr(0, at);
      // Up to three hex digits of an escape that the value's first bytes would complete.
      std::size_t digits = 0;
      while (digits < 3 && digits < before.size() && is_hex(before[before.size() - 1 - digits])) ++digits;
      bool unfinished = false;
      for (std::size_t d = 0; d <= digits && !unfinished; ++d) {
        std::string_view lead = before.substr(0, before.size() - d);
        unfinished = (d <= 1 && lead.ends_with("%")) || (d <= 1 && lead.ends_with("\\x")) || lead.ends_with("\\u") ||
                     lead.ends_with("&#x") || lead.ends_with("&#X") ||
                     (d == 0 && (lead.ends_with("\\") || lead.ends_with("&#")));
      }
      // "&#" followed by decimal digits: the value's digits would extend the number.
      std::size_t dec = 0;
      while (dec < before.size() && before[before.size() - 1 - dec] >= '0' && before[before.size() - 1 - dec] <= '9')
        ++dec;
      if (!unfinished && before.substr(0, before.size() - dec).ends_with("&#")) unfinished = true;
      if (unfinished) {
        return "the placeholder of " + e->key +
               " follows an unfinished escape sequence (such as %2 or \\u00), which would let the server decode "
               "the value into another form; refused";
      }
    }
  }
  return {};
}

std::string substitute_field(std::string_view name, std::string_view value, const Approved& subs) {
  if (subs.empty()) return std::string(value);
  if (iequals_ascii(name, "authorization") && value.size() > 6 && iequals_ascii(value.substr(0, 6), "basic ")) {
    std::size_t start = 6;
    while (start < value.size() && value[start] == ' ') ++start;
    if (auto creds = text::unbase64(value.substr(start))) {
      std::string replaced = substitute(*creds, subs);
      if (replaced != *creds) return std::string(value.substr(0, start)) + text::base64(replaced);
    }
  }
  return substitute(value, subs);
}

}  // namespace zb::net
