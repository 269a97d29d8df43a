// Tests for src/net/host.cpp and src/net/rules.cpp
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "net/host.hpp"
#include "net/rules.hpp"

using namespace zb;
using namespace zb::net;

namespace {

bool host_ok(std::string_view s) { return parse_host(s).has_value(); }

std::string host_err(std::string_view s) {
  auto r = parse_host(s);
  return r ? std::string("(accepted)") : r.error().what;
}

std::string auth_err(std::string_view s, bool port_required = false) {
  auto r = parse_authority(s, port_required);
  return r ? std::string("(accepted)") : r.error().what;
}

Address addr(const char* s) {
  auto a = Address::parse(s);
  REQUIRE_MESSAGE(a, s);
  return *a;
}

std::string kind(const char* s, const std::vector<Address>& own = {}) {
  auto k = special_address(addr(s), own);
  return k ? *k : std::string("public");
}

NetPolicy policy(std::vector<std::string> allow, std::vector<std::string> deny = {},
                 std::vector<std::pair<std::string, std::string>> resolve = {}, bool allow_all = false) {
  auto p = NetPolicy::make(allow, deny, resolve, allow_all);
  REQUIRE_MESSAGE(p, (p ? std::string() : p.error().what));
  return *p;
}

HostPort req(std::string_view authority) {
  auto hp = parse_authority(authority, true);
  REQUIRE_MESSAGE(hp, std::string(authority));
  return *hp;
}

std::string rule_err(std::string_view s) {
  auto r = parse_rule(s);
  return r ? std::string("(accepted)") : r.error().what;
}

}  // namespace

TEST_CASE("net: names are lowercased and lose one trailing dot") {
  auto hp = parse_host("WWW.Example.COM.");
  REQUIRE(hp);
  CHECK(hp->host == "www.example.com");
  CHECK(hp->kind == HostKind::Name);
  CHECK_FALSE(hp->port);
  CHECK(parse_host("under_score.example")->host == "under_score.example");
  CHECK(parse_host("xn--bcher-kva.example")->host == "xn--bcher-kva.example");
  CHECK(host_ok("localhost"));
  CHECK(host_ok("a-b.c"));
  CHECK_FALSE(host_ok("a.."));
  CHECK_FALSE(host_ok("."));
  CHECK_FALSE(host_ok(""));
}

TEST_CASE("net: malformed names are refused with a message naming them") {
  CHECK(host_err("a..b") == "empty label in 'a..b'");
  CHECK(host_err(".a") == "empty label in '.a'");
  CHECK(host_err("-a.com").find("'-'") != std::string::npos);
  CHECK(host_err("a-.com").find("'a-.com'") != std::string::npos);
  CHECK(host_ok(std::string(63, 'a') + ".com"));
  CHECK(host_err(std::string(64, 'a') + ".com").find("longer than 63") != std::string::npos);
  // 253 bytes is the limit; one more trailing dot is still fine.
  std::string n253 =
      std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') + "." + std::string(61, 'd');
  REQUIRE(n253.size() == 253);
  CHECK(host_ok(n253));
  CHECK(host_ok(n253 + "."));
  CHECK(host_err(n253 + "e").find("longer than 253") != std::string::npos);
  CHECK(host_err("user@host").find("userinfo") != std::string::npos);
  CHECK(host_err("%41.com").find("percent") != std::string::npos);
  CHECK(host_err(std::string_view("a\0b.com", 7)).find("NUL") != std::string::npos);
  CHECK(host_err("a b.com").find("whitespace") != std::string::npos);
  CHECK(host_err("a\x01.com").find("control") != std::string::npos);
  CHECK(host_err("caf\xc3\xa9.com").find("non-ASCII") != std::string::npos);
  CHECK(host_err("a/b").find("'/'") != std::string::npos);
  CHECK(host_err("a*b").find("'*'") != std::string::npos);
}

TEST_CASE("net: IPv4 only as a canonical dotted quad") {
  auto hp = parse_host("1.2.3.4");
  REQUIRE(hp);
  CHECK(hp->kind == HostKind::IPv4);
  CHECK(hp->host == "1.2.3.4");
  CHECK(host_ok("255.255.255.255"));
  CHECK(host_ok("0.0.0.0"));
  for (const char* s : {"01.2.3.4", "1.2.3", "1.2.3.4.5", "256.1.1.1", "0x7f.0.0.1", "2130706433", "0x7f000001",
                        "127.1", "1.2.3.4.", "1..2.3", "example.123", "a.0x1F", "1.2.3.0004"}) {
    CAPTURE(s);
    auto r = parse_host(s);
    REQUIRE_FALSE(r);
    CHECK(r.error().what.find(s) != std::string::npos);
  }
  // A number-like label that is not the last one is just part of a name.
  CHECK(parse_host("0x7f.example.com")->kind == HostKind::Name);
  CHECK(parse_host("123.example.com")->kind == HostKind::Name);
}

TEST_CASE("net: IPv6 bare or bracketed, canonical, no zone") {
  auto hp = parse_host("[0:0:0:0:0:0:0:1]");
  REQUIRE(hp);
  CHECK(hp->kind == HostKind::IPv6);
  CHECK(hp->host == "::1");
  CHECK(parse_host("2001:DB8::1")->host == "2001:db8::1");
  CHECK(parse_host("::ffff:1.2.3.4")->kind == HostKind::IPv6);
  CHECK(host_err("[fe80::1%eth0]").find("zone") != std::string::npos);
  CHECK(host_err("fe80::1%eth0").find("'%'") != std::string::npos);
  CHECK_FALSE(host_ok("[1.2.3.4]"));
  CHECK_FALSE(host_ok("[::1"));
  CHECK_FALSE(host_ok("[]"));
  CHECK_FALSE(host_ok("1:2:3"));
  CHECK_FALSE(host_ok("::g"));
}

TEST_CASE("net: authorities and ports") {
  auto hp = parse_authority("Example.com:8080", true);
  REQUIRE(hp);
  CHECK(hp->host == "example.com");
  CHECK(hp->port == 8080);
  auto v6 = parse_authority("[::1]:80", true);
  REQUIRE(v6);
  CHECK(v6->host == "::1");
  CHECK(v6->kind == HostKind::IPv6);
  CHECK(v6->port == 80);
  CHECK(to_string(*v6) == "[::1]:80");
  CHECK(to_string(*hp) == "example.com:8080");
  CHECK(parse_authority("[::1]", false)->port == std::nullopt);
  CHECK(parse_authority("1.2.3.4:65535", true)->port == 65535);
  CHECK(parse_authority("a:1", true)->port == 1);

  CHECK(auth_err("::1").find("brackets") != std::string::npos);
  CHECK(auth_err("::1:80").find("brackets") != std::string::npos);
  CHECK(auth_err("a:0").find("out of range") != std::string::npos);
  CHECK(auth_err("a:65536").find("out of range") != std::string::npos);
  CHECK(auth_err("a:080").find("leading zero") != std::string::npos);
  CHECK(auth_err("a:+80").find("decimal") != std::string::npos);
  CHECK(auth_err("a:").find("empty port") != std::string::npos);
  CHECK(auth_err("a:99999999999999999999").find("out of range") != std::string::npos);
  CHECK(auth_err("example.com", true) == "missing port in 'example.com'");
  CHECK(auth_err("user@host:80").find("userinfo") != std::string::npos);
  CHECK(auth_err("[::1]x").find("after ']'") != std::string::npos);
  CHECK(auth_err("[fe80::1%eth0]:80").find("zone") != std::string::npos);
  CHECK(auth_err("").find("empty host") != std::string::npos);
  CHECK(auth_err(":80").find("empty host") != std::string::npos);
  CHECK(auth_err("a..b:80").find("'a..b:80'") != std::string::npos);
}

TEST_CASE("net: absolute-form request targets") {
  std::string path;
  auto hp = parse_absolute_uri("http://Example.com/a/b?c=d", path);
  REQUIRE(hp);
  CHECK(hp->host == "example.com");
  CHECK(hp->port == 80);
  CHECK(path == "/a/b?c=d");
  hp = parse_absolute_uri("HTTP://example.com:8080", path);
  REQUIRE(hp);
  CHECK(hp->port == 8080);
  CHECK(path == "/");
  hp = parse_absolute_uri("http://[::1]:3000?x=1", path);
  REQUIRE(hp);
  CHECK(hp->host == "::1");
  CHECK(path == "/?x=1");
  CHECK(parse_absolute_uri("http://a.com/%41", path));
  CHECK(path == "/%41");

  auto err = [&](std::string_view u) {
    auto r = parse_absolute_uri(u, path);
    return r ? std::string("(accepted)") : r.error().what;
  };
  CHECK(err("https://example.com/").find("CONNECT") != std::string::npos);
  CHECK(err("ftp://example.com/").find("scheme") != std::string::npos);
  CHECK(err("/just/a/path").find("absolute") != std::string::npos);
  CHECK(err("http://user:pw@example.com/").find("userinfo") != std::string::npos);
  CHECK(err("http://example.com/#frag").find("fragment") != std::string::npos);
  CHECK(err("http://example.com#frag").find("fragment") != std::string::npos);
  CHECK(err("http://example.com/a b").find("whitespace") != std::string::npos);
  CHECK(err("http://example.com/a\r\nX: y").find("control") != std::string::npos);
  CHECK(err("http:///path").find("no host") != std::string::npos);
  CHECK(err("http://%65xample.com/").find("percent") != std::string::npos);
  CHECK(err("http://0x7f.0.0.1/").find("IPv4") != std::string::npos);
  CHECK(err("http://example.com:0/").find("out of range") != std::string::npos);
}

TEST_CASE("net: rule parsing") {
  auto r = parse_rule("*.Example.com");
  REQUIRE(r);
  CHECK(r->wildcard);
  CHECK(r->target.host == "example.com");
  CHECK(r->text == "*.Example.com");
  r = parse_rule("example.com:443");
  REQUIRE(r);
  CHECK_FALSE(r->wildcard);
  CHECK(r->target.port == 443);
  r = parse_rule("2001:db8::1");
  REQUIRE(r);
  CHECK(r->target.kind == HostKind::IPv6);
  CHECK_FALSE(r->target.port);
  r = parse_rule("[2001:db8::1]:8080");
  REQUIRE(r);
  CHECK(r->target.port == 8080);
  CHECK(parse_rule("10.1.2.3")->target.kind == HostKind::IPv4);
  CHECK(parse_rule("*.example.com:443")->target.port == 443);

  CHECK(rule_err("*").find("lone '*'") != std::string::npos);
  CHECK(rule_err("*.").find("'*.'") != std::string::npos);
  CHECK(rule_err("*example.com").find("wildcard") != std::string::npos);
  CHECK(rule_err("a.*.com").find("'*'") != std::string::npos);
  CHECK(rule_err("*.*.com").find("'*'") != std::string::npos);
  CHECK(rule_err("*.10.0.0.1").find("names, not addresses") != std::string::npos);
  CHECK(rule_err("https://example.com").find("URL") != std::string::npos);
  CHECK(rule_err("").find("empty") != std::string::npos);
  CHECK(rule_err("a..b").starts_with("'a..b': "));
  CHECK(rule_err("example.com:0").find("out of range") != std::string::npos);
}

TEST_CASE("net: loopback rules need a port") {
  CHECK(rule_err("localhost") == "'localhost': loopback needs a port (localhost:3000)");
  CHECK(rule_err("LOCALHOST.") == "'LOCALHOST.': loopback needs a port (localhost:3000)");
  CHECK(rule_err("127.0.0.1") == "'127.0.0.1': loopback needs a port (127.0.0.1:3000)");
  CHECK(rule_err("127.3.4.5").find("loopback needs a port") != std::string::npos);
  CHECK(rule_err("::1") == "'::1': loopback needs a port ([::1]:3000)");
  CHECK(rule_err("[::1]").find("loopback needs a port") != std::string::npos);
  CHECK(rule_err("::ffff:127.0.0.1").find("loopback needs a port") != std::string::npos);
  CHECK(rule_err("0.0.0.0").find("loopback needs a port") != std::string::npos);
  CHECK(rule_err("app.localhost").find("loopback needs a port") != std::string::npos);
  CHECK(rule_err("*.localhost").find("loopback needs a port") != std::string::npos);
  CHECK(parse_rule("localhost:3000"));
  CHECK(parse_rule("[::1]:8080"));
  CHECK(parse_rule("127.0.0.1:5432"));
  // Denying loopback on every port is fine.
  CHECK(parse_rule("localhost", false));

  auto p = NetPolicy::make({"localhost"}, {}, {}, false);
  REQUIRE_FALSE(p);
  CHECK(p.error().what == "--allow-net 'localhost': loopback needs a port (localhost:3000)");
  CHECK(NetPolicy::make({}, {"localhost"}, {}, true));
  auto bad = NetPolicy::make({}, {"*"}, {}, true);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().what.starts_with("--deny-net '*': "));

  auto lp = policy({"localhost:3000"});
  auto d = lp.decide(req("localhost:3000"));
  CHECK(d.allowed);
  CHECK(d.explicit_name);
  CHECK_FALSE(lp.check_address(d, addr("127.0.0.1")));
  CHECK_FALSE(lp.decide(req("localhost:3001")).allowed);
  CHECK_FALSE(lp.decide(req("127.0.0.1:3000")).allowed);
}

TEST_CASE("net: wildcard rules match below the name at any depth, not the name") {
  auto p = policy({"*.example.com"});
  CHECK(p.decide(req("a.example.com:443")).allowed);
  CHECK(p.decide(req("a.b.c.example.com:80")).allowed);
  CHECK(p.decide(req("A.EXAMPLE.COM.:80")).allowed);
  CHECK_FALSE(p.decide(req("example.com:443")).allowed);
  CHECK_FALSE(p.decide(req("badexample.com:443")).allowed);
  CHECK_FALSE(p.decide(req("a.example.com.evil.org:443")).allowed);
  CHECK_FALSE(p.decide(req("a.example.co:443")).allowed);
  auto d = p.decide(req("a.example.com:443"));
  CHECK_FALSE(d.explicit_name);
  CHECK(p.decide(req("other.org:443")).reason == "not in --allow-net");
}

TEST_CASE("net: exact and IP rules") {
  auto p = policy({"example.com", "10.1.2.3", "2001:db8::5"});
  auto d = p.decide(req("example.com:443"));
  CHECK(d.allowed);
  CHECK(d.explicit_name);
  CHECK_FALSE(p.decide(req("www.example.com:443")).allowed);
  d = p.decide(req("10.1.2.3:22"));
  CHECK(d.allowed);
  CHECK(d.explicit_name);
  CHECK(p.decide(req("[::ffff:10.1.2.3]:22")).allowed);
  CHECK(p.decide(req("[2001:DB8:0::5]:443")).allowed);
  CHECK_FALSE(p.decide(req("10.1.2.4:22")).allowed);
  // A name never matches an IP rule, nor an address a name rule.
  auto n = policy({"example.com"});
  CHECK_FALSE(n.decide(req("93.184.216.34:80")).allowed);
  auto i = policy({"93.184.216.34"});
  CHECK_FALSE(i.decide(req("example.com:80")).allowed);
}

TEST_CASE("net: port rules") {
  auto p = policy({"example.com:443", "*.api.test:8443"});
  CHECK(p.decide(req("example.com:443")).allowed);
  CHECK_FALSE(p.decide(req("example.com:80")).allowed);
  CHECK(p.decide(req("v1.api.test:8443")).allowed);
  CHECK_FALSE(p.decide(req("v1.api.test:443")).allowed);
  auto any = policy({"example.com"});
  CHECK(any.decide(req("example.com:1")).allowed);
  CHECK(any.decide(req("example.com:65535")).allowed);
}

TEST_CASE("net: deny wins over allow") {
  auto p = policy({"*.example.com", "example.com"}, {"secret.example.com", "*.internal.example.com", "example.com:22"});
  auto d = p.decide(req("secret.example.com:443"));
  CHECK_FALSE(d.allowed);
  CHECK(d.reason == "denied by --deny-net secret.example.com");
  CHECK(p.decide(req("x.internal.example.com:443")).reason == "denied by --deny-net *.internal.example.com");
  CHECK(p.decide(req("example.com:22")).reason == "denied by --deny-net example.com:22");
  CHECK(p.decide(req("example.com:443")).allowed);
  CHECK(p.decide(req("www.example.com:443")).allowed);
  auto ip = policy({"10.0.0.1"}, {"10.0.0.1"});
  CHECK_FALSE(ip.decide(req("10.0.0.1:80")).allowed);
  CHECK_FALSE(ip.decide(req("[::ffff:10.0.0.1]:80")).allowed);
}

TEST_CASE("net: allow_all with deny") {
  auto p = policy({}, {"*.ads.test", "tracker.test"}, {}, true);
  auto d = p.decide(req("anything.org:443"));
  CHECK(d.allowed);
  CHECK_FALSE(d.explicit_name);
  CHECK(p.decide(req("1.1.1.1:53")).allowed);
  CHECK_FALSE(p.decide(req("1.1.1.1:53")).explicit_name);
  CHECK_FALSE(p.decide(req("x.ads.test:443")).allowed);
  CHECK_FALSE(p.decide(req("tracker.test:80")).allowed);
  CHECK(p.decide(req("ads.test:80")).allowed);
  // Allowed by allow_all but not named: the guard still refuses local addresses.
  CHECK(p.check_address(p.decide(req("localhost:80")), addr("127.0.0.1")) ==
        "resolves to a loopback address (127.0.0.1)");
  CHECK(p.check_address(p.decide(req("127.0.0.1:80")), addr("127.0.0.1")) ==
        "resolves to a loopback address (127.0.0.1)");
  auto none = policy({});
  CHECK(none.decide(req("example.com:80")).reason == "not in --allow-net");
}

TEST_CASE("net: the address check table") {
  CHECK(kind("0.0.0.0") == "unspecified");
  CHECK(kind("0.1.2.3") == "unspecified");
  CHECK(kind("10.0.0.1") == "private");
  CHECK(kind("172.16.0.1") == "private");
  CHECK(kind("172.31.255.255") == "private");
  CHECK(kind("172.32.0.1") == "public");
  CHECK(kind("172.15.255.255") == "public");
  CHECK(kind("192.168.1.1") == "private");
  CHECK(kind("127.0.0.1") == "loopback");
  CHECK(kind("127.255.0.9") == "loopback");
  CHECK(kind("169.254.1.1") == "link-local");
  CHECK(kind("169.254.169.254") == "cloud metadata");
  CHECK(kind("100.64.0.1") == "carrier-grade NAT");
  CHECK(kind("100.127.255.255") == "carrier-grade NAT");
  CHECK(kind("100.128.0.1") == "public");
  CHECK(kind("224.0.0.1") == "multicast");
  CHECK(kind("239.255.255.250") == "multicast");
  CHECK(kind("240.0.0.1") == "reserved");
  CHECK(kind("255.255.255.255") == "broadcast");
  CHECK(kind("192.0.2.1") == "reserved");
  CHECK(kind("8.8.8.8") == "public");
  CHECK(kind("93.184.216.34") == "public");

  CHECK(kind("::") == "unspecified");
  CHECK(kind("::1") == "loopback");
  CHECK(kind("fe80::1") == "link-local");
  CHECK(kind("febf::1") == "link-local");
  CHECK(kind("fc00::1") == "unique local");
  CHECK(kind("fdff::1") == "unique local");
  CHECK(kind("fd00:ec2::254") == "cloud metadata");
  CHECK(kind("ff02::1") == "multicast");
  CHECK(kind("::ffff:127.0.0.1") == "IPv4-mapped loopback");
  CHECK(kind("::ffff:169.254.169.254") == "IPv4-mapped cloud metadata");
  CHECK(kind("::ffff:10.0.0.1") == "IPv4-mapped private");
  CHECK(kind("::ffff:8.8.8.8") == "public");
  CHECK(kind("64:ff9b::7f00:1") == "NAT64 loopback");
  CHECK(kind("64:ff9b::a9fe:a9fe") == "NAT64 cloud metadata");
  CHECK(kind("64:ff9b::808:808") == "public");
  CHECK(kind("2001:db8::1") == "reserved");
  CHECK(kind("::127.0.0.1") == "reserved");
  CHECK(kind("2002:7f00:1::") == "6to4 loopback");
  CHECK(kind("2606:4700:4700::1111") == "public");

  std::vector<Address> own = {addr("203.0.114.7"), addr("2a01:4f8::1")};
  CHECK(kind("203.0.114.7", own) == "this host's own");
  CHECK(kind("::ffff:203.0.114.7", own) == "this host's own");
  CHECK(kind("2a01:4f8::1", own) == "this host's own");
  CHECK(kind("203.0.114.8", own) == "public");
}

TEST_CASE("net: Address parse and str") {
  CHECK(addr("1.2.3.4").family == AF_INET);
  CHECK(addr("1.2.3.4").str() == "1.2.3.4");
  CHECK(addr("2001:DB8:0:0::1").str() == "2001:db8::1");
  CHECK_FALSE(Address::parse("[::1]"));
  CHECK_FALSE(Address::parse("fe80::1%eth0"));
  CHECK_FALSE(Address::parse("1.2.3"));
  CHECK_FALSE(Address::parse(std::string_view("1.2.3.4\0x", 9)));
  CHECK_FALSE(Address::parse(""));
}

TEST_CASE("net: check_address follows the decision") {
  auto p = policy({"*.example.com", "db.example.com", "10.9.9.9"});
  auto wild = p.decide(req("app.example.com:443"));
  REQUIRE(wild.allowed);
  CHECK(p.check_address(wild, addr("10.0.0.1")) == "resolves to a private address (10.0.0.1)");
  CHECK(p.check_address(wild, addr("169.254.169.254")) == "resolves to a cloud metadata address (169.254.169.254)");
  CHECK(p.check_address(wild, addr("::")) == "resolves to an unspecified address (::)");
  CHECK_FALSE(p.check_address(wild, addr("93.184.216.34")));
  // An exact name rule or an IP rule names the host: private addresses are let through.
  CHECK_FALSE(p.check_address(p.decide(req("db.example.com:5432")), addr("10.0.0.1")));
  CHECK_FALSE(p.check_address(p.decide(req("10.9.9.9:80")), addr("10.9.9.9")));
  // A refused decision stays refused.
  CHECK(p.check_address(p.decide(req("other.org:80")), addr("8.8.8.8")) == "not in --allow-net");
  // This host's own addresses are refused on a wildcard match.
  auto own = host_addresses();
  for (const auto& a : own) {
    CAPTURE(a.str());
    CHECK(p.check_address(wild, a));
  }
}

TEST_CASE("net: --resolve names the host and lets a private address through") {
  auto p = policy({"*.corp.test"}, {}, {{"git.corp.test", "10.0.0.7"}, {"WIKI.corp.test.", "[fd12::7]"}});
  auto a = p.resolved("git.corp.test");
  REQUIRE(a);
  CHECK(a->str() == "10.0.0.7");
  CHECK(p.resolved("wiki.corp.test")->str() == "fd12::7");
  CHECK_FALSE(p.resolved("other.corp.test"));
  auto d = p.decide(req("git.corp.test:443"));
  CHECK(d.allowed);
  CHECK(d.explicit_name);
  CHECK_FALSE(p.check_address(d, *a));
  auto other = p.decide(req("other.corp.test:443"));
  CHECK_FALSE(other.explicit_name);
  CHECK(p.check_address(other, addr("10.0.0.7")));
  // A mapping does not allow a host by itself.
  auto q = policy({"example.com"}, {}, {{"hidden.test", "10.0.0.8"}});
  CHECK_FALSE(q.decide(req("hidden.test:80")).allowed);
  // Nor does it beat --deny-net.
  auto r = policy({"*.corp.test"}, {"git.corp.test"}, {{"git.corp.test", "10.0.0.7"}});
  CHECK_FALSE(r.decide(req("git.corp.test:443")).allowed);

  auto err = [](std::string host, std::string ip) {
    auto m = NetPolicy::make({}, {}, {{host, ip}}, false);
    return m ? std::string("(accepted)") : m.error().what;
  };
  CHECK(err("a..b", "1.2.3.4").starts_with("--resolve 'a..b:1.2.3.4': "));
  CHECK(err("1.2.3.4", "5.6.7.8").find("not a host name") != std::string::npos);
  CHECK(err("x.test", "1.2.3") == "--resolve 'x.test:1.2.3': '1.2.3' is not an IP address");
  CHECK(err("x.test", "host.test").find("not an IP address") != std::string::npos);
  auto dup = NetPolicy::make({}, {}, {{"x.test", "1.1.1.1"}, {"X.test", "2.2.2.2"}}, false);
  REQUIRE_FALSE(dup);
  CHECK(dup.error().what.find("already mapped") != std::string::npos);
}

TEST_CASE("net: allowing() adds rules as make() would have parsed them") {
  auto base = policy({"api.example.com"}, {"*.bad.example"}, {{"db.internal", "10.0.0.5"}});
  auto more = base.allowing({"*.extra.example", "localhost:3000"});
  REQUIRE(more);
  auto whole = policy({"api.example.com", "*.extra.example", "localhost:3000"}, {"*.bad.example"},
                      {{"db.internal", "10.0.0.5"}});
  for (const char* a : {"api.example.com:443", "x.extra.example:443", "localhost:3000", "x.bad.example:443",
                        "other.example:443", "db.internal:5432"}) {
    auto d1 = more->decide(req(a));
    auto d2 = whole.decide(req(a));
    CHECK_MESSAGE(d1.allowed == d2.allowed, a);
    CHECK_MESSAGE(d1.reason == d2.reason, a);
    CHECK_MESSAGE(d1.explicit_name == d2.explicit_name, a);
  }
  // The base is unchanged, and an entry make() would refuse is refused the same way.
  CHECK_FALSE(base.decide(req("x.extra.example:443")).allowed);
  auto bad = base.allowing({"localhost"});
  REQUIRE_FALSE(bad);
  CHECK(bad.error().what == "--allow-net 'localhost': loopback needs a port (localhost:3000)");
}
