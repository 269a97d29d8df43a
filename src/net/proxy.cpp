// The proxy of filtered mode (proxy.hpp): an Asio event loop on one thread of its own, which
// accepts the client connections and serves each with one coroutine (serve). How a connection
// is served, file by file, is in proxy_internal.hpp, with the g++ 12 house rule the
// coroutines here follow too.
#include "net/proxy.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

#include "net/proxy_internal.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"

namespace zb::net {
namespace {

using asio::awaitable;
using asio::ip::tcp;
using namespace std::chrono_literals;

constexpr auto k_accept_backoff = 100ms;

awaitable<void> serve(std::shared_ptr<Conn> c) {
  std::error_code ec;
  c->client.sock.set_option(tcp::no_delay(true), ec);
  arm(c, k_head_timeout, Deadline::client);
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

void log_exception(const std::exception_ptr& e) {
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
