// Tests for src/exec/status_fd.cpp
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "exec/status_fd.hpp"

using namespace zb::exec;

TEST_CASE("json_escape keeps JSON valid for any bytes") {
  CHECK(json_escape("plain") == "plain");
  CHECK(json_escape("a\"b\\c") == "a\\\"b\\\\c");
  CHECK(json_escape("l1\nl2\t\x01") == "l1\\nl2\\t\\u0001");
  CHECK(json_escape("caf\xc3\xa9") == "caf\xc3\xa9");
  CHECK(json_escape("bad\xff") == "bad\xEF\xBF\xBD");
}

TEST_CASE("StatusFd::valid refuses stdio, closed and read-only fds") {
  std::string why;
  CHECK_FALSE(StatusFd::valid(1, why));
  CHECK(why.find("3 or more") != std::string::npos);
  CHECK_FALSE(StatusFd::valid(999, why));
  int p[2];
  REQUIRE(::pipe(p) == 0);
  CHECK_FALSE(StatusFd::valid(p[0], why));
  CHECK(StatusFd::valid(p[1], why));
  ::close(p[0]);
  ::close(p[1]);
}

TEST_CASE("StatusFd writes one JSON object per line and closes") {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  {
    StatusFd s(p[1]);
    s.child_started(42);
    s.child_exit_code(3);
    s.close();
  }
  char buf[256] = {};
  ssize_t n = ::read(p[0], buf, sizeof buf - 1);
  REQUIRE(n > 0);
  CHECK(std::string(buf) ==
        "{\"v\":1,\"event\":\"child_started\",\"pid\":42}\n{\"v\":1,\"event\":\"child_exit\",\"code\":3}\n");
  CHECK(::read(p[0], buf, sizeof buf) == 0);  // EOF after the last event
  ::close(p[0]);
}

namespace {

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

// Everything StatusFd writes for `emit`, read back from a pipe.
template <typename F>
std::string written_by(F emit) {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  {
    StatusFd s(p[1]);
    emit(s);
  }  // closed: the read below ends at EOF
  return read_all(p[0]);
}

std::string fixture(const std::string& name) {
  int fd = ::open((std::string(ZB_FIXTURES_DIR) + "/status-fd/" + name).c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  return read_all(fd);
}

}  // namespace

// The golden streams of tests/fixtures/status-fd, which the three SDKs decode (with the
// values of expected.json there): StatusFd must write exactly those bytes.
TEST_CASE("StatusFd writes the golden status-fd streams") {
  CHECK(written_by([](StatusFd& s) {
          s.child_started(31662);
          s.child_exit_code(0);
        }) == fixture("plain.jsonl"));
  CHECK(
      written_by([](StatusFd& s) {
        s.setup_error(
            "--allow-write '/nonexistent/a\"b/\xc3\xa9': neither it nor its parent exists: No such file or directory");
      }) == fixture("setup-error.jsonl"));
  CHECK(written_by([](StatusFd& s) {
          s.child_started(31673);
          s.child_exit_code(127);
        }) == fixture("exec-failure.jsonl"));
  CHECK(written_by([](StatusFd& s) {
          s.child_started(31683);
          s.child_exit_signal(15);
        }) == fixture("signal.jsonl"));
  CHECK(written_by([](StatusFd& s) {
          s.child_started(31714);
          s.child_exit_code(0);
          s.session("26b461faec74b0aa5c9cd632d8ae6c68", "pending", 2);
        }) == fixture("review-session.jsonl"));
  CHECK(written_by([](StatusFd& s) {
          s.child_started(31753);
          s.net("allowed.test", 9, true, "");
          s.net("other.test", 80, false, "not in --allow-net");
          s.net("blocked.test", 80, false, "denied by --deny-net blocked.test");
          s.net("other.test", 8443, false, "not in --allow-net");
          s.child_exit_code(7);
        }) == fixture("net-filtered.jsonl"));
}
