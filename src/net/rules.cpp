// Domain rules and the resolved-address check (rules.hpp).
#include "net/rules.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/log.hpp"

namespace zb::net {
namespace {

std::string q(std::string_view s) {
  std::string r = log::quote(s);
  if (r.empty() || r.front() != '\'') r = "'" + r + "'";
  return r;
}

Address v4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
  Address r;
  r.family = AF_INET;
  r.bytes[0] = a;
  r.bytes[1] = b;
  r.bytes[2] = c;
  r.bytes[3] = d;
  return r;
}

bool starts_with(const std::uint8_t* bytes, std::initializer_list<std::uint8_t> prefix) {
  return std::equal(prefix.begin(), prefix.end(), bytes);
}

bool all_zero(const std::uint8_t* bytes, std::size_t n) {
  return std::all_of(bytes, bytes + n, [](std::uint8_t b) { return b == 0; });
}

// ::ffff:a.b.c.d is a.b.c.d to the kernel (an AF_INET6 socket connects over IPv4), so
// rules and the host's own addresses compare on the IPv4 form.
Address unmapped(const Address& a) {
  if (a.family == AF_INET6 && all_zero(a.bytes, 10) && a.bytes[10] == 0xff && a.bytes[11] == 0xff) {
    return v4(a.bytes[12], a.bytes[13], a.bytes[14], a.bytes[15]);
  }
  return a;
}

std::optional<std::string> special_v4(const std::uint8_t* b) {
  if (b[0] == 0) return "unspecified";  // 0/8 "this network": Linux connects 0.0.0.0 to itself
  if (b[0] == 127) return "loopback";
  if (b[0] == 10 || (b[0] == 172 && (b[1] & 0xf0) == 16) || (b[0] == 192 && b[1] == 168)) return "private";
  if (b[0] == 169 && b[1] == 254) {
    if (b[2] == 169 && b[3] == 254) return "cloud metadata";  // AWS, GCP, Azure, OCI, ...
    return "link-local";
  }
  if (b[0] == 100 && b[1] == 100 && b[2] == 100 && b[3] == 200) return "cloud metadata";  // Alibaba
  if (b[0] == 100 && (b[1] & 0xc0) == 64) return "carrier-grade NAT";
  if (b[0] == 192 && b[1] == 0 && (b[2] == 0 || b[2] == 2)) return "reserved";  // IETF, TEST-NET-1
  if ((b[0] == 198 && b[1] == 51 && b[2] == 100) || (b[0] == 203 && b[1] == 0 && b[2] == 113)) return "reserved";
  if (b[0] == 198 && (b[1] & 0xfe) == 18) return "reserved";  // benchmarking
  if (b[0] == 255 && b[1] == 255 && b[2] == 255 && b[3] == 255) return "broadcast";
  if (b[0] >= 240) return "reserved";
  if (b[0] >= 224) return "multicast";
  return std::nullopt;
}

std::optional<std::string> special_v6(const std::uint8_t* b) {
  if (all_zero(b, 12)) {
    if (all_zero(b + 12, 4)) return "unspecified";
    if (all_zero(b + 12, 3) && b[15] == 1) return "loopback";
    return "reserved";  // IPv4-compatible, deprecated (RFC 4291)
  }
  if (all_zero(b, 10) && b[10] == 0xff && b[11] == 0xff) {
    if (auto k = special_v4(b + 12)) return "IPv4-mapped " + *k;
    return std::nullopt;
  }
  // A NAT64 gateway connects to the embedded address for us: judge that one.
  if (starts_with(b, {0x00, 0x64, 0xff, 0x9b}) && all_zero(b + 4, 8)) {
    if (auto k = special_v4(b + 12)) return "NAT64 " + *k;
    return std::nullopt;
  }
  if (starts_with(b, {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01})) return "reserved";  // local-use NAT64
  if (starts_with(b, {0x20, 0x02})) {  // 6to4 carries an IPv4 address in bytes 2..5
    if (auto k = special_v4(b + 2)) return "6to4 " + *k;
    return std::nullopt;
  }
  // fd00:ec2::254, the AWS metadata service over IPv6; it lies inside fc00::/7.
  if (starts_with(b, {0xfd, 0x00, 0x0e, 0xc2}) && all_zero(b + 4, 10) && b[14] == 0x02 && b[15] == 0x54) {
    return "cloud metadata";
  }
  if ((b[0] & 0xfe) == 0xfc) return "unique local";
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return "link-local";
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return "reserved";  // site-local, deprecated
  if (b[0] == 0xff) return "multicast";
  if (starts_with(b, {0x20, 0x01, 0x0d, 0xb8})) return "reserved";            // documentation
  if (starts_with(b, {0x01, 0x00}) && all_zero(b + 2, 6)) return "reserved";  // discard-only
  return std::nullopt;
}

bool is_loopback_host(const HostPort& hp) {
  if (hp.kind == HostKind::Name) return hp.host == "localhost" || hp.host.ends_with(".localhost");
  auto a = Address::parse(hp.host);
  if (!a) return false;
  auto kind = special_address(*a, {});
  return kind && (kind->ends_with("loopback") || kind->ends_with("unspecified"));
}

bool ip_equal(const HostPort& x, const HostPort& y) {
  auto a = Address::parse(x.host), b = Address::parse(y.host);
  return a && b && unmapped(*a) == unmapped(*b);
}

std::string with_article(const std::string& kind) {
  if (kind.starts_with("this ")) return kind;
  bool vowel = !kind.empty() && std::strchr("aeiouAEIOU", kind.front()) != nullptr;
  return (vowel ? "an " : "a ") + kind;
}

}  // namespace

bool matches(const Rule& r, const HostPort& hp) {
  if (r.target.port && r.target.port != hp.port) return false;
  if (r.wildcard) {
    const std::string& h = hp.host;
    const std::string& suffix = r.target.host;
    return hp.kind == HostKind::Name && h.size() > suffix.size() + 1 && h.ends_with(suffix) &&
           h[h.size() - suffix.size() - 1] == '.';
  }
  if (r.target.kind == HostKind::Name || hp.kind == HostKind::Name) {
    return r.target.kind == hp.kind && r.target.host == hp.host;
  }
  return ip_equal(r.target, hp);
}

Result<Rule> parse_rule(std::string_view s) { return parse_rule(s, true); }

Result<Rule> parse_rule(std::string_view s, bool loopback_needs_port) {
  auto bad = [&](const std::string& why) { return fail_msg(q(s) + ": " + why); };
  if (s.empty()) return bad("empty rule");
  if (s.find("://") != std::string_view::npos || s.find('/') != std::string_view::npos) {
    return bad("a rule is a host name or address, not a URL");
  }
  Rule r;
  r.text = std::string(s);
  std::string_view body = s;
  if (s.front() == '*') {
    if (s == "*") return bad("a lone '*' is not a rule (a bare --allow-net allows the full network)");
    if (s.size() < 3 || s[1] != '.') return bad("a wildcard is '*.' followed by a name (*.example.com)");
    body = s.substr(2);
    r.wildcard = true;
  }
  // A bare IPv6 address has several colons and no port; everything else is an authority.
  Result<HostPort> hp = (body.front() != '[' && std::count(body.begin(), body.end(), ':') >= 2)
                            ? parse_host(body)
                            : parse_authority(body, false);
  if (!hp) return bad(hp.error().what);
  if (r.wildcard && hp->kind != HostKind::Name) return bad("a wildcard applies to names, not addresses");
  r.target = *hp;
  if (loopback_needs_port && !r.target.port && is_loopback_host(r.target)) {
    HostPort example = r.target;
    example.port = 3000;
    return bad("loopback needs a port (" + std::string(r.wildcard ? "*." : "") + to_string(example) + ")");
  }
  return r;
}

std::optional<Address> Address::parse(std::string_view s) {
  if (s.empty() || s.size() > INET6_ADDRSTRLEN || s.find('\0') != std::string_view::npos) return std::nullopt;
  std::string z(s);
  Address a;
  if (::inet_pton(AF_INET, z.c_str(), a.bytes) == 1) {
    a.family = AF_INET;
    return a;
  }
  if (::inet_pton(AF_INET6, z.c_str(), a.bytes) == 1) {
    a.family = AF_INET6;
    return a;
  }
  return std::nullopt;
}

std::string Address::str() const {
  char buf[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(family, bytes, buf, sizeof buf);
  return buf;
}

std::optional<std::string> special_address(const Address& a, const std::vector<Address>& host_addresses) {
  auto kind = a.family == AF_INET ? special_v4(a.bytes) : special_v6(a.bytes);
  if (kind) return kind;
  Address u = unmapped(a);
  for (const auto& own : host_addresses) {
    if (unmapped(own) == u) return "this host's own";
  }
  return std::nullopt;
}

std::vector<Address> host_addresses() {
  std::vector<Address> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) {
    log::warning(std::string("getifaddrs: ") + std::strerror(errno) +
                 "; the address check does not know this host's own public addresses");
    return out;
  }
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    Address a;
    if (i->ifa_addr->sa_family == AF_INET) {
      a.family = AF_INET;
      std::memcpy(a.bytes, &reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr, 4);
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      a.family = AF_INET6;
      std::memcpy(a.bytes, &reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr, 16);
    } else {
      continue;
    }
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  }
  ::freeifaddrs(list);
  return out;
}

Result<NetPolicy> NetPolicy::make(const std::vector<std::string>& allow, const std::vector<std::string>& deny,
                                  const std::vector<std::pair<std::string, std::string>>& resolve, bool allow_all) {
  NetPolicy p;
  p.m_allow_all = allow_all;
  for (const auto& s : allow) {
    auto r = parse_rule(s, true);
    if (!r) return fail_msg("--allow-net " + r.error().what);
    p.m_allow.push_back(std::move(*r));
  }
  // Denying "localhost" on every port is a sensible wish, so a deny rule needs no port.
  for (const auto& s : deny) {
    auto r = parse_rule(s, false);
    if (!r) return fail_msg("--deny-net " + r.error().what);
    p.m_deny.push_back(std::move(*r));
  }
  for (const auto& [host, ip] : resolve) {
    std::string entry = host + ":" + ip;
    auto hp = parse_host(host);
    if (!hp) return fail_msg("--resolve " + q(entry) + ": " + hp.error().what);
    if (hp->kind != HostKind::Name) return fail_msg("--resolve " + q(entry) + ": " + q(host) + " is not a host name");
    std::string_view bare = ip;
    if (bare.size() > 2 && bare.front() == '[' && bare.back() == ']') bare = bare.substr(1, bare.size() - 2);
    auto a = Address::parse(bare);
    if (!a) return fail_msg("--resolve " + q(entry) + ": " + q(ip) + " is not an IP address");
    auto same =
        std::find_if(p.m_resolve.begin(), p.m_resolve.end(), [&](const auto& m) { return m.first == hp->host; });
    if (same != p.m_resolve.end()) {
      if (same->second == *a) continue;
      return fail_msg("--resolve " + q(entry) + ": " + q(hp->host) + " is already mapped to " + same->second.str());
    }
    p.m_resolve.emplace_back(hp->host, *a);
  }
  p.m_own = host_addresses();
  return p;
}

Result<NetPolicy> NetPolicy::allowing(const std::vector<std::string>& more) const {
  NetPolicy p = *this;
  for (const auto& s : more) {
    auto r = parse_rule(s, true);
    if (!r) return fail_msg("--allow-net " + r.error().what);
    p.m_allow.push_back(std::move(*r));
  }
  return p;
}

Decision NetPolicy::decide(const HostPort& hp) const {
  for (const auto& r : m_deny) {
    if (matches(r, hp)) return Decision{false, "denied by --deny-net " + r.text, false};
  }
  bool found = false, explicit_name = false;
  for (const auto& r : m_allow) {
    if (!matches(r, hp)) continue;
    found = true;
    if (!r.wildcard) explicit_name = true;
  }
  if (!found && !m_allow_all) return Decision{false, "not in --allow-net", false};
  if (hp.kind == HostKind::Name && resolved(hp.host)) explicit_name = true;
  return Decision{true, "", explicit_name};
}

bool NetPolicy::denied(const HostPort& hp) const {
  return std::any_of(m_deny.begin(), m_deny.end(), [&](const Rule& r) { return matches(r, hp); });
}

std::optional<Address> NetPolicy::resolved(const std::string& host) const {
  for (const auto& [h, a] : m_resolve) {
    if (h == host) return a;
  }
  return std::nullopt;
}

std::optional<std::string> NetPolicy::check_address(const Decision& d, const Address& a) const {
  if (!d.allowed) return d.reason;
  if (d.explicit_name) return std::nullopt;
  auto kind = special_address(a, m_own);
  if (!kind) return std::nullopt;
  return "resolves to " + with_article(*kind) + " address (" + a.str() + ")";
}

}  // namespace zb::net
