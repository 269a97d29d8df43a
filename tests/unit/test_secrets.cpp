// Tests for src/net/secrets.cpp, secret_codecs.cpp, secret_scrubber.cpp and tls.cpp
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
  // The policy of --allow-net and --deny-net alone, as run/run.cpp makes it.
  auto allow_net = NetPolicy::make({"allowed.com", "*.wild.com"}, {"denied.api.com"}, {}, false);
  REQUIRE(allow_net);
  SecretSet set({entry("A", "value-aaaa", {"api.com", "*.api.com:443"}), entry("B", "value-bbbb")}, *allow_net);
  auto keys = [&](const std::string& hp) {
    std::string out;
    for (const auto* e : set.for_host(hostport(hp))) out += e->key;
    return out;
  };
  CHECK(keys("api.com:443") == "A");  // B: api.com is not in --allow-net
  CHECK(keys("api.com:80") == "A");
  CHECK(keys("x.api.com:443") == "A");
  CHECK(keys("x.api.com:80") == "");        // the rule's port
  CHECK(keys("denied.api.com:443") == "");  // --deny-net wins
  CHECK(keys("allowed.com:443") == "B");    // no rules: every host --allow-net allows
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
  CHECK(substitute("x" + std::string(k_placeholder_prefix) + "zz", only_a) ==
        "x" + std::string(k_placeholder_prefix) + "zz");
  CHECK(substitute("Bearer " + pa, {}) == "Bearer " + pa);

  // In a request target a value stands as it is where its bytes may; the rest is
  // percent-encoded, by what the path and the query give a meaning to.
  auto pct = entry("P", "a%4+b/;&=~");
  CHECK(substitute_target("/v/" + pct.placeholder + "/x?k=" + pct.placeholder + "&x=1", {&pct}) ==
        "/v/a%254+b%2F%3B&=~/x?k=a%254%2Bb/%3B%26%3D~&x=1");
  auto alnum = entry("N", "sk-Abc_123.xyz~9");
  CHECK(substitute_target("/v1/" + alnum.placeholder + "?key=" + alnum.placeholder, {&alnum}) ==
        "/v1/sk-Abc_123.xyz~9?key=sk-Abc_123.xyz~9");
  CHECK(substitute_target("/v1?key=" + pa, only_a) == "/v1?key=s3cret%20value/%C3%A9");
  CHECK(substitute_target("/" + pa, only_a) == "/s3cret%20value%2F%C3%A9");
  auto marks = entry("M", "!$'()*,:@?#[]\\ \"<>`{|}^");
  CHECK(substitute_target("/" + marks.placeholder + "?" + marks.placeholder, {&marks}) ==
        "/!$'()*,:@%3F%23%5B%5D%5C%20%22%3C%3E%60%7B%7C%7D%5E?!$'()*,:@?%23%5B%5D%5C%20%22%3C%3E%60%7B%7C%7D%5E");

  // A placeholder right after an unfinished escape is refused; after a finished one it is fine.
  for (std::string bad :
       {"%", "%2", "\\", "\\x", "\\x4", "\\u", "\\u0", "\\u00", "\\u004", "&#", "&#1", "&#x", "&#x2"}) {
    CHECK_MESSAGE(escaped_placeholder("q=" + bad + pa, only_a) != "", bad);
    CHECK(escaped_placeholder("q=" + bad + pb, only_a) == "");  // not an approved placeholder
  }
  for (std::string fine : {"", "=", "%3D", "%20", "\\x41", "\\u0041", "&amp;", "Bearer "})
    CHECK_MESSAGE(escaped_placeholder("q=" + fine + pa, only_a) == "", fine);

  // Basic credentials: inside the base64.
  std::string creds = text::base64("user:" + pa);
  std::string out = substitute_field("Authorization", "Basic " + creds, only_a);
  REQUIRE(out.starts_with("Basic "));
  CHECK(*text::unbase64(out.substr(6)) == "user:s3cret value/é");
  CHECK(substitute_field("authorization", "basic " + text::base64("u:" + pb), only_a) ==
        "basic " + text::base64("u:" + pb));
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

namespace {

// Encoders written here, apart from the scrubber, the way servers encode what they reflect.
constexpr char k_upper[] = "0123456789ABCDEF";
constexpr char k_lower[] = "0123456789abcdef";

std::string hex2(unsigned char u, const char* hex) { return {hex[u >> 4], hex[u & 15]}; }

bool alnum(unsigned char u) { return (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9'); }

// Python's urllib.parse.quote(v, safe) (upper case hex); quote_plus: spaces as '+'.
std::string quote(std::string_view v, std::string_view safe = "/", bool plus = false, const char* hex = k_upper) {
  std::string out;
  for (char ch : v) {
    auto u = static_cast<unsigned char>(ch);
    if (alnum(u) || std::string_view("_.-~").find(ch) != std::string_view::npos ||
        safe.find(ch) != std::string_view::npos)
      out += ch;
    else if (plus && ch == ' ') out += '+';
    else out += "%" + hex2(u, hex);
  }
  return out;
}

// The code points of UTF-8 text.
std::vector<std::uint32_t> code_points(std::string_view v) {
  std::vector<std::uint32_t> out;
  for (std::size_t i = 0; i < v.size();) {
    auto u = static_cast<unsigned char>(v[i]);
    std::size_t n = u < 0x80 ? 1 : u < 0xe0 ? 2 : u < 0xf0 ? 3 : 4;
    std::uint32_t cp = n == 1 ? u : u & (0xffu >> (n + 1));
    for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(v[i + k]) & 0x3f);
    out.push_back(cp);
    i += n;
  }
  return out;
}

std::string u_escape(std::uint32_t cp, const char* hex) {
  auto four = [&](std::uint32_t c) {
    return std::string("\\u") + hex[(c >> 12) & 15] + hex[(c >> 8) & 15] + hex[(c >> 4) & 15] + hex[c & 15];
  };
  if (cp < 0x10000) return four(cp);
  cp -= 0x10000;
  return four(0xd800 + (cp >> 10)) + four(0xdc00 + (cp & 0x3ff));
}

std::string code_points_utf8(std::uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xc0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xe0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    s += static_cast<char>(0xf0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  }
  return s;
}

// JSON as Go writes it (\" \\, and \u00XX for < > &), as Python's json.dumps does (\uXXXX
// for non-ASCII), as PHP does ("\/" too), and with every character \u-escaped.
enum class Json { go, python, php, every };
std::string json(std::string_view v, Json how) {
  std::string out;
  bool upper = false;
  for (std::uint32_t cp : code_points(v)) {
    upper = !upper;
    if (how == Json::every) {
      out += u_escape(cp, upper ? k_upper : k_lower);
    } else if (cp == '"' || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (how == Json::go && (cp == '<' || cp == '>' || cp == '&')) {
      out += u_escape(cp, k_lower);
    } else if (how == Json::php && cp == '/') {
      out += "\\/";
    } else if (cp >= 0x80 && how != Json::go) {
      out += u_escape(cp, k_lower);
    } else {
      for (char ch : code_points_utf8(cp)) out += ch;
    }
  }
  return out;
}

}  // namespace

namespace {
// HTML: Python's html.escape, Go's html.EscapeString, and every character as a numeric
// reference (decimal or hex, with leading zeros, with or without the ';').
std::string html_python(std::string_view v) {
  std::string out;
  for (char ch : v) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#x27;"; break;
      default: out += ch;
    }
  }
  return out;
}
std::string html_go(std::string_view v) {
  std::string out;
  for (char ch : v) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += ch;
    }
  }
  return out;
}
std::string html_numeric(std::string_view v, bool hex, std::size_t zeros, bool semicolon) {
  std::string out;
  for (std::uint32_t cp : code_points(v)) {
    char buf[16];
    std::snprintf(buf, sizeof buf, hex ? "%X" : "%u", static_cast<unsigned>(cp));
    out += std::string(hex ? "&#x" : "&#") + std::string(zeros, '0') + buf;
    if (semicolon) out += ';';
  }
  return out;
}
}  // namespace

TEST_CASE("the scrubber finds a value in every encoding an echo applies, also split across reads") {
  // Every kind of byte the encodings treat differently: unreserved, reserved, space, quotes,
  // HTML's specials, a backslash, two- and four-byte UTF-8.
  const std::string value = "sk-Ab/c+d e&f<g>\"h'i\\j~=;é😀%41z";
  auto a = entry("A", value);
  Approved subs{&a};
  Redactor red(subs);
  const std::string& ph = a.placeholder;

  // A value's percent-encoding with every byte encoded, in either case.
  auto pct_all = [&](const char* hex) {
    std::string out;
    for (char ch : value) out += "%" + hex2(static_cast<unsigned char>(ch), hex);
    return out;
  };
  std::vector<std::pair<std::string, std::string>> forms = {
      {"as it is", value},
      {"every byte %XX", pct_all(k_upper)},
      {"every byte %xx", pct_all(k_lower)},
      {"quote()", quote(value)},
      {"quote(safe='')", quote(value, "")},
      {"quote(), lower-case hex", quote(value, "/", false, k_lower)},
      {"quote_plus()", quote(value, "", true)},
      {"encodeURIComponent", quote(value, "!'()*")},
      {"quote() twice (%25XX)", quote(quote(value))},
      {"every byte %XX, encoded again, lower case", quote(pct_all(k_upper), "", false, k_lower)},
      {"quote_plus() twice", quote(quote(value, "", true), "", true)},
      {"quote() then quote_plus()", quote(quote(value), "", true)},
      {"quote_plus() then quote()", quote(quote(value, "", true))},
      {"JSON, Go", json(value, Json::go)},
      {"JSON, Python", json(value, Json::python)},
      {"JSON, PHP", json(value, Json::php)},
      {"JSON, every character \\u-escaped, mixed case", json(value, Json::every)},
      {"quote() in JSON, PHP", json(quote(value), Json::php)},
      {"HTML, Python", html_python(value)},
      {"HTML, Go", html_go(value)},
      {"HTML, decimal references", html_numeric(value, false, 0, true)},
      {"HTML, hex references with leading zeros", html_numeric(value, true, 3, true)},
      {"HTML, decimal references without ';'", html_numeric(value, false, 2, false)},
      {"quote() in HTML, every character a reference", html_numeric(quote(value), true, 0, true)},
  };
  // Named references for ASCII characters, upper case ones too.
  std::string named;
  for (char ch : value) {
    switch (ch) {
      case '&': named += "&AMP;"; break;
      case '/': named += "&sol;"; break;
      case '+': named += "&plus;"; break;
      case '=': named += "&equals;"; break;
      case ';': named += "&semi;"; break;
      case '\\': named += "&bsol;"; break;
      case '<': named += "&LT;"; break;
      case '"': named += "&QUOT;"; break;
      case '\'': named += "&apos;"; break;
      case '%': named += "&percnt;"; break;
      default: named += ch;
    }
  }
  forms.emplace_back("HTML, named references", named);

  for (const auto& [what, form] : forms) {
    CAPTURE(what);
    CAPTURE(form);
    REQUIRE(form.find(ph) == std::string::npos);
    std::string body = "before " + form + " after";
    CHECK(red.redact(body) == "before " + ph + " after");
    // Cut at every place, and fed byte by byte.
    bool all_cuts = true;
    for (std::size_t cut = 0; cut <= body.size(); ++cut) {
      Redactor r(subs);
      std::string out = r.feed(body.substr(0, cut));
      out += r.feed(body.substr(cut));
      out += r.finish();
      all_cuts = all_cuts && out == "before " + ph + " after";
    }
    CHECK(all_cuts);
    Redactor r(subs);
    std::string out;
    for (char ch : body) out += r.feed(std::string(1, ch));
    out += r.finish();
    CHECK(out == "before " + ph + " after");
  }

  // Encoded three and five times (an SSO chain of redirects): for a value without a "%XX"
  // of its own, any number of layers.
  auto b = entry("B", "tok/en 123&x%zz");
  Redactor deep({&b});
  CHECK(deep.redact("<" + quote(quote(quote(b.value, ""), ""), "") + ">") == "<" + b.placeholder + ">");
  CHECK(deep.redact(quote(quote(quote(quote(quote(b.value)))), "", false, k_lower)) == b.placeholder);

  // Escapes that are not the value pass through as they are, byte for byte; a form of the
  // value among them is still found.
  std::string noise = "%41 %2541 %zz %4 &amp; &amp &#38 &#x; &#; &bogus; \\u0041 \\ud83d \\uZZ \\q + %";
  CHECK(red.redact(noise) == noise);
  CHECK(red.redact(noise + quote(quote(value)) + noise + json(value, Json::go) + "&#") ==
        noise + ph + noise + ph + "&#");
  // A near miss is not the value: one byte different in the decoded text.
  std::string near = value;
  near[3] = 'X';
  CHECK(red.redact(quote(near)) == quote(near));
  CHECK(red.redact(json(near, Json::every)) == json(near, Json::every));
  // "%41" in the value itself: the text "...%41z" is the value, its decoding "...Az" is not.
  CHECK(red.redact(value.substr(0, value.size() - 4) + "Az") == value.substr(0, value.size() - 4) + "Az");

  // Long runs of escape introducers and of partial matches stay linear and come back whole.
  std::string run(200000, '%');
  for (std::size_t i = 0; i < run.size(); i += 3) run[i] = '&';
  run += value.substr(0, value.size() - 1);
  Redactor big(subs);
  std::string got;
  for (std::size_t i = 0; i < run.size(); i += 4093) got += big.feed(std::string_view(run).substr(i, 4093));
  got += big.finish();
  CHECK(got == run);
}

TEST_CASE("the scrubber replaces overlapping finds leftmost first, the longest there") {
  // The inner value percent-encoded inside the outer one as it is: the outer starts first.
  auto inner = entry("I", "id-12345678");
  auto outer = entry("O", "x:id-12345678:pw-secret");
  Approved nested{&inner, &outer};
  Redactor red(nested);
  CHECK(red.redact("a x:id-12345678:pw-secret b") == "a " + outer.placeholder + " b");
  CHECK(red.redact("a x%3Aid-12345678%3Apw-secret b") == "a " + outer.placeholder + " b");
  CHECK(red.redact("a x%3Aid-12345678%3Apw b") == "a x%3A" + inner.placeholder + "%3Apw b");
  CHECK(red.redact("a x&#58;id&#x2D;12345678 b") == "a x&#58;" + inner.placeholder + " b");
  // A value repeated many times in one piece.
  std::string many;
  for (int i = 0; i < 1000; ++i) many += "id-12345678" + std::string(i % 2 ? "%2C" : ",");
  std::string want;
  for (int i = 0; i < 1000; ++i) want += inner.placeholder + std::string(i % 2 ? "%2C" : ",");
  Redactor r(nested);
  CHECK(r.feed(many) + r.finish() == want);
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
  CHECK(decode_in_pieces({"deflate"}, compress(text, -15), 4096) == text);                  // raw, as some servers send
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
