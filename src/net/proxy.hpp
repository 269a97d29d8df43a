// The in-process proxy of filtered mode (docs/security.md "Filtered network"): one listening socket,
// created inside the sandbox's network namespace and passed to the supervisor, served
// from the host's namespace by an Asio event loop on a thread of the supervisor.
//
// One port, told apart by the first byte:
//   0x05        SOCKS5, no authentication, CONNECT with a domain name (ATYP 3). IP
//               addresses (ATYP 1, 4), BIND, UDP ASSOCIATE and other methods are refused
//               with the matching SOCKS reply.
//   0x04        SOCKS4: refused (reply 91) and closed.
//   otherwise   HTTP/1.1: CONNECT host:port (a tunnel), or an absolute-form request
//               "GET http://host/path HTTP/1.1" forwarded in origin form, with
//               keep-alive and chunked bodies both ways. Other request forms get 400.
// Every request is decided by NetPolicy on the host the client named, resolved (or
// mapped by --resolve), put through the address check, then connected. A refusal is an
// HTTP 403 (a one-line text/plain body with the reason) or a SOCKS error. Tunnelled
// bytes are relayed with splice(2) through a pipe per direction.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "net/rules.hpp"
#include "net/secrets.hpp"
#include "net/tls.hpp"

namespace zb::net {

// One decision, for --debug, --status-fd `net` events and the summary at exit. Recorded once
// the addresses are known: refused by the name, refused because the address check refused
// every address (the reason of the last one), or allowed. A name that does not resolve counts
// as allowed (the policy let it through; the client gets 502 or SOCKS reply 4). A kept
// upstream connection is decided again, and recorded, for every request sent over it.
struct NetEvent {
  std::string host;
  std::uint16_t port = 0;
  bool allowed = false;
  std::string reason;  // why it was refused, or "" when allowed
};

// Secrets (secrets.hpp): the connections to a host with an approved secret are intercepted.
// A CONNECT or SOCKS5 tunnel to such a host whose first byte is a TLS handshake record is
// terminated with a leaf certificate of `ca` for the name the client asked for, and a new
// TLS connection to the upstream server is verified against the system's trust store (plus
// --upstream-ca) and that name; any other first byte is taken as plain HTTP. Inside, requests
// must name the same host (Host header, or an absolute-form target); placeholders are
// substituted in each request and values scrubbed from each response (secrets.hpp). The
// plain-HTTP forward proxy does the same for requests to such a host.
struct ProxySecrets {
  SecretSet secrets;
  CertAuthority ca;
  TlsContexts tls;
};

struct ProxyStats {
  std::uint64_t allowed = 0;
  std::uint64_t denied = 0;
};

class Proxy {
 public:
  // listen_fd: a listening TCP socket (taken over; closed at once if Asio cannot use it, which
  // is logged). on_event runs on the proxy thread and must not call stop().
  Proxy(int listen_fd, NetPolicy policy, std::function<void(const NetEvent&)> on_event,
        std::optional<ProxySecrets> secrets = std::nullopt);
  ~Proxy();  // stops and joins
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // Starts serving on a thread of its own, with SIGPIPE blocked on it. Raises the process's
  // soft RLIMIT_NOFILE to the hard limit: a tunnel holds six descriptors (two sockets, two
  // pipes). Timeouts: 30 s for a request head (SOCKS handshake included, and between
  // keep-alive requests), 30 s to connect upstream; tunnels and responses have none.
  void start();
  // Stops accepting, closes every connection, joins the thread. Idempotent. A name lookup in
  // progress (getaddrinfo on Asio's resolver thread) is waited for.
  void stop();
  ProxyStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace zb::net
