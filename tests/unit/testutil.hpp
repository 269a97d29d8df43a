// A fresh temporary directory per test case, removed at the end of the case.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace zb::test {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/zerobox-unit-XXXXXX";
    char* p = ::mkdtemp(tmpl);
    m_path = p != nullptr ? p : "";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return m_path; }
  std::string operator/(const std::string& rel) const { return m_path + "/" + rel; }

 private:
  std::string m_path;
};

inline void write_file(const std::string& p, const std::string& content) { std::ofstream(p) << content; }

inline void mkdirs(const std::string& p) { std::filesystem::create_directories(p); }

}  // namespace zb::test
