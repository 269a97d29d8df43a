// What the sandbox holds in place of a secret (docs/usage.md, "Secrets"): a placeholder,
// ZEROBOX_SECRET_<64 hex>, which the proxy (net/secrets.hpp) replaces with the value in
// requests to the secret's approved hosts.
#pragma once

#include <string>
#include <string_view>

#include "util/error.hpp"

namespace zb::policy {

inline constexpr std::string_view k_placeholder_prefix = "ZEROBOX_SECRET_";

// A new placeholder: the prefix and 32 random bytes in hex.
Result<std::string> make_placeholder();

// Why a value cannot be a secret (empty, or a control byte that would end or split an
// HTTP header line), or "" when it can.
std::string invalid_secret_value(std::string_view value);

}  // namespace zb::policy
