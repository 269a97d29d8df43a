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

std::string quote(std::string_view s) {
  bool plain = !s.empty();
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c < 0x21 || c == 0x7f || c == '\'' || c == '"' || c == '\\') {
      plain = false;
      break;
    }
  }
  if (plain) return std::string(s);
  std::string out = "'";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else if (c == '\'' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += "'";
  return out;
}

}  // namespace zb::log
