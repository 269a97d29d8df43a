#include "exec/execvp.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace zb::exec {

int exec_first(char* const* candidates, char* const* argv, char* const* envp) {
  int err = ENOENT;
  bool saw_eacces = false;
  for (char* const* c = candidates; *c != nullptr; ++c) {
    ::execve(*c, argv, envp);
    err = errno;
    if (err == EACCES) {
      struct stat st {};
      if (::stat(*c, &st) == 0) saw_eacces = true;
      continue;
    }
    if (err == ENOENT || err == ENOTDIR || err == ENAMETOOLONG || err == ELOOP) continue;
    break;
  }
  if (err == ENOENT && saw_eacces) err = EACCES;
  return err;
}

}  // namespace zb::exec
