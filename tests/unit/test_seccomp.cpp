// Tests for src/exec/seccomp.cpp and the build-time copy in seccomp_embedded.cpp, and for
// the create guard's decision (src/exec/guard.cpp).
#include <doctest/doctest.h>

#include <cerrno>
#include <cstring>
#include <span>

#include "exec/guard.hpp"
#include "exec/seccomp.hpp"

namespace {

bool same(const zb::Result<std::vector<sock_filter>>& built, std::span<const sock_filter> embedded) {
  return built && built->size() == embedded.size() &&
         std::memcmp(built->data(), embedded.data(), embedded.size() * sizeof(sock_filter)) == 0;
}

}  // namespace

TEST_CASE("the embedded seccomp filters are the ones libseccomp builds from the policy") {
  CHECK(same(zb::exec::build_seccomp_filter(), zb::exec::embedded_seccomp_filter()));
  CHECK(same(zb::exec::build_seccomp_filter(true), zb::exec::embedded_seccomp_filter_for_guard()));
  CHECK(same(zb::exec::build_guard_filter(), zb::exec::embedded_guard_filter()));
  CHECK(same(zb::exec::build_guard_fallback_filter(), zb::exec::embedded_guard_fallback_filter()));
  // What init may keep for the guard is all the base filter gives up.
  CHECK(zb::exec::embedded_seccomp_filter_for_guard().size() < zb::exec::embedded_seccomp_filter().size());
}

TEST_CASE("the create guard refuses guarded paths and whatever but mkdir stands on their way") {
  const char* paths[] = {"/p/.envrc", "/p/.git/hooks", "/home/u/.config/fish"};
  zb::exec::GuardList list{paths, 3};
  using zb::exec::guard_check;
  CHECK(guard_check(list, "/p/.envrc", false) == EACCES);
  CHECK(guard_check(list, "/p/.envrc", true) == EACCES);  // not even as a directory
  CHECK(guard_check(list, "/p/.git/hooks", true) == EACCES);
  // An ancestor: an empty directory is fine; a file, symlink or moved directory is not.
  CHECK(guard_check(list, "/p/.git", true) == 0);
  CHECK(guard_check(list, "/p/.git", false) == EACCES);
  CHECK(guard_check(list, "/home/u/.config", false) == EACCES);
  CHECK(guard_check(list, "/home/u/.config", true) == 0);
  // Names that only share a prefix, and unrelated paths.
  CHECK(guard_check(list, "/p/.envrc2", false) == 0);
  CHECK(guard_check(list, "/p/.env", false) == 0);
  CHECK(guard_check(list, "/p/.git/hooks2", false) == 0);
  CHECK(guard_check(list, "/p/.git/config", false) == 0);
  CHECK(guard_check(list, "/p/src/.envrc", false) == 0);
  CHECK(guard_check(list, "/q/.envrc", false) == 0);
  CHECK(guard_check(zb::exec::GuardList{paths, 0}, "/p/.envrc", false) == 0);
  // Any ASCII case: on a case-insensitive file system it is the same name.
  CHECK(guard_check(list, "/p/.ENVRC", false) == EACCES);
  CHECK(guard_check(list, "/P/.Git/Hooks", true) == EACCES);
  CHECK(guard_check(list, "/p/.GIT", false) == EACCES);
}
