#include "policy/secrets.hpp"

#include <sys/random.h>

namespace zb::policy {

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

}  // namespace zb::policy
