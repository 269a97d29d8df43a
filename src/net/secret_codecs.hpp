// The encodings the response scrubber undoes before matching (secret_scrubber.cpp), and the
// decoded views of a response it matches: what the files of the scrubber share, and nothing
// outside src/net uses (secrets.hpp is the interface).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace zb::net::codec {

// The encodings undone before matching. Each is undone left to right, the way its decoder
// reads it, so that a literal "\\u0041" or "%2541" is not taken for what it is not.
enum class Codec : std::uint8_t { percent, percent_deep, plus, json, html };

// The decoded views of a response, each a chain of at most two decoders (outermost first).
struct ViewSpec {
  std::uint8_t depth;
  std::array<Codec, 2> layers;
};
inline constexpr ViewSpec k_views[] = {
    {0, {}},                                // as it is
    {1, {Codec::percent}},                  // %XX (quote(), encodeURIComponent, a URL)
    {2, {Codec::percent, Codec::percent}},  // %25XX: an encoded URL encoded again
    {1, {Codec::percent_deep}},             // %2525XX...: and again (a value's own "%XX" can
                                            // make this one read too far: the two above)
    {1, {Codec::plus}},                     // %XX and '+' (forms, quote_plus)
    {2, {Codec::percent, Codec::plus}},     // the same, encoded again
    {1, {Codec::json}},                     // JSON strings
    {1, {Codec::html}},                     // HTML text and attributes
    {2, {Codec::json, Codec::percent}},     // an encoded URL in JSON ("\/" for '/')
    {2, {Codec::html, Codec::percent}},     // an encoded URL in HTML ("&#x27;" for "'")
};
inline constexpr std::size_t k_view_count = sizeof k_views / sizeof k_views[0];

// The longest escape a decoder holds back: a JSON surrogate pair is 12 bytes, an HTML
// reference with leading zeros may be longer; one longer than this is left as it is.
inline constexpr std::size_t k_max_escape = 40;

// What a decoder makes of the bytes it holds, the first of which may start an escape.
struct Step {
  enum class Kind : std::uint8_t { more, literal, decoded };
  Kind kind = Kind::literal;  // more: a prefix of an escape; literal: the first byte is itself
  std::uint8_t used = 0;      // decoded: the bytes the escape takes
  std::uint8_t n = 0;         // and the bytes it stands for
  char out[4]{};
};

// What the decoder of `c` makes of h, the bytes a layer holds (h[0] may start an escape);
// at_end: no more bytes follow.
Step parse(Codec c, std::string_view h, bool at_end);
// Whether b can start an escape of `c` (a layer holds back only from such a byte on).
bool introduces(Codec c, unsigned char b);

}  // namespace zb::net::codec
