// An overlay mounted in a child with a user namespace of its own, as an unprivileged
// sandbox mounts them (`userxattr`): for the cases of unit_priv_tests and for its probe
// (priv_main.cpp).
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

namespace zb::test {

// Runs ops(merged) in a child that unshared a user and a mount namespace, mapped the
// caller's uid and gid to 0 and mounted the overlay of `lower` and `upper` (work
// directory `work`) on `merged`; returns the child's wait status. Exit 77: the
// namespace or the mount failed, and the step is said on stderr; 1: `ops` failed (it
// _exits 1) or the unmount did. No doctest assertions in the child.
inline int through_overlay(const std::string& lower, const std::string& upper, const std::string& work,
                           const std::string& merged, const std::function<void(const std::string&)>& ops) {
  uid_t uid = ::getuid();
  gid_t gid = ::getgid();
  pid_t pid = ::fork();
  if (pid == 0) {
    auto give_up = [](const char* step, int code) {
      std::fprintf(stderr, "overlay in a user namespace: %s: %s\n", step, std::strerror(errno));
      ::_exit(code);
    };
    ::umask(022);
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) give_up("unshare", 77);
    auto map = [](const char* file, const std::string& s) {
      int fd = ::open(file, O_WRONLY | O_CLOEXEC);
      bool ok = fd >= 0 && ::write(fd, s.data(), s.size()) == static_cast<ssize_t>(s.size());
      if (fd >= 0) ::close(fd);
      return ok;
    };
    if (!map("/proc/self/setgroups", "deny") || !map("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
        !map("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1"))
      give_up("uid/gid map", 77);
    std::string opts = "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work + ",userxattr";
    if (::mount("overlay", merged.c_str(), "overlay", 0, opts.c_str()) != 0) give_up("mount overlay", 77);
    ops(merged);
    if (::umount2(merged.c_str(), 0) != 0) give_up("umount", 1);
    ::_exit(0);
  }
  int status = -1;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return -1;
  return status;
}

}  // namespace zb::test
