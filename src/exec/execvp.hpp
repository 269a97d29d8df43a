// The command's execve over its candidates (argv[0] as given, or each PATH entry with it),
// the same for a sandboxed run (init, exec/init.cpp) and for --no-sandbox
// (run/unsandboxed.cpp), so both give one answer for one PATH.
#pragma once

#include <string>
#include <vector>

namespace zb::exec {

// Tries each of the nullptr-terminated `candidates` in order and returns only when none
// could be run, with the errno that decides the exit status: ENOENT (127, not found) past
// a missing file or directory, a name too long or a symlink loop; EACCES (126) when a
// file that is there is not executable, as the shells do (a PATH directory that may not
// be searched hides nothing that could run, so it stays "not found"); else the first
// other error. No allocation.
int exec_first(char* const* candidates, char* const* argv, char* const* envp);

// The candidates for argv[0] `name` under the environment `env`: name itself when it
// holds a '/', else "DIR/name" for each directory of PATH ("." for an empty entry;
// env::k_default_path when PATH is unset or empty). Supervisor side: it allocates.
std::vector<std::string> exec_candidates(const std::string& name, const std::vector<std::string>& env);

}  // namespace zb::exec
