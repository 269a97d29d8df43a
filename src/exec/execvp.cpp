#include "exec/execvp.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "util/env.hpp"

namespace zb::exec {

int exec_first(char* const* candidates, char* const* argv, char* const* envp) {
  int err = ENOENT;
  bool saw_eacces = false;
  for (char* const* c = candidates; *c != nullptr; ++c) {
    ::execve(*c, argv, envp);
    err = errno;
    if (err == EACCES) {
      struct stat st{};
      if (::stat(*c, &st) == 0) saw_eacces = true;
      continue;
    }
    if (err == ENOENT || err == ENOTDIR || err == ENAMETOOLONG || err == ELOOP) continue;
    break;
  }
  if (err == ENOENT && saw_eacces) err = EACCES;
  return err;
}

std::vector<std::string> exec_candidates(const std::string& name, const std::vector<std::string>& env) {
  if (name.find('/') != std::string::npos) return {name};
  std::string path = env::find(env, "PATH").value_or("");
  if (path.empty()) path = env::k_default_path;
  std::vector<std::string> out;
  for (const auto& dir : env::path_dirs(path)) out.push_back((dir.empty() ? std::string(".") : dir) + "/" + name);
  return out;
}

}  // namespace zb::exec
