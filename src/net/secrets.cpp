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

// What a value may keep as it is in a URL: the unreserved characters, and ':' and '@', which
// mean nothing special in a path segment or a query value. Everything else ('%', '+', '&',
// '=', '/', '?', spaces, non-ASCII ...) is percent-encoded, so that the server decodes
// exactly the value.
bool target_safe(unsigned char u) {
  if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9')) return true;
  return std::string_view("-._~:@").find(static_cast<char>(u)) != std::string_view::npos;
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
  return replace_placeholders(target, subs, [](const std::string& v) {
    static constexpr char k_hex[] = "0123456789ABCDEF";
    std::string out;
    for (char ch : v) {
      auto u = static_cast<unsigned char>(ch);
      if (target_safe(u)) {
        out += ch;
      } else {
        out += '%';
        out += k_hex[u >> 4];
        out += k_hex[u & 15];
      }
    }
    return out;
  });
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
