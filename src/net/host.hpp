// The one host grammar (docs/usage.md "Network"): HTTP Host headers, absolute-form request
// URIs, CONNECT authorities, SOCKS5 domain names and --allow-net/--deny-net/--resolve
// rules are all parsed here, so no two parsers can disagree about which host a request
// names.
//
// Accepted:
//   name       labels of [A-Za-z0-9-] (1..63 bytes, no leading or trailing '-',
//              underscores allowed as many real names carry them), separated by single
//              dots, 1..253 bytes in all, one optional trailing dot. Lowercased, the
//              trailing dot dropped. A name made only of digits and dots is not a name
//              (it would be an IPv4 address in some other parser): refused unless it is a
//              canonical dotted quad.
//   IPv4       exactly four decimal parts 0..255, no leading zeros ("010.1.1.1" is
//              refused: octal in inet_aton), no other forms (no "0x7f.1", "2130706433").
//   IPv6       in brackets in an authority ("[::1]:443"); bare in a SOCKS5 address or an
//              IP rule. Parsed with inet_pton, shown in its canonical form. No zone ids.
//   port       decimal 1..65535, no leading zeros, no sign.
// Refused: empty hosts, userinfo ("user@host"), percent-encoding, NUL or any byte outside
// the grammar, whitespace, empty labels ("a..b"), over-long labels or names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/error.hpp"

namespace zb::net {

enum class HostKind { Name, IPv4, IPv6 };

struct HostPort {
  std::string host;  // normalised: lowercase, no trailing dot; IPv6 without brackets
  HostKind kind = HostKind::Name;
  std::optional<std::uint16_t> port;

  bool operator==(const HostPort&) const = default;
};

// A host alone (no port), as in a SOCKS5 domain or the host part of a rule. IPv6 may be
// bare or bracketed. The error says what is wrong ("empty label in 'a..b'").
Result<HostPort> parse_host(std::string_view s);

// "host", "host:port", "[v6]", "[v6]:port". port_required: "host" alone is an error.
Result<HostPort> parse_authority(std::string_view s, bool port_required);

// The authority of an absolute-form request target "http://host[:port]/path?q"; the
// scheme must be http (case-insensitive). `path` receives the origin-form rest ("/" when
// empty). Default port 80.
Result<HostPort> parse_absolute_uri(std::string_view uri, std::string& path);

// "host:port" as shown in messages, with brackets for IPv6.
std::string to_string(const HostPort& hp);

}  // namespace zb::net
