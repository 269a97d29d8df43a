#include "overlay/mountinfo.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "util/fd.hpp"
#include "util/path.hpp"

namespace zb::overlay {

std::string MountTable::first_mount_below(const std::string& dir) const {
  std::string prefix = dir == "/" ? "/" : dir + "/";
  for (auto it = targets.lower_bound(prefix); it != targets.end(); ++it) {
    if (it->compare(0, prefix.size(), prefix) != 0) break;
    if (*it != dir) return *it;
  }
  return {};
}

std::string unescape_mountinfo(std::string_view field) {
  std::string out;
  out.reserve(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    auto oct = [](char c) { return c >= '0' && c <= '7'; };
    if (field[i] == '\\' && i + 3 < field.size() && oct(field[i + 1]) && oct(field[i + 2]) && oct(field[i + 3])) {
      out += static_cast<char>(((field[i + 1] - '0') << 6) | ((field[i + 2] - '0') << 3) | (field[i + 3] - '0'));
      i += 3;
      continue;
    }
    out += field[i];
  }
  return out;
}

Result<MountTable> parse_mountinfo(std::string_view text) {
  MountTable out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.empty()) continue;
    // "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw" (proc(5)):
    // the fifth field is the mount point, with space, tab, newline and backslash escaped
    // as \ooo.
    size_t field_start = 0;
    for (int field = 0; field < 4; ++field) {
      size_t sp = line.find(' ', field_start);
      if (sp == std::string_view::npos) return fail_msg("mountinfo: malformed line");
      field_start = sp + 1;
    }
    size_t end = line.find(' ', field_start);
    if (end == std::string_view::npos) return fail_msg("mountinfo: malformed line");
    std::string target = unescape_mountinfo(line.substr(field_start, end - field_start));
    if (!target.empty() && target[0] == '/') out.targets.insert(path::normalize(target));
  }
  return out;
}

Result<MountTable> read_mount_table(const char* file) {
  UniqueFd fd(::open(file, O_RDONLY | O_CLOEXEC));
  if (!fd) return fail(std::string("open ") + file);
  std::string text;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(std::string("read ") + file);
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  return parse_mountinfo(text);
}

}  // namespace zb::overlay
