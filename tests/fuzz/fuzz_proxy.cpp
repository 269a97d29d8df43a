// libFuzzer target: the proxy's HTTP/1.1 request and response head parsers and framing
// (src/net/http1.cpp), and its SOCKS5 request parser (src/net/socks5_request.cpp). The
// first byte picks the parser. Besides not crashing, a SOCKS5 request that is accepted
// names a host the host grammar takes back unchanged, with a port.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "net/host.hpp"
#include "net/http1.hpp"
#include "net/socks5_request.hpp"

using namespace zb::net;

namespace {

void http_head(std::string_view head) {
  std::string why;
  Message req;
  if (parse_request(head, req, why)) {
    (void)request_framing(req, why);
    std::string path;
    if (auto hp = parse_absolute_uri(req.target, path)) (void)to_string(*hp);
    (void)parse_authority(req.target, true);
  }
  Message resp;
  if (parse_response(head, resp, why)) (void)response_framing(resp, false, why);
  (void)chunk_size(head);
}

void socks_request(std::string_view v) {
  if (v.size() < 5) return;
  std::size_t n = socks_request_size(v);
  if (n == 0 || v.size() < n) return;
  SocksRequest r = parse_socks_request(v.substr(0, n));
  if (r.reply == k_socks_ok) {
    auto again = parse_host(r.hp.host);
    if (!r.hp.port || *r.hp.port == 0 || !again || again->host != r.hp.host) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    socks_request(in);
  } else {
    http_head(in);
  }
  return 0;
}
