// libFuzzer target: secret substitution and the response scrubber (src/net/secrets.cpp,
// secret_scrubber.cpp). Two fixed secrets; the input is split into a request-side string and a response body
// cut into pieces at the positions the input names. Besides not crashing:
//   - substituting never leaves an approved placeholder behind, and never touches an
//     unapproved one;
//   - substituted into a valid request target, a value (one with a space and a '~' here)
//     leaves it valid;
//   - the streaming scrubber (feed/finish, any cut points) gives exactly what the one-shot
//     redact() gives, and its output never contains a value, nor A's value with every byte
//     %XX ('$' in the body; '^' is the same with \u00xx, which a '\' before it can make
//     into something else, so it is only scrubbed, not checked).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "net/secrets.hpp"

using namespace zb::net;

namespace {

const SecretEntry& approved() {
  static const SecretEntry e{"A", std::string(k_placeholder_prefix) + std::string(64, 'a'), "s3cret-value-0123", {}};
  return e;
}
const SecretEntry& other() {
  // Contains A's value: the scrubber must prefer the longer one however the body is cut.
  static const SecretEntry e{
      "B", std::string(k_placeholder_prefix) + std::string(64, 'b'), "o ~ s3cret-value-0123 9", {}};
  return e;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 2, size - 2);
  // Let the fuzzer reach the placeholders: '@' stands for A's, '#' for B's.
  std::string text;
  for (char ch : in) {
    if (ch == '@') text += approved().placeholder;
    else if (ch == '#') text += other().placeholder;
    else text += ch;
  }
  Approved subs{&approved()};

  std::string s = substitute(text, subs);
  if (s.find(approved().placeholder) != std::string::npos) std::abort();
  std::size_t b_in = 0, b_out = 0;
  for (std::size_t at = 0; (at = text.find(other().placeholder, at)) != std::string::npos; ++at) ++b_in;
  for (std::size_t at = 0; (at = s.find(other().placeholder, at)) != std::string::npos; ++at) ++b_out;
  if (b_out < b_in) std::abort();

  // A target that was valid stays valid: what the value adds is percent-encoded.
  auto target_byte = [](char ch) {
    auto u = static_cast<unsigned char>(ch);
    return u > 0x20 && u < 0x7f && std::string_view("\"<>\\^`{|}#").find(ch) == std::string_view::npos;
  };
  std::string t = substitute_target(text, {&other()});
  bool valid = true;
  for (char ch : text) valid = valid && target_byte(ch);
  if (valid) {
    for (char ch : t)
      if (!target_byte(ch)) std::abort();
  }
  (void)substitute_field(data[0] % 2 ? "Authorization" : "X-Key", text, subs);

  // The scrubber, with values on the response side, as they are and encoded.
  static const std::string pct_a = [] {
    std::string out;
    for (char ch : approved().value) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(ch));
      out += buf;
    }
    return out;
  }();
  static const std::string json_a = [] {
    std::string out;
    for (char ch : approved().value) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(ch));
      out += buf;
    }
    return out;
  }();
  std::string body;
  for (char ch : in) {
    if (ch == '@') body += approved().value;
    else if (ch == '#') body += other().value;
    else if (ch == '$') body += pct_a;
    else if (ch == '^') body += json_a;
    else body += ch;
  }
  Approved both{&approved(), &other()};
  Redactor one(both);
  std::string whole = one.redact(body);
  Redactor stream(both);
  std::string out;
  std::size_t step = static_cast<std::size_t>(data[1] % 23) + 1;
  for (std::size_t i = 0; i < body.size(); i += step) out += stream.feed(std::string_view(body).substr(i, step));
  out += stream.finish();
  if (out != whole) std::abort();
  if (out.find(approved().value) != std::string::npos || out.find(other().value) != std::string::npos) std::abort();
  if (out.find(pct_a) != std::string::npos) std::abort();
  return 0;
}
