// Messages on stderr, prefixed "zerobox: " as coreutils do with their program name.
// --quiet silences everything but errors; --debug adds the policy, plan and decisions.
#pragma once

#include <string>
#include <string_view>

namespace zb::log {

void set_quiet(bool quiet);
void set_debug(bool debug);
bool debug_enabled();
bool quiet();

void error(std::string_view msg);    // "zerobox: error: ..." (always shown)
void warning(std::string_view msg);  // "zerobox: warning: ..." (hidden by --quiet)
void info(std::string_view msg);     // "zerobox: ..." (hidden by --quiet)
void debug(std::string_view msg);    // "zerobox: debug: ..." (only with --debug)

// Quotes a path or word for messages when it has spaces or control characters, so a file
// name with a newline cannot forge a line of output.
std::string quote(std::string_view s);

}  // namespace zb::log
