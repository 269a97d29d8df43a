// The proxy of filtered mode (proxy.hpp): an Asio event loop on one thread, one coroutine per
// client connection. A connection is SOCKS5, SOCKS4 (refused) or HTTP/1.1, told apart by its
// first byte; every upstream connection goes through open_upstream(), which is where the policy
// is applied: NetPolicy::decide on the name the client gave, then the address guard on each
// resolved (or --resolve mapped) address, then connect.
//
// House rule for the coroutines below, because g++ 12 miscompiles some shapes (seen here as
// crashes on resume): a co_await stands alone in its statement or initialiser
// (`bool ok = co_await f(); if (!ok) ...`), never inside an if/while condition, a ?: or
// && / || operand; no two locals of one coroutine share a name, even in different scopes;
// and an argument of a coroutine call is never a temporary with a destructor (`f(T{...})`
// destroyed it twice): build it as a named local first.
#include "net/proxy.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

// Asio's scheduler trips -Wnull-dereference once inlined here (a false positive, in
// /usr/include/asio/detail/impl/scheduler.ipp); its other warnings stay on.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <asio.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/ssl.hpp>
#pragma GCC diagnostic pop
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "net/secrets.hpp"
#include "net/tls.hpp"
#include "util/fd.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"

namespace zb::net {
namespace {

using asio::awaitable;
using asio::ip::tcp;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;

constexpr std::size_t k_max_head = 64 * 1024;   // request or response header block
constexpr std::size_t k_max_line = 8 * 1024;    // chunk-size and trailer lines
constexpr std::size_t k_read_chunk = 16 * 1024;
constexpr std::size_t k_splice_chunk = 64 * 1024;  // the default pipe capacity
constexpr std::size_t k_linger_max = 1024 * 1024;
constexpr std::size_t k_decode_piece = 1024;  // compressed bytes decoded at a time (at most ~1 MiB out)
constexpr auto k_head_timeout = 30s;
constexpr auto k_connect_timeout = 30s;
// After an error reply: how long unread request bytes are drained before closing, so the
// kernel does not answer them with a RST that can destroy the reply in flight.
constexpr auto k_linger_timeout = 2s;
constexpr auto k_accept_backoff = 100ms;

auto ec_token(std::error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

// ---------------------------------------------------------------------------------------------
// Shared state of the proxy, reached from every connection.

struct Core {
  Core(NetPolicy p, std::function<void(const NetEvent&)> f, std::optional<ProxySecrets> s)
      : policy(std::move(p)), on_event(std::move(f)), secrets(std::move(s)) {
    if (secrets) {
      // asio's contexts take over the SSL_CTX handles.
      server_tls.emplace(secrets->tls.server.release());
      client_tls.emplace(secrets->tls.client.release());
    }
  }

  NetPolicy policy;
  std::function<void(const NetEvent&)> on_event;
  std::optional<ProxySecrets> secrets;
  std::optional<asio::ssl::context> server_tls, client_tls;

  // The secrets approved for this host (empty without secrets).
  Approved approved(const HostPort& hp) const {
    if (!secrets) return {};
    return secrets->secrets.for_host(hp);
  }
  std::atomic<std::uint64_t> allowed{0};
  std::atomic<std::uint64_t> denied{0};

  void record(const HostPort& hp, bool ok, const std::string& reason) {
    (ok ? allowed : denied).fetch_add(1, std::memory_order_relaxed);
    if (!on_event) return;
    try {
      on_event(NetEvent{hp.host, hp.port.value_or(0), ok, ok ? std::string() : reason});
    } catch (const std::exception& e) {
      log::debug(std::string("proxy: event callback failed: ") + e.what());
    }
  }
};

// ---------------------------------------------------------------------------------------------
// A socket with the bytes received from it and not yet consumed.

// Once TLS is set up on it (an intercepted connection), reads and writes go through `tls`,
// which works on `sock`; closing `sock` still aborts whatever waits on either.
using TlsStream = asio::ssl::stream<tcp::socket&>;

struct Stream {
  explicit Stream(const asio::any_io_executor& ex) : sock(ex) {}
  explicit Stream(tcp::socket s) : sock(std::move(s)) {}

  tcp::socket sock;
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
  awaitable<bool> fill() {
    if (pos > 0) {
      buf.erase(0, pos);
      pos = 0;
    }
    std::size_t old = buf.size();
    buf.resize(old + k_read_chunk);
    std::error_code ec;
    auto into = asio::buffer(buf.data() + old, k_read_chunk);
    std::size_t n = 0;
    if (tls)
      n = co_await tls->async_read_some(into, ec_token(ec));
    else
      n = co_await sock.async_read_some(into, ec_token(ec));
    buf.resize(old + n);
    co_return !ec && n > 0;
  }
};

enum class Guard { client, upstream };

struct Conn {
  Conn(Core& c, tcp::socket s)
      : core(c), client(std::move(s)), upstream(client.sock.get_executor()), timer(client.sock.get_executor()) {}

  Core& core;
  Stream client;
  Stream upstream;
  // The forward proxy keeps its upstream connection while requests name the same host:port.
  std::optional<HostPort> upstream_target;
  std::vector<Address> upstream_candidates;  // the addresses that passed the guard, to reconnect
  unsigned upstream_uses = 0;                // requests sent on the current upstream connection
  // One deadline at a time: the request head, the upstream connect or the lingering close.
  asio::steady_timer timer;
  unsigned deadline_gen = 0;
  bool timed_out = false;

  void close_upstream() {
    std::error_code ec;
    upstream.tls.reset();
    upstream.sock.close(ec);
    upstream.reset();
    upstream_target.reset();
  }
  void close_all() {
    std::error_code ec;
    client.sock.close(ec);
    upstream.sock.close(ec);
  }
};

// When the deadline passes, the guarded socket is closed, which aborts whatever waits on it.
// The handler holds only a weak reference and a generation, so a deadline that fired after the
// connection moved on (or ended) does nothing.
void arm(const std::shared_ptr<Conn>& c, std::chrono::steady_clock::duration d, Guard which) {
  unsigned gen = ++c->deadline_gen;
  c->timed_out = false;
  c->timer.expires_after(d);
  c->timer.async_wait([w = std::weak_ptr<Conn>(c), gen, which](std::error_code ec) {
    auto conn = w.lock();
    if (!conn || ec || conn->deadline_gen != gen) return;
    conn->timed_out = true;
    std::error_code ignored;
    (which == Guard::client ? conn->client.sock : conn->upstream.sock).close(ignored);
  });
}

void disarm(Conn& c) {
  ++c.deadline_gen;
  c.timer.cancel();
}

awaitable<bool> write_all(Stream& s, std::string_view data) {
  std::error_code ec;
  if (s.tls)
    co_await asio::async_write(*s.tls, asio::buffer(data.data(), data.size()), ec_token(ec));
  else
    co_await asio::async_write(s.sock, asio::buffer(data.data(), data.size()), ec_token(ec));
  co_return !ec;
}

// Copies exactly n bytes, the buffered ones first.
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

// Copies everything until the sender closes.
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

// Shuts down our side, drains what the client still sends (bounded in time and bytes) and
// closes: closing a socket with unread input makes the kernel send a RST, which can reach the
// client before it has read the reply.
awaitable<void> linger_close(std::shared_ptr<Conn> c) {
  std::error_code ec;
  if (c->client.tls) {
    // TLS: send close_notify and wait (briefly) for the client's.
    arm(c, k_linger_timeout, Guard::client);
    co_await c->client.tls->async_shutdown(ec_token(ec));
    disarm(*c);
    c->close_all();
    co_return;
  }
  c->client.sock.shutdown(tcp::socket::shutdown_send, ec);
  if (!ec) {
    arm(c, k_linger_timeout, Guard::client);
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

// ---------------------------------------------------------------------------------------------
// HTTP/1.1 syntax (RFC 9112), strict: lines end in CRLF; no obs-fold; no whitespace between a
// field name and its colon; no NUL or other control bytes. A lenient parser here and a
// different lenient parser upstream is how request smuggling happens.

bool is_tchar(char ch) {
  if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(ch) != std::string_view::npos;
}

bool is_token(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar); }

char lower_char(char ch) { return ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = lower_char(ch);
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return lower_char(x) == lower_char(y);
         });
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// "a, b ,c" -> {"a", "b", "c"}, lowercased, empty elements dropped.
void split_list(std::string_view s, std::vector<std::string>& out) {
  while (!s.empty()) {
    std::size_t comma = s.find(',');
    std::string_view item = trim_ows(s.substr(0, comma));
    if (!item.empty()) out.push_back(lower(item));
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
}

struct Field {
  std::string name;
  std::string value;
};

struct Message {
  // Request: method, target, version. Response: version, status, reason.
  std::string method, target, version;
  int status = 0;
  std::string status_line;
  std::vector<Field> fields;

  std::vector<std::string_view> values(std::string_view name) const {
    std::vector<std::string_view> out;
    for (const Field& f : fields)
      if (iequals(f.name, name)) out.push_back(f.value);
    return out;
  }
  // The comma-separated elements of every field of that name, lowercased.
  std::vector<std::string> list(std::string_view name) const {
    std::vector<std::string> out;
    for (const Field& f : fields)
      if (iequals(f.name, name)) split_list(f.value, out);
    return out;
  }
  bool has_option(std::string_view name, std::string_view option) const {
    auto l = list(name);
    return std::find(l.begin(), l.end(), option) != l.end();
  }
};

enum class ReadStatus { ok, closed, bad, too_big };

// Reads a header block up to and including its empty line; `head` receives it without that
// final CRLF. Empty lines before the start line are skipped (RFC 9112 section 2.2).
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

// One CRLF-terminated line (chunk sizes, trailers), returned without its CRLF.
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

// The field lines after the start line ("Name: value\r\n" each).
bool parse_fields(std::string_view block, std::vector<Field>& out, std::string& why) {
  while (!block.empty()) {
    std::size_t end = block.find("\r\n");
    std::string_view line = block.substr(0, end);
    block.remove_prefix(end == std::string_view::npos ? block.size() : end + 2);
    if (line.front() == ' ' || line.front() == '\t') {
      why = "obsolete line folding in the header block";
      return false;
    }
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      why = "header line without a colon";
      return false;
    }
    std::string_view name = line.substr(0, colon);
    if (!is_token(name)) {
      why = "invalid header name (no whitespace is allowed before the colon)";
      return false;
    }
    std::string_view value = trim_ows(line.substr(colon + 1));
    for (char ch : value) {
      auto u = static_cast<unsigned char>(ch);
      if ((u < 0x20 && ch != '\t') || u == 0x7f) {
        why = "control character in the value of " + std::string(name);
        return false;
      }
    }
    out.push_back(Field{std::string(name), std::string(value)});
  }
  return true;
}

bool parse_request(std::string_view head, Message& m, std::string& why) {
  std::size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  std::size_t sp1 = line.find(' ');
  std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    why = "malformed request line";
    return false;
  }
  m.method = line.substr(0, sp1);
  m.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  m.version = line.substr(sp2 + 1);
  if (!is_token(m.method)) {
    why = "malformed request method";
    return false;
  }
  if (m.target.empty() || !std::all_of(m.target.begin(), m.target.end(), [](char ch) {
        return ch > 0x20 && ch < 0x7f;
      })) {
    why = "malformed request target";
    return false;
  }
  if (m.version != "HTTP/1.1" && m.version != "HTTP/1.0") {
    why = "unsupported HTTP version (HTTP/1.1 or HTTP/1.0 only)";
    return false;
  }
  return parse_fields(eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2), m.fields, why);
}

bool parse_response(std::string_view head, Message& m, std::string& why) {
  std::size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  // "HTTP/1.1 200 OK"; the reason phrase may be empty, and so may the space before it.
  if (line.size() < 12 || (line.substr(0, 9) != "HTTP/1.1 " && line.substr(0, 9) != "HTTP/1.0 ") ||
      (line.size() > 12 && line[12] != ' ')) {
    why = "malformed status line from upstream";
    return false;
  }
  m.version = line.substr(0, 8);
  int status = 0;
  auto [p, ec] = std::from_chars(line.data() + 9, line.data() + 12, status);
  if (ec != std::errc() || p != line.data() + 12 || status < 100 || status > 999) {
    why = "malformed status code from upstream";
    return false;
  }
  m.status = status;
  m.status_line = line;
  for (char ch : line) {
    auto u = static_cast<unsigned char>(ch);
    if ((u < 0x20 && ch != '\t') || u == 0x7f) {
      why = "control character in the status line from upstream";
      return false;
    }
  }
  return parse_fields(eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2), m.fields, why);
}

// Fields that describe one connection, not the message: never forwarded. The framing fields
// are never dropped because Connection names them; our relaying depends on them, and a body
// forwarded without its framing would be parsed upstream as the next request.
bool hop_by_hop(std::string_view name, const std::vector<std::string>& connection_options) {
  static constexpr std::string_view k_fixed[] = {"connection", "proxy-connection", "keep-alive", "te", "trailer",
                                                 "upgrade", "proxy-authorization", "proxy-authenticate"};
  std::string l = lower(name);
  for (std::string_view f : k_fixed)
    if (l == f) return true;
  if (l == "content-length" || l == "transfer-encoding" || l == "host") return false;
  return std::find(connection_options.begin(), connection_options.end(), l) != connection_options.end();
}

std::optional<std::uint64_t> parse_length(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

struct Framing {
  enum class Kind { none, length, chunked, until_close } kind = Kind::none;
  std::uint64_t length = 0;
};

std::optional<Framing> request_framing(const Message& m, std::string& why) {
  auto te = m.list("transfer-encoding");
  auto cl = m.values("content-length");
  if (!te.empty() && m.version == "HTTP/1.0") {
    why = "Transfer-Encoding in an HTTP/1.0 request (RFC 9112 6.1: faulty framing)";
    return std::nullopt;
  }
  if (!te.empty() && !cl.empty()) {
    why = "both Content-Length and Transfer-Encoding";
    return std::nullopt;
  }
  if (!te.empty()) {
    if (te.back() != "chunked") {
      why = "unsupported Transfer-Encoding (the last coding must be chunked)";
      return std::nullopt;
    }
    return Framing{Framing::Kind::chunked, 0};
  }
  if (!cl.empty()) {
    auto n = cl.size() == 1 ? parse_length(cl[0]) : std::nullopt;
    if (!n) {
      why = "invalid Content-Length";
      return std::nullopt;
    }
    return *n == 0 ? Framing{} : Framing{Framing::Kind::length, *n};
  }
  return Framing{};
}

std::optional<Framing> response_framing(const Message& resp, bool head_request, std::string& why) {
  if (head_request || resp.status < 200 || resp.status == 204 || resp.status == 304) return Framing{};
  auto te = resp.list("transfer-encoding");
  if (!te.empty())
    return te.back() == "chunked" ? Framing{Framing::Kind::chunked, 0} : Framing{Framing::Kind::until_close, 0};
  auto cl = resp.values("content-length");
  if (!cl.empty()) {
    // Repeated identical values are tolerated from servers (RFC 9112 6.3), not differing ones.
    bool valid = std::all_of(cl.begin(), cl.end(), [&](std::string_view v) { return v == cl[0]; });
    auto n = valid ? parse_length(cl[0]) : std::nullopt;
    if (!n) {
      why = "invalid Content-Length from upstream";
      return std::nullopt;
    }
    return Framing{Framing::Kind::length, n.value()};
  }
  return Framing{Framing::Kind::until_close, 0};
}

// The size on a chunk-size line ("1a" or "1a;name=value"); nullopt when the line is malformed.
std::optional<std::uint64_t> chunk_size(std::string_view line) {
  std::size_t digits = 0;
  std::uint64_t size = 0;
  while (digits < line.size() && std::isxdigit(static_cast<unsigned char>(line[digits]))) ++digits;
  if (digits == 0 || digits > 15) return std::nullopt;
  std::from_chars(line.data(), line.data() + digits, size, 16);
  std::string_view rest = trim_ows(line.substr(digits));
  if (!rest.empty() && rest.front() != ';') return std::nullopt;
  for (char ch : rest)
    if ((static_cast<unsigned char>(ch) < 0x20 && ch != '\t') || ch == 0x7f) return std::nullopt;
  return size;
}

// Relays a chunked body as it arrives, chunk by chunk, unchanged (extensions and trailers too),
// checking its syntax so the end of the body is where both sides think it is.
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

// A reason goes into a header field and a text body: keep it to one line of printable ASCII.
std::string clean_reason(std::string_view s) {
  std::string out;
  for (char ch : s) {
    auto u = static_cast<unsigned char>(ch);
    out += u < 0x20 || u >= 0x7f ? '?' : ch;
  }
  return out;
}

std::string_view status_text(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 502: return "Bad Gateway";
    case 504: return "Gateway Timeout";
    default: return "Error";
  }
}

std::string error_response(int status, std::string_view reason) {
  std::string r = clean_reason(reason);
  std::string body = "zerobox: " + r + "\n";
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + std::string(status_text(status)) + "\r\n";
  out += "Content-Type: text/plain\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  out += "Connection: close\r\n";
  out += "X-Zerobox-Reason: " + r + "\r\n\r\n";
  out += body;
  return out;
}

awaitable<void> http_error(std::shared_ptr<Conn> c, int status, std::string reason) {
  std::string resp = error_response(status, reason);
  bool sent = co_await write_all(c->client, resp);
  if (sent) co_await linger_close(c);
  c->close_all();
}

// ---------------------------------------------------------------------------------------------
// Deciding and connecting.

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

struct Outcome {
  enum class Kind { connected, refused, unresolved, failed, timed_out } kind = Kind::connected;
  std::string reason;  // refused: the policy's reason; otherwise a message for the client
  std::error_code ec;  // failed: the last connect error
};

awaitable<Outcome> connect_any(std::shared_ptr<Conn> c, std::vector<Address> addrs, std::uint16_t port,
                               std::string target) {
  arm(c, k_connect_timeout, Guard::upstream);
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
      co_return Outcome{};
    }
    last = ec;
  }
  bool timed_out = c->timed_out;
  disarm(*c);
  std::error_code ignored;
  c->upstream.sock.close(ignored);
  if (timed_out) co_return Outcome{Outcome::Kind::timed_out, "timed out connecting to " + target, {}};
  co_return Outcome{Outcome::Kind::failed, "cannot connect to " + target + ": " + last.message(), last};
}

// "localhost" and the names below it (host names arrive lower-cased, without a final dot).
bool is_localhost_name(std::string_view h) {
  return h == "localhost" || (h.size() > 10 && h.ends_with(".localhost"));
}

// The one place where the policy is applied: the name, then each address, then connect.
// A decision event is recorded once the addresses are known: refused by the name, refused
// because every address was refused by the guard, or allowed (also when the name does not
// resolve: the policy allowed it, the failure is the network's).
awaitable<Outcome> open_upstream(std::shared_ptr<Conn> c, HostPort hp) {
  Core& core = c->core;
  std::uint16_t port = hp.port.value_or(80);
  hp.port = port;
  std::string target = to_string(hp);
  Decision d = core.policy.decide(hp);
  if (!d.allowed) {
    core.record(hp, false, d.reason);
    co_return Outcome{Outcome::Kind::refused, d.reason, {}};
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
    auto results = co_await resolver.async_resolve(hp.host, std::to_string(port),
                                                   tcp::resolver::numeric_service, ec_token(ec));
    if (ec) {
      std::string why = "cannot resolve " + hp.host + ": " + ec.message();
      core.record(hp, false, why);
      co_return Outcome{Outcome::Kind::unresolved, why, ec};
    }
    for (const auto& entry : results) {
      Address a = from_asio(entry.endpoint().address());
      if (std::find(addrs.begin(), addrs.end(), a) == addrs.end()) addrs.push_back(a);
    }
  }
  std::vector<Address> usable;
  std::string refused = "no address for " + hp.host;
  for (const Address& a : addrs) {
    if (auto why = core.policy.check_address(d, a))
      refused = *why;
    else
      usable.push_back(a);
  }
  if (usable.empty()) {
    core.record(hp, false, refused);
    co_return Outcome{Outcome::Kind::refused, refused, {}};
  }
  core.record(hp, true, "");
  c->upstream_candidates = usable;
  co_return co_await connect_any(c, std::move(usable), port, std::move(target));
}

int http_status(const Outcome& o) {
  switch (o.kind) {
    case Outcome::Kind::refused: return 403;
    case Outcome::Kind::timed_out: return 504;
    default: return 502;
  }
}

// ---------------------------------------------------------------------------------------------
// Tunnels (CONNECT, SOCKS5): splice(2) from socket to pipe to socket, no copy through user space.

enum class PumpEnd { eof, error, no_splice };

awaitable<PumpEnd> splice_loop(tcp::socket& from, tcp::socket& to, int pipe_r, int pipe_w) {
  constexpr unsigned k_flags = SPLICE_F_NONBLOCK | SPLICE_F_MOVE;
  bool moved = false;
  for (;;) {
    std::error_code ec;
    if (!from.is_open() || !to.is_open()) co_return PumpEnd::error;
    ssize_t n = ::splice(from.native_handle(), nullptr, pipe_w, nullptr, k_splice_chunk, k_flags);
    if (n == 0) co_return PumpEnd::eof;
    if (n < 0) {
      int read_err = errno;
      if (read_err == EINTR) continue;
      if (read_err == EAGAIN) {
        co_await from.async_wait(tcp::socket::wait_read, ec_token(ec));
        if (ec) co_return PumpEnd::error;
        continue;
      }
      co_return read_err == EINVAL && !moved ? PumpEnd::no_splice : PumpEnd::error;
    }
    moved = true;
    auto left = static_cast<std::size_t>(n);
    while (left > 0) {
      if (!to.is_open()) co_return PumpEnd::error;
      ssize_t m = ::splice(pipe_r, nullptr, to.native_handle(), nullptr, left, k_flags);
      if (m < 0) {
        int write_err = errno;
        if (write_err == EINTR) continue;
        if (write_err != EAGAIN) co_return PumpEnd::error;
        co_await to.async_wait(tcp::socket::wait_write, ec_token(ec));
        if (ec) co_return PumpEnd::error;
        continue;
      }
      left -= static_cast<std::size_t>(m);
    }
  }
}

awaitable<PumpEnd> copy_loop(tcp::socket& from, tcp::socket& to) {
  std::vector<char> buf(k_splice_chunk);
  for (;;) {
    std::error_code ec;
    std::size_t n = co_await from.async_read_some(asio::buffer(buf), ec_token(ec));
    if (ec == asio::error::eof) co_return PumpEnd::eof;
    if (ec) co_return PumpEnd::error;
    co_await asio::async_write(to, asio::buffer(buf.data(), n), ec_token(ec));
    if (ec) co_return PumpEnd::error;
  }
}

// One direction. At EOF the write side of `to` is shut down (the other direction goes on);
// on an error both sockets are closed, which also ends the other direction.
awaitable<void> pump(std::shared_ptr<Conn> c, bool upward) {
  tcp::socket& from = upward ? c->client.sock : c->upstream.sock;
  tcp::socket& to = upward ? c->upstream.sock : c->client.sock;
  PumpEnd end = PumpEnd::no_splice;
  // Without a pipe (no file descriptors left) the bytes are copied instead.
  if (auto pipe = make_pipe(O_CLOEXEC | O_NONBLOCK)) {
    end = co_await splice_loop(from, to, pipe->read.get(), pipe->write.get());
  }
  if (end == PumpEnd::no_splice) {
    log::debug("proxy: splice is not available for this connection; copying");
    end = co_await copy_loop(from, to);
  }
  std::error_code ec;
  if (end == PumpEnd::eof)
    to.shutdown(tcp::socket::shutdown_send, ec);
  else
    c->close_all();
}

awaitable<void> tunnel(std::shared_ptr<Conn> c) {
  // What the client sent after its request (it may not wait for our reply) goes first.
  if (c->client.avail() > 0) {
    bool early = co_await write_all(c->upstream, c->client.view());
    if (!early) {
      c->close_all();
      co_return;
    }
    c->client.reset();
  }
  std::error_code ec;
  c->client.sock.non_blocking(true, ec);
  c->upstream.sock.non_blocking(true, ec);
  co_await (pump(c, true) && pump(c, false));
  c->close_all();
}

// ---------------------------------------------------------------------------------------------
// SOCKS5 (RFC 1928): no authentication, CONNECT to a domain name only.

constexpr std::uint8_t k_socks_ok = 0x00;
constexpr std::uint8_t k_socks_general = 0x01;
constexpr std::uint8_t k_socks_not_allowed = 0x02;
constexpr std::uint8_t k_socks_net_unreachable = 0x03;
constexpr std::uint8_t k_socks_host_unreachable = 0x04;
constexpr std::uint8_t k_socks_refused = 0x05;
constexpr std::uint8_t k_socks_bad_command = 0x07;
constexpr std::uint8_t k_socks_bad_address_type = 0x08;

awaitable<bool> need(Stream& s, std::size_t n) {
  while (s.avail() < n) {
    bool more = co_await s.fill();
    if (!more) co_return false;
  }
  co_return true;
}

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

std::uint8_t socks_code(const Outcome& o) {
  switch (o.kind) {
    case Outcome::Kind::connected: return k_socks_ok;
    case Outcome::Kind::refused: return k_socks_not_allowed;
    case Outcome::Kind::unresolved: return k_socks_host_unreachable;
    case Outcome::Kind::timed_out: return k_socks_host_unreachable;
    case Outcome::Kind::failed: break;
  }
  if (o.ec == asio::error::connection_refused) return k_socks_refused;
  if (o.ec == asio::error::network_unreachable || o.ec == asio::error::host_unreachable)
    return k_socks_net_unreachable;
  if (o.ec == asio::error::timed_out) return k_socks_host_unreachable;
  return k_socks_general;
}

// The request's size once its first five bytes are known (VER CMD RSV ATYP and the first
// byte of the address, which is the length of a name); 0 for an unknown address type.
std::size_t socks_request_size(std::string_view v) {
  switch (v[3]) {
    case 1: return 4 + 4 + 2;
    case 3: return 4 + 1 + static_cast<unsigned char>(v[4]) + 2;
    case 4: return 4 + 16 + 2;
    default: return 0;
  }
}

std::uint16_t port_at(std::string_view v, std::size_t at) {
  return static_cast<std::uint16_t>(static_cast<unsigned char>(v[at]) << 8 | static_cast<unsigned char>(v[at + 1]));
}

// A complete request (socks_request_size bytes): k_socks_ok with `hp` set, or the reply code
// that refuses it.
std::uint8_t parse_socks_request(std::string_view v, Core& core, HostPort& hp) {
  if (v[0] != 5) return k_socks_general;
  if (v[1] != 1) return k_socks_bad_command;
  if (v[3] == 1 || v[3] == 4) {
    // An address the client resolved itself: the name, which the rules are about, is lost.
    // Recorded as a refusal so --debug can say to resolve through the proxy (socks5h).
    std::size_t alen = v[3] == 1 ? 4 : 16;
    Address a;
    a.family = v[3] == 1 ? AF_INET : AF_INET6;
    std::copy_n(v.data() + 4, alen, a.bytes);
    HostPort ip{a.str(), v[3] == 1 ? HostKind::IPv4 : HostKind::IPv6, port_at(v, 4 + alen)};
    core.record(ip, false, "SOCKS5 request with an IP address; send the host name (socks5h)");
    return k_socks_not_allowed;
  }
  if (v[3] != 3) return k_socks_bad_address_type;
  std::size_t len = static_cast<unsigned char>(v[4]);
  auto parsed = parse_host(v.substr(5, len));
  std::uint16_t port = port_at(v, 5 + len);
  if (!parsed || port == 0) {
    log::debug("proxy: SOCKS5 request for an invalid name: " +
               (parsed ? std::string("port 0") : clean_reason(parsed.error().message())));
    return k_socks_not_allowed;
  }
  hp = std::move(*parsed);
  hp.port = port;
  return k_socks_ok;
}

awaitable<void> intercept(std::shared_ptr<Conn> c, HostPort hp);

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
  HostPort hp;
  std::uint8_t rep = size > 0 ? parse_socks_request(in.view(), c->core, hp) : k_socks_bad_address_type;
  if (rep == k_socks_ok) {
    in.consume(size);
    Outcome o = co_await open_upstream(c, hp);
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

// ---------------------------------------------------------------------------------------------
// HTTP: CONNECT tunnels, the absolute-form forward proxy, and intercepted tunnels.

awaitable<void> serve_connect(std::shared_ptr<Conn> c, const Message& req) {
  auto hp = parse_authority(req.target, true);
  if (!hp) {
    co_await http_error(c, 400, hp.error().message());
    co_return;
  }
  Outcome o = co_await open_upstream(c, *hp);
  if (o.kind != Outcome::Kind::connected) {
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

// Where a request goes. The forward proxy picks the upstream for each request; inside an
// intercepted tunnel it is the tunnel's host, over TLS when the client spoke TLS.
struct Route {
  HostPort hp;        // port set
  std::string path;   // origin-form target
  bool fixed = false; // an intercepted tunnel
  bool tls = false;   // the upstream connection is TLS (fixed routes only)
};

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
  arm(c, k_connect_timeout, Guard::upstream);
  std::error_code ec;
  co_await c->upstream.tls->async_handshake(asio::ssl::stream_base::client, ec_token(ec));
  bool timed_out = c->timed_out;
  disarm(*c);
  if (!ec) co_return std::string();
  long verify = SSL_get_verify_result(ssl);
  std::string why;
  if (timed_out)
    why = "timed out in the TLS handshake with " + to_string(hp);
  else if (verify != X509_V_OK) {
    bool unknown_issuer = verify == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY ||
                          verify == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT ||
                          verify == X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN || verify == X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT;
    why = "the certificate of " + to_string(hp) + " is not trusted (" + X509_verify_cert_error_string(verify) +
          (unknown_issuer ? "; --upstream-ca adds a CA)" : ")");
  }
  else
    why = "TLS handshake with " + to_string(hp) + " failed: " + ec.message();
  ERR_clear_error();
  c->close_upstream();
  co_return why;
}

// Connects a fixed route again (the server closed the kept connection). "" when it is up.
awaitable<std::string> reopen_fixed(std::shared_ptr<Conn> c, Route route) {
  Outcome o = co_await connect_any(c, c->upstream_candidates, *route.hp.port, to_string(route.hp));
  if (o.kind != Outcome::Kind::connected) co_return o.reason;
  c->upstream_target = route.hp;
  c->upstream_uses = 0;
  if (!route.tls) co_return std::string();
  std::string why = co_await upstream_tls(c, route.hp);
  if (why.empty()) c->upstream_target = route.hp;
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

// Relays a response body with every secret value replaced by its placeholder (Redactor). The
// body is decoded from its framing (and from its Content-Encoding, with `dec`) and sent
// chunked (HTTP/1.1 clients) or until close (HTTP/1.0), since the length changes. Trailer
// fields are dropped.
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

// One request, sent upstream along `route`, and its response. True when the client connection
// stays open. Placeholders of the secrets approved for the route's host are substituted in
// the target and the header values; the response is scrubbed of their values.
awaitable<bool> exchange(std::shared_ptr<Conn> c, const Message& req, Route route) {
  std::string why;
  const HostPort& hp = route.hp;
  auto framing = request_framing(req, why);
  if (!framing) {
    co_await http_error(c, 400, why);
    co_return false;
  }
  bool client_http10 = req.version == "HTTP/1.0";
  bool client_close = client_http10 || req.has_option("connection", "close");
  bool continue_100 = false;
  auto expect = req.values("expect");
  if (!expect.empty()) {
    if (expect.size() != 1 || !iequals(expect[0], "100-continue")) {
      co_await http_error(c, 417, "unsupported Expect header");
      co_return false;
    }
    // Answered here rather than forwarded: waiting for the server's 100 while the client may
    // already be sending its body would need both at once; this keeps one direction at a time.
    continue_100 = !client_http10 && framing->kind != Framing::Kind::none;
  }

  bool reused = false;
  if (route.fixed || upstream_reusable(*c, hp)) {
    // The policy is decided (and recorded) for every request, as for a new connection.
    Decision d = c->core.policy.decide(hp);
    c->core.record(hp, d.allowed, d.reason);
    if (!d.allowed) {
      c->close_upstream();
      co_await http_error(c, 403, d.reason);
      co_return false;
    }
    if (route.fixed && !c->upstream.sock.is_open()) {
      std::string failed = co_await reopen_fixed(c, route);
      if (!failed.empty()) {
        co_await http_error(c, 502, failed);
        co_return false;
      }
    }
    reused = c->upstream_uses > 0;
  } else {
    c->close_upstream();
    Outcome opened = co_await open_upstream(c, hp);
    if (opened.kind != Outcome::Kind::connected) {
      co_await http_error(c, http_status(opened), opened.reason);
      co_return false;
    }
    c->upstream_target = hp;
  }

  Approved subs = c->core.approved(hp);
  // Scrubs responses of the values, as they are and in the encodings an echo applies; the
  // Basic credentials they were sent in are added below.
  Redactor red(subs);
  if (!subs.empty()) {
    // A placeholder right after an unfinished escape ("%2", "\u00", "&#x") would have the
    // server decode the value's first bytes into something the scrubber cannot recognise.
    std::string refused = escaped_placeholder(route.path, subs);
    for (const Field& f : req.fields)
      if (refused.empty()) refused = escaped_placeholder(f.value, subs);
    if (!refused.empty()) {
      c->core.record(hp, false, refused);
      co_await http_error(c, 403, refused);
      co_return false;
    }
  }
  auto options = req.list("connection");
  std::string out = req.method + " " + (subs.empty() ? route.path : substitute_target(route.path, subs)) + " " +
                    req.version + "\r\n";
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
    if (sp != std::string::npos && sp_shown != std::string::npos) red.add(sent.substr(sp + 1), shown.substr(sp_shown + 1));
  }
  if (!subs.empty()) out += "Accept-Encoding: identity\r\n";
  out += "\r\n";

  Message resp;
  bool retried = false;
  bool send = true;
  for (;;) {
    bool sent = true;
    if (send) {
      send = false;
      ++c->upstream_uses;
      sent = co_await write_all(c->upstream, out);
    }
    if (sent && framing->kind != Framing::Kind::none) {
      if (continue_100) sent = co_await write_all(c->client, "HTTP/1.1 100 Continue\r\n\r\n");
      continue_100 = false;
      // Streamed as it arrives; a failure half-way leaves nothing sensible to answer.
      if (sent) sent = co_await relay_body(c->client, c->upstream, *framing);
      if (!sent) {
        c->close_all();
        co_return false;
      }
    }
    std::string head;
    ReadStatus st = ReadStatus::closed;
    if (sent) st = co_await read_head(c->upstream, head, why);
    if (st == ReadStatus::ok) {
      if (!parse_response(head, resp, why)) {
        c->close_upstream();
        co_await http_error(c, 502, why);
        co_return false;
      }
      if (resp.status >= 200 || resp.status == 101) break;
      // 1xx before the final response: passed on to HTTP/1.1 clients (1.0 does not know them).
      if (!client_http10) {
        std::string info = red.redact(resp.status_line) + "\r\n";
        auto info_options = resp.list("connection");
        for (const Field& f : resp.fields)
          if (!hop_by_hop(f.name, info_options)) info += red.redact(f.name) + ": " + red.redact(f.value) + "\r\n";
        info += "\r\n";
        bool passed = co_await write_all(c->client, info);
        if (!passed) {
          c->close_all();
          co_return false;
        }
      }
      resp = Message{};
      framing = Framing{};  // the body, if any, is already sent
      retried = true;       // and the request cannot be sent again
      continue;
    }
    // A kept connection the server closed just before our request arrived: try once more on a
    // fresh one, when the request can be sent again (no body consumed).
    bool nothing_received = c->upstream.avail() == 0;
    if (st == ReadStatus::closed && reused && !retried && nothing_received && framing->kind == Framing::Kind::none) {
      retried = true;
      std::string failed;
      if (route.fixed) {
        c->close_upstream();
        failed = co_await reopen_fixed(c, route);
      } else {
        Outcome reopened = co_await connect_any(c, c->upstream_candidates, *hp.port, to_string(hp));
        if (reopened.kind != Outcome::Kind::connected) failed = reopened.reason;
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
  bool close_client = client_close || rframing->kind == Framing::Kind::until_close;
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
    co_await http_error(c, 502, "the response from " + to_string(hp) + " has a Transfer-Encoding other than chunked, "
                                "which zerobox cannot scrub of secrets");
    co_return false;
  }
  if (scrub) {
    auto d = Decoder::for_coding(resp.list("content-encoding"));
    if (!d) {
      c->close_upstream();
      co_await http_error(c, 502, "the response from " + to_string(hp) + " has " + d.error().message() +
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
    else
      relayed = co_await relay_body(c->upstream, c->client, *rframing);
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

// Reads one request head from the client. nullopt when the connection is done (closed, or
// answered with an error).
awaitable<std::optional<Message>> next_request(std::shared_ptr<Conn> c) {
  arm(c, k_head_timeout, Guard::client);
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
    std::string as_http = tls && t.size() > 8 && iequals(t.substr(0, 8), "https://") ? "http://" + std::string(t.substr(8))
                                                                                      : std::string(t);
    auto h = parse_absolute_uri(as_http, rest);
    if (!h) {
      why = "malformed request target in the tunnel to " + to_string(hp);
      return std::nullopt;
    }
    if (tls) {
      // parse_absolute_uri gives a target without a port port 80; an https one means 443.
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

// A CONNECT or SOCKS5 tunnel to a host with an approved secret, already connected upstream and
// acknowledged to the client (ProxySecrets in proxy.hpp).
awaitable<void> intercept(std::shared_ptr<Conn> c, HostPort hp) {
  Core& core = c->core;
  // TLS or not is told by the first byte: 0x16 opens a TLS handshake record.
  arm(c, k_head_timeout, Guard::client);
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

awaitable<void> serve(std::shared_ptr<Conn> c) {
  std::error_code ec;
  c->client.sock.set_option(tcp::no_delay(true), ec);
  arm(c, k_head_timeout, Guard::client);
  bool first = co_await c->client.fill();
  if (!first) co_return;
  switch (c->client.view()[0]) {
    case 0x05: co_await serve_socks5(c); break;
    case 0x04: {
      // SOCKS4 and 4a: VN 0, CD 91 "rejected or failed", then DSTPORT and DSTIP (unused).
      disarm(*c);
      const char reply[8] = {0, 0x5b, 0, 0, 0, 0, 0, 0};
      bool sent = co_await write_all(c->client, std::string_view(reply, sizeof reply));
      if (sent) co_await linger_close(c);
      break;
    }
    default: co_await serve_http(c); break;
  }
  c->close_all();
}

void log_exception(std::exception_ptr e) {
  if (!e) return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    log::debug(std::string("proxy: connection failed: ") + x.what());
  } catch (...) {
    log::debug("proxy: connection failed");
  }
}

awaitable<void> accept_loop(Core& core, tcp::acceptor& acceptor) {
  asio::steady_timer backoff(acceptor.get_executor());
  for (;;) {
    std::error_code ec;
    tcp::socket s = co_await acceptor.async_accept(ec_token(ec));
    if (!acceptor.is_open() || ec == asio::error::operation_aborted) co_return;
    if (ec) {
      if (ec == asio::error::connection_aborted) continue;  // the client gave up first
      // EMFILE, ENFILE, ENOBUFS: the connection stays queued in the kernel; serving it must
      // wait until descriptors or memory come back, and the loop must not die meanwhile.
      log::debug("proxy: accept: " + ec.message() + "; retrying");
      backoff.expires_after(k_accept_backoff);
      co_await backoff.async_wait(ec_token(ec));
      continue;
    }
    asio::co_spawn(acceptor.get_executor(), serve(std::make_shared<Conn>(core, std::move(s))), log_exception);
  }
}

// Each tunnel holds six descriptors (two sockets, two pipes); the default soft limit of 1024
// would stop a few hundred concurrent connections, so it is raised to the hard limit.
void raise_fd_limit() {
  if (!util::raise_nofile_limit()) log::debug("proxy: cannot raise the file descriptor limit");
}

}  // namespace

struct Proxy::Impl {
  Impl(NetPolicy p, std::function<void(const NetEvent&)> f, std::optional<ProxySecrets> s)
      : core(std::move(p), std::move(f), std::move(s)) {}

  Core core;
  // Reset by stop(): destroying the io_context destroys every suspended connection, which
  // closes its sockets and pipes.
  std::optional<asio::io_context> io{std::in_place, 1};
  std::optional<tcp::acceptor> acceptor{std::in_place, *io};
  std::thread thread;
  std::mutex mu;
  bool started = false;
  bool stopped = false;
};

#ifdef ZEROBOX_FUZZ_HOOKS
// Entry points for the libFuzzer targets in tests/fuzz: the request, response and SOCKS5
// parsers on arbitrary bytes. Built only into the fuzzers (scripts/fuzz.sh).
void fuzz_http_head(std::string_view head) {
  std::string why;
  Message req;
  if (parse_request(head, req, why)) {
    (void)request_framing(req, why);
    std::string path;
    if (auto hp = parse_absolute_uri(req.target, path)) (void)to_string(*hp);
    (void)parse_authority(req.target, true);
  }
  Message resp;
  if (parse_response(head, resp, why)) (void)response_framing(resp, false, why);
}

void fuzz_socks_request(std::string_view v) {
  if (v.size() < 5) return;
  std::size_t n = socks_request_size(v);
  if (n == 0 || v.size() < n) return;
  static auto policy = NetPolicy::make({}, {}, {}, true);
  if (!policy) return;
  Core core(*policy, {}, std::nullopt);
  HostPort hp;
  (void)parse_socks_request(v.substr(0, n), core, hp);
}
#endif

Proxy::Proxy(int listen_fd, NetPolicy policy, std::function<void(const NetEvent&)> on_event,
             std::optional<ProxySecrets> secrets)
    : m_impl(std::make_unique<Impl>(std::move(policy), std::move(on_event), std::move(secrets))) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  tcp protocol = tcp::v4();
  if (::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0 && ss.ss_family == AF_INET6)
    protocol = tcp::v6();
  std::error_code ec;
  m_impl->acceptor->assign(protocol, listen_fd, ec);
  if (ec) {
    ::close(listen_fd);
    log::error("proxy: cannot serve the listening socket: " + ec.message());
  }
}

Proxy::~Proxy() { stop(); }

void Proxy::start() {
  std::lock_guard lock(m_impl->mu);
  if (m_impl->started || m_impl->stopped) return;
  m_impl->started = true;
  raise_fd_limit();
  Impl& impl = *m_impl;
  asio::co_spawn(*impl.io, accept_loop(impl.core, *impl.acceptor), log_exception);
  impl.thread = std::thread([&impl] {
    // splice(2) into a socket the peer has closed raises SIGPIPE (it has no MSG_NOSIGNAL);
    // blocked on this thread it stays pending here and the write fails with EPIPE.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    for (;;) {
      try {
        impl.io->run();
        return;
      } catch (const std::exception& e) {
        log::error(std::string("proxy: ") + e.what());
      }
    }
  });
}

void Proxy::stop() {
  if (!m_impl) return;
  std::lock_guard lock(m_impl->mu);
  if (m_impl->stopped) return;
  m_impl->stopped = true;
  m_impl->io->stop();
  if (m_impl->thread.joinable()) m_impl->thread.join();
  m_impl->acceptor.reset();
  m_impl->io.reset();
}

ProxyStats Proxy::stats() const {
  return ProxyStats{m_impl->core.allowed.load(std::memory_order_relaxed),
                    m_impl->core.denied.load(std::memory_order_relaxed)};
}

}  // namespace zb::net
