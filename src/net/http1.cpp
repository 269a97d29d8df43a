// The proxy's HTTP/1.1 grammar (http1.hpp): pure functions on strings.
#include "net/http1.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace zb::net {
namespace {

bool is_tchar(char ch) {
  if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(ch) != std::string_view::npos;
}

bool is_token(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar); }

char lower_char(char ch) { return ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = lower_char(ch);
  return out;
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// "a, b ,c" -> {"a", "b", "c"}, lowercased, empty elements dropped.
void split_list(std::string_view s, std::vector<std::string>& out) {
  while (!s.empty()) {
    std::size_t comma = s.find(',');
    std::string_view item = trim_ows(s.substr(0, comma));
    if (!item.empty()) out.push_back(lower(item));
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
}

std::optional<std::uint64_t> parse_length(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string_view status_text(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 502: return "Bad Gateway";
    case 504: return "Gateway Timeout";
    default: return "Error";
  }
}

}  // namespace

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower_char(x) == lower_char(y); });
}

std::vector<std::string_view> Message::values(std::string_view name) const {
  std::vector<std::string_view> out;
  for (const Field& f : fields)
    if (iequals(f.name, name)) out.push_back(f.value);
  return out;
}

std::vector<std::string> Message::list(std::string_view name) const {
  std::vector<std::string> out;
  for (const Field& f : fields)
    if (iequals(f.name, name)) split_list(f.value, out);
  return out;
}

bool Message::has_option(std::string_view name, std::string_view option) const {
  auto l = list(name);
  return std::find(l.begin(), l.end(), option) != l.end();
}

bool parse_fields(std::string_view block, std::vector<Field>& out, std::string& why) {
  while (!block.empty()) {
    std::size_t end = block.find("\r\n");
    std::string_view line = block.substr(0, end);
    block.remove_prefix(end == std::string_view::npos ? block.size() : end + 2);
    // An empty line ends a head, so inside the field block it means the caller passed
    // more than one head (read_head never does).
    if (line.empty()) {
      why = "empty line in the header block";
      return false;
    }
    if (line.front() == ' ' || line.front() == '\t') {
      why = "obsolete line folding in the header block";
      return false;
    }
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      why = "header line without a colon";
      return false;
    }
    std::string_view name = line.substr(0, colon);
    if (!is_token(name)) {
      why = "invalid header name (no whitespace is allowed before the colon)";
      return false;
    }
    std::string_view value = trim_ows(line.substr(colon + 1));
    for (char ch : value) {
      auto u = static_cast<unsigned char>(ch);
      if ((u < 0x20 && ch != '\t') || u == 0x7f) {
        why = "control character in the value of " + std::string(name);
        return false;
      }
    }
    out.push_back(Field{std::string(name), std::string(value)});
  }
  return true;
}

bool parse_request(std::string_view head, Message& m, std::string& why) {
  std::size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  std::size_t sp1 = line.find(' ');
  std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    why = "malformed request line";
    return false;
  }
  m.method = line.substr(0, sp1);
  m.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  m.version = line.substr(sp2 + 1);
  if (!is_token(m.method)) {
    why = "malformed request method";
    return false;
  }
  if (m.target.empty() ||
      !std::all_of(m.target.begin(), m.target.end(), [](char ch) { return ch > 0x20 && ch < 0x7f; })) {
    why = "malformed request target";
    return false;
  }
  if (m.version != "HTTP/1.1" && m.version != "HTTP/1.0") {
    why = "unsupported HTTP version (HTTP/1.1 or HTTP/1.0 only)";
    return false;
  }
  return parse_fields(eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2), m.fields, why);
}

bool parse_response(std::string_view head, Message& m, std::string& why) {
  std::size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  // "HTTP/1.1 200 OK"; the reason phrase may be empty, and so may the space before it.
  if (line.size() < 12 || (line.substr(0, 9) != "HTTP/1.1 " && line.substr(0, 9) != "HTTP/1.0 ") ||
      (line.size() > 12 && line[12] != ' ')) {
    why = "malformed status line from upstream";
    return false;
  }
  m.version = line.substr(0, 8);
  int status = 0;
  auto [p, ec] = std::from_chars(line.data() + 9, line.data() + 12, status);
  if (ec != std::errc() || p != line.data() + 12 || status < 100 || status > 999) {
    why = "malformed status code from upstream";
    return false;
  }
  m.status = status;
  m.status_line = line;
  for (char ch : line) {
    auto u = static_cast<unsigned char>(ch);
    if ((u < 0x20 && ch != '\t') || u == 0x7f) {
      why = "control character in the status line from upstream";
      return false;
    }
  }
  return parse_fields(eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2), m.fields, why);
}

bool hop_by_hop(std::string_view name, const std::vector<std::string>& connection_options) {
  static constexpr std::string_view k_fixed[] = {
      "connection", "proxy-connection", "keep-alive",          "te",
      "trailer",    "upgrade",          "proxy-authorization", "proxy-authenticate"};
  std::string l = lower(name);
  for (std::string_view f : k_fixed)
    if (l == f) return true;
  if (l == "content-length" || l == "transfer-encoding" || l == "host") return false;
  return std::find(connection_options.begin(), connection_options.end(), l) != connection_options.end();
}

std::optional<Framing> request_framing(const Message& m, std::string& why) {
  auto te = m.list("transfer-encoding");
  auto cl = m.values("content-length");
  if (!te.empty() && m.version == "HTTP/1.0") {
    why = "Transfer-Encoding in an HTTP/1.0 request (RFC 9112 6.1: faulty framing)";
    return std::nullopt;
  }
  if (!te.empty() && !cl.empty()) {
    why = "both Content-Length and Transfer-Encoding";
    return std::nullopt;
  }
  if (!te.empty()) {
    if (te.back() != "chunked") {
      why = "unsupported Transfer-Encoding (the last coding must be chunked)";
      return std::nullopt;
    }
    return Framing{Framing::Kind::chunked, 0};
  }
  if (!cl.empty()) {
    auto n = cl.size() == 1 ? parse_length(cl[0]) : std::nullopt;
    if (!n) {
      why = "invalid Content-Length";
      return std::nullopt;
    }
    return *n == 0 ? Framing{} : Framing{Framing::Kind::length, *n};
  }
  return Framing{};
}

std::optional<Framing> response_framing(const Message& resp, bool head_request, std::string& why) {
  if (head_request || resp.status < 200 || resp.status == 204 || resp.status == 304) return Framing{};
  auto te = resp.list("transfer-encoding");
  if (!te.empty())
    return te.back() == "chunked" ? Framing{Framing::Kind::chunked, 0} : Framing{Framing::Kind::until_close, 0};
  auto cl = resp.values("content-length");
  if (!cl.empty()) {
    // Repeated identical values are tolerated from servers (RFC 9112 6.3), not differing ones.
    bool valid = std::all_of(cl.begin(), cl.end(), [&](std::string_view v) { return v == cl[0]; });
    auto n = valid ? parse_length(cl[0]) : std::nullopt;
    if (!n) {
      why = "invalid Content-Length from upstream";
      return std::nullopt;
    }
    return Framing{Framing::Kind::length, n.value()};
  }
  return Framing{Framing::Kind::until_close, 0};
}

std::optional<std::uint64_t> chunk_size(std::string_view line) {
  std::size_t digits = 0;
  std::uint64_t size = 0;
  while (digits < line.size() && std::isxdigit(static_cast<unsigned char>(line[digits]))) ++digits;
  if (digits == 0 || digits > 15) return std::nullopt;
  // NOLINTNEXTLINE(bugprone-suspicious-stringview-data-usage): from_chars takes the end
  std::from_chars(line.data(), line.data() + digits, size, 16);
  std::string_view rest = trim_ows(line.substr(digits));
  if (!rest.empty() && rest.front() != ';') return std::nullopt;
  for (char ch : rest)
    if ((static_cast<unsigned char>(ch) < 0x20 && ch != '\t') || ch == 0x7f) return std::nullopt;
  return size;
}

std::string clean_reason(std::string_view s) {
  std::string out;
  for (char ch : s) {
    auto u = static_cast<unsigned char>(ch);
    out += u < 0x20 || u >= 0x7f ? '?' : ch;
  }
  return out;
}

std::string error_response(int status, std::string_view reason) {
  std::string r = clean_reason(reason);
  std::string body = "zerobox: " + r + "\n";
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + std::string(status_text(status)) + "\r\n";
  out += "Content-Type: text/plain\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  out += "Connection: close\r\n";
  out += "X-Zerobox-Reason: " + r + "\r\n\r\n";
  out += body;
  return out;
}

}  // namespace zb::net
