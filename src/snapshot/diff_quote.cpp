// Names and lines made safe to print (diff.hpp): git's quoting of a path, and control
// characters shown as `cat -v` shows them.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "snapshot/diff.hpp"

namespace zb::snapshot {

std::string git_quote(std::string_view path) {
  auto special = [](unsigned char c) { return c < 0x20 || c == '"' || c == '\\' || c >= 0x7f; };
  if (std::none_of(path.begin(), path.end(), [&](char c) { return special(static_cast<unsigned char>(c)); })) {
    return std::string(path);
  }
  std::string out = "\"";
  for (char ch : path) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\a': out += "\\a"; break;
      case '\b': out += "\\b"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\v': out += "\\v"; break;
      case '\f': out += "\\f"; break;
      case '\r': out += "\\r"; break;
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      default:
        if (special(c)) {
          out += '\\';
          out += static_cast<char>('0' + ((c >> 6) & 7));
          out += static_cast<char>('0' + ((c >> 3) & 7));
          out += static_cast<char>('0' + (c & 7));
        } else {
          out += ch;
        }
    }
  }
  out += '"';
  return out;
}

namespace {

// The length of the strict UTF-8 sequence (no overlong form, surrogate or code point
// above U+10FFFF) that starts at s[i], with its code point in cp; 0 when there is none.
std::size_t utf8_at(std::string_view s, std::size_t i, std::uint32_t& cp) {
  auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = 0;
  std::uint32_t min = 0;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2, cp = c & 0x1fU, min = 0x80;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3, cp = c & 0x0fU, min = 0x800;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4, cp = c & 0x07U, min = 0x10000;
  } else {
    return 0;
  }
  if (s.size() - i < n) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3fU);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

// ^X for a C0 code or DEL, after "M-" for a C1 one (its value less 0x80), as cat -v.
void put_caret(std::string& out, unsigned c) {
  out += '^';
  out += c == 0x7f ? '?' : static_cast<char>(c + 0x40);
}

}  // namespace

std::string visible_controls(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) {
        put_caret(out, c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    std::uint32_t cp = 0;
    std::size_t n = utf8_at(s, i, cp);
    if (n == 0) {  // a stray byte: a C1 code to a terminal that reads bytes as Latin-1
      if (c <= 0x9f) {
        out += "M-";
        put_caret(out, c - 0x80U);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    if (cp <= 0x9f) {
      out += "M-";
      put_caret(out, cp - 0x80U);
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace zb::snapshot
