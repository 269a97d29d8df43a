// The proxy's connection core (proxy_conn.hpp): shared state, buffered streams, the deadline
// of a connection and the copies between streams. Coroutines follow the g++ 12 house rule in
// proxy_internal.hpp.
#include "net/proxy_conn.hpp"

#include <algorithm>
#include <array>
#include <exception>
#include <utility>

#include "util/log.hpp"

namespace zb::net {

using asio::awaitable;
using asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t k_read_chunk = std::size_t{16} * 1024;
constexpr std::size_t k_linger_max = std::size_t{1024} * 1024;
// After an error reply: how long unread request bytes are drained before closing, so the
// kernel does not answer them with a RST that can destroy the reply in flight.
constexpr auto k_linger_timeout = 2s;

}  // namespace

Core::Core(NetPolicy p, std::function<void(const NetEvent&)> f, std::optional<ProxySecrets> s)
    : policy(std::move(p)), on_event(std::move(f)), secrets(std::move(s)) {
  if (secrets) {
    // asio's contexts take over the SSL_CTX handles.
    server_tls.emplace(secrets->tls.server.release());
    client_tls.emplace(secrets->tls.client.release());
  }
}

Approved Core::approved(const HostPort& hp) const {
  if (!secrets) return {};
  return secrets->secrets.for_host(hp);
}

void Core::record(const HostPort& hp, bool ok, const std::string& reason) {
  (ok ? allowed : denied).fetch_add(1, std::memory_order_relaxed);
  if (!on_event) return;
  try {
    on_event(NetEvent{hp.host, hp.port.value_or(0), ok, ok ? std::string() : reason});
  } catch (const std::exception& e) {
    log::debug(std::string("proxy: event callback failed: ") + e.what());
  }
}

awaitable<bool> Stream::fill() {
  if (pos > 0) {
    buf.erase(0, pos);
    pos = 0;
  }
  std::size_t old = buf.size();
  buf.resize(old + k_read_chunk);
  std::error_code ec;
  auto into = asio::buffer(buf.data() + old, k_read_chunk);
  std::size_t n = 0;
  if (tls) n = co_await tls->async_read_some(into, ec_token(ec));
  else n = co_await sock.async_read_some(into, ec_token(ec));
  buf.resize(old + n);
  co_return !ec && n > 0;
}

void Conn::close_upstream() {
  std::error_code ec;
  upstream.tls.reset();
  upstream.sock.close(ec);
  upstream.reset();
  upstream_target.reset();
}

void Conn::close_all() {
  std::error_code ec;
  client.sock.close(ec);
  upstream.sock.close(ec);
}

// The handler holds only a weak reference and a generation, so a deadline that fired after the
// connection moved on (or ended) does nothing.
void arm(const std::shared_ptr<Conn>& c, std::chrono::steady_clock::duration d, Deadline which) {
  unsigned gen = ++c->deadline_gen;
  c->timed_out = false;
  c->timer.expires_after(d);
  c->timer.async_wait([w = std::weak_ptr<Conn>(c), gen, which](std::error_code ec) {
    auto conn = w.lock();
    if (!conn || ec || conn->deadline_gen != gen) return;
    conn->timed_out = true;
    std::error_code ignored;
    (which == Deadline::client ? conn->client.sock : conn->upstream.sock).close(ignored);
  });
}

void disarm(Conn& c) {
  ++c.deadline_gen;
  c.timer.cancel();
}

awaitable<bool> write_all(Stream& s, std::string_view data) {
  std::error_code ec;
  if (s.tls) co_await asio::async_write(*s.tls, asio::buffer(data.data(), data.size()), ec_token(ec));
  else co_await asio::async_write(s.sock, asio::buffer(data.data(), data.size()), ec_token(ec));
  co_return !ec;
}

awaitable<bool> need(Stream& s, std::size_t n) {
  while (s.avail() < n) {
    bool more = co_await s.fill();
    if (!more) co_return false;
  }
  co_return true;
}

awaitable<bool> copy_n(Stream& from, Stream& to, std::uint64_t n) {
  while (n > 0) {
    if (from.avail() == 0) {
      bool more = co_await from.fill();
      if (!more) co_return false;
    }
    std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(from.avail(), n));
    bool written = co_await write_all(to, from.view().substr(0, k));
    if (!written) co_return false;
    from.consume(k);
    n -= k;
  }
  co_return true;
}

awaitable<bool> copy_until_eof(Stream& from, Stream& to) {
  for (;;) {
    if (from.avail() > 0) {
      bool written = co_await write_all(to, from.view());
      if (!written) co_return false;
      from.reset();
    }
    bool more = co_await from.fill();
    if (!more) {
      if (from.avail() == 0) co_return true;
      bool last = co_await write_all(to, from.view());
      co_return last;
    }
  }
}

// Closing a socket with unread input makes the kernel send a RST, which can reach the client
// before it has read the reply.
awaitable<void> linger_close(std::shared_ptr<Conn> c) {
  std::error_code ec;
  if (c->client.tls) {
    // TLS: send close_notify and wait (briefly) for the client's.
    arm(c, k_linger_timeout, Deadline::client);
    co_await c->client.tls->async_shutdown(ec_token(ec));
    disarm(*c);
    c->close_all();
    co_return;
  }
  c->client.sock.shutdown(tcp::socket::shutdown_send, ec);
  if (!ec) {
    arm(c, k_linger_timeout, Deadline::client);
    std::array<char, 4096> sink;
    std::size_t total = 0;
    while (total < k_linger_max) {
      std::size_t n = co_await c->client.sock.async_read_some(asio::buffer(sink), ec_token(ec));
      if (ec) break;
      total += n;
    }
    disarm(*c);
  }
  c->close_all();
}

}  // namespace zb::net
