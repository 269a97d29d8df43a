// Where Linux distributions keep the system's bundle of trusted CA certificates.
#pragma once

#include <string>
#include <vector>

namespace zb::ca_bundle {

// The usual places, in the order they are tried.
const std::vector<std::string>& system_paths();
// Those of system_paths() that are readable regular files here (symlinks followed), in
// the same order.
std::vector<std::string> present_paths();

}  // namespace zb::ca_bundle
