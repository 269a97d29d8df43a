#include "policy/secrets.hpp"

#include "util/random.hpp"

namespace zb::policy {

Result<std::string> make_placeholder() {
  auto r = util::random_hex(32);
  if (!r) return r;
  return std::string(k_placeholder_prefix) + *r;
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
