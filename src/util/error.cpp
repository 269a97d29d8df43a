#include "util/error.hpp"

#include <cstring>

namespace zb {

std::string SysError::message() const {
  if (err == 0) return what;
  return what + ": " + std::strerror(err);
}

}  // namespace zb
