// Tests for src/exec/status_fd.cpp
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

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
  CHECK(std::string(buf) == "{\"v\":1,\"event\":\"child_started\",\"pid\":42}\n{\"v\":1,\"event\":\"child_exit\",\"code\":3}\n");
  CHECK(::read(p[0], buf, sizeof buf) == 0);  // EOF after the last event
  ::close(p[0]);
}
