#include "net/secrets.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

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

// --- The response scrubber ----------------------------------------------------------------------

namespace {

constexpr std::uint32_t k_none = 0xffffffff;

// The encodings undone before matching. Each is undone left to right, the way its decoder
// reads it, so that a literal "\\u0041" or "%2541" is not taken for what it is not.
enum class Codec : std::uint8_t { percent, percent_deep, plus, json, html };

// The decoded views of a response, each a chain of at most two decoders (outermost first).
struct ViewSpec {
  std::uint8_t depth;
  std::array<Codec, 2> layers;
};
constexpr ViewSpec k_views[] = {
    {0, {}},                                // as it is
    {1, {Codec::percent}},                  // %XX (quote(), encodeURIComponent, a URL)
    {2, {Codec::percent, Codec::percent}},  // %25XX: an encoded URL encoded again
    {1, {Codec::percent_deep}},             // %2525XX...: and again (a value's own "%XX" can
                                            // make this one read too far: the two above)
    {1, {Codec::plus}},                     // %XX and '+' (forms, quote_plus)
    {2, {Codec::percent, Codec::plus}},     // the same, encoded again
    {1, {Codec::json}},                     // JSON strings
    {1, {Codec::html}},                     // HTML text and attributes
    {2, {Codec::json, Codec::percent}},     // an encoded URL in JSON ("\/" for '/')
    {2, {Codec::html, Codec::percent}},     // an encoded URL in HTML ("&#x27;" for "'")
};
constexpr std::size_t k_view_count = sizeof k_views / sizeof k_views[0];

// The longest escape a decoder holds back: a JSON surrogate pair is 12 bytes, an HTML
// reference with leading zeros may be longer; one longer than this is left as it is.
constexpr std::size_t k_max_escape = 40;

// The HTML named character references (WHATWG's list) that stand for ASCII, sorted.
constexpr std::pair<std::string_view, std::string_view> k_html_names[] = {
    {"AMP", "&"},      {"DiacriticalGrave", "`"},
    {"GT", ">"},       {"Hat", "^"},
    {"LT", "<"},       {"NewLine", "\n"},
    {"QUOT", "\""},    {"Tab", "\t"},
    {"UnderBar", "_"}, {"VerticalLine", "|"},
    {"amp", "&"},      {"apos", "'"},
    {"ast", "*"},      {"bsol", "\\"},
    {"colon", ":"},    {"comma", ","},
    {"commat", "@"},   {"dollar", "$"},
    {"equals", "="},   {"excl", "!"},
    {"fjlig", "fj"},   {"grave", "`"},
    {"gt", ">"},       {"lbrace", "{"},
    {"lbrack", "["},   {"lcub", "{"},
    {"lowbar", "_"},   {"lpar", "("},
    {"lsqb", "["},     {"lt", "<"},
    {"midast", "*"},   {"num", "#"},
    {"percnt", "%"},   {"period", "."},
    {"plus", "+"},     {"quest", "?"},
    {"quot", "\""},    {"rbrace", "}"},
    {"rbrack", "]"},   {"rcub", "}"},
    {"rpar", ")"},     {"rsqb", "]"},
    {"semi", ";"},     {"sol", "/"},
    {"verbar", "|"},   {"vert", "|"},
};
static_assert(std::is_sorted(std::begin(k_html_names), std::end(k_html_names)));

int hex_value(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

bool is_alnum(char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'); }

// What a decoder makes of the bytes it holds, the first of which may start an escape.
struct Step {
  enum class Kind : std::uint8_t { more, literal, decoded };
  Kind kind = Kind::literal;  // more: a prefix of an escape; literal: the first byte is itself
  std::uint8_t used = 0;      // decoded: the bytes the escape takes
  std::uint8_t n = 0;         // and the bytes it stands for
  char out[4]{};
};

Step literal() { return {}; }
Step more(bool at_end) { return at_end ? literal() : Step{Step::Kind::more, 0, 0, {}}; }

// A code point (\uHHHH, &#NN;) as UTF-8; surrogates too, as JSON's lone ones are (WTF-8).
Step decoded(std::size_t used, std::uint32_t cp) {
  Step s{Step::Kind::decoded, static_cast<std::uint8_t>(used), 0, {}};
  auto put = [&](std::uint32_t b) { s.out[s.n++] = static_cast<char>(b); };
  if (cp < 0x80) {
    put(cp);
  } else if (cp < 0x800) {
    put(0xc0 | (cp >> 6));
    put(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    put(0xe0 | (cp >> 12));
    put(0x80 | ((cp >> 6) & 0x3f));
    put(0x80 | (cp & 0x3f));
  } else {
    put(0xf0 | (cp >> 18));
    put(0x80 | ((cp >> 12) & 0x3f));
    put(0x80 | ((cp >> 6) & 0x3f));
    put(0x80 | (cp & 0x3f));
  }
  return s;
}

// A byte as it is (what %XX stands for).
Step decoded_byte(std::size_t used, long b) {
  Step s{Step::Kind::decoded, static_cast<std::uint8_t>(used), 1, {}};
  s.out[0] = static_cast<char>(b);
  return s;
}

// n hex digits at h[from], as far as h goes: the value, -1 for a byte that is not a digit,
// -2 when h ends first.
long hex_digits(std::string_view h, std::size_t from, std::size_t n) {
  long v = 0;
  for (std::size_t i = from; i < from + n; ++i) {
    if (i >= h.size()) return -2;
    int d = hex_value(h[i]);
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

Step parse_percent(std::string_view h, bool at_end, bool plus) {
  if (plus && h[0] == '+') return decoded_byte(1, ' ');
  if (h[0] != '%') return literal();
  long v = hex_digits(h, 1, 2);
  if (v == -2) return more(at_end);
  return v < 0 ? literal() : decoded_byte(3, v);
}

// '%', any number of "25" (each a layer of percent-encoding of the '%'), and the byte's
// two hex digits: a byte percent-encoded once or more.
Step parse_percent_deep(std::string_view h, bool at_end) {
  if (h[0] != '%') return literal();
  for (std::size_t at = 1;; at += 2) {
    long v = hex_digits(h, at, 2);
    if (v == -2) return at == 1 ? more(at_end) : at_end ? decoded_byte(at, '%') : more(false);
    if (v == -1) return at == 1 ? literal() : decoded_byte(at, '%');  // the last "25" was the byte
    if (v != 0x25) return decoded_byte(at + 2, v);
  }
}

Step parse_json(std::string_view h, bool at_end) {
  if (h[0] != '\\') return literal();
  if (h.size() < 2) return more(at_end);
  switch (h[1]) {
    case '"':
    case '\\':
    case '/': return decoded_byte(2, h[1]);
    case 'b': return decoded_byte(2, '\b');
    case 'f': return decoded_byte(2, '\f');
    case 'n': return decoded_byte(2, '\n');
    case 'r': return decoded_byte(2, '\r');
    case 't': return decoded_byte(2, '\t');
    case 'u': break;
    default: return literal();
  }
  long hi = hex_digits(h, 2, 4);
  if (hi == -2) return more(at_end);
  if (hi < 0) return literal();
  if (hi < 0xd800 || hi > 0xdbff) return decoded(6, static_cast<std::uint32_t>(hi));
  // A high surrogate: with a low one after it, one code point.
  auto alone = decoded(6, static_cast<std::uint32_t>(hi));
  if (h.size() < 8) return h.size() == 6 || h[6] == '\\' ? (at_end ? alone : more(false)) : alone;
  if (h[6] != '\\' || h[7] != 'u') return alone;
  long lo = hex_digits(h, 8, 4);
  if (lo == -2) return at_end ? alone : more(false);
  if (lo < 0xdc00 || lo > 0xdfff) return alone;
  return decoded(
      12, 0x10000 + ((static_cast<std::uint32_t>(hi) - 0xd800) << 10) + (static_cast<std::uint32_t>(lo) - 0xdc00));
}

Step parse_html(std::string_view h, bool at_end) {
  if (h[0] != '&') return literal();
  if (h.size() < 2) return more(at_end);
  if (h[1] == '#') {
    if (h.size() < 3) return more(at_end);
    bool hex = h[2] == 'x' || h[2] == 'X';
    std::size_t from = hex ? 3 : 2, i = from;
    std::uint32_t cp = 0;
    for (; i < h.size(); ++i) {
      int d = hex ? hex_value(h[i]) : (h[i] >= '0' && h[i] <= '9' ? h[i] - '0' : -1);
      if (d < 0) break;
      cp = std::min<std::uint32_t>(cp * (hex ? 16 : 10) + static_cast<std::uint32_t>(d), 0x110000);
    }
    if (i == h.size() && !at_end) return more(false);
    if (i == from || cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return literal();
    // The ';' may be missing, as HTML parsers accept.
    return decoded(i < h.size() && h[i] == ';' ? i + 1 : i, cp);
  }
  std::size_t i = 1;
  while (i < h.size() && is_alnum(h[i])) ++i;
  std::string_view name = h.substr(1, i - 1);
  auto it = std::lower_bound(std::begin(k_html_names), std::end(k_html_names), name,
                             [](const auto& e, std::string_view n) { return e.first < n; });
  if (i == h.size()) {  // the name may go on
    bool prefix = it != std::end(k_html_names) && it->first.starts_with(name);
    return prefix ? more(at_end) : literal();
  }
  if (h[i] != ';' || it == std::end(k_html_names) || it->first != name) return literal();
  Step s{Step::Kind::decoded, static_cast<std::uint8_t>(i + 1), 0, {}};
  for (char ch : it->second) s.out[s.n++] = ch;
  return s;
}

Step parse(Codec c, std::string_view h, bool at_end) {
  switch (c) {
    case Codec::percent: return parse_percent(h, at_end, false);
    case Codec::percent_deep: return parse_percent_deep(h, at_end);
    case Codec::plus: return parse_percent(h, at_end, true);
    case Codec::json: return parse_json(h, at_end);
    case Codec::html: return parse_html(h, at_end);
  }
  return literal();
}

bool introduces(Codec c, unsigned char b) {
  switch (c) {
    case Codec::percent:
    case Codec::percent_deep: return b == '%';
    case Codec::plus: return b == '%' || b == '+';
    case Codec::json: return b == '\\';
    case Codec::html: return b == '&';
  }
  return false;
}

}  // namespace

// Aho-Corasick over the strings scrubbed: each value, and the forms added.
struct Redactor::Patterns {
  struct Node {
    std::vector<std::pair<unsigned char, std::uint32_t>> next;
    std::uint32_t fail = 0;
    std::uint32_t dict = k_none;  // the nearest node down the fail links where a string ends
    std::uint32_t depth = 0;
    std::uint32_t pattern = k_none;  // the string that ends here
  };
  std::vector<std::pair<std::string, std::string>> pairs;  // found, written in its place
  std::vector<Node> nodes;
  std::array<std::uint32_t, 256> root{};  // the root's transitions, in full
  std::array<bool, 256> wakes{};          // bytes that can take a view out of its resting state
  std::size_t longest = 0;

  explicit Patterns(std::vector<std::pair<std::string, std::string>> p) : pairs(std::move(p)) {
    nodes.emplace_back();
    for (std::uint32_t k = 0; k < pairs.size(); ++k) {
      std::uint32_t at = 0;
      for (char ch : pairs[k].first) {
        auto b = static_cast<unsigned char>(ch);
        std::uint32_t to = child(at, b);
        if (to == k_none) {
          to = static_cast<std::uint32_t>(nodes.size());
          Node n;
          n.depth = nodes[at].depth + 1;
          nodes.push_back(std::move(n));
          nodes[at].next.emplace_back(b, to);
        }
        at = to;
      }
      if (nodes[at].pattern == k_none) nodes[at].pattern = k;
      longest = std::max(longest, pairs[k].first.size());
    }
    for (unsigned b = 0; b < 256; ++b) {
      std::uint32_t to = child(0, static_cast<unsigned char>(b));
      root[b] = to == k_none ? 0 : to;
      wakes[b] = root[b] != 0 || b == '%' || b == '+' || b == '\\' || b == '&';
    }
    // Breadth first, so that every fail link points to a node already linked.
    std::vector<std::uint32_t> queue;
    for (const auto& [b, to] : nodes[0].next) queue.push_back(to);
    for (std::size_t q = 0; q < queue.size(); ++q) {
      std::uint32_t at = queue[q];
      for (const auto& [b, to] : nodes[at].next) {
        std::uint32_t f = nodes[at].fail;
        nodes[to].fail = at == 0 ? 0 : step(f, b);
        std::uint32_t fl = nodes[to].fail;
        nodes[to].dict = nodes[fl].pattern != k_none ? fl : nodes[fl].dict;
        queue.push_back(to);
      }
    }
  }

  std::uint32_t child(std::uint32_t at, unsigned char b) const {
    for (const auto& [c, to] : nodes[at].next)
      if (c == b) return to;
    return k_none;
  }
  std::uint32_t step(std::uint32_t at, unsigned char b) const {
    for (;;) {
      if (at == 0) return root[b];
      std::uint32_t to = child(at, b);
      if (to != k_none) return to;
      at = nodes[at].fail;
    }
  }
};

// One stream through the views. Offsets count the stream's bytes from its start.
struct Redactor::Scan {
  // A decoded byte and the stream's bytes it came from.
  struct Unit {
    unsigned char byte;
    std::uint64_t start, end;
  };
  struct Layer {
    Codec codec = Codec::percent;
    std::size_t n = 0;  // the bytes held: a possible escape not complete yet
    char bytes[k_max_escape]{};
    std::uint64_t start[k_max_escape]{}, end[k_max_escape]{};
  };
  struct View {
    std::size_t depth = 0;
    Layer layers[2];
    std::uint32_t state = 0;            // in the automaton
    std::uint64_t units = 0;            // units matched so far
    std::vector<std::uint64_t> starts;  // where the last `longest` of them start (a ring)
  };
  struct Found {
    std::uint64_t start, end;
    std::uint32_t pattern;
  };

  const Patterns& p;
  std::vector<View> views;
  bool resting = true;         // no view holds a byte or is inside a match
  std::vector<Found> found;    // matches not yet acted on
  std::string pending;         // the stream from `base` on
  std::uint64_t base = 0;      // the offset of pending[0]; what is before it is written out
  std::uint64_t fed = 0;       // bytes given to the views
  std::uint64_t next = 0;      // where the next replaced match may start
  std::uint64_t out_mark = 0;  // everything before it is written out or replaced

  explicit Scan(const Patterns& patterns) : p(patterns), views(k_view_count) {
    for (std::size_t v = 0; v < k_view_count; ++v) {
      views[v].depth = k_views[v].depth;
      for (std::size_t l = 0; l < views[v].depth; ++l) views[v].layers[l].codec = k_views[v].layers[l];
      views[v].starts.assign(std::max<std::size_t>(p.longest, 1), 0);
    }
  }

  void match(View& v, Unit u) {
    v.state = p.step(v.state, u.byte);
    std::size_t ring = v.starts.size();
    v.starts[v.units % ring] = u.start;
    ++v.units;
    const auto& nodes = p.nodes;
    for (std::uint32_t at = nodes[v.state].pattern != k_none ? v.state : nodes[v.state].dict; at != k_none;
         at = nodes[at].dict) {
      std::uint64_t len = nodes[at].depth;
      found.push_back({v.starts[(v.units - len) % ring], u.end, nodes[at].pattern});
    }
  }

  void push(View& v, std::size_t layer, Unit u) {
    if (layer == v.depth) return match(v, u);
    Layer& l = v.layers[layer];
    if (l.n == 0 && !introduces(l.codec, u.byte)) return push(v, layer + 1, u);
    l.bytes[l.n] = static_cast<char>(u.byte);
    l.start[l.n] = u.start;
    l.end[l.n] = u.end;
    ++l.n;
    drain(v, layer, false);
  }

  void drop(Layer& l, std::size_t k) {
    std::memmove(l.bytes, l.bytes + k, l.n - k);
    std::memmove(l.start, l.start + k, (l.n - k) * sizeof l.start[0]);
    std::memmove(l.end, l.end + k, (l.n - k) * sizeof l.end[0]);
    l.n -= k;
  }

  // Decodes what the layer holds, as far as it can be decided.
  void drain(View& v, std::size_t layer, bool at_end) {
    Layer& l = v.layers[layer];
    while (l.n > 0) {
      Step s = parse(l.codec, std::string_view(l.bytes, l.n), at_end);
      if (s.kind == Step::Kind::more && l.n < k_max_escape) return;
      if (s.kind != Step::Kind::decoded) {
        Unit u{static_cast<unsigned char>(l.bytes[0]), l.start[0], l.end[0]};
        drop(l, 1);
        push(v, layer + 1, u);
      } else {
        std::uint64_t start = l.start[0], end = l.end[s.used - 1];
        drop(l, s.used);
        for (std::size_t i = 0; i < s.n; ++i) push(v, layer + 1, {static_cast<unsigned char>(s.out[i]), start, end});
      }
    }
  }

  bool at_rest(const View& v) const {
    for (std::size_t l = 0; l < v.depth; ++l)
      if (v.layers[l].n > 0) return false;
    return v.state == 0;
  }

  // The first offset a match still to be found may start at.
  std::uint64_t frontier() const {
    std::uint64_t f = fed;
    for (const View& v : views) {
      for (std::size_t l = 0; l < v.depth; ++l)
        if (v.layers[l].n > 0) f = std::min(f, v.layers[l].start[0]);
      std::uint64_t depth = p.nodes[v.state].depth;
      if (depth > 0) f = std::min(f, v.starts[(v.units - depth) % v.starts.size()]);
    }
    return f;
  }

  // Writes out what lies before `upto` (no match found later can start there): the matches
  // that start there, leftmost first and the longest at a tie, replaced.
  void settle(std::uint64_t upto, std::string& out) {
    std::sort(found.begin(), found.end(),
              [](const Found& a, const Found& b) { return a.start != b.start ? a.start < b.start : a.end > b.end; });
    std::uint64_t written = out_mark;
    std::size_t keep = 0;
    for (const Found& f : found) {
      if (f.start < next) continue;  // overlaps one replaced already
      if (f.start >= upto) {
        found[keep++] = f;
        continue;
      }
      out.append(pending, written - base, f.start - written);
      out += p.pairs[f.pattern].second;
      written = next = f.end;
    }
    found.resize(keep);
    if (upto > written) {
      out.append(pending, written - base, upto - written);
      written = upto;
    }
    out_mark = written;
    next = std::max(next, written);
  }

  std::string feed(std::string_view in) {
    pending.append(in);
    std::string out;
    std::uint64_t end = base + pending.size();
    const auto* bytes = reinterpret_cast<const unsigned char*>(pending.data());
    while (fed < end) {
      if (resting) {
        while (fed < end && !p.wakes[bytes[fed - base]]) ++fed;
        if (fed == end) break;
      }
      unsigned char b = bytes[fed - base];
      for (View& v : views) push(v, 0, {b, fed, fed + 1});
      ++fed;
      resting = std::all_of(views.begin(), views.end(), [&](const View& v) { return at_rest(v); });
      // Matches are acted on as they pile up, so that a long run of them (a value repeated
      // in one large piece) does not grow this list without bound.
      if (found.size() > 256) settle(frontier(), out);
    }
    settle(frontier(), out);
    pending.erase(0, out_mark - base);
    base = out_mark;
    return out;
  }

  std::string finish() {
    for (View& v : views)
      for (std::size_t l = 0; l < v.depth; ++l) drain(v, l, true);
    std::string out;
    settle(fed, out);
    pending.clear();
    base = out_mark;
    return out;
  }
};

Redactor::Redactor(const Approved& subs) {
  for (const SecretEntry* e : subs) {
    if (e->value.size() < k_min_redacted) continue;
    m_pairs.emplace_back(e->value, e->placeholder);
  }
  rebuild();
}

Redactor::Redactor(Redactor&&) noexcept = default;
Redactor& Redactor::operator=(Redactor&&) noexcept = default;
Redactor::~Redactor() = default;

void Redactor::rebuild() {
  m_patterns = std::make_unique<Patterns>(m_pairs);
  m_scan = std::make_unique<Scan>(*m_patterns);
}

void Redactor::add(std::string sent, std::string shown) {
  if (sent.size() < k_min_redacted || sent == shown) return;
  for (const auto& p : m_pairs)
    if (p.first == sent) return;
  m_pairs.emplace_back(std::move(sent), std::move(shown));
  rebuild();
}

bool Redactor::active() const { return !m_pairs.empty(); }

std::string Redactor::feed(std::string_view in) {
  if (m_pairs.empty()) return std::string(in);
  return m_scan->feed(in);
}

std::string Redactor::finish() {
  if (m_pairs.empty()) return {};
  return m_scan->finish();
}

std::string Redactor::redact(std::string_view s) const {
  if (m_pairs.empty()) return std::string(s);
  Scan scan(*m_patterns);
  std::string out = scan.feed(s);
  out += scan.finish();
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
