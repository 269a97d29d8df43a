// Tests for src/net/socks5_request.cpp (the SOCKS5 request grammar, on bytes).
#include <doctest/doctest.h>

#include <string>

#include "net/socks5_request.hpp"

using namespace zb::net;
using namespace std::string_literals;

namespace {

// VER CMD RSV ATYP=3, the name with its length byte, then the port.
std::string domain_request(const std::string& name, std::uint16_t port, char cmd = 1) {
  std::string r = "\x05"s + cmd + "\x00\x03"s + static_cast<char>(name.size()) + name;
  r += static_cast<char>(port >> 8);
  r += static_cast<char>(port & 0xff);
  return r;
}

}  // namespace

TEST_CASE("socks5: the request's size is known from its first five bytes") {
  CHECK(socks_request_size("\x05\x01\x00\x01\x7f"s) == 10);
  CHECK(socks_request_size("\x05\x01\x00\x04\x00"s) == 22);
  CHECK(socks_request_size(domain_request("example.com", 443)) == 4 + 1 + 11 + 2);
  CHECK(socks_request_size("\x05\x01\x00\x03\x00"s) == 7);
  CHECK(socks_request_size("\x05\x01\x00\x02\x00"s) == 0);  // no such address type
}

TEST_CASE("socks5: CONNECT to a domain name") {
  std::string req = domain_request("Example.COM.", 8443);
  REQUIRE(socks_request_size(req) == req.size());
  SocksRequest r = parse_socks_request(req);
  CHECK(r.reply == k_socks_ok);
  CHECK(r.hp.host == "example.com");  // normalised by the host grammar
  CHECK(r.hp.kind == HostKind::Name);
  CHECK(r.hp.port == 8443);
  CHECK_FALSE(r.ip);
  CHECK(r.invalid.empty());
}

TEST_CASE("socks5: requests that are refused, with the reply code") {
  CHECK(parse_socks_request("\x04" + domain_request("h", 80).substr(1)).reply == k_socks_general);
  CHECK(parse_socks_request(domain_request("h", 80, 2)).reply == k_socks_bad_command);  // BIND
  CHECK(parse_socks_request(domain_request("h", 80, 3)).reply == k_socks_bad_command);  // UDP ASSOCIATE
  CHECK(parse_socks_request("\x05\x01\x00\x02\x00\x00\x00"s).reply == k_socks_bad_address_type);

  SocksRequest port0 = parse_socks_request(domain_request("example.com", 0));
  CHECK(port0.reply == k_socks_not_allowed);
  CHECK(port0.invalid == "port 0");

  SocksRequest bad = parse_socks_request(domain_request("a..b", 80));
  CHECK(bad.reply == k_socks_not_allowed);
  CHECK_FALSE(bad.invalid.empty());
  CHECK_FALSE(bad.ip);
}

TEST_CASE("socks5: an IP address is refused and reported as the address asked for") {
  SocksRequest v4 = parse_socks_request("\x05\x01\x00\x01\x0a\x00\x00\x01\x01\xbb"s);
  CHECK(v4.reply == k_socks_not_allowed);
  REQUIRE(v4.ip);
  CHECK(v4.ip->host == "10.0.0.1");
  CHECK(v4.ip->kind == HostKind::IPv4);
  CHECK(v4.ip->port == 443);
  CHECK(v4.invalid.empty());

  std::string v6 = "\x05\x01\x00\x04"s + std::string(15, '\0') + "\x01"s + "\x00\x50"s;
  REQUIRE(socks_request_size(v6) == v6.size());
  SocksRequest r6 = parse_socks_request(v6);
  CHECK(r6.reply == k_socks_not_allowed);
  REQUIRE(r6.ip);
  CHECK(r6.ip->host == "::1");
  CHECK(r6.ip->kind == HostKind::IPv6);
  CHECK(r6.ip->port == 80);
}
