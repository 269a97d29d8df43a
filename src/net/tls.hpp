// The per-run certificate authority of secrets (docs/security.md "Secrets"): a CA key and
// certificate made in memory at start-up with OpenSSL 3, and leaf certificates signed by it
// for the hosts whose TLS the proxy terminates. Nothing here is ever written to disk; the
// sandbox receives only the CA certificate, inside its trust bundle.
//
// Keys are ECDSA P-256 (one for the CA, one shared by every leaf of the run). The CA carries
// basicConstraints CA:TRUE (critical, pathlen 0), keyUsage keyCertSign and cRLSign
// (critical) and a subject key identifier; each leaf carries subjectAltName (DNS or IP),
// basicConstraints CA:FALSE, keyUsage digitalSignature, extendedKeyUsage serverAuth, SKI and
// AKI, which is what strict verifiers (Python 3.13's VERIFY_X509_STRICT) require.
#pragma once

#include <openssl/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "net/host.hpp"
#include "util/error.hpp"

namespace zb::net {

struct OpensslFree {
  void operator()(X509* p) const;
  void operator()(EVP_PKEY* p) const;
  void operator()(SSL_CTX* p) const;
};
using X509Ptr = std::unique_ptr<X509, OpensslFree>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, OpensslFree>;
using SslCtxPtr = std::unique_ptr<SSL_CTX, OpensslFree>;

// The most recent OpenSSL error as text ("error:0A000086:SSL routines::certificate verify
// failed"), emptying the thread's error queue; `fallback` when the queue is empty.
std::string openssl_error(const std::string& fallback);

class CertAuthority {
 public:
  // A new CA, valid from an hour ago for a year; `label` goes in its common name.
  static Result<CertAuthority> create(const std::string& label);

  const std::string& ca_pem() const { return m_ca_pem; }
  X509* ca_cert() const { return m_ca.get(); }

  // The leaf certificate for a host name or IP literal, made on first use and cached. The
  // private key of every leaf is leaf_key(). Not thread-safe: the proxy calls it from its
  // one event-loop thread.
  Result<X509*> leaf(const HostPort& host);
  EVP_PKEY* leaf_key() const { return m_leaf_key.get(); }

 private:
  PkeyPtr m_ca_key;
  X509Ptr m_ca;
  std::string m_ca_pem;
  PkeyPtr m_leaf_key;
  std::map<std::string, X509Ptr> m_leaves;
};

// The TLS contexts of the proxy: `server` terminates the client's TLS (certificates are set
// per connection), `client` verifies upstream servers against the system's trust store plus
// the --upstream-ca files. Both speak TLS 1.2 and 1.3 and offer or accept only http/1.1
// in ALPN.
struct TlsContexts {
  SslCtxPtr server;
  SslCtxPtr client;
};
Result<TlsContexts> make_tls_contexts(const std::vector<std::string>& upstream_ca);

// The trust bundle shown inside the sandbox: the system's CA bundle (the first of
// present_bundle_paths()) followed by the run's CA. Fails if no system bundle
// can be read.
Result<std::string> trust_bundle(const std::string& ca_pem);

// The places distributions keep their CA bundle (util/ca_bundle.hpp); those present on this
// host are covered by the sandbox's bundle. The first one present is the one the
// environment variables name.
const std::vector<std::string>& system_bundle_paths();
// Those of system_bundle_paths() that are readable regular files here (symlinks followed),
// in the same order: the first is the one trust_bundle() reads and the variables name.
std::vector<std::string> present_bundle_paths();

}  // namespace zb::net
