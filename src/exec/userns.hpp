// The sandbox's user namespace, from the supervisor's side: the uid/gid maps it writes
// for the child, the note --debug prints on them, and what a failed clone() means.
#pragma once

#include <sys/types.h>

#include <string>

#include "exec/ids.hpp"
#include "util/error.hpp"

namespace zb::exec {

// Writes the uid and gid maps of the child `pid`. An ordinary caller maps only itself.
// Root maps either its own range (`own_ids`, exec/ids.hpp) or, where that cannot be,
// every id it has to itself.
Result<void> write_id_maps(pid_t pid, bool own_ids);

// The note --debug prints on the ids the sandbox runs with ("" when not root): `own`
// with the idmapped `tree`, else `why_not`.
std::string ids_note(bool own, const std::string& why_not, const IdmappedTree* tree);

// The message for clone()'s errno `err`, with what it most likely means here.
std::string clone_error(int err);

}  // namespace zb::exec
