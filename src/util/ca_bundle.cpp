#include "util/ca_bundle.hpp"

#include <sys/stat.h>
#include <unistd.h>

namespace zb::ca_bundle {

const std::vector<std::string>& system_paths() {
  static const std::vector<std::string> k_paths = {
      "/etc/ssl/certs/ca-certificates.crt",  // Debian, Ubuntu, Arch, Gentoo
      "/etc/pki/tls/certs/ca-bundle.crt",    // Fedora, RHEL
      "/etc/ssl/ca-bundle.pem",              // openSUSE
      "/etc/ssl/cert.pem",                   // Alpine
  };
  return k_paths;
}

std::vector<std::string> present_paths() {
  std::vector<std::string> out;
  for (const auto& p : system_paths()) {
    struct stat st{};
    if (::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), R_OK) == 0) out.push_back(p);
  }
  return out;
}

}  // namespace zb::ca_bundle
