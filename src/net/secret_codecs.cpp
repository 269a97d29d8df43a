#include "net/secret_codecs.hpp"

#include <algorithm>
#include <iterator>
#include <utility>

namespace zb::net::codec {

namespace {

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

}  // namespace

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

}  // namespace zb::net::codec
