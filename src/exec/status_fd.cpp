#include "exec/status_fd.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace zb::exec {

StatusFd::StatusFd(int fd) : m_fd(fd) {
  // O_NONBLOCK is not set: it belongs to the open file description, which the caller
  // (and, through 3>&1, the command's own stdout) may share. write_line polls instead.
  if (m_fd >= 0) ::fcntl(m_fd, F_SETFD, FD_CLOEXEC);
}

StatusFd::~StatusFd() { close(); }

bool StatusFd::valid(int fd, std::string& why) {
  if (fd < 3) {
    why = "--status-fd must be 3 or more";
    return false;
  }
  int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0) {
    why = "--status-fd=" + std::to_string(fd) + " is not an open file descriptor";
    return false;
  }
  if ((fl & O_ACCMODE) == O_RDONLY) {
    why = "--status-fd=" + std::to_string(fd) + " is not open for writing";
    return false;
  }
  return true;
}

void StatusFd::write_line(const std::string& json) {
  std::lock_guard<std::mutex> lock(m_mutex);
  if (m_fd < 0) return;
  std::string line = json + "\n";
  // Events must never hold the supervisor up for long: a reader that stops reading
  // delays each event by at most a second, after which the event is dropped.
  size_t off = 0;
  while (off < line.size()) {
    pollfd p{m_fd, POLLOUT, 0};
    int ready = ::poll(&p, 1, 1000);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return;
    ssize_t n = ::write(m_fd, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

void StatusFd::setup_error(const std::string& message) {
  write_line(R"({"v":1,"event":"setup_error","message":")" + json_escape(message) + "\"}");
}
void StatusFd::child_started(long pid) {
  write_line(R"({"v":1,"event":"child_started","pid":)" + std::to_string(pid) + "}");
}
void StatusFd::child_exit_code(int code) {
  write_line(R"({"v":1,"event":"child_exit","code":)" + std::to_string(code) + "}");
}
void StatusFd::child_exit_signal(int sig) {
  write_line(R"({"v":1,"event":"child_exit","signal":)" + std::to_string(sig) + "}");
}

void StatusFd::session(const std::string& id, const std::string& state, long changes) {
  write_line(R"({"v":1,"event":"session","id":")" + json_escape(id) + R"(","state":")" + json_escape(state) +
             R"(","changes":)" + std::to_string(changes) + "}");
}

void StatusFd::net(const std::string& host, unsigned port, bool allowed, const std::string& reason) {
  write_line(R"({"v":1,"event":"net","host":")" + json_escape(host) + R"(","port":)" + std::to_string(port) +
             R"(,"action":")" + (allowed ? "allow" : "deny") + R"(","reason":")" + json_escape(reason) + "\"}");
}

void StatusFd::close() {
  std::lock_guard<std::mutex> lock(m_mutex);
  if (m_fd >= 0) ::close(m_fd);
  m_fd = -1;
}

std::string json_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 8);
  static const char* hex = "0123456789abcdef";
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      // Validate one UTF-8 sequence.
      size_t len = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
      bool ok = len != 0 && i + len <= s.size();
      for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 2;
      if (ok) {
        out.append(s, i, len);
        i += len - 1;
      } else {
        out += "\xEF\xBF\xBD";
      }
    }
  }
  return out;
}

}  // namespace zb::exec
