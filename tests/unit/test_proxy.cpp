// Tests for the proxy (src/net/proxy.hpp, the files of proxy_internal.hpp): a real proxy on
// 127.0.0.1, with small upstream servers (a TCP echo server, a minimal HTTP/1.1 server) on
// threads of the test. Names reach 127.0.0.1 through --resolve-style mappings, so nothing
// depends on DNS.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net/proxy.hpp"
#include "util/fd.hpp"

using namespace zb;
using namespace zb::net;

namespace {

UniqueFd listen_local(std::uint16_t& port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  REQUIRE(fd);
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
  REQUIRE(::listen(fd.get(), 4096) == 0);
  socklen_t len = sizeof sa;
  REQUIRE(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len) == 0);
  port = ntohs(sa.sin_port);
  return fd;
}

void set_timeouts(int fd, int seconds) {
  timeval tv{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// A blocking client with a read buffer; every read gives up after 10 s so a bug cannot hang
// the suite.
class Client {
 public:
  explicit Client(std::uint16_t port) : m_fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons(port);
    set_timeouts(m_fd.get(), 10);
    m_connected = ::connect(m_fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  }
  // For a socket created before its connect (the EMFILE test).
  Client(UniqueFd fd, std::uint16_t port) : m_fd(std::move(fd)) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons(port);
    set_timeouts(m_fd.get(), 10);
    m_connected = ::connect(m_fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  }

  bool connected() const { return m_connected; }
  int fd() const { return m_fd.get(); }
  bool send(std::string_view data) { return send_all(m_fd.get(), data); }
  void shutdown_write() { ::shutdown(m_fd.get(), SHUT_WR); }

  // Everything up to and including `delim`; "" when the connection ends first.
  std::string read_until(std::string_view delim) {
    for (;;) {
      std::size_t at = m_buf.find(delim);
      if (at != std::string::npos) {
        std::string out = m_buf.substr(0, at + delim.size());
        m_buf.erase(0, at + delim.size());
        return out;
      }
      if (!fill()) return "";
    }
  }
  std::string read_n(std::size_t n) {
    while (m_buf.size() < n)
      if (!fill()) break;
    std::string out = m_buf.substr(0, std::min(n, m_buf.size()));
    m_buf.erase(0, out.size());
    return out;
  }
  std::string read_all() {
    while (fill()) {
    }
    return std::exchange(m_buf, {});
  }
  // True when the peer closed (EOF or reset) with nothing more to read.
  bool at_eof() { return m_buf.empty() && !fill(); }

 private:
  bool fill() {
    char buf[65536];
    ssize_t n = ::recv(m_fd.get(), buf, sizeof buf, 0);
    if (n <= 0) return false;
    m_buf.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  UniqueFd m_fd;
  std::string m_buf;
  bool m_connected = false;
};

// A TCP server on 127.0.0.1 running `handler` on a thread per connection.
class Server {
 public:
  explicit Server(std::function<void(int)> handler) : m_handler(std::move(handler)) {
    m_listen = listen_local(m_port);
    m_thread = std::thread([this] { accept_loop(); });
  }
  ~Server() {
    ::shutdown(m_listen.get(), SHUT_RDWR);
    m_thread.join();
    std::lock_guard lock(m_mu);
    for (const UniqueFd& fd : m_conns) ::shutdown(fd.get(), SHUT_RDWR);
    for (std::thread& t : m_workers) t.join();
  }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  std::uint16_t port() const { return m_port; }
  int accepted() const { return m_accepted.load(); }

 private:
  void accept_loop() {
    for (;;) {
      int fd = ::accept4(m_listen.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;
      }
      set_timeouts(fd, 20);
      ++m_accepted;
      std::lock_guard lock(m_mu);
      m_conns.emplace_back(fd);
      m_workers.emplace_back([this, fd] { m_handler(fd); });
    }
  }

  std::function<void(int)> m_handler;
  UniqueFd m_listen;
  std::uint16_t m_port = 0;
  std::thread m_thread;
  std::mutex m_mu;
  std::vector<UniqueFd> m_conns;  // closed when the server goes, never by a handler
  std::vector<std::thread> m_workers;
  std::atomic<int> m_accepted{0};
};

void echo(int fd) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    if (!send_all(fd, std::string_view(buf, static_cast<std::size_t>(n)))) return;
  }
  ::shutdown(fd, SHUT_WR);
}

// What the HTTP server received, for the tests to look at.
struct Seen {
  std::string request_line;
  std::map<std::string, std::string> headers;  // lowercase names
  std::string body;                            // de-chunked
};

std::string lowercase(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// Splits "Name: value" lines (after the first line) into a map with lowercase names.
std::map<std::string, std::string> header_map(const std::string& head) {
  std::map<std::string, std::string> out;
  std::size_t at = head.find("\r\n");
  while (at != std::string::npos && at + 2 < head.size()) {
    std::size_t end = head.find("\r\n", at + 2);
    std::string line = head.substr(at + 2, end - at - 2);
    std::size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      out[lowercase(line.substr(0, colon))] = value;
    }
    at = end;
  }
  return out;
}

// A minimal HTTP/1.1 origin server: keep-alive, Content-Length or chunked request bodies.
//   /cl/...      200 with Content-Length, the body "<method> <target> body=<body>"
//   /chunked     200 with a chunked body of three chunks
//   /close       200 HTTP/1.0 style, no length, ends by closing
//   /cl/quit     as /cl/, then the connection is closed without notice (an idle timeout)
// HEAD gets the headers of the GET response and no body.
class HttpServer {
 public:
  HttpServer() : m_server([this](int fd) { serve(fd); }) {}
  std::uint16_t port() const { return m_server.port(); }
  int accepted() const { return m_server.accepted(); }
  std::vector<Seen> seen() {
    std::lock_guard lock(m_mu);
    return m_seen;
  }

 private:
  void serve(int fd) {
    std::string buf;
    auto fill = [&] {
      char tmp[65536];
      ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
      if (n <= 0) return false;
      buf.append(tmp, static_cast<std::size_t>(n));
      return true;
    };
    auto line = [&](std::string& out) {
      for (;;) {
        std::size_t at = buf.find("\r\n");
        if (at != std::string::npos) {
          out = buf.substr(0, at);
          buf.erase(0, at + 2);
          return true;
        }
        if (!fill()) return false;
      }
    };
    for (;;) {
      std::size_t end;
      while ((end = buf.find("\r\n\r\n")) == std::string::npos)
        if (!fill()) return;
      std::string head = buf.substr(0, end + 2);
      buf.erase(0, end + 4);
      Seen s;
      s.request_line = head.substr(0, head.find("\r\n"));
      s.headers = header_map(head);
      if (s.headers.contains("content-length")) {
        std::size_t n = std::stoul(s.headers["content-length"]);
        while (buf.size() < n)
          if (!fill()) return;
        s.body = buf.substr(0, n);
        buf.erase(0, n);
      } else if (s.headers.contains("transfer-encoding")) {
        std::string l;
        for (;;) {
          if (!line(l)) return;
          std::size_t n = std::stoul(l, nullptr, 16);
          if (n == 0) break;
          while (buf.size() < n + 2)
            if (!fill()) return;
          s.body += buf.substr(0, n);
          buf.erase(0, n + 2);
        }
        do {
          if (!line(l)) return;
        } while (!l.empty());
      }
      std::string method = s.request_line.substr(0, s.request_line.find(' '));
      std::string target = s.request_line.substr(method.size() + 1);
      target = target.substr(0, target.find(' '));
      bool close = s.headers.contains("connection") && lowercase(s.headers.at("connection")) == "close";
      {
        std::lock_guard lock(m_mu);
        m_seen.push_back(s);
      }
      std::string resp;
      if (target.starts_with("/chunked")) {
        resp = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Test: chunked\r\n\r\n";
        if (method != "HEAD") resp += "5\r\nhello\r\n1;ext=1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: t\r\n\r\n";
      } else if (target.starts_with("/close")) {
        resp = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end";
        close = true;
      } else {
        std::string body = method + " " + target + " body=" + s.body;
        resp = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
               "\r\nKeep-Alive: timeout=5\r\nX-Test: cl\r\n\r\n";
        if (method != "HEAD") resp += body;
      }
      if (!send_all(fd, resp)) return;
      if (close || target.starts_with("/cl/quit")) {
        ::shutdown(fd, SHUT_WR);
        return;
      }
    }
  }

  std::mutex m_mu;
  std::vector<Seen> m_seen;
  Server m_server;  // last: its threads use the members above
};

NetPolicy net_policy(const std::vector<std::string>& allow,
                     const std::vector<std::pair<std::string, std::string>>& resolve,
                     const std::vector<std::string>& deny = {}, bool allow_all = false) {
  auto p = NetPolicy::make(allow, deny, resolve, allow_all);
  if (!p) FAIL(p.error().message());
  return std::move(*p);
}

// A proxy on 127.0.0.1:<port> recording its events.
class TestProxy {
 public:
  explicit TestProxy(NetPolicy p) {
    UniqueFd fd = listen_local(m_port);
    m_proxy = std::make_unique<Proxy>(fd.release(), std::move(p), [this](const NetEvent& e) {
      std::lock_guard lock(m_mu);
      m_events.push_back(e);
    });
    m_proxy->start();
  }
  std::uint16_t port() const { return m_port; }
  Proxy& proxy() { return *m_proxy; }
  std::vector<NetEvent> events() {
    std::lock_guard lock(m_mu);
    return m_events;
  }

 private:
  std::uint16_t m_port = 0;
  std::mutex m_mu;
  std::vector<NetEvent> m_events;
  std::unique_ptr<Proxy> m_proxy;  // last: stopped before the members its callback uses
};

std::string rule(const std::string& host, std::uint16_t port) { return host + ":" + std::to_string(port); }

struct Response {
  std::string head;
  int status = 0;
  std::map<std::string, std::string> headers;
  std::string body;  // raw, as framed (chunked bodies keep their chunks)
};

// One response; bodies by Content-Length, chunked (kept raw) or until close.
Response read_response(Client& c, bool head_request = false) {
  Response r;
  r.head = c.read_until("\r\n\r\n");
  if (r.head.size() < 12) return r;
  r.status = std::stoi(r.head.substr(9, 3));
  r.headers = header_map(r.head);
  if (head_request || r.status == 204 || r.status == 304 || r.status < 200) return r;
  if (r.headers.contains("content-length")) {
    r.body = c.read_n(std::stoul(r.headers["content-length"]));
  } else if (r.headers.contains("transfer-encoding")) {
    for (;;) {
      std::string l = c.read_until("\r\n");
      if (l.empty()) return r;
      r.body += l;
      std::size_t n = std::stoul(l, nullptr, 16);
      if (n == 0) break;
      r.body += c.read_n(n + 2);
    }
    for (;;) {
      std::string l = c.read_until("\r\n");
      r.body += l;
      if (l == "\r\n" || l.empty()) break;
    }
  } else {
    r.body = c.read_all();
  }
  return r;
}

std::string connect_request(const std::string& authority) {
  return "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";
}

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + i / 4096) & 0xff);
  return s;
}

// Sends `data` from a thread while reading the echo; true when it comes back whole.
bool echo_round_trip(Client& c, const std::string& data) {
  std::thread writer([&] { c.send(data); });
  std::string back = c.read_n(data.size());
  writer.join();
  return back == data;
}

std::string socks5_connect(const std::string& name, std::uint16_t port) {
  std::string req = std::string("\x05\x01\x00\x03", 4);
  req += static_cast<char>(name.size());
  req += name;
  req += static_cast<char>(port >> 8);
  req += static_cast<char>(port & 0xff);
  return req;
}

}  // namespace

TEST_CASE("proxy: CONNECT to an allowed host relays 1 MiB both ways, early bytes first") {
  Server upstream(echo);
  TestProxy p(net_policy({rule("test.example", upstream.port())}, {{"test.example", "127.0.0.1"}}));
  Client c(p.port());
  REQUIRE(c.connected());
  // Bytes sent right behind the request, before the 200, are forwarded first.
  REQUIRE(c.send(connect_request(rule("test.example", upstream.port())) + "early"));
  CHECK(c.read_until("\r\n\r\n") == "HTTP/1.1 200 Connection established\r\n\r\n");
  CHECK(c.read_n(5) == "early");
  CHECK(echo_round_trip(c, pattern(1 << 20)));
  c.shutdown_write();
  CHECK(c.at_eof());  // the half-close went through, and the echo server's came back
  auto events = p.events();
  REQUIRE(events.size() == 1);
  CHECK(events[0].host == "test.example");
  CHECK(events[0].port == upstream.port());
  CHECK(events[0].allowed);
  CHECK(p.proxy().stats().allowed == 1);
  CHECK(p.proxy().stats().denied == 0);
}

TEST_CASE("proxy: CONNECT to a host not allowed gets 403 with the reason") {
  Server upstream(echo);
  TestProxy p(net_policy({rule("test.example", upstream.port())},
                         {{"test.example", "127.0.0.1"}, {"other.example", "127.0.0.1"}}));
  Client c(p.port());
  REQUIRE(c.send(connect_request(rule("other.example", upstream.port()))));
  Response r = read_response(c);
  CHECK(r.status == 403);
  CHECK(r.head.starts_with("HTTP/1.1 403 Forbidden\r\n"));
  CHECK(r.headers["content-type"] == "text/plain");
  CHECK(r.headers["connection"] == "close");
  CHECK(r.headers["x-zerobox-reason"] == "not in --allow-net");
  CHECK(r.body == "zerobox: not in --allow-net\n");
  CHECK(c.at_eof());
  CHECK(upstream.accepted() == 0);
  auto events = p.events();
  REQUIRE(events.size() == 1);
  CHECK(events[0].host == "other.example");
  CHECK_FALSE(events[0].allowed);
  CHECK(events[0].reason == "not in --allow-net");
  CHECK(p.proxy().stats().denied == 1);
}

TEST_CASE("proxy: CONNECT to an IP rule, and to a name resolved by the system") {
  Server upstream(echo);
  TestProxy p(net_policy({rule("127.0.0.1", upstream.port()), rule("localhost", upstream.port())}, {}));
  {
    Client c(p.port());
    REQUIRE(c.send(connect_request(rule("127.0.0.1", upstream.port()))));
    CHECK(c.read_until("\r\n\r\n").starts_with("HTTP/1.1 200 "));
    CHECK(echo_round_trip(c, "ip"));
  }
  {
    // localhost may resolve to ::1 first, where nothing listens: the next address is tried.
    Client c(p.port());
    REQUIRE(c.send(connect_request(rule("localhost", upstream.port()))));
    CHECK(c.read_until("\r\n\r\n").starts_with("HTTP/1.1 200 "));
    CHECK(echo_round_trip(c, "name"));
  }
}

TEST_CASE("proxy: the address check refuses special addresses not named by a rule") {
  Server upstream(echo);
  // A bare --allow-net with a --deny-net: everything is allowed by name, nothing explicitly.
  TestProxy p(net_policy({}, {}, {"deny.example"}, true));
  {
    Client c(p.port());
    REQUIRE(c.send(connect_request(rule("127.0.0.1", upstream.port()))));
    Response r = read_response(c);
    CHECK(r.status == 403);
    CHECK(r.headers["x-zerobox-reason"] == "resolves to a loopback address (127.0.0.1)");
  }
  {
    Client c(p.port());  // through getaddrinfo (/etc/hosts)
    REQUIRE(c.send(connect_request(rule("localhost", upstream.port()))));
    Response r = read_response(c);
    CHECK(r.status == 403);
    CHECK(r.headers["x-zerobox-reason"].find("loopback address") != std::string::npos);
  }
  CHECK(upstream.accepted() == 0);
  auto events = p.events();
  REQUIRE(events.size() == 2);
  CHECK_FALSE(events[0].allowed);
  CHECK(events[1].host == "localhost");
  CHECK_FALSE(events[1].allowed);
  CHECK(p.proxy().stats().denied == 2);
}

TEST_CASE("proxy: absolute-form GET keeps both connections alive and strips hop-by-hop headers") {
  HttpServer upstream;
  std::string host = rule("test.example", upstream.port());
  TestProxy p(net_policy({host}, {{"test.example", "127.0.0.1"}}));
  Client c(p.port());
  REQUIRE(c.send("GET http://" + host + "/cl/a?q=1 HTTP/1.1\r\nHost: " + host +
                 "\r\nProxy-Connection: keep-alive\r\nProxy-Authorization: Basic eDp5\r\n"
                 "Connection: X-Private\r\nX-Private: secret\r\nX-Kept: yes\r\n\r\n"));
  Response r1 = read_response(c);
  CHECK(r1.status == 200);
  CHECK(r1.body == "GET /cl/a?q=1 body=");
  CHECK(r1.headers["x-test"] == "cl");
  CHECK_FALSE(r1.headers.contains("keep-alive"));
  CHECK_FALSE(r1.headers.contains("connection"));
  // The second request, on the same client connection, goes over the same upstream one.
  REQUIRE(c.send("GET http://" + host + "/cl/b HTTP/1.1\r\nHost: " + host + "\r\n\r\n"));
  Response r2 = read_response(c);
  CHECK(r2.status == 200);
  CHECK(r2.body == "GET /cl/b body=");
  CHECK(upstream.accepted() == 1);
  auto seen = upstream.seen();
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].request_line == "GET /cl/a?q=1 HTTP/1.1");
  CHECK(seen[0].headers["host"] == host);
  CHECK(seen[0].headers["x-kept"] == "yes");
  CHECK_FALSE(seen[0].headers.contains("proxy-connection"));
  CHECK_FALSE(seen[0].headers.contains("proxy-authorization"));
  CHECK_FALSE(seen[0].headers.contains("connection"));
  CHECK_FALSE(seen[0].headers.contains("x-private"));
  CHECK(seen[1].request_line == "GET /cl/b HTTP/1.1");
  CHECK(p.proxy().stats().allowed == 2);  // every request is decided
}

TEST_CASE("proxy: POST with a chunked body, and a chunked response relayed as chunked") {
  HttpServer upstream;
  std::string host = rule("test.example", upstream.port());
  TestProxy p(net_policy({host}, {{"test.example", "127.0.0.1"}}));
  Client c(p.port());
  REQUIRE(c.send("POST http://" + host +
                 "/cl/post HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "4\r\nabcd\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the body streams in pieces
  REQUIRE(c.send("3;x=y\r\nefg\r\n0\r\nX-T: 1\r\n\r\n"));
  Response r = read_response(c);
  CHECK(r.status == 200);
  CHECK(r.body == "POST /cl/post body=abcdefg");
  REQUIRE(c.send("GET http://" + host + "/chunked HTTP/1.1\r\n\r\n"));
  Response r2 = read_response(c);
  CHECK(r2.status == 200);
  CHECK(r2.headers["transfer-encoding"] == "chunked");
  CHECK(r2.body == "5\r\nhello\r\n1;ext=1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: t\r\n\r\n");
  // Content-Length bodies too, in the same connection.
  REQUIRE(c.send("PUT http://" + host + "/cl/put HTTP/1.1\r\nContent-Length: 3\r\n\r\nxyz"));
  CHECK(read_response(c).body == "PUT /cl/put body=xyz");
  auto seen = upstream.seen();
  REQUIRE(seen.size() == 3);
  CHECK(seen[0].headers["transfer-encoding"] == "chunked");
  CHECK(seen[0].headers["host"] == host);  // added from the URI
  CHECK(upstream.accepted() == 1);
}

TEST_CASE("proxy: HEAD responses have no body, and Expect: 100-continue is answered") {
  HttpServer upstream;
  std::string host = rule("test.example", upstream.port());
  TestProxy p(net_policy({host}, {{"test.example", "127.0.0.1"}}));
  Client c(p.port());
  REQUIRE(c.send("HEAD http://" + host + "/cl/h HTTP/1.1\r\n\r\n"));
  Response r = read_response(c, true);
  CHECK(r.status == 200);
  CHECK(r.headers["content-length"] == "16");  // "HEAD /cl/h body="
  REQUIRE(c.send("HEAD http://" + host + "/chunked HTTP/1.1\r\n\r\n"));
  CHECK(read_response(c, true).headers["transfer-encoding"] == "chunked");
  // Had the proxy waited for a body after either HEAD, this would not come back.
  REQUIRE(c.send("POST http://" + host + "/cl/e HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n"));
  CHECK(c.read_until("\r\n\r\n") == "HTTP/1.1 100 Continue\r\n\r\n");
  REQUIRE(c.send("ok"));
  CHECK(read_response(c).body == "POST /cl/e body=ok");
  CHECK_FALSE(upstream.seen().back().headers.contains("expect"));
}

TEST_CASE("proxy: a response delimited by close ends the client connection") {
  HttpServer upstream;
  std::string host = rule("test.example", upstream.port());
  TestProxy p(net_policy({host}, {{"test.example", "127.0.0.1"}}));
  Client c(p.port());
  REQUIRE(c.send("GET http://" + host + "/close HTTP/1.1\r\n\r\n"));
  Response r = read_response(c);
  CHECK(r.status == 200);
  CHECK(r.headers["connection"] == "close");
  CHECK(r.body == "until the end");
}

TEST_CASE("proxy: a new host on a kept connection gets a new upstream connection") {
  HttpServer one, two;
  std::string h1 = rule("one.example", one.port()), h2 = rule("two.example", two.port());
  TestProxy p(net_policy({h1, h2}, {{"one.example", "127.0.0.1"}, {"two.example", "127.0.0.1"}}));
  Client c(p.port());
  REQUIRE(c.send("GET http://" + h1 + "/cl/1 HTTP/1.1\r\n\r\n"));
  CHECK(read_response(c).body == "GET /cl/1 body=");
  REQUIRE(c.send("GET http://" + h2 + "/cl/2 HTTP/1.1\r\n\r\n"));
  CHECK(read_response(c).body == "GET /cl/2 body=");
  REQUIRE(c.send("GET http://" + h1 + "/cl/3 HTTP/1.1\r\nConnection: close\r\n\r\n"));
  Response r = read_response(c);
  CHECK(r.body == "GET /cl/3 body=");
  CHECK(r.headers["connection"] == "close");
  CHECK(c.at_eof());
  CHECK(one.accepted() == 2);
  CHECK(two.accepted() == 1);
}

TEST_CASE("proxy: a kept upstream connection the server closed is replaced") {
  HttpServer upstream;
  std::string host = rule("test.example", upstream.port());
  TestProxy p(net_policy({host}, {{"test.example", "127.0.0.1"}}));
  Client c(p.port());
  REQUIRE(c.send("GET http://" + host + "/cl/quit HTTP/1.1\r\n\r\n"));
  CHECK(read_response(c).body == "GET /cl/quit body=");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(c.send("GET http://" + host + "/cl/again HTTP/1.1\r\n\r\n"));
  CHECK(read_response(c).body == "GET /cl/again body=");
  CHECK(upstream.accepted() == 2);
}

TEST_CASE("proxy: absolute-form to a host not allowed gets 403") {
  HttpServer upstream;
  TestProxy p(net_policy({rule("test.example", upstream.port())}, {{"test.example", "127.0.0.1"}}));
  Client c(p.port());
  REQUIRE(c.send("GET http://test.example/ HTTP/1.1\r\n\r\n"));  // port 80 is not the allowed one
  Response r = read_response(c);
  CHECK(r.status == 403);
  CHECK(r.body == "zerobox: not in --allow-net\n");
  CHECK(upstream.accepted() == 0);
}

TEST_CASE("proxy: malformed and misdirected requests get 400") {
  HttpServer upstream;
  std::string host = rule("test.example", upstream.port());
  TestProxy p(net_policy({host}, {{"test.example", "127.0.0.1"}, {"other.example", "127.0.0.1"}}));
  struct Case {
    std::string request;
    std::string reason;  // a part of X-Zerobox-Reason
  };
  std::vector<Case> cases = {
      {"GET http://" + host + "/ HTTP/1.1\r\nHost: other.example\r\n\r\n",
       "Host header does not match the request target"},
      {"GET / HTTP/1.1\r\nHost: " + host + "\r\n\r\n", "origin-form"},
      {"GET http://" + host + "/ HTTP/1.1\nHost: x\n\n", "bare LF"},
      {"GET http://" + host + "/ HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n", "folding"},
      {"GET http://" + host + "/ HTTP/1.1\r\nX-A : 1\r\n\r\n", "header name"},
      {"GET http://" + host + "/ HTTP/1.1\r\nX-A: a\rb\r\n\r\n", "bare CR"},
      {std::string("GET http://") + host + "/ HTTP/1.1\r\nX-A: a" + std::string(1, '\0') + "\r\n\r\n", "NUL"},
      {"POST http://" + host + "/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", "both"},
      {"POST http://" + host + "/ HTTP/1.1\r\nContent-Length: -3\r\n\r\n", "Content-Length"},
      {"POST http://" + host + "/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", "Content-Length"},
      {"GET https://" + host + "/ HTTP/1.1\r\n\r\n", ""},
      {"GET http://user@" + host + "/ HTTP/1.1\r\n\r\n", ""},
      {"GET http://" + host + "/ HTTP/2.0\r\n\r\n", "version"},
      {"CONNECT test.example HTTP/1.1\r\n\r\n", ""},
  };
  for (const Case& k : cases) {
    CAPTURE(k.request);
    Client c(p.port());
    REQUIRE(c.send(k.request));
    Response r = read_response(c);
    CHECK(r.status == 400);
    CHECK(r.headers["x-zerobox-reason"].find(k.reason) != std::string::npos);
    CHECK(r.headers["connection"] == "close");
  }
  {
    Client c(p.port());  // over 64 KiB of header
    REQUIRE(c.send("GET http://" + host + "/ HTTP/1.1\r\nX-Big: " + std::string(70000, 'a')));
    CHECK(read_response(c).status == 431);
  }
  CHECK(upstream.accepted() == 0);
  CHECK(p.events().empty());  // nothing got as far as a decision
}

TEST_CASE("proxy: SOCKS5 CONNECT to a domain name relays") {
  Server upstream(echo);
  TestProxy p(net_policy({rule("test.example", upstream.port())}, {{"test.example", "127.0.0.1"}}));
  Client c(p.port());
  REQUIRE(c.send(std::string("\x05\x02\x02\x00", 4)));
  CHECK(c.read_n(2) == std::string("\x05\x00", 2));
  REQUIRE(c.send(socks5_connect("Test.Example.", upstream.port())));
  CHECK(c.read_n(10) == std::string("\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00", 10));
  CHECK(echo_round_trip(c, pattern(300000)));
  auto events = p.events();
  REQUIRE(events.size() == 1);
  CHECK(events[0].host == "test.example");
  CHECK(events[0].allowed);
}

TEST_CASE("proxy: SOCKS5 refusals carry the matching reply code") {
  Server upstream(echo);
  TestProxy p(net_policy({rule("test.example", upstream.port())},
                         {{"test.example", "127.0.0.1"}, {"other.example", "127.0.0.1"}}));
  auto reply_to = [&](const std::string& request) {
    Client c(p.port());
    REQUIRE(c.send(std::string("\x05\x01\x00", 3)));
    REQUIRE(c.read_n(2) == std::string("\x05\x00", 2));
    REQUIRE(c.send(request));
    std::string r = c.read_n(10);
    CHECK(c.at_eof());
    return r.size() == 10 && r[0] == 5 ? static_cast<int>(static_cast<unsigned char>(r[1])) : -1;
  };
  std::string port = {static_cast<char>(upstream.port() >> 8), static_cast<char>(upstream.port() & 0xff)};
  CHECK(reply_to(std::string("\x05\x01\x00\x01\x7f\x00\x00\x01", 8) + port) == 0x02);                   // IPv4
  CHECK(reply_to(std::string("\x05\x01\x00\x04", 4) + std::string(15, '\0') + "\x01" + port) == 0x02);  // IPv6
  CHECK(reply_to(std::string("\x05\x02\x00\x03\x0ctest.example", 17) + port) == 0x07);                  // BIND
  CHECK(reply_to(std::string("\x05\x03\x00\x03\x0ctest.example", 17) + port) == 0x07);                  // UDP ASSOCIATE
  CHECK(reply_to(socks5_connect("other.example", upstream.port())) == 0x02);                            // policy
  CHECK(reply_to(socks5_connect("bad..name", upstream.port())) == 0x02);                                // grammar
  {
    // Nothing listens on the port of a listener that was just closed.
    std::uint16_t closed_port = 0;
    listen_local(closed_port);
    TestProxy q(net_policy({rule("test.example", closed_port)}, {{"test.example", "127.0.0.1"}}));
    Client c(q.port());
    REQUIRE(c.send(std::string("\x05\x01\x00", 3) + socks5_connect("test.example", closed_port)));
    CHECK(c.read_n(2) == std::string("\x05\x00", 2));
    CHECK(c.read_n(2) == std::string("\x05\x05", 2));  // connection refused
  }
  {
    Client c(p.port());  // no acceptable method
    REQUIRE(c.send(std::string("\x05\x01\x02", 3)));
    CHECK(c.read_n(2) == std::string("\x05\xff", 2));
    CHECK(c.at_eof());
  }
  auto events = p.events();
  REQUIRE(events.size() == 3);  // the two IP requests and the policy refusal
  CHECK(events[0].host == "127.0.0.1");
  CHECK_FALSE(events[0].allowed);
  CHECK(events[1].host == "::1");
  CHECK(events[2].reason == "not in --allow-net");
  CHECK(upstream.accepted() == 0);
}

TEST_CASE("proxy: SOCKS4 is refused with reply 91") {
  TestProxy p(net_policy({}, {}));
  Client c(p.port());
  REQUIRE(c.send(std::string("\x04\x01\x00\x50\x7f\x00\x00\x01user\0", 13)));
  CHECK(c.read_n(8) == std::string("\x00\x5b\x00\x00\x00\x00\x00\x00", 8));
  CHECK(c.at_eof());
}

TEST_CASE("proxy: a client resetting a busy tunnel does not take the proxy down") {
  // The upstream writes without pause; the proxy's splice into the reset client socket fails
  // (ECONNRESET, or EPIPE with a SIGPIPE the proxy thread blocks), ending that tunnel only.
  Server flood([](int fd) {
    std::string chunk(65536, 'x');
    while (send_all(fd, chunk)) {
    }
  });
  TestProxy p(net_policy({rule("test.example", flood.port())}, {{"test.example", "127.0.0.1"}}));
  for (int i = 0; i < 3; ++i) {
    Client c(p.port());
    REQUIRE(c.send(connect_request(rule("test.example", flood.port()))));
    REQUIRE(c.read_until("\r\n\r\n").starts_with("HTTP/1.1 200 "));
    CHECK(c.read_n(100000).size() == 100000);
    linger reset{1, 0};
    ::setsockopt(c.fd(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  }  // closed with a RST
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Client c(p.port());
  REQUIRE(c.send(connect_request(rule("test.example", flood.port()))));
  CHECK(c.read_until("\r\n\r\n").starts_with("HTTP/1.1 200 "));
  CHECK(c.read_n(1000).size() == 1000);
}

TEST_CASE("proxy: stop() with open tunnels returns promptly and closes them; it is idempotent") {
  Server upstream(echo);
  TestProxy p(net_policy({rule("test.example", upstream.port())}, {{"test.example", "127.0.0.1"}}));
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 5; ++i) {
    clients.push_back(std::make_unique<Client>(p.port()));
    REQUIRE(clients.back()->send(connect_request(rule("test.example", upstream.port()))));
    REQUIRE(clients.back()->read_until("\r\n\r\n").starts_with("HTTP/1.1 200 "));
  }
  Client idle(p.port());  // a connection still in its request head
  REQUIRE(idle.send("GET http://test.example/ HTTP/1.1\r\n"));
  auto t0 = std::chrono::steady_clock::now();
  p.proxy().stop();
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  for (auto& c : clients) CHECK(c->at_eof());
  CHECK(idle.at_eof());
  p.proxy().stop();
  Client late(p.port());
  CHECK_FALSE(late.connected());  // the listening socket is closed too
}

TEST_CASE("proxy: a thousand concurrent tunnels") {
  Server upstream(echo);
  TestProxy p(net_policy({rule("test.example", upstream.port())}, {{"test.example", "127.0.0.1"}}));
  constexpr int k_count = 1000;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < k_count; ++i) {
    clients.push_back(std::make_unique<Client>(p.port()));
    REQUIRE(clients.back()->connected());
    REQUIRE(clients.back()->send(connect_request(rule("test.example", upstream.port()))));
  }
  int ok = 0;
  for (int i = 0; i < k_count; ++i) {
    Client& c = *clients[static_cast<std::size_t>(i)];
    if (!c.read_until("\r\n\r\n").starts_with("HTTP/1.1 200 ")) continue;
    std::string msg = "tunnel " + std::to_string(i);
    if (c.send(msg) && c.read_n(msg.size()) == msg) ++ok;
  }
  CHECK(ok == k_count);
  CHECK(p.proxy().stats().allowed == k_count);
}

TEST_CASE("proxy: running out of file descriptors pauses accepting, it does not stop it") {
  TestProxy p(net_policy({}, {}));
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
  // Fill the descriptor table, keeping the client's socket made beforehand.
  UniqueFd sock(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  REQUIRE(sock);
  int lowest_free = ::fcntl(sock.get(), F_DUPFD_CLOEXEC, 0);
  REQUIRE(lowest_free >= 0);
  ::close(lowest_free);
  rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(lowest_free + 64);
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  std::vector<UniqueFd> filler;
  for (;;) {
    int fd = ::fcntl(sock.get(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) break;
    filler.emplace_back(fd);
  }
  Client c(std::move(sock), p.port());  // queued by the kernel; the proxy's accept fails
  bool connected = c.connected();
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  filler.clear();
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &saved) == 0);
  REQUIRE(connected);
  REQUIRE(c.send(connect_request("nowhere.example:80")));
  Response r = read_response(c);
  CHECK(r.status == 403);
}
