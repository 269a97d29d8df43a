// --status-fd: lifecycle events as JSON Lines (protocol version 1, docs/usage.md "--status-fd protocol").
#pragma once

#include <mutex>
#include <string>

namespace zb::exec {

class StatusFd {
 public:
  StatusFd() = default;
  explicit StatusFd(int fd);
  StatusFd(const StatusFd&) = delete;
  StatusFd& operator=(const StatusFd&) = delete;
  ~StatusFd();

  // True when fd is >= 3 and open for writing; otherwise `why` says what is wrong.
  static bool valid(int fd, std::string& why);

  void setup_error(const std::string& message);
  void child_started(long pid);
  void child_exit_code(int code);
  void child_exit_signal(int sig);
  // Filtered mode: one proxy decision (called from the proxy's thread).
  void net(const std::string& host, unsigned port, bool allowed, const std::string& reason);
  // After child_exit, for runs that record a session.
  void session(const std::string& id, const std::string& state, long changes);
  // Closes the fd: the reader sees EOF after the last event.
  void close();

  int fd() const { return m_fd; }

 private:
  void write_line(const std::string& json);
  int m_fd = -1;
  std::mutex m_mutex;  // events come from the main thread and the proxy's
};

// Escapes a string for a JSON string literal (control characters as \u00XX; bytes that
// are not valid UTF-8 are replaced by U+FFFD so the line stays valid JSON).
std::string json_escape(const std::string& s);

}  // namespace zb::exec
