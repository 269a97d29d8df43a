// Errors as values: a failed system call becomes a SysError naming the call, the object it
// acted on and errno (kept as a number so callers can branch on ENOENT and friends).
#pragma once

#include <cerrno>
#include <expected>
#include <string>
#include <utility>

namespace zb {

struct SysError {
  std::string what;  // "openat /x", "mount overlay on /usr"
  int err = 0;       // errno, 0 when the failure is not a system call

  // "openat /x: No such file or directory"
  std::string message() const;
};

template <class T>
using Result = std::expected<T, SysError>;

// Captures errno at the call site: `return fail("open " + path);`
inline std::unexpected<SysError> fail(std::string what, int err = errno) {
  return std::unexpected(SysError{std::move(what), err});
}

// A failure that is not a system call (bad input, policy conflict).
inline std::unexpected<SysError> fail_msg(std::string what) { return std::unexpected(SysError{std::move(what), 0}); }

// The exit codes (docs/cli-reference.md "Exit status").
inline constexpr int k_exit_usage = 2;
inline constexpr int k_exit_setup = 125;
inline constexpr int k_exit_not_executable = 126;
inline constexpr int k_exit_not_found = 127;

// Thrown only at the edges (CLI parsing, profile loading); caught once in main().
struct UsageError {
  std::string message;
};
struct SetupError {
  std::string message;
};

}  // namespace zb
