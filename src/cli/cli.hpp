// argv and TOML profiles -> Policy. Throws UsageError (exit 2) for syntax and SetupError
// (exit 125) for the state of the machine (a missing profile file); nothing else throws.
#pragma once

#include <string>
#include <vector>

#include "zerobox/policy.hpp"

namespace zb::cli {

enum class Action { Run, Help, Version };

struct Parsed {
  Action action = Action::Run;
  zerobox::Policy policy;
  std::string text;  // help or version text
};

Parsed parse_args(const std::vector<std::string>& args, const std::vector<std::string>& environ);

// Applies a TOML profile to a policy (the CLI's own flags are applied afterwards).
// `zerobox snapshot ...` (args after "snapshot"); returns the exit status.
int snapshot_main(const std::vector<std::string>& args, const std::vector<std::string>& environ);

void apply_profile(const std::string& name_or_file, zerobox::Policy& p, const std::vector<std::string>& environ);

}  // namespace zb::cli
