// libFuzzer target: the proxy's HTTP request/response head parsers and its SOCKS5
// request parser (src/net/proxy.cpp, built with ZEROBOX_FUZZ_HOOKS). The first byte
// picks the parser.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace zb::net {
void fuzz_http_head(std::string_view head);
void fuzz_socks_request(std::string_view v);
}  // namespace zb::net

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    zb::net::fuzz_socks_request(in);
  } else {
    zb::net::fuzz_http_head(in);
  }
  return 0;
}
