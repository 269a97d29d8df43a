// Capabilities and no_new_privs. Both functions run after clone(): no allocation.
#pragma once

namespace zb::exec {

// Empties the bounding, ambient and inheritable sets, and the permitted and effective
// sets but for `keep` (a CAP_* number; -1 for none). Returns 0, or -1 with errno set.
int drop_all_capabilities(int keep = -1);

// Empties the permitted, effective and inheritable sets (what drop_all_capabilities
// kept). Returns 0, or -1 with errno set.
int clear_capabilities();

// prctl(PR_SET_NO_NEW_PRIVS): setuid bits and file capabilities no longer grant anything.
int set_no_new_privs();

}  // namespace zb::exec
