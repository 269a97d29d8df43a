// Capabilities and no_new_privs. Both functions run after clone(): no allocation.
#pragma once

namespace zb::exec {

// Empties the bounding, ambient, inheritable, permitted and effective sets.
// Returns 0, or -1 with errno set.
int drop_all_capabilities();

// prctl(PR_SET_NO_NEW_PRIVS): setuid bits and file capabilities no longer grant anything.
int set_no_new_privs();

}  // namespace zb::exec
