#include "util/scrub.hpp"

#include <cstring>

namespace zb::scrub {
namespace {
int g_argc = 0;
char** g_argv = nullptr;
char** g_envp = nullptr;
}  // namespace

void remember(int argc, char** argv, char** envp) {
  g_argc = argc;
  g_argv = argv;
  g_envp = envp;
}

void wipe() {
  for (int i = 0; g_argv != nullptr && i < g_argc; ++i) {
    if (g_argv[i] != nullptr) std::memset(g_argv[i], 0, std::strlen(g_argv[i]));
  }
  for (char** e = g_envp; e != nullptr && *e != nullptr; ++e) std::memset(*e, 0, std::strlen(*e));
}

}  // namespace zb::scrub
