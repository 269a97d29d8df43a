// The proxy's connection core: the state every connection reaches (Core), a socket with the
// bytes received from it and not yet consumed (Stream), one client connection with its
// upstream (Conn), the one deadline a connection has at a time (arm, disarm), and the
// byte-level copies between two Streams. Internal to the proxy (proxy_internal.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

// Asio's scheduler trips -Wnull-dereference once inlined here (a false positive, in
// /usr/include/asio/detail/impl/scheduler.ipp); its other warnings stay on.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <asio.hpp>
#include <asio/ssl.hpp>
#pragma GCC diagnostic pop

#include "net/host.hpp"
#include "net/proxy.hpp"
#include "net/rules.hpp"
#include "net/secrets.hpp"

namespace zb::net {

// Timeouts (proxy.hpp, Proxy::start): for a request head (the SOCKS handshake included, and
// between keep-alive requests), and for connecting upstream (the TLS handshake included).
inline constexpr std::chrono::seconds k_head_timeout{30};
inline constexpr std::chrono::seconds k_connect_timeout{30};

// The completion token of every awaited operation: errors come back in `ec`, not as throws.
inline auto ec_token(std::error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

// ---------------------------------------------------------------------------------------------
// Shared state of the proxy, reached from every connection.

struct Core {
  Core(NetPolicy p, std::function<void(const NetEvent&)> f, std::optional<ProxySecrets> s);

  NetPolicy policy;
  std::function<void(const NetEvent&)> on_event;
  std::optional<ProxySecrets> secrets;
  std::optional<asio::ssl::context> server_tls, client_tls;

  // The secrets approved for this host (empty without secrets).
  Approved approved(const HostPort& hp) const;
  std::atomic<std::uint64_t> allowed{0};
  std::atomic<std::uint64_t> denied{0};

  // Counts one decision and passes it to on_event (NetEvent in proxy.hpp).
  void record(const HostPort& hp, bool ok, const std::string& reason);
};

// ---------------------------------------------------------------------------------------------
// A socket with the bytes received from it and not yet consumed.

// Once TLS is set up on it (an intercepted connection), reads and writes go through `tls`,
// which works on `sock`; closing `sock` still aborts whatever waits on either.
using TlsStream = asio::ssl::stream<asio::ip::tcp::socket&>;

struct Stream {
  explicit Stream(const asio::any_io_executor& ex) : sock(ex) {}
  explicit Stream(asio::ip::tcp::socket s) : sock(std::move(s)) {}

  asio::ip::tcp::socket sock;
  std::unique_ptr<TlsStream> tls;
  std::string buf;
  std::size_t pos = 0;

  std::size_t avail() const { return buf.size() - pos; }
  std::string_view view() const { return std::string_view(buf).substr(pos); }
  void consume(std::size_t n) {
    pos += n;
    if (pos >= buf.size()) reset();
  }
  void reset() {
    buf.clear();
    pos = 0;
  }

  // Reads once more. False at EOF or on an error (the bytes already buffered stay).
  asio::awaitable<bool> fill();
};

// Which socket a connection's deadline closes when it passes.
enum class Deadline { client, upstream };

struct Conn {
  Conn(Core& c, asio::ip::tcp::socket s)
      : core(c), client(std::move(s)), upstream(client.sock.get_executor()), timer(client.sock.get_executor()) {}

  Core& core;
  Stream client;
  Stream upstream;
  // The forward proxy keeps its upstream connection while requests name the same host:port.
  std::optional<HostPort> upstream_target;
  std::vector<Address> upstream_candidates;  // the addresses that passed the address check, to reconnect
  unsigned upstream_uses = 0;                // requests sent on the current upstream connection
  // One deadline at a time: the request head, the upstream connect or the lingering close.
  asio::steady_timer timer;
  unsigned deadline_gen = 0;
  bool timed_out = false;

  void close_upstream();
  void close_all();
};

// Starts the connection's deadline: when `d` has passed, the socket `which` names is closed,
// which aborts whatever waits on it. A new arm() or a disarm() replaces it.
void arm(const std::shared_ptr<Conn>& c, std::chrono::steady_clock::duration d, Deadline which);
void disarm(Conn& c);

// The copies below return false when the connection failed (a read or write error, or EOF
// before the end): the caller then closes it.
asio::awaitable<bool> write_all(Stream& s, std::string_view data);
// Reads until at least n bytes are buffered.
asio::awaitable<bool> need(Stream& s, std::size_t n);
// Copies exactly n bytes, the buffered ones first.
asio::awaitable<bool> copy_n(Stream& from, Stream& to, std::uint64_t n);
// Copies everything until the sender closes.
asio::awaitable<bool> copy_until_eof(Stream& from, Stream& to);

// Shuts down our side, drains what the client still sends (bounded in time and bytes) and
// closes the connection.
asio::awaitable<void> linger_close(std::shared_ptr<Conn> c);

}  // namespace zb::net
