// The one host grammar (host.hpp). Written by hand, byte by byte, because every lenient
// parser in the path (inet_aton, URL parsers, resolvers) accepts a different superset:
// "0x7f.1", "2130706433" or "127.1" reach loopback through getaddrinfo while looking like
// names to a naive filter. Anything outside the grammar is refused, never guessed at.
#include "net/host.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <string>

#include "util/log.hpp"

namespace zb::net {
namespace {

constexpr std::size_t k_max_label = 63;
constexpr std::size_t k_max_name = 253;

// Always quoted, so an empty or odd input is visible in the message.
std::string q(std::string_view s) {
  std::string r = log::quote(s);
  if (r.empty() || r.front() != '\'') r = "'" + r + "'";
  return r;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// Names the first byte that no host may contain, or "" when there is none. Checked before
// anything else so that the message says what is wrong ("userinfo"), not a symptom.
std::string bad_byte(std::string_view s, bool allow_colon) {
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c == 0) return "a NUL byte";
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f') return "whitespace";
    if (c < 0x20 || c == 0x7f) return "a control byte";
    if (c == '@') return "userinfo ('@')";
    if (c == '%') return "percent-encoding or a zone id ('%')";
    if (c >= 0x80) return "a non-ASCII byte (use the IDNA 'xn--' form)";
    if (c == ':' && allow_colon) continue;
    if (!is_alpha(ch) && !is_digit(ch) && ch != '-' && ch != '.' && ch != '_') {
      return std::string("the character '") + ch + "'";
    }
  }
  return {};
}

// The canonical dotted quad only: four parts, 0..255, no leading zeros.
bool is_dotted_quad(std::string_view s) {
  int parts = 0;
  std::size_t i = 0;
  while (true) {
    std::size_t start = i;
    unsigned value = 0;
    while (i < s.size() && is_digit(s[i]) && i - start < 4) value = value * 10 + static_cast<unsigned>(s[i++] - '0');
    std::size_t len = i - start;
    if (len == 0 || len > 3 || value > 255 || (len > 1 && s[start] == '0')) return false;
    ++parts;
    if (i == s.size()) break;
    if (s[i] != '.' || parts == 4) return false;
    ++i;
  }
  return parts == 4;
}

// WHATWG's "ends in a number": a host whose last label is decimal digits or 0x-hex is
// taken for an IPv4 address by browsers and inet_aton, so it is one or it is refused.
bool ends_in_number(std::string_view name) {
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  auto dot = name.rfind('.');
  std::string_view last = dot == std::string_view::npos ? name : name.substr(dot + 1);
  if (last.empty()) return false;
  bool digits = true;
  for (char c : last) digits = digits && is_digit(c);
  if (digits) return true;
  if (last.size() >= 2 && last[0] == '0' && lower(last[1]) == 'x') {
    for (char c : last.substr(2)) {
      if (!is_hex(c)) return false;
    }
    return true;
  }
  return false;
}

Result<HostPort> parse_ipv6(std::string_view inner, std::string_view whole) {
  if (inner.empty()) return fail_msg("empty IPv6 address in " + q(whole));
  if (inner.find('%') != std::string_view::npos) return fail_msg("zone ids are not allowed in " + q(whole));
  for (char c : inner) {
    if (!is_hex(c) && c != ':' && c != '.') return fail_msg("not an IPv6 address: " + q(whole));
  }
  std::string z(inner);
  in6_addr a{};
  if (::inet_pton(AF_INET6, z.c_str(), &a) != 1) return fail_msg("not an IPv6 address: " + q(whole));
  char buf[INET6_ADDRSTRLEN];
  ::inet_ntop(AF_INET6, &a, buf, sizeof buf);
  return HostPort{buf, HostKind::IPv6, std::nullopt};
}

Result<HostPort> parse_name_or_ipv4(std::string_view s) {
  if (s.empty()) return fail_msg("empty host");
  if (auto why = bad_byte(s, false); !why.empty()) return fail_msg(why + " in host " + q(s));
  if (ends_in_number(s)) {
    // A trailing dot is refused here: "1.2.3.4." is no address and should be no name.
    if (!is_dotted_quad(s))
      return fail_msg("not a valid IPv4 address (four decimal parts 0-255, no leading zeros): " + q(s));
    return HostPort{std::string(s), HostKind::IPv4, std::nullopt};
  }
  std::string_view name = s;
  if (name.back() == '.') name.remove_suffix(1);
  if (name.empty()) return fail_msg("empty host " + q(s));
  if (name.size() > k_max_name) return fail_msg("host name longer than 253 bytes: " + q(s));
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('.', start);
    if (end == std::string_view::npos) end = name.size();
    std::string_view label = name.substr(start, end - start);
    if (label.empty()) return fail_msg("empty label in " + q(s));
    if (label.size() > k_max_label) return fail_msg("label longer than 63 bytes in " + q(s));
    if (label.front() == '-' || label.back() == '-') return fail_msg("label starts or ends with '-' in " + q(s));
    start = end + 1;
  }
  HostPort hp;
  hp.host.reserve(name.size());
  for (char c : name) hp.host += lower(c);
  return hp;
}

Result<std::uint16_t> parse_port(std::string_view p, std::string_view whole) {
  if (p.empty()) return fail_msg("empty port in " + q(whole));
  if (p.size() > 5) return fail_msg("port out of range (1-65535) in " + q(whole));
  unsigned v = 0;
  for (char c : p) {
    if (!is_digit(c)) return fail_msg("port is not a decimal number in " + q(whole));
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (p.size() > 1 && p.front() == '0') return fail_msg("port has a leading zero in " + q(whole));
  if (v < 1 || v > 65535) return fail_msg("port out of range (1-65535) in " + q(whole));
  return static_cast<std::uint16_t>(v);
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

}  // namespace

Result<HostPort> parse_host(std::string_view s) {
  if (s.empty()) return fail_msg("empty host");
  if (s.front() == '[') {
    if (s.size() < 2 || s.back() != ']') return fail_msg("unbalanced '[' in " + q(s));
    std::string_view inner = s.substr(1, s.size() - 2);
    if (inner.find(':') == std::string_view::npos) return fail_msg("brackets are for IPv6 addresses only: " + q(s));
    return parse_ipv6(inner, s);
  }
  if (s.find(':') != std::string_view::npos) {
    if (auto why = bad_byte(s, true); !why.empty()) return fail_msg(why + " in host " + q(s));
    return parse_ipv6(s, s);
  }
  return parse_name_or_ipv4(s);
}

Result<HostPort> parse_authority(std::string_view s, bool port_required) {
  if (s.empty()) return fail_msg("empty host");
  if (s.find('@') != std::string_view::npos) return fail_msg("userinfo ('@') is not allowed in " + q(s));
  std::string_view host = s, port;
  bool has_port = false;
  if (s.front() == '[') {
    auto close = s.find(']');
    if (close == std::string_view::npos) return fail_msg("unbalanced '[' in " + q(s));
    host = s.substr(0, close + 1);
    std::string_view rest = s.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return fail_msg("unexpected text after ']' in " + q(s));
      port = rest.substr(1);
      has_port = true;
    }
  } else {
    auto colon = s.find(':');
    if (colon != std::string_view::npos) {
      if (s.find(':', colon + 1) != std::string_view::npos) {
        return fail_msg("an IPv6 address needs brackets in " + q(s) + " ([::1]:443)");
      }
      host = s.substr(0, colon);
      port = s.substr(colon + 1);
      has_port = true;
    }
  }
  auto hp = parse_host(host);
  if (!hp) {
    // Say which authority the faulty host came from when the message names only the host.
    if (host.size() != s.size()) hp.error().what += " (in " + q(s) + ")";
    return hp;
  }
  if (has_port) {
    auto p = parse_port(port, s);
    if (!p) return std::unexpected(p.error());
    hp->port = *p;
  } else if (port_required) {
    return fail_msg("missing port in " + q(s));
  }
  return hp;
}

Result<HostPort> parse_absolute_uri(std::string_view uri, std::string& path) {
  auto sep = uri.find("://");
  if (sep == std::string_view::npos) return fail_msg("not an absolute URI: " + q(uri));
  std::string_view scheme = uri.substr(0, sep);
  if (iequals(scheme, "https")) {
    return fail_msg("https in an absolute-form request is refused, clients use CONNECT: " + q(uri));
  }
  if (!iequals(scheme, "http")) return fail_msg("unsupported scheme in " + q(uri) + " (only http)");
  std::string_view rest = uri.substr(sep + 3);
  auto end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, end == std::string_view::npos ? rest.size() : end);
  std::string_view tail = end == std::string_view::npos ? std::string_view{} : rest.substr(end);
  for (char ch : tail) {
    auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7f) return fail_msg("whitespace or a control byte in the path of " + q(uri));
    if (c == '#') return fail_msg("a fragment in the request target " + q(uri));
  }
  if (authority.empty()) return fail_msg("no host in " + q(uri));
  auto hp = parse_authority(authority, false);
  if (!hp) return hp;
  if (!hp->port) hp->port = 80;
  if (tail.empty()) {
    path = "/";
  } else if (tail.front() == '?') {
    path = "/" + std::string(tail);
  } else {
    path = std::string(tail);
  }
  return hp;
}

std::string to_string(const HostPort& hp) {
  std::string out = hp.kind == HostKind::IPv6 ? "[" + hp.host + "]" : hp.host;
  if (hp.port) out += ":" + std::to_string(*hp.port);
  return out;
}

}  // namespace zb::net
