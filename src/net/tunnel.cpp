// Tunnels (CONNECT, SOCKS5; proxy_internal.hpp: tunnel): bytes relayed both ways with
// splice(2), from socket to pipe to socket, no copy through user space; copied through a
// buffer where splice cannot be used. Coroutines follow the g++ 12 house rule in
// proxy_internal.hpp.
#include <fcntl.h>

#include <cerrno>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"  // as in proxy_conn.hpp
#include <asio/experimental/awaitable_operators.hpp>
#pragma GCC diagnostic pop

#include "net/proxy_internal.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"

namespace zb::net {

using asio::awaitable;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

namespace {

constexpr std::size_t k_splice_chunk = std::size_t{64} * 1024;  // the default pipe capacity

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
  if (end == PumpEnd::eof) to.shutdown(tcp::socket::shutdown_send, ec);
  else c->close_all();
}

}  // namespace

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

}  // namespace zb::net
