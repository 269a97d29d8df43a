// What the files of the proxy share, and nothing outside src/net uses (proxy.hpp is the
// interface). A connection is served by one coroutine (proxy.cpp: serve) and is SOCKS5
// (socks5.cpp), SOCKS4 (refused) or HTTP/1.1 (forward.cpp: CONNECT and the forward proxy),
// told apart by its first byte. Every upstream connection goes through open_upstream()
// (upstream.cpp), which is where the policy is applied: NetPolicy::decide on the name the
// client gave, then the address check on each resolved (or --resolve mapped) address, then
// connect. A tunnel is relayed by splice(2) (tunnel.cpp), unless its host has an approved
// secret: then it is intercepted (intercept.cpp).
//
// House rule for the coroutines of every file of the proxy, because g++ 12 miscompiles some
// shapes (seen here as crashes on resume): a co_await stands alone in its statement or
// initialiser (`bool ok = co_await f(); if (!ok) ...`), never inside an if/while condition,
// a ?: or && / || operand; no two locals of one coroutine share a name, even in different
// scopes; and an argument of a coroutine call is never a temporary with a destructor
// (`f(T{...})` destroyed it twice): build it as a named local first.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "net/host.hpp"
#include "net/http1.hpp"
#include "net/proxy_conn.hpp"
#include "net/rules.hpp"
#include "net/secrets.hpp"

namespace zb::net {

// ---------------------------------------------------------------------------------------------
// HTTP/1.1 on a connection (http1_io.cpp).

enum class ReadStatus { ok, closed, bad, too_big };

// Reads a header block up to and including its empty line; `head` receives it without that
// final CRLF. Empty lines before the start line are skipped (RFC 9112 section 2.2). `why`
// says what is wrong for `bad` and `too_big` (more than 64 KiB).
asio::awaitable<ReadStatus> read_head(Stream& s, std::string& head, std::string& why);
// One CRLF-terminated line (chunk sizes, trailers), returned without its CRLF.
asio::awaitable<ReadStatus> read_line(Stream& s, std::string& line);
// Relays a chunked body as it arrives, chunk by chunk, unchanged (extensions and trailers too),
// checking its syntax so the end of the body is where both sides think it is.
asio::awaitable<bool> relay_chunked(Stream& from, Stream& to);
// Relays a body as `f` frames it, unchanged.
asio::awaitable<bool> relay_body(Stream& from, Stream& to, const Framing& f);
// Answers the client with error_response(status, reason) and closes the connection.
asio::awaitable<void> http_error(std::shared_ptr<Conn> c, int status, std::string reason);
// Reads one request head from the client. nullopt when the connection is done (closed, or
// answered with an error).
asio::awaitable<std::optional<Message>> next_request(std::shared_ptr<Conn> c);

// ---------------------------------------------------------------------------------------------
// Deciding and connecting (upstream.cpp).

// How connecting upstream ended.
struct Dialed {
  enum class Kind { connected, refused, unresolved, failed, timed_out } kind = Kind::connected;
  std::string reason;  // refused: the policy's reason; otherwise a message for the client
  std::error_code ec;  // failed: the last connect error
};

// Connects c->upstream to the first of `addrs` that answers on `port`, within
// k_connect_timeout for all of them; `target` names the host in the messages.
asio::awaitable<Dialed> connect_any(std::shared_ptr<Conn> c, std::vector<Address> addrs, std::uint16_t port,
                                    std::string target);
// The one place where the policy is applied: the name, then each address, then connect
// (port 80 when hp has none). The addresses that pass are kept in c->upstream_candidates.
asio::awaitable<Dialed> open_upstream(std::shared_ptr<Conn> c, HostPort hp);
// The HTTP status that answers a failed Dialed: 403 refused, 504 timed out, else 502.
int http_status(const Dialed& o);

// ---------------------------------------------------------------------------------------------
// The other files' entry points.

// Relays bytes both ways between c->client and c->upstream until both sides are done
// (tunnel.cpp).
asio::awaitable<void> tunnel(std::shared_ptr<Conn> c);

// A connection whose first byte is 0x05 (socks5.cpp).
asio::awaitable<void> serve_socks5(std::shared_ptr<Conn> c);

// A connection that speaks HTTP/1.1: CONNECT or absolute-form requests (forward.cpp).
asio::awaitable<void> serve_http(std::shared_ptr<Conn> c);

// Where a request goes. The forward proxy picks the upstream for each request; inside an
// intercepted tunnel it is the tunnel's host, over TLS when the client spoke TLS.
struct Route {
  HostPort hp;         // port set
  std::string path;    // origin-form target
  bool fixed = false;  // an intercepted tunnel
  bool tls = false;    // the upstream connection is TLS (fixed routes only)
};

// One request, sent upstream along `route`, and its response (forward.cpp). True when the
// client connection stays open. Placeholders of the secrets approved for the route's host
// are substituted in the target and the header values; the response is scrubbed of their
// values.
asio::awaitable<bool> exchange(std::shared_ptr<Conn> c, const Message& req, Route route);

// A CONNECT or SOCKS5 tunnel to a host with an approved secret, already connected upstream and
// acknowledged to the client (ProxySecrets in proxy.hpp; intercept.cpp).
asio::awaitable<void> intercept(std::shared_ptr<Conn> c, HostPort hp);
// Connects a fixed route again (the server closed the kept connection), over TLS when the
// route is. "" when it is up, else why not (intercept.cpp).
asio::awaitable<std::string> reopen_fixed(std::shared_ptr<Conn> c, Route route);
// Relays a response body with every secret value replaced by its placeholder (Redactor). The
// body is decoded from its framing (and from its Content-Encoding, with `dec`) and sent
// chunked (chunked_out: HTTP/1.1 clients) or until close (HTTP/1.0), since the length
// changes. Trailer fields are dropped (intercept.cpp).
asio::awaitable<bool> relay_redacted(Stream& from, Stream& to, Framing f, Redactor& red, Decoder* dec,
                                     bool chunked_out);

}  // namespace zb::net
