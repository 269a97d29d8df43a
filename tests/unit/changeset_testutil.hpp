// Helpers of the changeset tests: test_changeset.cpp (hand-made layers) and
// test_changeset_overlay.cpp (real overlays, in unit_priv_tests).
#pragma once

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <string>
#include <vector>

#include "snapshot/changeset.hpp"

namespace zb::test {

// A new or emptied file holding `content`, with exactly `mode` (whatever the umask).
inline bool put(const std::string& path, const std::string& content, mode_t mode = 0644) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return false;
  bool ok = ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
  ok = ::fchmod(fd, mode) == 0 && ok;
  return ::close(fd) == 0 && ok;
}

inline const snapshot::ScannedChange* find(const std::vector<snapshot::ScannedChange>& v, const std::string& path) {
  for (const auto& c : v)
    if (c.change.path == path) return &c;
  return nullptr;
}

inline std::ptrdiff_t index_of(const std::vector<snapshot::ScannedChange>& v, const std::string& path) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i].change.path == path) return static_cast<std::ptrdiff_t>(i);
  return -1;
}

inline std::string dump(const std::vector<snapshot::ScannedChange>& v) {
  std::string s;
  for (const auto& c : v) s += std::string(zb::store::to_string(c.change.kind)) + " " + c.change.path + "\n";
  return s;
}

}  // namespace zb::test

#define EXPECT_CHANGE(v, path, k)                                                    \
  do {                                                                               \
    const zb::snapshot::ScannedChange* c_ = zb::test::find(v, path);                 \
    REQUIRE_MESSAGE(c_ != nullptr, "missing " << path << "\n" << zb::test::dump(v)); \
    CHECK(c_->change.kind == (k));                                                   \
  } while (0)
