// Byte strings in JSON: strict UTF-8 checks and base64 (RFC 4648). A few dozen lines that
// every JSON writer here needs; not worth a dependency.
#include "util/text.hpp"

#include <cstdint>

namespace zb::text {
// Strict UTF-8 (no overlongs, surrogates or code points above U+10FFFF): what JSON text
// may carry, and what nlohmann's dump() accepts without throwing.
bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  auto cont = [&](std::size_t k) { return k < s.size() && (byte(k) & 0xC0) == 0x80; };
  while (i < s.size()) {
    unsigned char c = byte(i);
    if (c < 0x80) {
      i += 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      if (!cont(i + 1)) return false;
      i += 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      if (!cont(i + 1) || !cont(i + 2)) return false;
      unsigned char c1 = byte(i + 1);
      if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F)) return false;
      i += 3;
    } else if (c >= 0xF0 && c <= 0xF4) {
      if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return false;
      unsigned char c1 = byte(i + 1);
      if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F)) return false;
      i += 4;
    } else {
      return false;
    }
  }
  return true;
}

namespace {
constexpr std::string_view k_b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

std::string base64(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < in.size(); i += 3) {
    std::uint32_t v = static_cast<std::uint32_t>(static_cast<unsigned char>(in[i])) << 16;
    if (i + 1 < in.size()) v |= static_cast<std::uint32_t>(static_cast<unsigned char>(in[i + 1])) << 8;
    if (i + 2 < in.size()) v |= static_cast<unsigned char>(in[i + 2]);
    out += k_b64[(v >> 18) & 63];
    out += k_b64[(v >> 12) & 63];
    out += i + 1 < in.size() ? k_b64[(v >> 6) & 63] : '=';
    out += i + 2 < in.size() ? k_b64[v & 63] : '=';
  }
  return out;
}

std::optional<std::string> unbase64(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  std::uint32_t v = 0;
  int bits = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '=') {
      if (i < in.size() - 2) return std::nullopt;
      continue;
    }
    auto pos = k_b64.find(in[i]);
    if (pos == std::string_view::npos) return std::nullopt;
    v = (v << 6) | static_cast<std::uint32_t>(pos);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((v >> bits) & 0xFF);
    }
  }
  return out;
}

std::string hex(std::string_view bytes) {
  static constexpr std::string_view k_digits = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes.size());
  for (char ch : bytes) {
    auto c = static_cast<unsigned char>(ch);
    out += k_digits[c >> 4];
    out += k_digits[c & 15];
  }
  return out;
}

}  // namespace zb::text
