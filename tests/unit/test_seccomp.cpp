// Tests for src/exec/seccomp.cpp and the build-time copy in seccomp_embedded.cpp.
#include <doctest/doctest.h>

#include <cstring>

#include "exec/seccomp.hpp"

TEST_CASE("the embedded seccomp filter is the one libseccomp builds from the policy") {
  auto built = zb::exec::build_seccomp_filter();
  REQUIRE(built);
  auto embedded = zb::exec::embedded_seccomp_filter();
  REQUIRE(built->size() == embedded.size());
  CHECK(std::memcmp(built->data(), embedded.data(), embedded.size() * sizeof(sock_filter)) == 0);
}
