// Tests for src/net/http1.cpp (the proxy's HTTP/1.1 grammar, on strings) and
// src/net/http1_io.cpp (reading heads and lines and relaying chunked bodies on a loopback
// TCP connection).
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/http1.hpp"
#include "net/proxy_internal.hpp"

using namespace zb::net;
using namespace std::string_literals;

namespace {

struct Parsed {
  bool ok = false;
  Message m;
  std::string why;
};

Parsed request(std::string_view head) {
  Parsed p;
  p.ok = parse_request(head, p.m, p.why);
  return p;
}

Parsed response(std::string_view head) {
  Parsed p;
  p.ok = parse_response(head, p.m, p.why);
  return p;
}

// The framing of a request head that parses, or the reason it is refused (as "!reason").
std::string req_framing(std::string_view head) {
  Parsed p = request(head);
  REQUIRE_MESSAGE(p.ok, p.why);
  std::string why;
  auto f = request_framing(p.m, why);
  if (!f) return "!" + why;
  switch (f->kind) {
    case Framing::Kind::none: return "none";
    case Framing::Kind::length: return "length " + std::to_string(f->length);
    case Framing::Kind::chunked: return "chunked";
    case Framing::Kind::until_close: return "until_close";
  }
  return "?";
}

std::string resp_framing(std::string_view head, bool head_request = false) {
  Parsed p = response(head);
  REQUIRE_MESSAGE(p.ok, p.why);
  std::string why;
  auto f = response_framing(p.m, head_request, why);
  if (!f) return "!" + why;
  switch (f->kind) {
    case Framing::Kind::none: return "none";
    case Framing::Kind::length: return "length " + std::to_string(f->length);
    case Framing::Kind::chunked: return "chunked";
    case Framing::Kind::until_close: return "until_close";
  }
  return "?";
}

}  // namespace

TEST_CASE("http1: a request head is split into its line and fields") {
  Parsed p = request(
      "GET http://example.com/a?b HTTP/1.1\r\nHost: example.com\r\nX-Two:  spaced out \t\r\n"
      "Accept-Encoding: gzip, br\r\naccept-encoding: zstd");
  REQUIRE_MESSAGE(p.ok, p.why);
  CHECK(p.m.method == "GET");
  CHECK(p.m.target == "http://example.com/a?b");
  CHECK(p.m.version == "HTTP/1.1");
  REQUIRE(p.m.fields.size() == 4);
  CHECK(p.m.fields[0].name == "Host");
  CHECK(p.m.fields[0].value == "example.com");
  CHECK(p.m.fields[1].value == "spaced out");  // optional whitespace trimmed both sides
  // Names compare case-insensitively; lists are lowercased and joined over repeated fields.
  CHECK(p.m.values("HOST") == std::vector<std::string_view>{"example.com"});
  CHECK(p.m.list("accept-encoding") == std::vector<std::string>{"gzip", "br", "zstd"});
  CHECK(p.m.values("missing").empty());

  // As read_head gives it, with the CRLF of the last field.
  Parsed r = request("GET http://h/ HTTP/1.1\r\nHost: h\r\n");
  REQUIRE_MESSAGE(r.ok, r.why);
  REQUIRE(r.m.fields.size() == 1);
  CHECK(r.m.fields[0].value == "h");

  Parsed q = request("POST http://h/ HTTP/1.0");
  REQUIRE(q.ok);
  CHECK(q.m.version == "HTTP/1.0");
  CHECK(q.m.fields.empty());
}

TEST_CASE("http1: malformed request heads are refused with the reason") {
  struct Case {
    std::string_view head;
    std::string_view why;
  };
  const Case cases[] = {
      {"GET http://h/  HTTP/1.1", "malformed request line"},
      {"GET http://h/", "malformed request line"},
      {"GET http://h/ HTTP/1.1 x", "malformed request line"},
      {"G(T http://h/ HTTP/1.1", "malformed request method"},
      {" http://h/ HTTP/1.1", "malformed request method"},
      {"GET http://h/\x7f HTTP/1.1", "malformed request target"},
      {"GET http://h/ HTTP/2.0", "unsupported HTTP version (HTTP/1.1 or HTTP/1.0 only)"},
      {"GET http://h/ http/1.1", "unsupported HTTP version (HTTP/1.1 or HTTP/1.0 only)"},
      {"GET http://h/ HTTP/1.1\r\nHost: h\r\n folded", "obsolete line folding in the header block"},
      {"GET http://h/ HTTP/1.1\r\nHost h", "header line without a colon"},
      {"GET http://h/ HTTP/1.1\r\nHost : h", "invalid header name (no whitespace is allowed before the colon)"},
      {"GET http://h/ HTTP/1.1\r\n: h", "invalid header name (no whitespace is allowed before the colon)"},
      {"GET http://h/ HTTP/1.1\r\nX: a\x01z", "control character in the value of X"},
      {"GET http://h/ HTTP/1.1\r\nX: a\x7fz", "control character in the value of X"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.head);
    Parsed p = request(c.head);
    CHECK_FALSE(p.ok);
    CHECK(p.why == c.why);
  }
  // A tab inside a value is allowed.
  CHECK(request("GET http://h/ HTTP/1.1\r\nX: a\tb").ok);
}

TEST_CASE("http1: an empty line inside the field block is refused") {
  Parsed p = request("GET http://h/ HTTP/1.1\r\nHost: h\r\n\r\nX: y");
  CHECK_FALSE(p.ok);
  CHECK(p.why == "empty line in the header block");
  p = request("GET http://h/ HTTP/1.1\r\n\r\n");
  CHECK_FALSE(p.ok);
  CHECK(p.why == "empty line in the header block");
  // The line ending of the last field is not an empty line.
  CHECK(request("GET http://h/ HTTP/1.1\r\nHost: h\r\n").ok);
}

TEST_CASE("http1: status lines") {
  Parsed p = response("HTTP/1.1 404 Not Found\r\nContent-Length: 3");
  REQUIRE_MESSAGE(p.ok, p.why);
  CHECK(p.m.status == 404);
  CHECK(p.m.version == "HTTP/1.1");
  CHECK(p.m.status_line == "HTTP/1.1 404 Not Found");
  CHECK(p.m.values("content-length") == std::vector<std::string_view>{"3"});

  // The reason phrase may be empty, and so may the space before it.
  CHECK(response("HTTP/1.0 204").m.status == 204);
  CHECK(response("HTTP/1.1 204 ").ok);

  CHECK(response("HTTP/1.1 2000 OK").why == "malformed status line from upstream");
  CHECK(response("HTTP/2 200 OK").why == "malformed status line from upstream");
  CHECK(response("HTTP/1.1 20").why == "malformed status line from upstream");
  CHECK(response("HTTP/1.1 2x0 OK").why == "malformed status code from upstream");
  CHECK(response("HTTP/1.1 099 Low").why == "malformed status code from upstream");
  CHECK(response("HTTP/1.1 200 O\x01K").why == "control character in the status line from upstream");
  CHECK(response("HTTP/1.1 200 OK\r\nBad Name: x").why ==
        "invalid header name (no whitespace is allowed before the colon)");
}

TEST_CASE("http1: hop-by-hop fields") {
  const std::vector<std::string> none;
  for (const char* name : {"Connection", "proxy-connection", "Keep-Alive", "TE", "Trailer", "Upgrade",
                           "Proxy-Authorization", "proxy-authenticate"}) {
    CAPTURE(name);
    CHECK(hop_by_hop(name, none));
  }
  CHECK_FALSE(hop_by_hop("Accept", none));
  // Connection can name more, but never the framing fields or Host.
  const std::vector<std::string> named{"x-private", "content-length", "transfer-encoding", "host"};
  CHECK(hop_by_hop("X-Private", named));
  CHECK_FALSE(hop_by_hop("Content-Length", named));
  CHECK_FALSE(hop_by_hop("Transfer-Encoding", named));
  CHECK_FALSE(hop_by_hop("Host", named));
}

TEST_CASE("http1: request framing refuses what two parsers could read differently") {
  const std::string line = "POST http://h/ HTTP/1.1\r\nHost: h";
  CHECK(req_framing(line) == "none");
  CHECK(req_framing(line + "\r\nContent-Length: 42") == "length 42");
  CHECK(req_framing(line + "\r\nContent-Length: 0") == "none");
  CHECK(req_framing(line + "\r\nTransfer-Encoding: gzip, chunked") == "chunked");
  CHECK(req_framing(line + "\r\nTransfer-Encoding: Chunked") == "chunked");
  CHECK(req_framing(line + "\r\nContent-Length: 1\r\nContent-Length: 1") == "!invalid Content-Length");
  CHECK(req_framing(line + "\r\nContent-Length: +1") == "!invalid Content-Length");
  CHECK(req_framing(line + "\r\nContent-Length: 1 2") == "!invalid Content-Length");
  CHECK(req_framing(line + "\r\nContent-Length: 1234567890123456789") == "!invalid Content-Length");
  CHECK(req_framing(line + "\r\nContent-Length: 3\r\nTransfer-Encoding: chunked") ==
        "!both Content-Length and Transfer-Encoding");
  CHECK(req_framing(line + "\r\nTransfer-Encoding: chunked, gzip") ==
        "!unsupported Transfer-Encoding (the last coding must be chunked)");
  CHECK(req_framing("POST http://h/ HTTP/1.0\r\nTransfer-Encoding: chunked") ==
        "!Transfer-Encoding in an HTTP/1.0 request (RFC 9112 6.1: faulty framing)");
}

TEST_CASE("http1: response framing") {
  CHECK(resp_framing("HTTP/1.1 200 OK\r\nContent-Length: 5") == "length 5");
  CHECK(resp_framing("HTTP/1.1 200 OK\r\nContent-Length: 5", true) == "none");  // HEAD
  CHECK(resp_framing("HTTP/1.1 204 No Content\r\nContent-Length: 5") == "none");
  CHECK(resp_framing("HTTP/1.1 304 Not Modified\r\nContent-Length: 5") == "none");
  CHECK(resp_framing("HTTP/1.1 100 Continue") == "none");
  CHECK(resp_framing("HTTP/1.1 200 OK") == "until_close");
  CHECK(resp_framing("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5") == "chunked");
  CHECK(resp_framing("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip") == "until_close");
  // Identical repeated lengths are tolerated from servers, differing ones are not.
  CHECK(resp_framing("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5") == "length 5");
  CHECK(resp_framing("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6") ==
        "!invalid Content-Length from upstream");
  CHECK(resp_framing("HTTP/1.1 200 OK\r\nContent-Length: five") == "!invalid Content-Length from upstream");
}

TEST_CASE("http1: chunk-size lines") {
  CHECK(chunk_size("0") == 0u);
  CHECK(chunk_size("1a") == 26u);
  CHECK(chunk_size("1A;name=value") == 26u);
  CHECK(chunk_size("ff \t;ext") == 255u);
  CHECK(chunk_size("fffffffffffffff") == 0xfffffffffffffffu);  // 15 digits
  CHECK_FALSE(chunk_size(""));
  CHECK_FALSE(chunk_size(";ext"));
  CHECK_FALSE(chunk_size("g"));
  CHECK_FALSE(chunk_size("1a x"));
  CHECK_FALSE(chunk_size("0x1a"));
  CHECK_FALSE(chunk_size("1000000000000000"));  // 16 digits
  CHECK_FALSE(chunk_size("1;a=\x01"));
}

TEST_CASE("http1: the proxy's error replies") {
  CHECK(clean_reason("bad\r\nX-Injected: 1\x80") == "bad??X-Injected: 1?");
  std::string r = error_response(403, "not in --allow-net\r\nSet-Cookie: x");
  const std::string body = "zerobox: not in --allow-net??Set-Cookie: x\n";
  CHECK(r == "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) +
                 "\r\nConnection: close\r\nX-Zerobox-Reason: not in --allow-net??Set-Cookie: x\r\n\r\n" + body);
  CHECK(error_response(431, "x").starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
  CHECK(error_response(599, "x").starts_with("HTTP/1.1 599 Error\r\n"));
  // What the proxy sends parses as a response with the length it claims.
  Parsed p = response(std::string_view(r).substr(0, r.find("\r\n\r\n")));
  REQUIRE_MESSAGE(p.ok, p.why);
  CHECK(p.m.status == 403);
  CHECK(resp_framing(r.substr(0, r.find("\r\n\r\n"))) == "length " + std::to_string(body.size()));
}

// ---------------------------------------------------------------------------------------------
// http1_io.cpp: on a loopback TCP connection, the bytes written by a peer coroutine.

namespace {

using asio::ip::tcp;

struct Loopback {
  asio::io_context io;
  tcp::socket peer{io};          // writes what the test sends
  std::optional<Stream> stream;  // reads it

  Loopback() {
    tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    peer.connect(acceptor.local_endpoint());
    stream.emplace(acceptor.accept());
  }
};

asio::awaitable<void> send_and_close(tcp::socket& s, std::string data) {
  std::error_code ec;
  co_await asio::async_write(s, asio::buffer(data), ec_token(ec));
  s.shutdown(tcp::socket::shutdown_send, ec);
}

struct HeadRead {
  ReadStatus st = ReadStatus::closed;
  std::string head, why, rest;
};

asio::awaitable<void> read_head_then_rest(Stream& s, HeadRead& out) {
  out.st = co_await read_head(s, out.head, out.why);
  if (out.st != ReadStatus::ok) co_return;
  bool more = true;
  while (more) more = co_await s.fill();  // until the peer closes
  out.rest = std::string(s.view());
}

HeadRead head_of(std::string bytes) {
  Loopback lo;
  HeadRead out;
  asio::co_spawn(lo.io, send_and_close(lo.peer, std::move(bytes)), asio::detached);
  asio::co_spawn(lo.io, read_head_then_rest(*lo.stream, out), asio::detached);
  lo.io.run();
  return out;
}

asio::awaitable<void> read_one_line(Stream& s, ReadStatus& st, std::string& line) { st = co_await read_line(s, line); }

struct Relayed {
  bool ok = false;
  std::string out;
};

asio::awaitable<void> relay_then_close(Stream& from, Stream& to, bool& ok) {
  ok = co_await relay_chunked(from, to);
  std::error_code ec;
  to.sock.shutdown(tcp::socket::shutdown_send, ec);
}

asio::awaitable<void> read_all(tcp::socket& s, std::string& out) {
  std::error_code ec;
  co_await asio::async_read(s, asio::dynamic_buffer(out), ec_token(ec));
}

// Relays a chunked body from one loopback connection to another.
Relayed relay(std::string body) {
  Loopback in;
  Relayed r;
  // The second connection on the same io_context: `to` writes, `sink` reads.
  tcp::acceptor acceptor(in.io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  tcp::socket sink(in.io);
  sink.connect(acceptor.local_endpoint());
  Stream to(acceptor.accept());
  asio::co_spawn(in.io, send_and_close(in.peer, std::move(body)), asio::detached);
  asio::co_spawn(in.io, relay_then_close(*in.stream, to, r.ok), asio::detached);
  asio::co_spawn(in.io, read_all(sink, r.out), asio::detached);
  in.io.run();
  return r;
}

}  // namespace

TEST_CASE("http1: read_head takes a header block, skipping empty lines before it") {
  HeadRead r = head_of("\r\n\r\nGET http://h/ HTTP/1.1\r\nHost: h\r\n\r\nBODY");
  CHECK(r.st == ReadStatus::ok);
  CHECK(r.head == "GET http://h/ HTTP/1.1\r\nHost: h\r\n");  // the empty line's CRLF is not kept
  CHECK(r.rest == "BODY");                                   // what follows the head stays buffered

  r = head_of("HTTP/1.1 200 OK\r\n\r\n");
  CHECK(r.st == ReadStatus::ok);
  CHECK(r.head == "HTTP/1.1 200 OK\r\n");
  CHECK(r.rest.empty());
}

TEST_CASE("http1: read_head refuses bare CR, bare LF and NUL, and heads over 64 KiB") {
  HeadRead r = head_of("GET http://h/ HTTP/1.1\nHost: h\r\n\r\n");
  CHECK(r.st == ReadStatus::bad);
  CHECK(r.why == "bare LF in the header block (lines must end in CRLF)");

  r = head_of("GET http://h/ HTTP/1.1\rHost: h\r\n\r\n");
  CHECK(r.st == ReadStatus::bad);
  CHECK(r.why == "bare CR in the header block");

  r = head_of("GET http://h/ HTTP/1.1\r\nX: a\0b\r\n\r\n"s);
  CHECK(r.st == ReadStatus::bad);
  CHECK(r.why == "NUL byte in the header block");

  // The limit is checked between reads (of up to 16 KiB each): 100 KiB are always too many.
  r = head_of("GET http://h/ HTTP/1.1\r\nX: " + std::string(100 * 1024, 'a') + "\r\n\r\n");
  CHECK(r.st == ReadStatus::too_big);
  CHECK(r.why == "header block larger than 64 KiB");

  // Just under the limit is fine.
  r = head_of("GET http://h/ HTTP/1.1\r\nX: " + std::string(60 * 1024, 'a') + "\r\n\r\n");
  CHECK(r.st == ReadStatus::ok);

  r = head_of("GET http://h/ HTTP/1.1\r\nHost: h\r\n");
  CHECK(r.st == ReadStatus::closed);
}

TEST_CASE("http1: read_line") {
  struct Case {
    std::string in;
    ReadStatus st;
    std::string line;
  };
  const Case cases[] = {
      {"1a;x=y\r\nrest", ReadStatus::ok, "1a;x=y"},
      {"\r\n", ReadStatus::ok, ""},
      {"1a\n", ReadStatus::bad, ""},
      {"1a\rx\r\n", ReadStatus::bad, ""},
      {"1a", ReadStatus::closed, ""},
      {std::string(9 * 1024, '1'), ReadStatus::too_big, ""},  // no end within 8 KiB
  };
  for (const Case& c : cases) {
    CAPTURE(c.in.substr(0, 20));
    Loopback lo;
    ReadStatus st = ReadStatus::closed;
    std::string line;
    asio::co_spawn(lo.io, send_and_close(lo.peer, c.in), asio::detached);
    asio::co_spawn(lo.io, read_one_line(*lo.stream, st, line), asio::detached);
    lo.io.run();
    CHECK(st == c.st);
    CHECK(line == c.line);
  }
}

TEST_CASE("http1: relay_chunked passes a valid body on unchanged, and stops at a broken one") {
  const std::string body = "5;ext=1\r\nhello\r\n1A\r\n" + std::string(26, 'x') + "\r\n0\r\nTrailer: t\r\n\r\n";
  Relayed r = relay(body + "NEXT REQUEST");
  CHECK(r.ok);
  CHECK(r.out == body);  // nothing after the body's end

  r = relay("5\r\nhello\r\n0\r\n\r\n");
  CHECK(r.ok);
  CHECK(r.out == "5\r\nhello\r\n0\r\n\r\n");

  r = relay("5\r\nhelloXX\r\n0\r\n\r\n");  // chunk data longer than its size
  CHECK_FALSE(r.ok);
  r = relay("zz\r\nhello\r\n0\r\n\r\n");
  CHECK_FALSE(r.ok);
  CHECK(r.out.empty());
  r = relay("5\r\nhello\r\n0\r\nBad Trailer: x\r\n\r\n");
  CHECK_FALSE(r.ok);
  r = relay("5\r\nhel");  // closed in the middle
  CHECK_FALSE(r.ok);
}
