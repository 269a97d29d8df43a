#include "util/log.hpp"

#include <unistd.h>

#include <string>

namespace zb::log {
namespace {
bool g_quiet = false;
bool g_debug = false;

void emit(std::string_view prefix, std::string_view msg) {
  std::string line;
  line.reserve(prefix.size() + msg.size() + 10);
  line += "zerobox: ";
  line += prefix;
  line += msg;
  line += '\n';
  // One write per line so concurrent writers do not interleave mid-line.
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}
}  // namespace

void set_quiet(bool quiet) { g_quiet = quiet; }
void set_debug(bool debug) { g_debug = debug; }
bool debug_enabled() { return g_debug; }
bool quiet() { return g_quiet; }

void error(std::string_view msg) { emit("error: ", msg); }
void warning(std::string_view msg) {
  if (!g_quiet) emit("warning: ", msg);
}
void info(std::string_view msg) {
  if (!g_quiet) emit("", msg);
}
void debug(std::string_view msg) {
  if (g_debug) emit("debug: ", msg);
}

namespace {

// Length of the valid UTF-8 sequence at s[i] that is safe to print, or 0: invalid bytes
// and C1 controls (U+0080..U+009F; as raw bytes, 0x9b is CSI on 8-bit terminals) are not.
std::size_t printable_utf8(std::string_view s, std::size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return 0;
  }
  if (n == 2 && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0) return 0;
  return n;
}

}  // namespace

std::string quote(std::string_view s) {
  bool plain = !s.empty();
  for (std::size_t i = 0; i < s.size() && plain; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x21 || c == 0x7f || c == '\'' || c == '"' || c == '\\') plain = false;
    if (c >= 0x80) {
      std::size_t n = printable_utf8(s, i);
      if (n == 0) plain = false;
      else i += n - 1;
    }
  }
  if (plain) return std::string(s);
  static const char* hex = "0123456789abcdef";
  auto escape = [&](std::string& out, unsigned char c) {
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
  };
  std::string out = "'";
  for (std::size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      escape(out, c);
    } else if (c == '\'' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x80) {
      std::size_t n = printable_utf8(s, i);
      if (n == 0) {
        escape(out, c);
      } else {
        out.append(s.substr(i, n));
        i += n - 1;
      }
    } else {
      out += static_cast<char>(c);
    }
  }
  out += "'";
  return out;
}

}  // namespace zb::log
