// The SOCKS5 request (RFC 1928 section 4) as the proxy takes it, CONNECT to a domain name
// only (proxy.hpp), and the reply codes (section 6). Pure functions on bytes, without I/O:
// the handshake on a connection is socks5.cpp's. Fuzzed by tests/fuzz/fuzz_proxy.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "net/host.hpp"

namespace zb::net {

inline constexpr std::uint8_t k_socks_ok = 0x00;
inline constexpr std::uint8_t k_socks_general = 0x01;
inline constexpr std::uint8_t k_socks_not_allowed = 0x02;
inline constexpr std::uint8_t k_socks_net_unreachable = 0x03;
inline constexpr std::uint8_t k_socks_host_unreachable = 0x04;
inline constexpr std::uint8_t k_socks_refused = 0x05;
inline constexpr std::uint8_t k_socks_bad_command = 0x07;
inline constexpr std::uint8_t k_socks_bad_address_type = 0x08;

// The request's size once its first five bytes are known (VER CMD RSV ATYP and the first
// byte of the address, which is the length of a name); 0 for an unknown address type.
// v.size() >= 5.
std::size_t socks_request_size(std::string_view v);

struct SocksRequest {
  std::uint8_t reply = k_socks_general;  // k_socks_ok, or the reply code that refuses it
  HostPort hp;                           // k_socks_ok: the name and port asked for
  // An IPv4 or IPv6 address asked for, with its port (refused: k_socks_not_allowed).
  std::optional<HostPort> ip;
  // A name that is not one (host.hpp), or port 0: why (refused: k_socks_not_allowed).
  std::string invalid;
};

// A complete request (at least socks_request_size(v) bytes).
SocksRequest parse_socks_request(std::string_view v);

}  // namespace zb::net
