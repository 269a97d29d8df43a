// SOCKS5 (RFC 1928) on a connection (proxy_internal.hpp: serve_socks5): no authentication,
// CONNECT to a domain name only; the request itself is parsed by socks5_request.cpp.
// Coroutines follow the g++ 12 house rule in proxy_internal.hpp.
#include "net/proxy_internal.hpp"
#include "net/socks5_request.hpp"
#include "util/log.hpp"

namespace zb::net {

using asio::awaitable;

namespace {

awaitable<bool> socks_reply(Conn& c, std::uint8_t rep) {
  // BND.ADDR 0.0.0.0:0: the address the proxy connected from means nothing inside the sandbox.
  const char reply[10] = {5, static_cast<char>(rep), 0, 1, 0, 0, 0, 0, 0, 0};
  co_return co_await write_all(c.client, std::string_view(reply, sizeof reply));
}

awaitable<void> socks_refuse(std::shared_ptr<Conn> c, std::uint8_t rep) {
  bool ok = co_await socks_reply(*c, rep);
  if (ok) co_await linger_close(c);
  c->close_all();
}

std::uint8_t socks_code(const Dialed& o) {
  switch (o.kind) {
    case Dialed::Kind::connected: return k_socks_ok;
    case Dialed::Kind::refused: return k_socks_not_allowed;
    case Dialed::Kind::unresolved: return k_socks_host_unreachable;
    case Dialed::Kind::timed_out: return k_socks_host_unreachable;
    case Dialed::Kind::failed: break;
  }
  if (o.ec == asio::error::connection_refused) return k_socks_refused;
  if (o.ec == asio::error::network_unreachable || o.ec == asio::error::host_unreachable) return k_socks_net_unreachable;
  if (o.ec == asio::error::timed_out) return k_socks_host_unreachable;
  return k_socks_general;
}

}  // namespace

awaitable<void> serve_socks5(std::shared_ptr<Conn> c) {
  Stream& in = c->client;
  bool ok = co_await need(in, 2);
  if (!ok) co_return;
  std::size_t nmethods = static_cast<unsigned char>(in.view()[1]);
  ok = co_await need(in, 2 + nmethods);
  if (!ok) co_return;
  bool no_auth = in.view().substr(2, nmethods).find('\0') != std::string_view::npos;
  in.consume(2 + nmethods);
  if (!no_auth) {
    disarm(*c);
    ok = co_await write_all(in, std::string_view("\x05\xff", 2));
    if (ok) co_await linger_close(c);
    co_return;
  }
  ok = co_await write_all(in, std::string_view("\x05\x00", 2));
  if (!ok) co_return;
  ok = co_await need(in, 5);
  if (!ok) co_return;
  std::size_t size = socks_request_size(in.view());
  if (size > 0) {
    ok = co_await need(in, size);
    if (!ok) co_return;
  }
  disarm(*c);
  SocksRequest req;
  req.reply = k_socks_bad_address_type;
  if (size > 0) req = parse_socks_request(in.view());
  if (req.ip) {
    // Recorded as a refusal so --debug can say to resolve through the proxy (socks5h).
    c->core.record(*req.ip, false, "SOCKS5 request with an IP address; send the host name (socks5h)");
  }
  if (!req.invalid.empty()) log::debug("proxy: SOCKS5 request for an invalid name: " + clean_reason(req.invalid));
  std::uint8_t rep = req.reply;
  HostPort& hp = req.hp;
  if (rep == k_socks_ok) {
    in.consume(size);
    Dialed o = co_await open_upstream(c, hp);
    rep = socks_code(o);
  }
  if (rep != k_socks_ok) {
    co_await socks_refuse(c, rep);
    co_return;
  }
  ok = co_await socks_reply(*c, k_socks_ok);
  if (!ok) co_return;
  if (!c->core.approved(hp).empty()) {
    co_await intercept(c, hp);
    co_return;
  }
  co_await tunnel(c);
}

}  // namespace zb::net
