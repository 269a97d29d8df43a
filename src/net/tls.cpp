#include "net/tls.hpp"

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>

#include "util/ca_bundle.hpp"

namespace zb::net {

void OpensslFree::operator()(X509* p) const { X509_free(p); }
void OpensslFree::operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
void OpensslFree::operator()(SSL_CTX* p) const { SSL_CTX_free(p); }

std::string openssl_error(const std::string& fallback) {
  unsigned long last = 0;
  while (unsigned long e = ERR_get_error()) last = e;
  if (last == 0) return fallback;
  char buf[256];
  ERR_error_string_n(last, buf, sizeof buf);
  return buf;
}

namespace {

constexpr long k_backdate = 3600;              // clocks differ a little
constexpr long k_lifetime = 365L * 24 * 3600;  // a run never lasts a year
constexpr std::size_t k_max_leaves = 4096;

std::unexpected<SysError> ssl_fail(const std::string& what) { return fail_msg(openssl_error(what)); }

PkeyPtr new_key() { return PkeyPtr(EVP_EC_gen("P-256")); }

bool random_serial(X509* cert) {
  std::unique_ptr<BIGNUM, decltype(&BN_free)> bn(BN_new(), BN_free);
  // 127 random bits with the top bit clear: positive and at most 16 bytes (RFC 5280 4.1.2.2).
  if (!bn || BN_rand(bn.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1) return false;
  ASN1_INTEGER* serial = X509_get_serialNumber(cert);
  return BN_to_ASN1_INTEGER(bn.get(), serial) != nullptr;
}

bool add_ext(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return false;
  bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

bool set_name(X509_NAME* name, const std::string& cn) {
  auto text = [](const std::string& s) { return reinterpret_cast<const unsigned char*>(s.c_str()); };
  return X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, text("zerobox"), -1, -1, 0) == 1 &&
         X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, text(cn), -1, -1, 0) == 1;
}

// A certificate with the common fields set, not yet extended or signed.
X509Ptr new_cert(EVP_PKEY* key, const std::string& cn, X509* issuer) {
  X509Ptr cert(X509_new());
  if (!cert || X509_set_version(cert.get(), X509_VERSION_3) != 1 || !random_serial(cert.get())) return nullptr;
  if (X509_gmtime_adj(X509_getm_notBefore(cert.get()), -k_backdate) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(cert.get()), k_lifetime) == nullptr)
    return nullptr;
  if (X509_set_pubkey(cert.get(), key) != 1 || !set_name(X509_get_subject_name(cert.get()), cn)) return nullptr;
  X509_NAME* issuer_name = issuer ? X509_get_subject_name(issuer) : X509_get_subject_name(cert.get());
  if (X509_set_issuer_name(cert.get(), issuer_name) != 1) return nullptr;
  return cert;
}

std::string to_pem(X509* cert) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return {};
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return n > 0 ? std::string(data, static_cast<std::size_t>(n)) : std::string();
}

bool alpn_http11(SSL_CTX* ctx, bool server) {
  static const unsigned char k_protos[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  if (!server) return SSL_CTX_set_alpn_protos(ctx, k_protos, sizeof k_protos) == 0;
  // A client that offers ALPN without http/1.1 (h2 only) gets no protocol selected, and
  // either speaks HTTP/1.1 anyway or gives up; the handshake itself goes on.
  SSL_CTX_set_alpn_select_cb(
      ctx,
      [](SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned inlen, void*) {
        unsigned char* selected = nullptr;
        int r = SSL_select_next_proto(&selected, outlen, k_protos, sizeof k_protos, in, inlen);
        if (r != OPENSSL_NPN_NEGOTIATED) return SSL_TLSEXT_ERR_NOACK;
        *out = selected;
        return SSL_TLSEXT_ERR_OK;
      },
      nullptr);
  return true;
}

// Whether the default certificate directory ($SSL_CERT_DIR or OpenSSL's) holds c_rehash
// links ("5ad8a5d6.0"), which the directory lookup needs.
bool hashed_cert_dir() {
  const char* env = std::getenv(X509_get_default_cert_dir_env());
  std::string dir = env != nullptr ? env : X509_get_default_cert_dir();
  if (dir.find(':') != std::string::npos) return false;  // a list: leave it to OpenSSL
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n.size() == 10 && n.substr(8) == ".0" && n.find_first_not_of("0123456789abcdef") == 8) {
      found = true;
      break;
    }
  }
  ::closedir(d);
  return found;
}

// Whether $SSL_CERT_FILE names a file other than the system's bundle (which the hashed
// directory mirrors, update-ca-certificates writing both).
bool custom_cert_file() {
  const char* env = std::getenv(X509_get_default_cert_file_env());
  if (env == nullptr || *env == '\0') return false;
  char* real = ::realpath(env, nullptr);
  if (real == nullptr) return true;
  std::string r = real;
  std::free(real);
  for (const auto& p : system_bundle_paths()) {
    char* sys = ::realpath(p.c_str(), nullptr);
    bool same = sys != nullptr && r == sys;
    std::free(sys);
    if (same) return false;
  }
  return true;
}

}  // namespace

Result<CertAuthority> CertAuthority::create(const std::string& label) {
  CertAuthority ca;
  ca.m_ca_key = new_key();
  ca.m_leaf_key = new_key();
  if (!ca.m_ca_key || !ca.m_leaf_key) return ssl_fail("cannot generate a key for the run's certificate authority");
  ca.m_ca = new_cert(ca.m_ca_key.get(), "zerobox run CA " + label, nullptr);
  if (!ca.m_ca) return ssl_fail("cannot create the run's CA certificate");
  X509* c = ca.m_ca.get();
  if (!add_ext(c, c, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
      !add_ext(c, c, NID_key_usage, "critical,keyCertSign,cRLSign") ||
      !add_ext(c, c, NID_subject_key_identifier, "hash") ||
      !add_ext(c, c, NID_authority_key_identifier, "keyid:always"))
    return ssl_fail("cannot add extensions to the run's CA certificate");
  if (X509_sign(c, ca.m_ca_key.get(), EVP_sha256()) == 0) return ssl_fail("cannot sign the run's CA certificate");
  ca.m_ca_pem = to_pem(c);
  if (ca.m_ca_pem.empty()) return ssl_fail("cannot encode the run's CA certificate");
  return ca;
}

Result<X509*> CertAuthority::leaf(const HostPort& host) {
  if (auto it = m_leaves.find(host.host); it != m_leaves.end()) return it->second.get();
  // A bounded cache: with a wildcard rule every name under it could add one. Connections
  // hold their own reference (SSL_use_certificate), so dropping the cache is safe.
  if (m_leaves.size() >= k_max_leaves) m_leaves.clear();
  // The host went through the strict grammar of host.hpp: letters, digits, '-', '_', '.'
  // or an IP literal, so it cannot break out of the configuration value below.
  std::string san = (host.kind == HostKind::Name ? "DNS:" : "IP:") + host.host;
  X509Ptr cert = new_cert(m_leaf_key.get(), host.host.size() <= 64 ? host.host : "zerobox leaf", m_ca.get());
  if (!cert) return ssl_fail("cannot create a certificate for " + host.host);
  X509* c = cert.get();
  if (!add_ext(c, m_ca.get(), NID_subject_alt_name, san) ||
      !add_ext(c, m_ca.get(), NID_basic_constraints, "critical,CA:FALSE") ||
      !add_ext(c, m_ca.get(), NID_key_usage, "critical,digitalSignature") ||
      !add_ext(c, m_ca.get(), NID_ext_key_usage, "serverAuth") ||
      !add_ext(c, m_ca.get(), NID_subject_key_identifier, "hash") ||
      !add_ext(c, m_ca.get(), NID_authority_key_identifier, "keyid:always"))
    return ssl_fail("cannot add extensions to the certificate for " + host.host);
  if (X509_sign(c, m_ca_key.get(), EVP_sha256()) == 0) return ssl_fail("cannot sign the certificate for " + host.host);
  auto [it, inserted] = m_leaves.emplace(host.host, std::move(cert));
  return it->second.get();
}

Result<TlsContexts> make_tls_contexts(const std::vector<std::string>& upstream_ca) {
  TlsContexts t;
  t.server.reset(SSL_CTX_new(TLS_server_method()));
  t.client.reset(SSL_CTX_new(TLS_client_method()));
  if (!t.server || !t.client) return ssl_fail("cannot create a TLS context");
  for (SSL_CTX* ctx : {t.server.get(), t.client.get()}) {
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) return ssl_fail("cannot set the TLS versions");
    // No renegotiation, no compression: neither is needed, both have a history.
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  }
  if (!alpn_http11(t.server.get(), true) || !alpn_http11(t.client.get(), false)) return ssl_fail("cannot set up ALPN");
  SSL_CTX_set_verify(t.client.get(), SSL_VERIFY_PEER, nullptr);
  // The system's trust: the hashed certificate directory where there is one, which OpenSSL
  // reads one certificate at a time as verification needs it. Parsing the whole bundle
  // file up front (SSL_CTX_set_default_verify_paths) costs 30 ms of OpenSSL 3's decoders on
  // every run with secrets. $SSL_CERT_FILE and $SSL_CERT_DIR are honoured either way.
  if (hashed_cert_dir() && !custom_cert_file()) {
    if (SSL_CTX_set_default_verify_dir(t.client.get()) != 1) return ssl_fail("cannot use the system's CA directory");
  } else if (SSL_CTX_set_default_verify_paths(t.client.get()) != 1) {
    return ssl_fail("cannot load the system's CA certificates");
  }
  for (const auto& file : upstream_ca) {
    if (SSL_CTX_load_verify_locations(t.client.get(), file.c_str(), nullptr) != 1)
      return fail_msg("--upstream-ca " + file + ": " + openssl_error("no certificate could be read"));
  }
  return t;
}

const std::vector<std::string>& system_bundle_paths() { return ca_bundle::system_paths(); }

std::vector<std::string> present_bundle_paths() { return ca_bundle::present_paths(); }

Result<std::string> trust_bundle(const std::string& ca_pem) {
  auto present = present_bundle_paths();
  std::ifstream in(present.empty() ? std::string() : present.front(), std::ios::binary);
  if (in) {
    std::ostringstream ss;
    ss << in.rdbuf();
    std::string out = ss.str();
    if (!out.empty() && out.back() != '\n') out += '\n';
    out += "# zerobox: this run's certificate authority (secrets)\n";
    return out + ca_pem;
  }
  std::string tried;
  for (const auto& p : system_bundle_paths()) tried += (tried.empty() ? "" : ", ") + p;
  return fail_msg("secrets need the system's CA bundle, and none was found (tried " + tried +
                  "; on Debian: apt install ca-certificates)");
}

}  // namespace zb::net
