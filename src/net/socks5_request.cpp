// The SOCKS5 request grammar (socks5_request.hpp).
#include "net/socks5_request.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <utility>

#include "net/rules.hpp"

namespace zb::net {
namespace {

std::uint16_t port_at(std::string_view v, std::size_t at) {
  return static_cast<std::uint16_t>(static_cast<unsigned char>(v[at]) << 8 | static_cast<unsigned char>(v[at + 1]));
}

}  // namespace

std::size_t socks_request_size(std::string_view v) {
  switch (v[3]) {
    case 1: return 4 + 4 + 2;
    case 3: return 4 + 1 + static_cast<unsigned char>(v[4]) + 2;
    case 4: return 4 + 16 + 2;
    default: return 0;
  }
}

SocksRequest parse_socks_request(std::string_view v) {
  SocksRequest r;
  if (v[0] != 5) return r;
  if (v[1] != 1) {
    r.reply = k_socks_bad_command;
    return r;
  }
  if (v[3] == 1 || v[3] == 4) {
    // An address the client resolved itself: the name, which the rules are about, is lost.
    std::size_t alen = v[3] == 1 ? 4 : 16;
    Address a;
    a.family = v[3] == 1 ? AF_INET : AF_INET6;
    std::copy_n(v.data() + 4, alen, a.bytes);
    r.ip = HostPort{a.str(), v[3] == 1 ? HostKind::IPv4 : HostKind::IPv6, port_at(v, 4 + alen)};
    r.reply = k_socks_not_allowed;
    return r;
  }
  if (v[3] != 3) {
    r.reply = k_socks_bad_address_type;
    return r;
  }
  std::size_t len = static_cast<unsigned char>(v[4]);
  auto parsed = parse_host(v.substr(5, len));
  std::uint16_t port = port_at(v, 5 + len);
  if (!parsed || port == 0) {
    r.invalid = parsed ? std::string("port 0") : parsed.error().message();
    r.reply = k_socks_not_allowed;
    return r;
  }
  r.hp = std::move(*parsed);
  r.hp.port = port;
  r.reply = k_socks_ok;
  return r;
}

}  // namespace zb::net
