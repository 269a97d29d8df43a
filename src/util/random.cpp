#include "util/random.hpp"

#include <sys/random.h>

#include "util/text.hpp"

namespace zb::util {

Result<std::string> random_bytes(std::size_t n) {
  std::string raw(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    ssize_t r = ::getrandom(raw.data() + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      return fail("getrandom");
    }
    got += static_cast<std::size_t>(r);
  }
  return raw;
}

Result<std::string> random_hex(std::size_t n) {
  auto raw = random_bytes(n);
  if (!raw) return raw;
  return text::hex(*raw);
}

}  // namespace zb::util
