// The HTTP side of the proxy (proxy_internal.hpp: serve_http, exchange): CONNECT tunnels,
// and the absolute-form forward proxy, where each request goes through exchange(), which
// the intercepted tunnels (intercept.cpp) use too. Coroutines follow the g++ 12 house rule in
// proxy_internal.hpp.
#include <sys/socket.h>

#include <cerrno>
#include <optional>
#include <utility>

#include "net/proxy_internal.hpp"

namespace zb::net {

using asio::awaitable;

namespace {

awaitable<void> serve_connect(std::shared_ptr<Conn> c, const Message& req) {
  auto hp = parse_authority(req.target, true);
  if (!hp) {
    co_await http_error(c, 400, hp.error().message());
    co_return;
  }
  Dialed o = co_await open_upstream(c, *hp);
  if (o.kind != Dialed::Kind::connected) {
    co_await http_error(c, http_status(o), o.reason);
    co_return;
  }
  bool established = co_await write_all(c->client, "HTTP/1.1 200 Connection established\r\n\r\n");
  if (!established) co_return;
  if (!c->core.approved(*hp).empty()) {
    co_await intercept(c, *hp);
    co_return;
  }
  co_await tunnel(c);
}

// The upstream connection kept from an earlier request, if it is still usable: open, nothing
// unread, and not closed by the server meanwhile.
bool upstream_reusable(Conn& c, const HostPort& hp) {
  if (!c.upstream.sock.is_open() || c.upstream_target != hp || c.upstream.avail() > 0) return false;
  char b;
  ssize_t n = ::recv(c.upstream.sock.native_handle(), &b, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

std::string host_field(const HostPort& hp, std::uint16_t default_port) {
  if (hp.port.value_or(default_port) != default_port) return to_string(hp);
  return hp.kind == HostKind::IPv6 ? "[" + hp.host + "]" : hp.host;
}

// One request on its way through exchange(): what each step finds out and passes on.
struct Exchange {
  Route route;
  Framing framing;  // of the request body; none once the body is sent
  bool client_http10 = false;
  bool client_close = false;  // the client asked to close the connection after this exchange
  bool continue_100 = false;  // "100 Continue" is owed to the client before it sends its body
  bool reused = false;        // the upstream connection was kept from an earlier request
  std::string head;           // the request head as sent upstream
  Message resp;               // the final response's head
};

// The request's framing and Expect field, into `ex`. False with the status (400, 417) and
// the reason that refuse it.
bool check_request(const Message& req, Exchange& ex, int& status, std::string& why) {
  auto framing = request_framing(req, why);
  if (!framing) {
    status = 400;
    return false;
  }
  ex.framing = *framing;
  ex.client_http10 = req.version == "HTTP/1.0";
  ex.client_close = ex.client_http10 || req.has_option("connection", "close");
  auto expect = req.values("expect");
  if (!expect.empty()) {
    if (expect.size() != 1 || !iequals(expect[0], "100-continue")) {
      status = 417;
      why = "unsupported Expect header";
      return false;
    }
    // Answered here rather than forwarded: waiting for the server's 100 while the client may
    // already be sending its body would need both at once; this keeps one direction at a time.
    ex.continue_100 = !ex.client_http10 && ex.framing.kind != Framing::Kind::none;
  }
  return true;
}

// Connects upstream along ex.route, or keeps the connection an earlier request left open
// (ex.reused). False when the client was answered with an error.
awaitable<bool> ensure_upstream(std::shared_ptr<Conn> c, Exchange& ex) {
  const HostPort& hp = ex.route.hp;
  if (ex.route.fixed || upstream_reusable(*c, hp)) {
    // The policy is decided (and recorded) for every request, as for a new connection.
    Decision d = c->core.policy.decide(hp);
    c->core.record(hp, d.allowed, d.reason);
    if (!d.allowed) {
      c->close_upstream();
      co_await http_error(c, 403, d.reason);
      co_return false;
    }
    if (ex.route.fixed && !c->upstream.sock.is_open()) {
      std::string failed = co_await reopen_fixed(c, ex.route);
      if (!failed.empty()) {
        co_await http_error(c, 502, failed);
        co_return false;
      }
    }
    ex.reused = c->upstream_uses > 0;
    co_return true;
  }
  c->close_upstream();
  Dialed opened = co_await open_upstream(c, hp);
  if (opened.kind != Dialed::Kind::connected) {
    co_await http_error(c, http_status(opened), opened.reason);
    co_return false;
  }
  c->upstream_target = hp;
  co_return true;
}

// The request head as it goes upstream, into ex.head: origin form, a Host field of our own,
// no hop-by-hop or Expect fields, and the placeholders of `subs` substituted (the Basic
// credentials they make are added to `red`). Returns why the request is refused instead, ""
// when it is not.
std::string rewrite_request(const Message& req, Exchange& ex, const Approved& subs, Redactor& red) {
  const Route& route = ex.route;
  const HostPort& hp = route.hp;
  if (!subs.empty()) {
    // A placeholder right after an unfinished escape ("%2", "\u00", "&#x") would have the
    // server decode the value's first bytes into something the scrubber cannot recognise.
    std::string refused = escaped_placeholder(route.path, subs);
    for (const Field& f : req.fields)
      if (refused.empty()) refused = escaped_placeholder(f.value, subs);
    if (!refused.empty()) return refused;
  }
  auto options = req.list("connection");
  std::string& out = ex.head;
  out =
      req.method + " " + (subs.empty() ? route.path : substitute_target(route.path, subs)) + " " + req.version + "\r\n";
  out += "Host: " + host_field(hp, route.tls ? 443 : 80) + "\r\n";
  std::vector<std::pair<std::string, std::string>> forms;  // as sent, as the client wrote it
  for (const Field& f : req.fields) {
    if (iequals(f.name, "host") || iequals(f.name, "expect") || hop_by_hop(f.name, options)) continue;
    // A compressed response could not be scrubbed.
    if (!subs.empty() && iequals(f.name, "accept-encoding")) continue;
    std::string value = substitute_field(f.name, f.value, subs);
    if (value != f.value && iequals(f.name, "authorization")) forms.emplace_back(value, f.value);
    out += f.name + ": " + value + "\r\n";
  }
  for (auto& [sent, shown] : forms) {
    // "Basic <base64>": the credentials themselves.
    std::size_t sp = sent.rfind(' '), sp_shown = shown.rfind(' ');
    if (sp != std::string::npos && sp_shown != std::string::npos)
      red.add(sent.substr(sp + 1), shown.substr(sp_shown + 1));
  }
  if (!subs.empty()) out += "Accept-Encoding: identity\r\n";
  out += "\r\n";
  return std::string();
}

// Sends ex.head and the request's body upstream and reads the head of the final response
// into ex.resp, passing 1xx responses on to HTTP/1.1 clients. False when the client was
// answered with an error or the connection is closed.
awaitable<bool> send_request(std::shared_ptr<Conn> c, Exchange& ex, const Redactor& red) {
  const Route& route = ex.route;
  const HostPort& hp = route.hp;
  std::string why;
  bool retried = false;
  bool send = true;
  for (;;) {
    bool sent = true;
    if (send) {
      send = false;
      ++c->upstream_uses;
      sent = co_await write_all(c->upstream, ex.head);
    }
    if (sent && ex.framing.kind != Framing::Kind::none) {
      if (ex.continue_100) sent = co_await write_all(c->client, "HTTP/1.1 100 Continue\r\n\r\n");
      ex.continue_100 = false;
      // Streamed as it arrives; a failure half-way leaves nothing sensible to answer.
      if (sent) sent = co_await relay_body(c->client, c->upstream, ex.framing);
      if (!sent) {
        c->close_all();
        co_return false;
      }
    }
    std::string head;
    ReadStatus st = ReadStatus::closed;
    if (sent) st = co_await read_head(c->upstream, head, why);
    if (st == ReadStatus::ok) {
      if (!parse_response(head, ex.resp, why)) {
        c->close_upstream();
        co_await http_error(c, 502, why);
        co_return false;
      }
      if (ex.resp.status >= 200 || ex.resp.status == 101) co_return true;
      // 1xx before the final response: passed on to HTTP/1.1 clients (1.0 does not know them).
      if (!ex.client_http10) {
        std::string info = red.redact(ex.resp.status_line) + "\r\n";
        auto info_options = ex.resp.list("connection");
        for (const Field& f : ex.resp.fields)
          if (!hop_by_hop(f.name, info_options)) info += red.redact(f.name) + ": " + red.redact(f.value) + "\r\n";
        info += "\r\n";
        bool passed = co_await write_all(c->client, info);
        if (!passed) {
          c->close_all();
          co_return false;
        }
      }
      ex.resp = Message{};
      ex.framing = Framing{};  // the body, if any, is already sent
      retried = true;          // and the request cannot be sent again
      continue;
    }
    // A kept connection the server closed just before our request arrived: try once more on a
    // fresh one, when the request can be sent again (no body consumed).
    bool nothing_received = c->upstream.avail() == 0;
    if (st == ReadStatus::closed && ex.reused && !retried && nothing_received &&
        ex.framing.kind == Framing::Kind::none) {
      retried = true;
      std::string failed;
      if (route.fixed) {
        c->close_upstream();
        failed = co_await reopen_fixed(c, route);
      } else {
        Dialed reopened = co_await connect_any(c, c->upstream_candidates, *hp.port, to_string(hp));
        if (reopened.kind != Dialed::Kind::connected) failed = reopened.reason;
      }
      if (!failed.empty()) {
        c->close_upstream();
        co_await http_error(c, 502, failed);
        co_return false;
      }
      send = true;
      continue;
    }
    c->close_upstream();
    co_await http_error(c, 502,
                        st == ReadStatus::closed ? "upstream closed the connection without a response"
                                                 : "malformed response from upstream: " + why);
    co_return false;
  }
}

// Relays the response in ex.resp and its body to the client, scrubbed of the secrets' values
// when `red` is active. True when the client connection stays open.
awaitable<bool> relay_response(std::shared_ptr<Conn> c, const Message& req, const Exchange& ex, Redactor& red) {
  const HostPort& hp = ex.route.hp;
  const Message& resp = ex.resp;
  bool client_http10 = ex.client_http10;
  std::string why;
  if (resp.status == 101) {  // Upgrade is never forwarded, so this is a broken server
    c->close_upstream();
    co_await http_error(c, 502, "unexpected 101 Switching Protocols from upstream");
    co_return false;
  }
  auto rframing = response_framing(resp, req.method == "HEAD", why);
  if (!rframing) {
    c->close_upstream();
    co_await http_error(c, 502, why);
    co_return false;
  }
  auto ropts = resp.list("connection");
  bool upstream_close = rframing->kind == Framing::Kind::until_close || resp.has_option("connection", "close") ||
                        (resp.version == "HTTP/1.0" && !resp.has_option("connection", "keep-alive"));
  bool close_client = ex.client_close || rframing->kind == Framing::Kind::until_close;
  bool has_te = !resp.values("transfer-encoding").empty();
  // Scrubbing changes the body's length: it is sent chunked, or until close to HTTP/1.0.
  bool scrub = red.active() && rframing->kind != Framing::Kind::none;
  if (scrub && client_http10) close_client = true;
  // A server may compress whatever Accept-Encoding said: such a body is decoded to be
  // scrubbed, and one that cannot be decoded here is not passed on.
  std::optional<Decoder> decoder;
  auto transfer_codings = resp.list("transfer-encoding");
  if (scrub && !transfer_codings.empty() && transfer_codings != std::vector<std::string>{"chunked"}) {
    c->close_upstream();
    co_await http_error(c, 502,
                        "the response from " + to_string(hp) +
                            " has a Transfer-Encoding other than chunked, "
                            "which zerobox cannot scrub of secrets");
    co_return false;
  }
  if (scrub) {
    auto d = Decoder::for_coding(resp.list("content-encoding"));
    if (!d) {
      c->close_upstream();
      co_await http_error(c, 502,
                          "the response from " + to_string(hp) + " has " + d.error().message() +
                              ", which zerobox cannot scrub of secrets");
      co_return false;
    }
    if (*d) decoder.emplace(std::move(**d));
  }
  std::string rhead = red.redact(resp.status_line) + "\r\n";
  for (const Field& f : resp.fields) {
    if (hop_by_hop(f.name, ropts)) continue;
    if (has_te && iequals(f.name, "content-length")) continue;  // RFC 9112 6.3: TE wins
    if (scrub && (iequals(f.name, "content-length") || iequals(f.name, "transfer-encoding"))) continue;
    if (decoder && iequals(f.name, "content-encoding")) continue;
    rhead += red.redact(f.name) + ": " + red.redact(f.value) + "\r\n";
  }
  if (scrub && !client_http10) rhead += "Transfer-Encoding: chunked\r\n";
  if (close_client) rhead += "Connection: close\r\n";
  rhead += "\r\n";
  bool relayed = co_await write_all(c->client, rhead);
  if (relayed) {
    if (scrub)
      relayed = co_await relay_redacted(c->upstream, c->client, *rframing, red, decoder ? &*decoder : nullptr,
                                        !client_http10);
    else relayed = co_await relay_body(c->upstream, c->client, *rframing);
  }
  if (!relayed) {
    c->close_all();
    co_return false;
  }
  if (upstream_close) c->close_upstream();
  co_return !close_client;
}

// One absolute-form request through the forward proxy. True when the client connection stays
// open.
awaitable<bool> serve_forward(std::shared_ptr<Conn> c, const Message& req) {
  std::string path;
  auto hp = parse_absolute_uri(req.target, path);
  if (!hp) {
    co_await http_error(c, 400, hp.error().message());
    co_return false;
  }
  if (!hp->port) hp->port = 80;
  auto hosts = req.values("host");
  if (hosts.size() > 1) {
    co_await http_error(c, 400, "more than one Host header");
    co_return false;
  }
  if (hosts.size() == 1) {
    auto h = parse_authority(hosts[0], false);
    if (!h || h->host != hp->host || (h->port && h->port != hp->port)) {
      co_await http_error(c, 400, "Host header does not match the request target");
      co_return false;
    }
  }
  // A named Route, not a temporary: g++ 12 destroys a temporary coroutine argument twice.
  Route forward_route{*hp, path, false, false};
  bool kept = co_await exchange(c, req, std::move(forward_route));
  co_return kept;
}

}  // namespace

awaitable<bool> exchange(std::shared_ptr<Conn> c, const Message& req, Route route) {
  Exchange ex;
  ex.route = std::move(route);
  int status = 0;
  std::string why;
  if (!check_request(req, ex, status, why)) {
    co_await http_error(c, status, why);
    co_return false;
  }
  bool connected = co_await ensure_upstream(c, ex);
  if (!connected) co_return false;
  Approved subs = c->core.approved(ex.route.hp);
  // Scrubs responses of the values, as they are and in the encodings an echo applies; the
  // Basic credentials they were sent in are added by rewrite_request.
  Redactor red(subs);
  std::string refused = rewrite_request(req, ex, subs, red);
  if (!refused.empty()) {
    c->core.record(ex.route.hp, false, refused);
    co_await http_error(c, 403, refused);
    co_return false;
  }
  bool answered = co_await send_request(c, ex, red);
  if (!answered) co_return false;
  bool kept = co_await relay_response(c, req, ex, red);
  co_return kept;
}

awaitable<void> serve_http(std::shared_ptr<Conn> c) {
  for (;;) {
    std::optional<Message> req = co_await next_request(c);
    if (!req) co_return;
    if (req->method == "CONNECT") {
      co_await serve_connect(c, *req);
      co_return;
    }
    if (req->target.front() == '/' || req->target == "*") {
      co_await http_error(c, 400, "origin-form request: this is a proxy, send the absolute URI (http://host/path)");
      co_return;
    }
    bool keep_alive = co_await serve_forward(c, *req);
    if (!keep_alive) co_return;
  }
}

}  // namespace zb::net
