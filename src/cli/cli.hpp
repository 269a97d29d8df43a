// argv and TOML profiles -> Policy and RunOptions. Throws UsageError (exit 2) for syntax and SetupError
// (exit 125) for the state of the machine (a missing profile file); nothing else throws.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "zerobox/policy.hpp"
#include "zerobox/zerobox.hpp"

namespace zb::cli {

enum class Action { Run, Help, Version };

struct Parsed {
  Action action = Action::Run;
  zerobox::Policy policy;
  zerobox::RunOptions options;  // --status-fd, --debug, --quiet
  std::string text;             // help or version text
};

Parsed parse_args(const std::vector<std::string>& args, const std::vector<std::string>& environ);

// Whether a run will get its own network namespace, guessed from the words before the
// command without parsing them, so main() can start cloning the sandbox meanwhile
// (exec::Prestart). A wrong guess only loses the head start: the sandbox checks it.
// nullopt where no sandbox is likely (help, version, --no-sandbox, no command) or the
// words are not plain enough to guess from (a profile, clustered short options).
std::optional<bool> guess_new_net(const std::vector<std::string>& args);

// Applies a TOML profile to a policy and the run options (the CLI's own flags are
// applied afterwards).
void apply_profile(const std::string& name_or_file, zerobox::Policy& p, zerobox::RunOptions& options,
                   const std::vector<std::string>& environ);

// `zerobox snapshot ...` (args after "snapshot"); returns the exit status.
int snapshot_main(const std::vector<std::string>& args, const std::vector<std::string>& environ);

}  // namespace zb::cli
