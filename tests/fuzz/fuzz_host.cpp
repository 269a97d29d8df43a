// libFuzzer target: the host grammar and the domain rules (src/net/host.cpp, rules.cpp).
// The first byte picks the entry point; the rest is the input. Besides not crashing,
// normalisation must be stable: what parse_authority accepts, printed and parsed again,
// gives the same host and port (otherwise two paths could disagree about a name).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "net/host.hpp"
#include "net/rules.hpp"

using namespace zb::net;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0:
      if (auto h = parse_host(in)) {
        auto again = parse_host(h->host);
        if (!again || again->host != h->host) std::abort();
      }
      break;
    case 1:
    case 2:
      if (auto a = parse_authority(in, data[0] % 5 == 2)) {
        if (a->port) {
          auto again = parse_authority(to_string(*a), true);
          if (!again || again->host != a->host || again->port != a->port) std::abort();
        }
      }
      break;
    case 3: {
      std::string path;
      if (auto u = parse_absolute_uri(in, path)) {
        if (path.empty() || path[0] != '/') std::abort();
      }
      break;
    }
    case 4: {
      static auto policy =
          NetPolicy::make({"*.example.com", "api.test:443", "10.0.0.1"}, {"bad.example.com"}, {}, false);
      if (auto r = parse_rule(in)) (void)r->text.size();
      if (policy) {
        if (auto a = parse_authority(in, true)) (void)policy->decide(*a);
      }
      break;
    }
  }
  return 0;
}
