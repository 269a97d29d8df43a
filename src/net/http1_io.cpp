// HTTP/1.1 on a connection (proxy_internal.hpp): reading a header block or a line from a
// Stream, relaying a body in its framing, the proxy's error reply, and reading the next
// request of a client. The grammar itself is http1.cpp's. Coroutines follow the g++ 12
// house rule in proxy_internal.hpp.
#include "net/proxy_internal.hpp"

namespace zb::net {

using asio::awaitable;

namespace {

constexpr std::size_t k_max_head = std::size_t{64} * 1024;  // request or response header block
constexpr std::size_t k_max_line = std::size_t{8} * 1024;   // chunk-size and trailer lines

}  // namespace

awaitable<ReadStatus> read_head(Stream& s, std::string& head, std::string& why) {
  std::size_t scan = 0;
  std::size_t line_start = 0;
  for (;;) {
    std::string_view d = s.view();
    while (scan < d.size()) {
      char ch = d[scan];
      if (ch == '\0') {
        why = "NUL byte in the header block";
        co_return ReadStatus::bad;
      }
      if (ch == '\n') {
        why = "bare LF in the header block (lines must end in CRLF)";
        co_return ReadStatus::bad;
      }
      if (ch != '\r') {
        ++scan;
        continue;
      }
      if (scan + 1 >= d.size()) break;  // the next byte decides
      if (d[scan + 1] != '\n') {
        why = "bare CR in the header block";
        co_return ReadStatus::bad;
      }
      if (scan == line_start) {
        if (line_start == 0) {
          s.consume(2);
          d = s.view();
          scan = 0;
          continue;
        }
        head.assign(d.substr(0, line_start));
        s.consume(scan + 2);
        co_return ReadStatus::ok;
      }
      scan += 2;
      line_start = scan;
    }
    if (d.size() > k_max_head) {
      why = "header block larger than 64 KiB";
      co_return ReadStatus::too_big;
    }
    bool more = co_await s.fill();
    if (!more) co_return ReadStatus::closed;
  }
}

awaitable<ReadStatus> read_line(Stream& s, std::string& line) {
  std::size_t scan = 0;
  for (;;) {
    std::string_view d = s.view();
    for (; scan < d.size(); ++scan) {
      char ch = d[scan];
      if (ch == '\n' || ch == '\0') co_return ReadStatus::bad;
      if (ch != '\r') continue;
      if (scan + 1 >= d.size()) break;
      if (d[scan + 1] != '\n') co_return ReadStatus::bad;
      line.assign(d.substr(0, scan));
      s.consume(scan + 2);
      co_return ReadStatus::ok;
    }
    if (d.size() > k_max_line) co_return ReadStatus::too_big;
    bool more = co_await s.fill();
    if (!more) co_return ReadStatus::closed;
  }
}

awaitable<bool> relay_chunked(Stream& from, Stream& to) {
  std::string line;
  for (;;) {
    ReadStatus size_line = co_await read_line(from, line);
    if (size_line != ReadStatus::ok) co_return false;
    std::optional<std::uint64_t> chunk = chunk_size(line);
    if (!chunk) co_return false;
    std::uint64_t size = *chunk;
    line += "\r\n";
    bool written = co_await write_all(to, line);
    if (!written) co_return false;
    if (size == 0) break;
    bool copied = co_await copy_n(from, to, size);
    if (!copied) co_return false;
    while (from.avail() < 2) {
      bool more = co_await from.fill();
      if (!more) co_return false;
    }
    if (from.view().substr(0, 2) != "\r\n") co_return false;
    from.consume(2);
    bool crlf = co_await write_all(to, "\r\n");
    if (!crlf) co_return false;
  }
  for (;;) {  // trailer fields, then the empty line
    ReadStatus trailer = co_await read_line(from, line);
    if (trailer != ReadStatus::ok) co_return false;
    bool last = line.empty();
    if (!last) {
      std::vector<Field> ignored;
      std::string why;
      if (!parse_fields(line, ignored, why)) co_return false;
    }
    line += "\r\n";
    bool forwarded = co_await write_all(to, line);
    if (!forwarded) co_return false;
    if (last) co_return true;
  }
}

awaitable<bool> relay_body(Stream& from, Stream& to, const Framing& f) {
  switch (f.kind) {
    case Framing::Kind::none: co_return true;
    case Framing::Kind::length: co_return co_await copy_n(from, to, f.length);
    case Framing::Kind::chunked: co_return co_await relay_chunked(from, to);
    case Framing::Kind::until_close: co_return co_await copy_until_eof(from, to);
  }
  co_return false;
}

awaitable<void> http_error(std::shared_ptr<Conn> c, int status, std::string reason) {
  std::string resp = error_response(status, reason);
  bool sent = co_await write_all(c->client, resp);
  if (sent) co_await linger_close(c);
  c->close_all();
}

awaitable<std::optional<Message>> next_request(std::shared_ptr<Conn> c) {
  arm(c, k_head_timeout, Deadline::client);
  std::string head, why;
  ReadStatus st = co_await read_head(c->client, head, why);
  disarm(*c);
  if (st == ReadStatus::closed) co_return std::nullopt;
  if (st == ReadStatus::too_big) {
    co_await http_error(c, 431, why);
    co_return std::nullopt;
  }
  if (st == ReadStatus::bad) {
    co_await http_error(c, 400, why);
    co_return std::nullopt;
  }
  Message req;
  if (!parse_request(head, req, why)) {
    co_await http_error(c, 400, why);
    co_return std::nullopt;
  }
  co_return req;
}

}  // namespace zb::net
