// Which hosts a filtered sandbox may reach (docs/usage.md "Network": domain rules), and the resolved-address check
// against DNS rebinding and SSRF.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/host.hpp"
#include "util/error.hpp"

namespace zb::net {

// One --allow-net or --deny-net entry:
//   example.com        that name, any port
//   *.example.com      any name below it, at any depth, but not example.com itself
//   example.com:443    that name, port 443 only (any rule may carry a port)
//   10.1.2.3, [::1]:8080, ::1   IP literals (bracket IPv6 when giving a port)
//   localhost, 127.0.0.1, ::1   only with a port ("localhost:3000")
struct Rule {
  HostPort target;  // for a wildcard: the suffix ("example.com")
  bool wildcard = false;
  std::string text;  // as given, for messages
};

// Parses a rule; the error names the rule and what is wrong with it, and callers put the
// flag in front: "'localhost': loopback needs a port (localhost:3000)". A lone "*", a URL
// ("https://x"), a wildcard over an address ("*.10.0.0.1") or in the middle ("a.*.com")
// are refused. Loopback rules ("localhost", "*.localhost", 127/8, ::1, and the unspecified
// addresses, which Linux connects to this host) need a port, so that allowing a name never
// opens every local service by accident.
Result<Rule> parse_rule(std::string_view s);
// The same, where loopback_needs_port = false is for --deny-net: denying "localhost" on
// every port opens nothing.
Result<Rule> parse_rule(std::string_view s, bool loopback_needs_port);

// Whether a rule matches a requested host and port (hp.port set): the rule's port if it has
// one, then the name exactly, a wildcard's subdomains, or the same IP address (comparing
// ::ffff:a.b.c.d as a.b.c.d).
bool matches(const Rule& r, const HostPort& hp);

// An IP address, v4 or v6, in network byte order.
struct Address {
  int family = AF_INET;  // AF_INET or AF_INET6
  std::uint8_t bytes[16] = {};

  bool operator==(const Address&) const = default;
  static std::optional<Address> parse(std::string_view s);  // inet_pton; no brackets, no zone
  std::string str() const;
};

// Why an address is refused unless a rule names it explicitly; nullopt for a public
// address. "loopback", "private", "link-local", "cloud metadata", "carrier-grade NAT",
// "unspecified", "multicast", "broadcast", "reserved" (documentation, benchmarking,
// 240/4, deprecated IPv6 ranges), "unique local", "IPv4-mapped ...", "NAT64 ...",
// "6to4 ..." (judged on the embedded IPv4 address), "this host's own" (any address in
// host_addresses, public ones too, compared on the IPv4 form of a mapped address).
std::optional<std::string> special_address(const Address& a, const std::vector<Address>& host_addresses);

// The addresses of this host's interfaces (getifaddrs), for special_address.
std::vector<Address> host_addresses();

struct Decision {
  bool allowed = false;
  std::string reason;          // for a refusal: one line ("not in --allow-net", "denied by --deny-net *.x.com")
  bool explicit_name = false;  // an exact name rule, an IP rule or a --resolve mapping names
                               // this host: the address check lets special addresses through
};

class NetPolicy {
 public:
  // allow_all: every host is allowed unless denied (a bare --allow-net with --deny-net).
  // resolve: --resolve HOST:IP mappings (host normalised).
  static Result<NetPolicy> make(const std::vector<std::string>& allow, const std::vector<std::string>& deny,
                                const std::vector<std::pair<std::string, std::string>>& resolve, bool allow_all);

  // Errors name the flag and the entry: "--allow-net 'localhost': loopback needs a port
  // (localhost:3000)", "--resolve 'x:1.2.3': '1.2.3' is not an IP address". The host's own
  // addresses are read once, here (host_addresses).

  // This policy with `more` allowed after its own --allow-net rules, parsed and named in
  // errors as make() does those: what make(allow + more, ...) would give.
  Result<NetPolicy> allowing(const std::vector<std::string>& more) const;

  // The decision for a requested host and port (hp as parsed by host.hpp, port set).
  // --deny-net always wins ("denied by --deny-net *.x.com"). A name is allowed by an exact
  // or wildcard rule, an IP literal only by an IP rule (comparing ::ffff:a.b.c.d as
  // a.b.c.d), anything by allow_all; else "not in --allow-net".
  Decision decide(const HostPort& hp) const;
  // Whether a --deny-net rule matches.
  bool denied(const HostPort& hp) const;

  // The --resolve mapping for a normalised host name (HostPort::host), if any.
  std::optional<Address> resolved(const std::string& host) const;

  // After resolving: nullopt when the connection may go to `a`, else the reason
  // ("resolves to a private address (10.0.0.1)"); d.reason when d is a refusal.
  std::optional<std::string> check_address(const Decision& d, const Address& a) const;

  const std::vector<Rule>& allow_rules() const { return m_allow; }

 private:
  std::vector<Rule> m_allow, m_deny;
  std::vector<std::pair<std::string, Address>> m_resolve;
  std::vector<Address> m_own;
  bool m_allow_all = false;
};

}  // namespace zb::net
