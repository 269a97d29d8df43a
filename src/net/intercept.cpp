// Interception (proxy_internal.hpp: intercept; ProxySecrets in proxy.hpp): a tunnel to a host
// with an approved secret is terminated here, TLS or plain, and its requests go through
// exchange() with the secrets substituted; responses are relayed scrubbed of their values
// (relay_redacted, also used by the forward proxy). Coroutines follow the g++ 12 house rule in
// proxy_internal.hpp.
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdio>

#include "net/proxy_internal.hpp"
#include "net/tls.hpp"
#include "util/log.hpp"

namespace zb::net {

using asio::awaitable;
using asio::ip::tcp;

namespace {

constexpr std::size_t k_decode_piece = 1024;  // compressed bytes decoded at a time (at most ~1 MiB out)

// TLS to the upstream server, verified against the system's trust store (plus --upstream-ca)
// and the name the client asked for. "" when it is up, else why not.
awaitable<std::string> upstream_tls(std::shared_ptr<Conn> c, HostPort hp) {
  c->upstream.tls = std::make_unique<TlsStream>(c->upstream.sock, *c->core.client_tls);
  SSL* ssl = c->upstream.tls->native_handle();
  bool params_set = hp.kind == HostKind::Name
                        // SSL_set_tlsext_host_name, without the macro's C cast
                        ? SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                                   const_cast<char*>(hp.host.c_str())) == 1 &&
                              SSL_set1_host(ssl, hp.host.c_str()) == 1
                        : X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), hp.host.c_str()) == 1;
  if (!params_set) {
    c->close_upstream();
    co_return openssl_error("cannot set up TLS to " + to_string(hp));
  }
  arm(c, k_connect_timeout, Deadline::upstream);
  std::error_code ec;
  co_await c->upstream.tls->async_handshake(asio::ssl::stream_base::client, ec_token(ec));
  bool timed_out = c->timed_out;
  disarm(*c);
  if (!ec) co_return std::string();
  long verify = SSL_get_verify_result(ssl);
  std::string why;
  if (timed_out) why = "timed out in the TLS handshake with " + to_string(hp);
  else if (verify != X509_V_OK) {
    bool unknown_issuer =
        verify == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY || verify == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT ||
        verify == X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN || verify == X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT;
    why = "the certificate of " + to_string(hp) + " is not trusted (" + X509_verify_cert_error_string(verify) +
          (unknown_issuer ? "; --upstream-ca adds a CA)" : ")");
  } else why = "TLS handshake with " + to_string(hp) + " failed: " + ec.message();
  ERR_clear_error();
  c->close_upstream();
  co_return why;
}

// A body chunk written to the client: as it is, or as one chunk of a chunked body.
awaitable<bool> emit(Stream& to, std::string data, bool chunked) {
  if (data.empty()) co_return true;
  if (chunked) {
    char size[32];
    int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    data.insert(0, size, static_cast<std::size_t>(n));
    data += "\r\n";
  }
  co_return co_await write_all(to, data);
}

// Decodes (when the body is compressed) and scrubs the pieces of a response body; nullopt
// for a corrupt compressed body, which ends the response.
struct Scrubber {
  Redactor& red;
  Decoder* dec;

  std::optional<std::string> clean(std::string_view piece) {
    if (!dec) return red.feed(piece);
    auto plain = dec->feed(piece);
    if (!plain) {
      log::debug("proxy: " + plain.error().message());
      return std::nullopt;
    }
    return red.feed(*plain);
  }
};

// n bytes of a body, read from `from` and written scrubbed to `to`.
awaitable<bool> scrub_n(Stream& from, Stream& to, std::uint64_t n, Scrubber& scrub, bool chunked_out) {
  while (n > 0) {
    if (from.avail() == 0) {
      bool more = co_await from.fill();
      if (!more) co_return false;
    }
    std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(from.avail(), n));
    // Compressed input is taken a little at a time: deflate expands up to about 1000 to 1, and
    // what is decoded stays in memory until the client reads it.
    if (scrub.dec) k = std::min(k, k_decode_piece);
    std::optional<std::string> part = scrub.clean(from.view().substr(0, k));
    if (!part) co_return false;
    from.consume(k);
    n -= k;
    bool sent = co_await emit(to, std::move(*part), chunked_out);
    if (!sent) co_return false;
  }
  co_return true;
}

// The origin-form target of a request inside an intercepted tunnel to `hp`, or why the request
// may not go there. The Host header (required from HTTP/1.1 clients) and an absolute-form
// target must name the tunnel's host: a request may not borrow an approved host's tunnel to
// reach a different name behind the same server (domain fronting).
std::optional<std::string> tunnel_target(const Message& req, const HostPort& hp, bool tls, std::string& why) {
  std::uint16_t default_port = tls ? 443 : 80;
  auto same = [&](const HostPort& h) { return h.host == hp.host && h.port.value_or(default_port) == hp.port; };
  std::string path;
  if (req.target.front() == '/') {
    path = req.target;
  } else {
    std::string_view t = req.target;
    std::string rest;
    // An absolute form is fine when it names this tunnel's host (https:// inside TLS).
    std::string as_http = tls && t.size() > 8 && iequals(t.substr(0, 8), "https://")
                              ? "http://" + std::string(t.substr(8))
                              : std::string(t);
    auto h = parse_absolute_uri(as_http, rest);
    if (!h) {
      why = "malformed request target in the tunnel to " + to_string(hp);
      return std::nullopt;
    }
    if (tls) {
      // parse_absolute_uri gives port 80 to a target without one; an https one means 443.
      std::string_view auth = std::string_view(as_http).substr(7);
      auth = auth.substr(0, auth.find_first_of("/?#"));
      auto given = parse_authority(auth, false);
      if (given && !given->port) h->port = 443;
    }
    if (!same(*h)) {
      why = "request for " + to_string(*h) + " inside the tunnel to " + to_string(hp);
      return std::nullopt;
    }
    path = rest;
  }
  auto hosts = req.values("host");
  if (hosts.size() > 1 || (hosts.empty() && req.version != "HTTP/1.0")) {
    why = hosts.empty() ? "missing Host header" : "more than one Host header";
    return std::nullopt;
  }
  if (hosts.size() == 1) {
    auto h = parse_authority(hosts[0], false);
    if (!h || !same(*h)) {
      why = "Host header '" + std::string(hosts[0]).substr(0, 300) + "' does not name " + to_string(hp) +
            ", where this tunnel goes";
      return std::nullopt;
    }
  }
  return path;
}

}  // namespace

awaitable<std::string> reopen_fixed(std::shared_ptr<Conn> c, Route route) {
  Dialed o = co_await connect_any(c, c->upstream_candidates, *route.hp.port, to_string(route.hp));
  if (o.kind != Dialed::Kind::connected) co_return o.reason;
  c->upstream_target = route.hp;
  c->upstream_uses = 0;
  if (!route.tls) co_return std::string();
  std::string why = co_await upstream_tls(c, route.hp);
  if (why.empty()) c->upstream_target = route.hp;
  co_return why;
}

awaitable<bool> relay_redacted(Stream& from, Stream& to, Framing f, Redactor& red, Decoder* dec, bool chunked_out) {
  Scrubber scrub{red, dec};
  switch (f.kind) {
    case Framing::Kind::none: break;
    case Framing::Kind::length: {
      bool whole = co_await scrub_n(from, to, f.length, scrub, chunked_out);
      if (!whole) co_return false;
      break;
    }
    case Framing::Kind::until_close:
      for (;;) {
        if (from.avail() > 0) {
          std::size_t take = scrub.dec ? std::min(from.avail(), k_decode_piece) : from.avail();
          std::optional<std::string> piece = scrub.clean(from.view().substr(0, take));
          if (!piece) co_return false;
          from.consume(take);
          bool sent = co_await emit(to, std::move(*piece), chunked_out);
          if (!sent) co_return false;
        }
        if (from.avail() > 0) continue;
        bool more = co_await from.fill();
        if (!more) break;
      }
      break;
    case Framing::Kind::chunked: {
      std::string line;
      for (;;) {
        ReadStatus size_line = co_await read_line(from, line);
        if (size_line != ReadStatus::ok) co_return false;
        std::optional<std::uint64_t> size = chunk_size(line);
        if (!size) co_return false;
        if (*size == 0) break;
        bool chunk_done = co_await scrub_n(from, to, *size, scrub, chunked_out);
        if (!chunk_done) co_return false;
        bool crlf = co_await need(from, 2);
        if (!crlf || from.view().substr(0, 2) != "\r\n") co_return false;
        from.consume(2);
      }
      for (;;) {  // trailer fields, dropped, then the empty line
        ReadStatus trailer = co_await read_line(from, line);
        if (trailer != ReadStatus::ok) co_return false;
        if (line.empty()) break;
      }
      break;
    }
  }
  std::string held = red.finish();
  bool tail = co_await emit(to, std::move(held), chunked_out);
  if (!tail) co_return false;
  if (chunked_out) co_return co_await write_all(to, "0\r\n\r\n");
  co_return true;
}

// g++ 12 takes the frame asio allocates for this coroutine (awaitable_frame_base's operator
// new and sized operator delete, both inlined here) for a mismatched new and delete: a false
// positive (GCC PR middle-end/109224).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
awaitable<void> intercept(std::shared_ptr<Conn> c, HostPort hp) {
  Core& core = c->core;
  // TLS or not is told by the first byte: 0x16 opens a TLS handshake record.
  arm(c, k_head_timeout, Deadline::client);
  char first = 0;
  if (c->client.avail() > 0) {
    first = c->client.view()[0];
  } else {
    std::error_code ec;
    co_await c->client.sock.async_wait(tcp::socket::wait_read, ec_token(ec));
    ssize_t n = ec ? -1 : ::recv(c->client.sock.native_handle(), &first, 1, MSG_PEEK);
    if (n != 1) {
      disarm(*c);
      c->close_all();
      co_return;
    }
  }
  bool tls = first == 0x16;
  if (log::debug_enabled()) {
    std::string keys;
    for (const SecretEntry* e : core.approved(hp)) keys += (keys.empty() ? "" : ", ") + e->key;
    log::debug("proxy: intercepting " + to_string(hp) + (tls ? " (TLS)" : " (plain HTTP)") + " for " + keys);
  }
  std::string upstream_failure;
  if (tls) {
    if (c->client.avail() > 0) {
      // A handshake sent before our reply is already buffered here, out of OpenSSL's reach.
      disarm(*c);
      log::debug("proxy: " + to_string(hp) + ": TLS handshake sent before the tunnel was established; closed");
      c->close_all();
      co_return;
    }
    auto leaf = core.secrets->ca.leaf(hp);
    c->client.tls = std::make_unique<TlsStream>(c->client.sock, *core.server_tls);
    SSL* ssl = c->client.tls->native_handle();
    if (!leaf || SSL_use_certificate(ssl, *leaf) != 1 || SSL_use_PrivateKey(ssl, core.secrets->ca.leaf_key()) != 1) {
      disarm(*c);
      log::error("proxy: no certificate for " + hp.host + ": " +
                 (leaf ? openssl_error("cannot use it") : leaf.error().message()));
      c->close_all();
      co_return;
    }
    std::error_code ec;
    co_await c->client.tls->async_handshake(asio::ssl::stream_base::server, ec_token(ec));
    disarm(*c);
    if (ec) {
      log::debug("proxy: " + to_string(hp) + ": TLS handshake with the client failed: " + ec.message());
      ERR_clear_error();
      c->close_all();
      co_return;
    }
    upstream_failure = co_await upstream_tls(c, hp);
  } else {
    disarm(*c);
  }
  c->upstream_target = hp;
  c->upstream_uses = 0;
  for (;;) {
    std::optional<Message> req = co_await next_request(c);
    if (!req) co_return;
    if (!upstream_failure.empty()) {
      co_await http_error(c, 502, upstream_failure);
      co_return;
    }
    std::string why;
    if (req->method == "CONNECT") {
      co_await http_error(c, 400, "CONNECT inside the tunnel to " + to_string(hp));
      co_return;
    }
    auto path = tunnel_target(*req, hp, tls, why);
    if (!path) {
      core.record(hp, false, why);
      co_await http_error(c, 403, why);
      co_return;
    }
    Route tunnel_route{hp, *path, true, tls};  // named: see serve_forward
    bool keep_alive = co_await exchange(c, *req, std::move(tunnel_route));
    if (!keep_alive) co_return;
  }
}
#pragma GCC diagnostic pop

}  // namespace zb::net
