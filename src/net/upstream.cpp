// Deciding and connecting upstream (proxy_internal.hpp: open_upstream, connect_any): the
// policy on the name, the address check on each address, then connect. Coroutines follow
// the g++ 12 house rule in proxy_internal.hpp.
#include <sys/socket.h>

#include <algorithm>

#include "net/proxy_internal.hpp"

namespace zb::net {

using asio::awaitable;
using asio::ip::tcp;

namespace {

asio::ip::address to_asio(const Address& a) {
  if (a.family == AF_INET) {
    asio::ip::address_v4::bytes_type b;
    std::copy_n(a.bytes, 4, b.begin());
    return asio::ip::address_v4(b);
  }
  asio::ip::address_v6::bytes_type b;
  std::copy_n(a.bytes, 16, b.begin());
  return asio::ip::address_v6(b);
}

Address from_asio(const asio::ip::address& ip) {
  Address a;
  if (ip.is_v4()) {
    a.family = AF_INET;
    auto b = ip.to_v4().to_bytes();
    std::copy(b.begin(), b.end(), a.bytes);
  } else {
    a.family = AF_INET6;
    auto b = ip.to_v6().to_bytes();
    std::copy(b.begin(), b.end(), a.bytes);
  }
  return a;
}

// "localhost" and the names below it (host names arrive lower-cased, without a final dot).
bool is_localhost_name(std::string_view h) { return h == "localhost" || (h.size() > 10 && h.ends_with(".localhost")); }

}  // namespace

awaitable<Dialed> connect_any(std::shared_ptr<Conn> c, std::vector<Address> addrs, std::uint16_t port,
                              std::string target) {
  arm(c, k_connect_timeout, Deadline::upstream);
  std::error_code last;
  c->upstream.tls.reset();
  for (const Address& a : addrs) {
    c->upstream.sock = tcp::socket(c->client.sock.get_executor());
    c->upstream.reset();
    std::error_code ec;
    co_await c->upstream.sock.async_connect(tcp::endpoint(to_asio(a), port), ec_token(ec));
    if (c->timed_out) break;
    if (!ec) {
      disarm(*c);
      c->upstream_uses = 0;
      c->upstream.sock.set_option(tcp::no_delay(true), ec);
      co_return Dialed{};
    }
    last = ec;
  }
  bool timed_out = c->timed_out;
  disarm(*c);
  std::error_code ignored;
  c->upstream.sock.close(ignored);
  if (timed_out) co_return Dialed{Dialed::Kind::timed_out, "timed out connecting to " + target, {}};
  co_return Dialed{Dialed::Kind::failed, "cannot connect to " + target + ": " + last.message(), last};
}

// A decision event is recorded once the addresses are known: refused by the name, refused
// because the address check refused every address, or allowed (also when the name does not
// resolve: the policy allowed it, the failure is the network's).
awaitable<Dialed> open_upstream(std::shared_ptr<Conn> c, HostPort hp) {
  Core& core = c->core;
  std::uint16_t port = hp.port.value_or(80);
  hp.port = port;
  std::string target = to_string(hp);
  Decision d = core.policy.decide(hp);
  if (!d.allowed) {
    core.record(hp, false, d.reason);
    co_return Dialed{Dialed::Kind::refused, d.reason, {}};
  }
  std::vector<Address> addrs;
  if (hp.kind != HostKind::Name) {
    if (auto a = Address::parse(hp.host)) addrs.push_back(*a);
  } else if (auto m = core.policy.resolved(hp.host)) {
    addrs.push_back(*m);
  } else if (is_localhost_name(hp.host)) {
    // RFC 6761 6.3: localhost is the loopback, with no lookup (as curl and browsers take
    // it). A minimal system has no /etc/hosts, and a resolver would ask the network.
    for (const char* lo : {"127.0.0.1", "::1"}) {
      if (auto a = Address::parse(lo)) addrs.push_back(*a);
    }
  } else {
    tcp::resolver resolver(c->client.sock.get_executor());
    std::error_code ec;
    auto results =
        co_await resolver.async_resolve(hp.host, std::to_string(port), tcp::resolver::numeric_service, ec_token(ec));
    if (ec) {
      std::string why = "cannot resolve " + hp.host + ": " + ec.message();
      core.record(hp, false, why);
      co_return Dialed{Dialed::Kind::unresolved, why, ec};
    }
    for (const auto& entry : results) {
      Address a = from_asio(entry.endpoint().address());
      if (std::find(addrs.begin(), addrs.end(), a) == addrs.end()) addrs.push_back(a);
    }
  }
  std::vector<Address> usable;
  std::string refused = "no address for " + hp.host;
  for (const Address& a : addrs) {
    if (auto why = core.policy.check_address(d, a)) refused = *why;
    else usable.push_back(a);
  }
  if (usable.empty()) {
    core.record(hp, false, refused);
    co_return Dialed{Dialed::Kind::refused, refused, {}};
  }
  core.record(hp, true, "");
  c->upstream_candidates = usable;
  co_return co_await connect_any(c, std::move(usable), port, std::move(target));
}

int http_status(const Dialed& o) {
  switch (o.kind) {
    case Dialed::Kind::refused: return 403;
    case Dialed::Kind::timed_out: return 504;
    default: return 502;
  }
}

}  // namespace zb::net
