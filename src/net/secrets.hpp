// Secrets (docs/usage.md "Secrets"): the sandbox holds a placeholder, ZEROBOX_SECRET_<64 hex>, and
// the proxy puts the real value in its place in requests to the secret's approved hosts: in
// the request target and in header values, including inside the base64 of Basic
// credentials. Nothing is substituted toward any other host, and never in responses; the
// other way round, responses from an approved host have the real value replaced by the
// placeholder (status line, header names and values, bodies), as it is or in the encodings
// an echoing server applies, so a server that reflects a request does not hand the value to
// the sandbox.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/rules.hpp"
#include "policy/secrets.hpp"
#include "util/error.hpp"

namespace zb::net {

using policy::k_placeholder_prefix;
// Values shorter than this are not scrubbed from responses: replacing every occurrence of a
// three-byte string would corrupt ordinary content. zerobox warns about such values.
inline constexpr std::size_t k_min_redacted = 8;

struct SecretEntry {
  std::string key;
  std::string placeholder;
  std::string value;
  std::vector<Rule> hosts;  // --secret-host; empty: every host the network policy allows
};

// The placeholder and the value's syntax are the policy's (policy/secrets.hpp).
using policy::invalid_secret_value;
using policy::make_placeholder;

class SecretSet {
 public:
  // allow_net: the policy of --allow-net and --deny-net alone (without the --secret-host
  // names, which it would otherwise allow for every secret).
  SecretSet(std::vector<SecretEntry> entries, NetPolicy allow_net);

  const std::vector<SecretEntry>& entries() const { return m_entries; }

  // The secrets approved for this host and port: those whose --secret-host rules match it,
  // and those without rules when --allow-net allows it; never a host --deny-net names. The
  // proxy terminates TLS exactly for the hosts where this is not empty.
  std::vector<const SecretEntry*> for_host(const HostPort& hp) const;

 private:
  std::vector<SecretEntry> m_entries;
  NetPolicy m_allow_net;
};

using Approved = std::vector<const SecretEntry*>;

// Every placeholder of `subs` in s replaced by its value.
std::string substitute(std::string_view s, const Approved& subs);
// The same for a request target. A value is written as it is where RFC 3986 lets its bytes
// stand for themselves, so that a server checking the raw target sees the value itself;
// every other byte is percent-encoded, so that the server decodes exactly the value. In the
// path (before the first '?') that is every byte but the unreserved ones and
// "!$&'()*+,=:@" (';' starts a path parameter for some servers); in the query, every byte
// but the unreserved ones and "!$'()*,:@/?" ('&', '=', '+' and ';' mean something to form
// decoders). '%' is always encoded, so no escape the command left unfinished before the
// placeholder ("%2") can take the value's first bytes into it.
std::string substitute_target(std::string_view target, const Approved& subs);
// Why a text (a request target or a header value) may not be substituted: an approved
// placeholder right after an unfinished escape sequence ("%", "%2", "\", "\x4", "\u00",
// "&#x", "&#1"), which a decoding server would complete with the value's first bytes,
// reflecting the value in a form no scrubber can know. "" when the text is fine.
std::string escaped_placeholder(std::string_view text, const Approved& subs);
// The same for a header value; for Authorization with the Basic scheme, also inside the
// base64 of the credentials.
std::string substitute_field(std::string_view name, std::string_view value, const Approved& subs);

// Undoes one Content-Encoding of a response body, so that it can be scrubbed: gzip (also
// "x-gzip") and deflate (zlib-wrapped, or raw as some servers send it), with zlib.
class Decoder {
 public:
  // nullopt: no decoding needed ("", "identity"); an error: a coding that cannot be undone
  // here (br, zstd, several codings stacked), named in the message.
  static Result<std::optional<Decoder>> for_coding(const std::vector<std::string>& codings);
  Decoder(Decoder&&) noexcept;
  Decoder& operator=(Decoder&&) = delete;
  ~Decoder();
  // The decoded bytes of the next piece; an error for a corrupt stream.
  Result<std::string> feed(std::string_view in);

 private:
  explicit Decoder(bool raw_fallback);
  struct Z;
  std::unique_ptr<Z> m_z;
};

// Streams text with every value (of k_min_redacted bytes or more) replaced by its
// placeholder. A value is found as it is and through decoders of the encodings servers
// apply to what they reflect, each undone as a whole, the way its own decoder reads it (so
// any byte may be escaped or not, hex in either case): percent-encoding, once (%XX) or
// more (%25XX, %2525XX: an encoded URL encoded again); the same with '+' for a space
// (forms, Python's quote_plus), once or twice; JSON string escapes (\" \\ \/ \b \f \n
// \r \t and \uHHHH, surrogate pairs included); HTML character references (the named ones
// that stand for ASCII, and &#NN; / &#xHH; with or without leading zeros or the ';'); and
// percent-encoding inside JSON or HTML. Each decoded view of the text is matched against
// every value at once (Aho-Corasick), so the work is linear in the text. Where finds
// overlap, the leftmost wins, and the longest of those starting there. Between calls it
// holds back at most the bytes that a match still open (or an escape not complete yet)
// spans; finish() returns them.
class Redactor {
 public:
  explicit Redactor(const Approved& subs);
  Redactor(Redactor&&) noexcept;
  Redactor& operator=(Redactor&&) noexcept;
  ~Redactor();
  // One more string to scrub: a form the value was sent in (the base64 of Basic credentials),
  // shown as the form the client sent. Call before feed().
  void add(std::string sent, std::string shown);
  bool active() const;
  std::string feed(std::string_view in);
  std::string finish();
  // A complete string (a header name or value, a status line).
  std::string redact(std::string_view s) const;

 private:
  struct Patterns;  // the automaton over what is scrubbed
  struct Scan;      // the state of one stream through it
  void rebuild();

  std::vector<std::pair<std::string, std::string>> m_pairs;  // found, written in its place
  std::unique_ptr<Patterns> m_patterns;
  std::unique_ptr<Scan> m_scan;
};

}  // namespace zb::net
