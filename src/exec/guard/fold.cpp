// Name folding for the create guard (guard_fold, exec/guard.hpp): how a case-insensitive
// file system would compare two names, so that a spelling that folds to a protected name
// is refused as that name. Pure code, no system call.
#include <cstddef>
#include <cstring>

#include "exec/guard.hpp"

namespace zb::exec {
namespace {

// The code point of the valid, shortest-form UTF-8 sequence at in[i..n), and its length
// in `len`; -1 for anything else (an invalid sequence is opaque to Linux's casefolding).
long utf8_at(const char* in, std::size_t i, std::size_t n, std::size_t& len) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(in[i + k]); };
  auto cont = [&](std::size_t k) { return i + k < n && (b(k) & 0xC0) == 0x80; };
  unsigned char c = b(0);
  if (c >= 0xC2 && c <= 0xDF && cont(1)) {
    len = 2;
    return static_cast<long>(((c & 0x1FU) << 6) | (b(1) & 0x3FU));
  }
  if (c >= 0xE0 && c <= 0xEF && cont(1) && cont(2) && !(c == 0xE0 && b(1) < 0xA0) && !(c == 0xED && b(1) >= 0xA0)) {
    len = 3;
    return static_cast<long>(((c & 0x0FU) << 12) | ((b(1) & 0x3FU) << 6) | (b(2) & 0x3FU));
  }
  if (c >= 0xF0 && c <= 0xF4 && cont(1) && cont(2) && cont(3) && !(c == 0xF0 && b(1) < 0x90) &&
      !(c == 0xF4 && b(1) >= 0x90)) {
    len = 4;
    return static_cast<long>(((c & 0x07U) << 18) | ((b(1) & 0x3FU) << 12) | ((b(2) & 0x3FU) << 6) | (b(3) & 0x3FU));
  }
  return -1;
}

// Unicode's Default_Ignorable_Code_Point, which Linux's casefolding drops from names.
bool ignorable(long cp) {
  static constexpr long k_ranges[][2] = {
      {0x00AD, 0x00AD}, {0x034F, 0x034F}, {0x061C, 0x061C},   {0x115F, 0x1160},   {0x17B4, 0x17B5},   {0x180B, 0x180F},
      {0x200B, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x206F},   {0x3164, 0x3164},   {0xFE00, 0xFE0F},   {0xFEFF, 0xFEFF},
      {0xFFA0, 0xFFA0}, {0xFFF0, 0xFFF8}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0xE0000, 0xE0FFF},
  };
  for (const auto& r : k_ranges) {
    if (cp >= r[0] && cp <= r[1]) return true;
  }
  return false;
}

// The characters whose full case folding (after canonical decomposition) is ASCII.
const char* folds_to_ascii(long cp) {
  switch (cp) {
    case 0x017F: return "s";   // long s
    case 0x00DF: return "ss";  // sharp s
    case 0x1E9E: return "ss";  // capital sharp s
    case 0x212A: return "k";   // Kelvin sign
    case 0xFB00: return "ff";  // the Latin ligatures
    case 0xFB01: return "fi";
    case 0xFB02: return "fl";
    case 0xFB03: return "ffi";
    case 0xFB04: return "ffl";
    case 0xFB05: return "st";
    case 0xFB06: return "st";
    default: return nullptr;
  }
}

}  // namespace

std::size_t guard_fold(const char* in, std::size_t n, char* out) {
  std::size_t o = 0;
  for (std::size_t i = 0; i < n;) {
    auto c = static_cast<unsigned char>(in[i]);
    std::size_t len = 1;
    long cp = c >= 0x80 ? utf8_at(in, i, n, len) : -1;
    if (cp >= 0 && ignorable(cp)) {
      i += len;
      continue;
    }
    if (const char* to = cp >= 0 ? folds_to_ascii(cp) : nullptr) {
      for (; *to != '\0'; ++to) out[o++] = *to;  // never longer than the sequence it replaces
      i += len;
      continue;
    }
    if (cp >= 0) {
      std::memmove(out + o, in + i, len);  // `out` may be `in`, at or behind it
      o += len;
      i += len;
      continue;
    }
    out[o++] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : static_cast<char>(c);
    ++i;
  }
  out[o] = '\0';
  return o;
}

}  // namespace zb::exec
