#include "net/secrets.hpp"

#include <sys/random.h>
#include <zlib.h>

#include <algorithm>
#include <tuple>

#include "util/text.hpp"

namespace zb::net {

Result<std::string> make_placeholder() {
  unsigned char b[32];
  if (::getrandom(b, sizeof b, 0) != static_cast<ssize_t>(sizeof b)) return fail("getrandom");
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out(k_placeholder_prefix);
  for (unsigned char c : b) {
    out += k_hex[c >> 4];
    out += k_hex[c & 15];
  }
  return out;
}

std::string invalid_secret_value(std::string_view value) {
  if (value.empty()) return "the value is empty";
  for (char ch : value) {
    auto u = static_cast<unsigned char>(ch);
    if ((u < 0x20 && ch != '\t') || u == 0x7f)
      return "the value contains a control character (a line break or NUL would split an HTTP header)";
  }
  return {};
}

SecretSet::SecretSet(std::vector<SecretEntry> entries, NetPolicy allow_net)
    : m_entries(std::move(entries)), m_allow_net(std::move(allow_net)) {
  for (auto& e : m_entries) e.echo_forms = echo_forms(e.value);
}

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

// Replaces every occurrence of each placeholder, leftmost first; `encode` turns a value into
// what is written in its place.
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
      out += encode(hit->value);
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
constexpr char k_hex_lower[] = "0123456789abcdef";

bool is_hex(char ch) {
  return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

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
  return replace_placeholders(s, subs, [](const std::string& v) { return v; });
}

std::string substitute_target(std::string_view target, const Approved& subs) {
  return replace_placeholders(target, subs,
                              [](const std::string& v) { return percent(v, k_hex_upper, [](unsigned char) { return true; }); });
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
        unfinished = (d <= 1 && lead.ends_with("%")) || (d <= 1 && lead.ends_with("\\x")) ||
                     lead.ends_with("\\u") || lead.ends_with("&#x") || lead.ends_with("&#X") ||
                     (d == 0 && (lead.ends_with("\\") || lead.ends_with("&#")));
      }
      // "&#" followed by decimal digits: the value's digits would extend the number.
      std::size_t dec = 0;
      while (dec < before.size() && before[before.size() - 1 - dec] >= '0' && before[before.size() - 1 - dec] <= '9') ++dec;
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

std::vector<std::string> echo_forms(std::string_view value) {
  auto all = [](unsigned char) { return true; };
  auto reserved = [](unsigned char u) { return !is_unreserved(u); };
  std::vector<std::string> forms = {
      percent(value, k_hex_upper, all),      percent(value, k_hex_lower, all),
      percent(value, k_hex_upper, reserved), percent(value, k_hex_lower, reserved),
  };
  // The form-encoding of a query string: spaces as '+'.
  std::string plus = forms[2];
  for (std::size_t at = plus.find("%20"); at != std::string::npos; at = plus.find("%20", at)) plus.replace(at, 3, "+");
  forms.push_back(plus);
  // JSON: '/' escaped as "\/" (PHP), or every other non-alphanumeric byte as \u00XX (.NET).
  std::string slash, u_upper, u_lower;
  for (char ch : value) {
    auto u = static_cast<unsigned char>(ch);
    slash += ch == '/' ? std::string("\\/") : std::string(1, ch);
    if (is_unreserved(u) && u != '-' && u != '.' && u != '_' && u != '~') {
      u_upper += ch;
      u_lower += ch;
    } else {
      u_upper += std::string("\\u00") + k_hex_upper[u >> 4] + k_hex_upper[u & 15];
      u_lower += std::string("\\u00") + k_hex_lower[u >> 4] + k_hex_lower[u & 15];
    }
  }
  forms.push_back(slash);
  forms.push_back(u_upper);
  forms.push_back(u_lower);
  return forms;
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

Redactor::Redactor(const Approved& subs) {
  for (const SecretEntry* e : subs) {
    if (e->value.size() < k_min_redacted) continue;
    m_pairs.emplace_back(e->value, e->placeholder);
    m_hold = std::max(m_hold, e->value.size() - 1);
  }
  // The longest value first, so that a value containing another is replaced whole.
  std::sort(m_pairs.begin(), m_pairs.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

void Redactor::add(std::string sent, std::string shown) {
  if (sent.size() < k_min_redacted || sent == shown) return;
  for (const auto& p : m_pairs)
    if (p.first == sent) return;
  m_hold = std::max(m_hold, sent.size() - 1);
  m_pairs.emplace_back(std::move(sent), std::move(shown));
  std::sort(m_pairs.begin(), m_pairs.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

std::string Redactor::redact(std::string_view s) const {
  if (m_pairs.empty()) return std::string(s);
  std::string out;
  std::size_t i = 0;
  for (auto [at, hit] = next_value(s, 0); hit != nullptr; std::tie(at, hit) = next_value(s, i)) {
    out.append(s.substr(i, at - i));
    out += hit->second;
    i = at + hit->first.size();
  }
  out.append(s.substr(i));
  return out;
}

std::pair<std::size_t, const std::pair<std::string, std::string>*> Redactor::next_value(std::string_view s,
                                                                                         std::size_t from) const {
  // m_pairs is sorted longest first, so at a tie the longest value wins.
  std::size_t best = std::string_view::npos;
  const std::pair<std::string, std::string>* hit = nullptr;
  for (const auto& p : m_pairs) {
    std::size_t at = s.find(p.first, from);
    if (at < best) {
      best = at;
      hit = &p;
    }
  }
  return {best, hit};
}

std::string Redactor::feed(std::string_view in) {
  if (m_pairs.empty()) return std::string(in);
  m_pending.append(in);
  // The same choices as redact() would make on the whole text: the leftmost match, the
  // longest at that place. A match is taken only when no value could still turn out to
  // match at or before it once more bytes arrive (a longer value around a shorter one).
  std::string_view s = m_pending;
  auto partial_from = [&](std::size_t from) {  // leftmost place a value may still complete
    std::size_t lo = s.size() > m_hold ? std::max(from, s.size() - m_hold) : from;
    for (std::size_t q = lo; q < s.size(); ++q) {
      std::string_view tail = s.substr(q);
      for (const auto& p : m_pairs) {
        if (p.first.size() > tail.size() && std::string_view(p.first).substr(0, tail.size()) == tail) return q;
      }
    }
    return s.size();
  };
  std::string out;
  std::size_t i = 0;
  for (;;) {
    auto [best, hit] = next_value(s, i);
    std::size_t wait = partial_from(i);
    if (!hit || wait <= best) {
      out.append(s.substr(i, wait - i));
      m_pending.erase(0, wait);
      return out;
    }
    out.append(s.substr(i, best - i));
    out += hit->second;
    i = best + hit->first.size();
  }
}

std::string Redactor::finish() {
  std::string out = redact(m_pending);
  m_pending.clear();
  return out;
}

struct Decoder::Z {
  z_stream zs{};
  bool raw_fallback = false;  // "deflate": retry as raw deflate if the zlib header is wrong
  bool started = false;       // some output was produced
  bool ended = false;         // Z_STREAM_END seen
};

Decoder::Decoder(bool raw_fallback) : m_z(std::make_unique<Z>()) {
  m_z->raw_fallback = raw_fallback;
  inflateInit2(&m_z->zs, 15 + 32);  // zlib or gzip, told apart by the header
}

Decoder::Decoder(Decoder&& o) noexcept : m_z(std::move(o.m_z)) {}

Decoder::~Decoder() {
  if (m_z) inflateEnd(&m_z->zs);
}

Result<std::optional<Decoder>> Decoder::for_coding(const std::vector<std::string>& codings) {
  std::vector<std::string> real;
  for (const auto& c : codings)
    if (c != "identity") real.push_back(c);
  if (real.empty()) return std::optional<Decoder>();
  if (real.size() == 1 && (real[0] == "gzip" || real[0] == "x-gzip" || real[0] == "deflate"))
    return std::optional<Decoder>(Decoder(real[0] == "deflate"));
  std::string list;
  for (const auto& c : real) list += (list.empty() ? "" : ", ") + c;
  return fail_msg("Content-Encoding " + list);
}

Result<std::string> Decoder::feed(std::string_view in) {
  Z& z = *m_z;
  std::string out;
  char buf[64 * 1024];
  auto* next = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.zs.next_in = next;
  z.zs.avail_in = static_cast<uInt>(in.size());
  while (z.zs.avail_in > 0) {
    if (z.ended) {
      // Another gzip member follows (RFC 1952 allows several).
      inflateReset(&z.zs);
      z.ended = false;
    }
    z.zs.next_out = reinterpret_cast<Bytef*>(buf);
    z.zs.avail_out = sizeof buf;
    int r = inflate(&z.zs, Z_NO_FLUSH);
    std::size_t produced = sizeof buf - z.zs.avail_out;
    if (r == Z_DATA_ERROR && z.raw_fallback && !z.started) {
      // "deflate" sent without its zlib wrapper: start again as raw deflate.
      z.raw_fallback = false;
      inflateEnd(&z.zs);
      z.zs = z_stream{};
      inflateInit2(&z.zs, -15);
      z.zs.next_in = next;
      z.zs.avail_in = static_cast<uInt>(in.size());
      continue;
    }
    if (r != Z_OK && r != Z_STREAM_END && !(r == Z_BUF_ERROR && produced > 0))
      return fail_msg(std::string("corrupt compressed body: ") + (z.zs.msg ? z.zs.msg : "zlib error"));
    out.append(buf, produced);
    if (produced > 0) z.started = true;
    if (r == Z_STREAM_END) z.ended = true;
    if (produced == 0 && r != Z_STREAM_END && z.zs.avail_in > 0 && r == Z_BUF_ERROR)
      return fail_msg("corrupt compressed body");
  }
  // Input used up; drain what zlib still holds.
  for (;;) {
    z.zs.next_out = reinterpret_cast<Bytef*>(buf);
    z.zs.avail_out = sizeof buf;
    int r = inflate(&z.zs, Z_NO_FLUSH);
    std::size_t produced = sizeof buf - z.zs.avail_out;
    out.append(buf, produced);
    if (r == Z_STREAM_END) z.ended = true;
    if (produced < sizeof buf) break;
  }
  return out;
}

}  // namespace zb::net
