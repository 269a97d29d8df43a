// Tests for src/net/secrets.cpp and src/net/tls.cpp
#include <doctest/doctest.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <zlib.h>

#include <algorithm>
#include <string>

#include "net/secrets.hpp"
#include "net/tls.hpp"
#include "util/text.hpp"

using namespace zb;
using namespace zb::net;

namespace {

SecretEntry entry(const std::string& key, const std::string& value, std::vector<std::string> hosts = {}) {
  SecretEntry e{key, *make_placeholder(), value, {}};
  for (const auto& h : hosts) e.hosts.push_back(*parse_rule(h));
  return e;
}

HostPort hostport(const std::string& s) { return *parse_authority(s, true); }

}  // namespace

TEST_CASE("placeholders are the prefix and 64 random hex digits") {
  auto a = make_placeholder(), b = make_placeholder();
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->size() == k_placeholder_prefix.size() + 64);
  CHECK(a->starts_with(k_placeholder_prefix));
  CHECK(*a != *b);
}

TEST_CASE("secret values that would break a header line are refused") {
  CHECK(invalid_secret_value("") != "");
  CHECK(invalid_secret_value("a\r\nb") != "");
  CHECK(invalid_secret_value(std::string("a\0b", 3)) != "");
  CHECK(invalid_secret_value("a\x7f") != "");
  CHECK(invalid_secret_value("sk-abc\tdef ghi") == "");
}

TEST_CASE("a secret applies to its --secret-host rules, or to every allowed host") {
  // The policy of --allow-net and --deny-net alone, as run.cpp makes it.
  auto allow_net = NetPolicy::make({"allowed.com", "*.wild.com"}, {"denied.api.com"}, {}, false);
  REQUIRE(allow_net);
  SecretSet set({entry("A", "value-aaaa", {"api.com", "*.api.com:443"}), entry("B", "value-bbbb")}, *allow_net);
  auto keys = [&](const std::string& hp) {
    std::string out;
    for (const auto* e : set.for_host(hostport(hp))) out += e->key;
    return out;
  };
  CHECK(keys("api.com:443") == "A");           // B: api.com is not in --allow-net
  CHECK(keys("api.com:80") == "A");
  CHECK(keys("x.api.com:443") == "A");
  CHECK(keys("x.api.com:80") == "");           // the rule's port
  CHECK(keys("denied.api.com:443") == "");     // --deny-net wins
  CHECK(keys("allowed.com:443") == "B");       // no rules: every host --allow-net allows
  CHECK(keys("a.wild.com:443") == "B");
  CHECK(keys("other.com:443") == "");
  CHECK(keys("notapi.com:443") == "");

  // A bare --allow-net (or -A): a secret without rules applies everywhere but the denied.
  auto all = NetPolicy::make({}, {"evil.com"}, {}, true);
  REQUIRE(all);
  SecretSet everywhere({entry("C", "value-cccc")}, *all);
  CHECK(everywhere.for_host(hostport("any.org:443")).size() == 1);
  CHECK(everywhere.for_host(hostport("evil.com:443")).empty());
}

TEST_CASE("substitution: target, headers and Basic credentials, only approved placeholders") {
  auto a = entry("A", "s3cret value/é");
  auto b = entry("B", "other-secret");
  Approved only_a{&a};
  std::string pa = a.placeholder, pb = b.placeholder;

  CHECK(substitute("Bearer " + pa, only_a) == "Bearer s3cret value/é");
  CHECK(substitute(pa + pa, only_a) == "s3cret value/és3cret value/é");
  CHECK(substitute("Bearer " + pb, only_a) == "Bearer " + pb);  // not approved: untouched
  CHECK(substitute("x" + std::string(k_placeholder_prefix) + "zz", only_a) == "x" + std::string(k_placeholder_prefix) + "zz");
  CHECK(substitute("Bearer " + pa, {}) == "Bearer " + pa);

  // In a request target, what may not appear there is percent-encoded.
  // In a request target every byte of the value is percent-encoded.
  auto pct = entry("P", "a%4+b/");
  CHECK(substitute_target("/q?k=" + pct.placeholder + "&x=1", {&pct}) == "/q?k=%61%25%34%2B%62%2F&x=1");
  CHECK(substitute_target("/v1?key=" + pa, only_a).find("%C3%A9") != std::string::npos);

  // A placeholder right after an unfinished escape is refused; after a finished one it is fine.
  for (std::string bad : {"%", "%2", "\\", "\\x", "\\x4", "\\u", "\\u0", "\\u00", "\\u004", "&#", "&#1", "&#x", "&#x2"}) {
    CHECK_MESSAGE(escaped_placeholder("q=" + bad + pa, only_a) != "", bad);
    CHECK(escaped_placeholder("q=" + bad + pb, only_a) == "");  // not an approved placeholder
  }
  for (std::string fine : {"", "=", "%3D", "%20", "\\x41", "\\u0041", "&amp;", "Bearer "})
    CHECK_MESSAGE(escaped_placeholder("q=" + fine + pa, only_a) == "", fine);

  // The forms an echoing server may use, for the scrubber.
  auto forms = echo_forms("a/b c+é");
  auto has = [&](const std::string& f) { return std::find(forms.begin(), forms.end(), f) != forms.end(); };
  CHECK(has("%61%2F%62%20%63%2B%C3%A9"));
  CHECK(has("%61%2f%62%20%63%2b%c3%a9"));
  CHECK(has("a%2Fb%20c%2B%C3%A9"));
  CHECK(has("a%2Fb+c%2B%C3%A9"));
  CHECK(has("a\\/b c+é"));
  CHECK(has("a\\u002Fb\\u0020c\\u002B\\u00C3\\u00A9"));

  // Basic credentials: inside the base64.
  std::string creds = text::base64("user:" + pa);
  std::string out = substitute_field("Authorization", "Basic " + creds, only_a);
  REQUIRE(out.starts_with("Basic "));
  CHECK(*text::unbase64(out.substr(6)) == "user:s3cret value/é");
  CHECK(substitute_field("authorization", "basic " + text::base64("u:" + pb), only_a) == "basic " + text::base64("u:" + pb));
  CHECK(substitute_field("X-Api-Key", pa, only_a) == "s3cret value/é");
}

TEST_CASE("responses are scrubbed of values, also split across reads") {
  auto a = entry("A", "0123456789abcdef");
  auto shortv = entry("S", "abc");
  Approved subs{&a, &shortv};
  Redactor red(subs);
  CHECK(red.active());
  CHECK(red.redact("x0123456789abcdefy abc") == "x" + a.placeholder + "y abc");  // short values stay

  // Every split point of a value across two reads, and a value at the very end.
  std::string body = "head 0123456789abcdef middle 0123456789abcdef";
  for (std::size_t cut = 0; cut <= body.size(); ++cut) {
    Redactor r(subs);
    std::string out = r.feed(body.substr(0, cut));
    out += r.feed(body.substr(cut));
    out += r.finish();
    CHECK(out == "head " + a.placeholder + " middle " + a.placeholder);
  }
  // Byte by byte.
  Redactor r(subs);
  std::string out;
  for (char ch : body) out += r.feed(std::string(1, ch));
  out += r.finish();
  CHECK(out == "head " + a.placeholder + " middle " + a.placeholder);
  // A partial value at the end is not a value.
  Redactor p(subs);
  std::string partial = p.feed("x0123456789abcde");
  partial += p.finish();
  CHECK(partial == "x0123456789abcde");

  // One value inside another: the longer one wins wherever the cut falls.
  auto inner = entry("I", "id-12345678");
  auto outer = entry("O", "x:id-12345678:pw-secret");
  Approved nested{&inner, &outer};
  std::string echo = "a x:id-12345678:pw-secret b id-12345678 c";
  std::string want = "a " + outer.placeholder + " b " + inner.placeholder + " c";
  CHECK(Redactor(nested).redact(echo) == want);
  for (std::size_t cut = 0; cut <= echo.size(); ++cut) {
    for (std::size_t step = 1; step <= 7; step += 3) {
      Redactor r2(nested);
      std::string got = r2.feed(echo.substr(0, cut));
      for (std::size_t i = cut; i < echo.size(); i += step) got += r2.feed(echo.substr(i, step));
      got += r2.finish();
      CHECK(got == want);
    }
  }

  // Other forms of the value, added explicitly.
  Redactor f(subs);
  f.add("dXNlcjowMTIzNDU2Nzg5YWJjZGVm", "dXNlcjpaRVJPQk9Y");
  CHECK(f.redact("Basic dXNlcjowMTIzNDU2Nzg5YWJjZGVm") == "Basic dXNlcjpaRVJPQk9Y");
}

TEST_CASE("the run's CA and its leaf certificates carry what strict verifiers require") {
  auto ca = CertAuthority::create("test");
  REQUIRE(ca);
  CHECK(ca->ca_pem().starts_with("-----BEGIN CERTIFICATE-----"));
  X509* root = ca->ca_cert();
  CHECK(X509_check_ca(root) == 1);
  CHECK((X509_get_key_usage(root) & KU_KEY_CERT_SIGN) != 0);
  CHECK(X509_get0_subject_key_id(root) != nullptr);

  auto leaf = ca->leaf(*parse_host("api.example.com"));
  REQUIRE(leaf);
  auto again = ca->leaf(*parse_host("api.example.com"));
  CHECK(*again == *leaf);  // cached
  X509* l = *leaf;
  CHECK(X509_check_ca(l) == 0);
  CHECK(X509_check_host(l, "api.example.com", 0, 0, nullptr) == 1);
  CHECK(X509_check_host(l, "other.example.com", 0, 0, nullptr) == 0);
  CHECK(X509_get0_subject_key_id(l) != nullptr);
  CHECK(X509_get0_authority_key_id(l) != nullptr);
  CHECK((X509_get_extended_key_usage(l) & XKU_SSL_SERVER) != 0);
  CHECK(X509_check_private_key(l, ca->leaf_key()) == 1);

  // It verifies against the CA alone, strictly.
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, root);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, l, nullptr);
  X509_VERIFY_PARAM_set_flags(X509_STORE_CTX_get0_param(ctx), X509_V_FLAG_X509_STRICT);
  CHECK(X509_verify_cert(ctx) == 1);
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);

  auto ip = ca->leaf(*parse_host("127.0.0.1"));
  REQUIRE(ip);
  CHECK(X509_check_ip_asc(*ip, "127.0.0.1", 0) == 1);
}

TEST_CASE("TLS contexts and the trust bundle") {
  auto t = make_tls_contexts({});
  REQUIRE(t);
  CHECK(t->server);
  CHECK(t->client);
  auto bad = make_tls_contexts({"/nonexistent/ca.pem"});
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message().find("--upstream-ca /nonexistent/ca.pem") != std::string::npos);
  auto ca = CertAuthority::create("test");
  REQUIRE(ca);
  auto bundle = trust_bundle(ca->ca_pem());
  if (bundle) CHECK(bundle->ends_with(ca->ca_pem()));
}

namespace {
// zlib's own compressor: window_bits 31 for gzip, 15 for zlib, -15 for raw deflate.
std::string compress(const std::string& in, int window_bits) {
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&zs, in.size()) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::string decode_in_pieces(const std::vector<std::string>& codings, const std::string& body, std::size_t step) {
  auto d = Decoder::for_coding(codings);
  REQUIRE(d);
  REQUIRE(d->has_value());
  std::string out;
  for (std::size_t i = 0; i < body.size(); i += step) {
    auto part = (**d).feed(std::string_view(body).substr(i, step));
    REQUIRE(part);
    out += *part;
  }
  return out;
}
}  // namespace

TEST_CASE("compressed responses are decoded to be scrubbed") {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "line " + std::to_string(i) + " Authorization: Bearer s3cret-value\n";
  for (std::size_t step : {1ul, 7ul, 4096ul, 1000000ul}) {
    CHECK(decode_in_pieces({"gzip"}, compress(text, 31), step) == text);
    CHECK(decode_in_pieces({"x-gzip"}, compress(text, 31), step) == text);
    CHECK(decode_in_pieces({"deflate"}, compress(text, 15), step) == text);
  }
  CHECK(decode_in_pieces({"deflate"}, compress(text, -15), 4096) == text);               // raw, as some servers send
  CHECK(decode_in_pieces({"gzip"}, compress("ab", 31) + compress("cd", 31), 3) == "abcd");  // two gzip members

  auto none = Decoder::for_coding({});
  REQUIRE(none);
  CHECK_FALSE(none->has_value());
  auto identity = Decoder::for_coding({"identity"});
  REQUIRE(identity);
  CHECK_FALSE(identity->has_value());
  for (std::vector<std::string> bad : {std::vector<std::string>{"br"}, {"zstd"}, {"gzip", "br"}, {"gzip", "gzip"}}) {
    auto d = Decoder::for_coding(bad);
    REQUIRE_FALSE(d);
    CHECK(d.error().message().starts_with("Content-Encoding"));
  }
  auto corrupt = Decoder::for_coding({"gzip"});
  REQUIRE(corrupt);
  CHECK_FALSE((**corrupt).feed("this is not gzip at all"));
}
