// Byte strings as text: UTF-8 checks, base64 and hex (paths are bytes, JSON text is UTF-8).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace zb::text {

// Strict UTF-8 (no overlongs, surrogates or code points above U+10FFFF): what JSON text
// may carry, and what nlohmann's dump() accepts without throwing.
bool valid_utf8(std::string_view s);

// Standard base64 with padding, and its inverse (nullopt on malformed input).
std::string base64(std::string_view in);
std::optional<std::string> unbase64(std::string_view in);

// Two lowercase hex digits a byte ("\x01\xab" -> "01ab").
std::string hex(std::string_view bytes);

}  // namespace zb::text
