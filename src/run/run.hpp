// zerobox::run, given a sandbox process the CLI started cloning while it parsed the
// command line (exec/sandbox.hpp, Prestart); internal, not part of the installed API. nullptr, or one made for another
// network mode, is the same as zerobox::run, except that fds 0-2 must already be held (exec::hold_std_fds, which
// main() calls first).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "exec/sandbox.hpp"
#include "zerobox/zerobox.hpp"

namespace zb::run {

int run_prestarted(zerobox::Policy policy, const std::vector<std::string>& environ, zerobox::RunOptions options,
                   std::unique_ptr<exec::Prestart> prestarted);

}  // namespace zb::run
