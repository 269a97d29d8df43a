// The proxy's HTTP/1.1 grammar (RFC 9112): request and status lines, header fields, how a
// message's body is framed, chunk-size lines, and the proxy's own error replies. Pure
// functions on strings, without I/O: the coroutines that read and relay messages on a
// connection are in http1_io.cpp. Fuzzed by tests/fuzz/fuzz_proxy.cpp.
//
// Strict: lines end in CRLF; no obs-fold; no whitespace between a field name and its colon;
// no NUL or other control bytes. A lenient parser here and a different lenient parser
// upstream is how request smuggling happens.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zb::net {

// ASCII case-insensitive equality (field names, options, schemes).
bool iequals(std::string_view a, std::string_view b);

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

  // The values of every field of that name (case-insensitive), in order.
  std::vector<std::string_view> values(std::string_view name) const;
  // The comma-separated elements of every field of that name, lowercased.
  std::vector<std::string> list(std::string_view name) const;
  bool has_option(std::string_view name, std::string_view option) const;
};

// The field lines after the start line ("Name: value\r\n" each, the last CRLF optional),
// appended to `out`. False with `why` set on the first malformed line.
bool parse_fields(std::string_view block, std::vector<Field>& out, std::string& why);

// A request head ("GET http://h/ HTTP/1.1\r\nHost: h\r\n" as read_head gives it, without the
// final empty line; the last CRLF is optional): HTTP/1.1 or HTTP/1.0 only. False with `why`
// set.
bool parse_request(std::string_view head, Message& m, std::string& why);
// A response head ("HTTP/1.1 200 OK\r\n..."); the reason phrase may be empty.
bool parse_response(std::string_view head, Message& m, std::string& why);

// Fields that describe one connection, not the message: never forwarded. The framing fields
// are never dropped because Connection names them; our relaying depends on them, and a body
// forwarded without its framing would be parsed upstream as the next request.
// connection_options: the message's Connection list (Message::list).
bool hop_by_hop(std::string_view name, const std::vector<std::string>& connection_options);

// Where a message's body ends.
struct Framing {
  enum class Kind { none, length, chunked, until_close } kind = Kind::none;
  std::uint64_t length = 0;
};

// A request's framing, or nullopt with `why` for one that two parsers could read differently
// (both Content-Length and Transfer-Encoding, a coding other than chunked last, ...).
std::optional<Framing> request_framing(const Message& m, std::string& why);
// A response's framing; head_request: the request was HEAD (no body, whatever the fields).
std::optional<Framing> response_framing(const Message& resp, bool head_request, std::string& why);

// The size on a chunk-size line ("1a" or "1a;name=value"); nullopt when the line is malformed.
std::optional<std::uint64_t> chunk_size(std::string_view line);

// A reason goes into a header field and a text body: keep it to one line of printable ASCII.
std::string clean_reason(std::string_view s);

// The proxy's own reply to a request it does not forward: `status` with a one-line
// text/plain body and an X-Zerobox-Reason field carrying `reason`, and Connection: close.
std::string error_response(int status, std::string_view reason);

}  // namespace zb::net
