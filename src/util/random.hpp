// Random names: session ids, temporary names, secret placeholders.
#pragma once

#include <cstddef>
#include <string>

#include "util/error.hpp"

namespace zb::util {

// n random bytes from getrandom(2) (retried on EINTR and short reads).
Result<std::string> random_bytes(std::size_t n);

// n random bytes as 2n lowercase hex digits.
Result<std::string> random_hex(std::size_t n);

}  // namespace zb::util
