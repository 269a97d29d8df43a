// The sandbox's pid 1 is a copy of the supervisor, so its memory holds zerobox's own
// argv and the caller's whole environment. /proc/1/cmdline is readable by the command
// whatever the process's dumpability, so the child wipes those strings in place.
#pragma once

namespace zb::scrub {

// Called once from main() with the process's original argv and environ.
void remember(int argc, char** argv, char** envp);

// Zeroes the remembered strings. Runs after clone(): no allocation.
void wipe();

}  // namespace zb::scrub
