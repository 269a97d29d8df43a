// Tests for src/exec/seccomp.cpp and the build-time copy in seccomp_embedded.cpp, and for
// the create guard's decision (src/exec/guard.cpp).
#include <doctest/doctest.h>

#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <span>
#include <string>

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
  CHECK(same(zb::exec::build_guard_filter(true), zb::exec::embedded_guard_filter(true)));
  CHECK(same(zb::exec::build_guard_fallback_filter(), zb::exec::embedded_guard_fallback_filter()));
  // What init may keep for the guard is all the base filter gives up.
  CHECK(zb::exec::embedded_seccomp_filter_for_guard().size() < zb::exec::embedded_seccomp_filter().size());
}

namespace {

// socket() and socketpair() of `family` with a flag bit no kernel takes, in a child under
// the base filter: EINVAL means the call reached the kernel, EAFNOSUPPORT the filter.
int socket_errno_under_filter(unsigned long family, bool pair) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || zb::exec::apply_seccomp(zb::exec::embedded_seccomp_filter()) != 0)
      ::_exit(255);
    int sv[2];
    long r = pair ? ::syscall(SYS_socketpair, family, SOCK_STREAM | 0x40000000UL, 0UL, sv)
                  : ::syscall(SYS_socket, family, SOCK_STREAM | 0x40000000UL, 0UL);
    ::_exit(r < 0 ? errno : 0);
  }
  int st = 0;
  if (pid < 0 || ::waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return -1;
  return WEXITSTATUS(st);
}

}  // namespace

TEST_CASE("the base filter lets only unix, inet, inet6 and netlink sockets be made") {
  for (unsigned long f : {1UL, 2UL, 10UL, 16UL}) {  // AF_UNIX, AF_INET, AF_INET6, AF_NETLINK
    CAPTURE(f);
    CHECK(socket_errno_under_filter(f, false) == EINVAL);
  }
  CHECK(socket_errno_under_filter(AF_UNIX, true) == EINVAL);
  for (unsigned long f : {0UL, 3UL, 9UL, 11UL, 15UL, 17UL, 29UL, 30UL, 31UL, 38UL, 40UL, 44UL, 45UL, 46UL, 255UL, 1UL << 31,
                          (1UL << 32) | AF_UNIX, (1UL << 32) | 40UL, ~0UL}) {
    CAPTURE(f);
    CHECK(socket_errno_under_filter(f, false) == EAFNOSUPPORT);
    CHECK(socket_errno_under_filter(f, true) == EAFNOSUPPORT);
  }
}

TEST_CASE("the create guard's depth rule refuses protected names at any depth below writable paths") {
  const char* names[] = {".git/hooks", ".git/config", ".envrc", ".config/git"};
  const char* roots[] = {"/w", "/o"};
  const char* exempt[] = {"/o/tmp"};
  const char* lifted[] = {"/w", "/w/sub/.git", "/w/new", "/w/r/.git/config"};
  const char* new_trees[] = {"/w/new"};
  zb::exec::GuardList list{nullptr, 0, names, 4, roots, 2, exempt, 1, lifted, 4, new_trees, 1};
  using zb::exec::guard_depth_check;
  using M = zb::exec::GuardMade;
  std::size_t len = 0;
  CHECK(guard_depth_check(list, "/w/a/b/.git/hooks", M::new_dir, &len) == EACCES);
  CHECK(len == std::strlen("/w/a/b/.git/hooks"));
  CHECK(guard_depth_check(list, "/w/a/.git/hooks/pre-commit", M::other, &len) == EACCES);
  CHECK(len == std::strlen("/w/a/.git/hooks"));
  CHECK(guard_depth_check(list, "/w/a/.git/config", M::other) == EACCES);
  CHECK(guard_depth_check(list, "/w/x/y/z/.envrc", M::new_dir) == EACCES);
  CHECK(guard_depth_check(list, "/w/h/.config/git", M::new_dir) == EACCES);
  // Where a name's leading directory belongs: a new empty directory, or a plain file
  // except a gitfile.
  CHECK(guard_depth_check(list, "/w/a/.git", M::new_dir) == 0);
  CHECK(guard_depth_check(list, "/w/a/.git", M::other) == EACCES);
  CHECK(guard_depth_check(list, "/w/a/.git", M::dir) == EACCES);
  CHECK(guard_depth_check(list, "/w/a/.git", M::symlink) == EACCES);
  CHECK(guard_depth_check(list, "/w/k/.config", M::other) == 0);  // a kernel tree's .config
  CHECK(guard_depth_check(list, "/w/k/.config", M::symlink) == EACCES);
  // Not protected: other names, and outside the roots or in the exempt scratch.
  CHECK(guard_depth_check(list, "/w/a/.git/objects/ab", M::other) == 0);
  CHECK(guard_depth_check(list, "/w/a/.git/config.lock", M::other) == 0);
  CHECK(guard_depth_check(list, "/w/a/.gitx/hooks", M::new_dir) == 0);
  CHECK(guard_depth_check(list, "/elsewhere/.git/hooks", M::new_dir) == 0);
  CHECK(guard_depth_check(list, "/o/tmp/r/.git/hooks", M::new_dir) == 0);
  CHECK(guard_depth_check(list, "/o/r/.git/hooks", M::new_dir) == EACCES);
  // Lifted at or below the name's first directory; a new tree lifts everything in it; a
  // lift of the root itself (or of a sibling name) does not.
  CHECK(guard_depth_check(list, "/w/sub/.git/hooks/pre-commit", M::other) == 0);
  CHECK(guard_depth_check(list, "/w/new/.git/hooks", M::new_dir) == 0);
  CHECK(guard_depth_check(list, "/w/new/x/.envrc", M::other) == 0);
  CHECK(guard_depth_check(list, "/w/r/.git/config", M::other) == 0);
  CHECK(guard_depth_check(list, "/w/r/.git/hooks", M::new_dir) == EACCES);
  CHECK(guard_depth_check(list, "/w/.envrc", M::other) == EACCES);
  CHECK(guard_depth_check(zb::exec::GuardList{nullptr, 0}, "/w/.envrc", M::other) == 0);
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
  // Characters that Unicode case folding turns into ASCII letters (casefolded ext4,
  // tmpfs, exfat): the long s, the Kelvin sign, the fi ligature.
  CHECK(guard_check(list, "/home/u/.config/fi\xC5\xBFh", false) == EACCES);
  CHECK(guard_check(list, "/home/u/.config/\xEF\xAC\x81sh", false) == EACCES);
  CHECK(guard_check(list, "/p/.git/hoo\xE2\x84\xAAs", true) == EACCES);
  CHECK(guard_check(list, "/p/.git/hooks\xC3\xA9", false) == 0);  // é folds to nothing ASCII
  CHECK(guard_check(list, "/p/.env\xE2\x80\x8Brc", false) == EACCES);  // a zero-width space
  // A path longer than PATH_MAX that folds to a guarded one just shorter than it.
  std::string root = "/" + std::string(PATH_MAX - 14, 'w');
  std::string guarded = root + "/.git/hooks";  // PATH_MAX - 2 bytes
  const char* deep[] = {guarded.c_str()};
  std::string alias = root + "/.git/hoo\xE2\x84\xAA\xC5\xBF";  // Kelvin sign, long s: 3 bytes longer
  REQUIRE(alias.size() > PATH_MAX);
  CHECK(guard_check(zb::exec::GuardList{deep, 1}, alias.c_str(), false) == EACCES);
}

TEST_CASE("guard names fold as a case-insensitive file system folds them") {
  using zb::exec::guard_fold;
  auto fold = [](std::string in) {
    std::string out(in.size() + 1, '\0');
    out.resize(guard_fold(in.data(), in.size(), out.data()));
    return out;
  };
  CHECK(fold(".ENVRC") == ".envrc");
  CHECK(fold(".ba\xC5\xBFhrc") == ".bashrc");                  // U+017F long s
  CHECK(fold("\xC3\x9F") == "ss");                               // U+00DF sharp s
  CHECK(fold("\xE1\xBA\x9E") == "ss");                           // U+1E9E capital sharp s
  CHECK(fold("hoo\xE2\x84\xAAs") == "hooks");                    // U+212A Kelvin sign
  CHECK(fold("\xEF\xAC\x80\xEF\xAC\x81\xEF\xAC\x82") == "fffifl");  // U+FB00..FB02
  CHECK(fold("\xEF\xAC\x83\xEF\xAC\x84") == "ffiffl");          // U+FB03, U+FB04
  CHECK(fold("\xEF\xAC\x85\xEF\xAC\x86") == "stst");            // U+FB05, U+FB06
  CHECK(fold("Jos\xC3\xA9") == "jos\xC3\xA9");                   // others stay as they are
  CHECK(fold("\xC5") == "\xC5");                                  // a cut sequence too
  // Default-ignorable code points are dropped, as Linux's casefolding drops them: the
  // zero-width space, the soft hyphen, a variation selector, a tag character.
  CHECK(fold("hoo\xE2\x80\x8Bks") == "hooks");
  CHECK(fold(".bash\xC2\xADrc") == ".bashrc");
  CHECK(fold("hook\xEF\xB8\x8Fs") == "hooks");
  CHECK(fold("hoo\xF3\xA0\x80\x81ks") == "hooks");
  // Invalid UTF-8 (an overlong zero-width space, a surrogate) is opaque, as to the kernel.
  CHECK(fold("a\xF0\x82\x80\x8B" "b") == "a\xF0\x82\x80\x8B" "b");
  CHECK(fold("a\xED\xA0\x80" "b") == "a\xED\xA0\x80" "b");
  std::string in = ".Ba\xC5\xBFhrc";  // in place
  in.resize(guard_fold(in.data(), in.size(), in.data()));
  CHECK(in == ".bashrc");
}
