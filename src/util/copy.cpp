// Sparse-aware file copy and xattrs; the contracts are in copy.hpp.
#include "util/copy.hpp"

#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>

namespace zb::util {
namespace {

// copy_file_range(2) is asked for at most this much per call so that one call never
// has to cover a multi-gigabyte range (the kernel caps a call near 2 GiB anyway).
constexpr std::int64_t k_chunk = std::int64_t{1} << 30;
// The read/write fallback's buffer, and the granularity at which it finds zero blocks.
constexpr std::int64_t k_block = std::int64_t{128} * 1024;

bool unsupported(int err) { return err == EXDEV || err == EINVAL || err == ENOSYS || err == EOPNOTSUPP; }

bool all_zero(const char* p, std::size_t n) { return n == 0 || (p[0] == 0 && std::memcmp(p, p + 1, n - 1) == 0); }

class Copier {
 public:
  Copier(int in_fd, int out_fd) : m_in(in_fd), m_out(out_fd) {}

  // Copies [from, to). Returns where the input really ended: `to`, or less when the
  // file shrank while being copied.
  Result<std::int64_t> range(std::int64_t from, std::int64_t to) {
    std::int64_t pos = from;
    while (m_use_cfr && pos < to) {
      off64_t off_in = pos;
      off64_t off_out = pos;
      auto len = static_cast<std::size_t>(std::min(to - pos, k_chunk));
      ssize_t n = ::copy_file_range(m_in, &off_in, m_out, &off_out, len, 0);
      if (n > 0) {
        pos += n;
      } else if (n == 0) {
        // End of file before `to`: the file shrank, or a filesystem that reports 0 for
        // "cannot" (some network and pseudo filesystems did). pread tells which.
        m_use_cfr = false;
      } else if (errno == EINTR) {
        continue;
      } else if (unsupported(errno)) {
        m_use_cfr = false;
      } else {
        return fail("copy_file_range");
      }
    }
    if (pos < to) return read_write(pos, to);
    return pos;
  }

 private:
  // The fallback: 128 KiB blocks aligned to file offsets, skipping all-zero ones. The
  // output was truncated to 0 first, so what is not written reads back as zeros.
  Result<std::int64_t> read_write(std::int64_t from, std::int64_t to) {
    if (!m_buf) m_buf = std::make_unique<char[]>(static_cast<std::size_t>(k_block));
    char* buf = m_buf.get();
    std::int64_t pos = from;
    while (pos < to) {
      std::int64_t block_end = std::min(to, (pos / k_block + 1) * k_block);
      auto want = static_cast<std::size_t>(block_end - pos);
      std::size_t got = 0;
      while (got < want) {
        ssize_t n = ::pread(m_in, buf + got, want - got, pos + static_cast<off_t>(got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail("pread");
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
      }
      if (!all_zero(buf, got)) {
        std::size_t put = 0;
        while (put < got) {
          ssize_t n = ::pwrite(m_out, buf + put, got - put, pos + static_cast<off_t>(put));
          if (n < 0 && errno == EINTR) continue;
          if (n < 0) return fail("pwrite");
          put += static_cast<std::size_t>(n);
        }
      }
      pos += static_cast<std::int64_t>(got);
      if (got < want) return pos;  // end of file came early: the file shrank
    }
    return pos;
  }

  int m_in;
  int m_out;
  bool m_use_cfr = true;
  std::unique_ptr<char[]> m_buf;
};

}  // namespace

Result<std::int64_t> copy_sparse(int in_fd, int out_fd) {
  struct stat st{};
  if (::fstat(in_fd, &st) != 0) return fail("fstat");
  std::int64_t size = st.st_size;
  // Start from an empty output: holes are made by not writing, which only gives zeros
  // where nothing was before.
  if (::ftruncate(out_fd, 0) != 0) return fail("ftruncate");
  Copier copier(in_fd, out_fd);
  std::int64_t pos = 0;
  while (pos < size) {
    std::int64_t data = ::lseek(in_fd, pos, SEEK_DATA);
    std::int64_t hole = size;
    if (data < 0 && errno == ENXIO) break;  // only a hole is left
    if (data < 0 && errno == EINVAL) {
      data = pos;  // no SEEK_DATA here: all data, and the fallback still skips zeros
    } else if (data < 0) {
      return fail("lseek SEEK_DATA");
    } else {
      hole = ::lseek(in_fd, data, SEEK_HOLE);
      if (hole < 0 && errno == ENXIO) break;  // the file shrank past `data`
      if (hole < 0) return fail("lseek SEEK_HOLE");
    }
    if (data >= size) break;
    hole = std::min(hole, size);
    auto end = copier.range(data, hole);
    if (!end) return std::unexpected(end.error());
    if (*end < hole) {
      size = *end;  // the file shrank while being copied: the copy ends where it did
      break;
    }
    pos = hole;
  }
  if (::ftruncate(out_fd, size) != 0) return fail("ftruncate");
  return size;
}

}  // namespace zb::util

namespace zb::util {
namespace {

// dir_fd/name without following a final symlink, and without opening the file (a FIFO,
// a file without read permission): through the directory's magic link in /proc.
std::string via_proc(int dir_fd, const std::string& name) {
  return "/proc/self/fd/" + std::to_string(dir_fd) + "/" + name;
}

bool wanted(std::string_view n, XattrScope scope) {
  if (scope == XattrScope::All) return true;
  return n.starts_with("user.") && !n.starts_with("user.overlay.");
}

bool not_here(int err) { return err == EPERM || err == EACCES || err == ENOTSUP || err == EOPNOTSUPP; }

// One attribute's value; nullopt when it is gone or this caller may not read it.
Result<std::optional<std::string>> get_one(const std::string& p, const std::string& attr) {
  for (;;) {
    ssize_t n = ::lgetxattr(p.c_str(), attr.c_str(), nullptr, 0);
    if (n < 0) {
      if (errno == ENODATA || not_here(errno)) return std::optional<std::string>();
      return fail("getxattr " + attr);
    }
    std::string value(static_cast<std::size_t>(n), '\0');
    if (n == 0) return std::optional<std::string>(std::move(value));
    n = ::lgetxattr(p.c_str(), attr.c_str(), value.data(), value.size());
    if (n >= 0) {
      value.resize(static_cast<std::size_t>(n));
      return std::optional<std::string>(std::move(value));
    }
    if (errno == ERANGE) continue;  // grew meanwhile
    if (errno == ENODATA || not_here(errno)) return std::optional<std::string>();
    return fail("getxattr " + attr);
  }
}

}  // namespace

Result<Xattrs> read_xattrs(int dir_fd, const std::string& name, XattrScope scope) {
  std::string p = via_proc(dir_fd, name);
  std::string names;
  for (;;) {
    ssize_t n = ::llistxattr(p.c_str(), nullptr, 0);
    if (n < 0) {
      if (errno == ENOTSUP || errno == EOPNOTSUPP) return Xattrs{};
      return fail("listxattr " + name);
    }
    names.resize(static_cast<std::size_t>(n));
    if (n == 0) break;
    n = ::llistxattr(p.c_str(), names.data(), names.size());
    if (n >= 0) {
      names.resize(static_cast<std::size_t>(n));
      break;
    }
    if (errno != ERANGE) return fail("listxattr " + name);
  }
  Xattrs out;
  for (std::size_t pos = 0; pos < names.size();) {
    std::size_t end = names.find('\0', pos);
    if (end == std::string::npos) end = names.size();
    std::string attr = names.substr(pos, end - pos);
    pos = end + 1;
    if (attr.empty() || !wanted(attr, scope)) continue;
    auto value = get_one(p, attr);
    if (!value) return std::unexpected(value.error());
    if (!*value) continue;  // vanished, or not readable by this caller
    out.emplace_back(std::move(attr), std::move(**value));
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<void> write_xattrs(int dir_fd, const std::string& name, const Xattrs& want, bool replace,
                          std::vector<std::string>& refused) {
  std::string p = via_proc(dir_fd, name);
  if (replace) {
    auto have = read_xattrs(dir_fd, name, XattrScope::Carried);
    if (!have) return std::unexpected(have.error());
    for (const auto& [attr, value] : *have) {
      bool kept = std::any_of(want.begin(), want.end(), [&](const auto& w) { return w.first == attr; });
      if (kept) continue;
      if (::lremovexattr(p.c_str(), attr.c_str()) != 0 && errno != ENODATA) {
        if (not_here(errno)) {
          refused.push_back(attr);
          continue;
        }
        return fail("removexattr " + attr + " " + name);
      }
    }
  }
  for (const auto& [attr, value] : want) {
    if (::lsetxattr(p.c_str(), attr.c_str(), value.data(), value.size(), 0) == 0) continue;
    if (not_here(errno) || errno == EINVAL) {
      refused.push_back(attr);
      continue;
    }
    return fail("setxattr " + attr + " " + name);
  }
  return {};
}

}  // namespace zb::util
