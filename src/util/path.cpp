#include "util/path.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include <limits.h>
#include <sys/stat.h>

#include <cstdlib>
#include <deque>

#include "util/fd.hpp"

namespace zb::path {

namespace {

// The non-empty components of p, "." and ".." included.
std::vector<std::string_view> components(std::string_view p) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < p.size()) {
    std::size_t j = p.find('/', i);
    if (j == std::string_view::npos) j = p.size();
    if (j > i) out.push_back(p.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string join(std::string_view a, std::string_view b) {
  std::string out(a);
  while (!b.empty() && b.front() == '/') b.remove_prefix(1);
  if (b.empty()) return out.empty() ? "/" : out;
  if (out.empty() || out.back() != '/') out += '/';
  out += b;
  return out;
}

std::string normalize(std::string_view p) {
  std::vector<std::string_view> parts;
  for (std::string_view part : components(p)) {
    if (part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else {
      parts.push_back(part);
    }
  }
  std::string out;
  for (auto part : parts) {
    out += '/';
    out += part;
  }
  return out.empty() ? "/" : out;
}

bool is_under(std::string_view p, std::string_view root) {
  if (root == "/") return !p.empty() && p.front() == '/';
  if (p.size() < root.size() || p.compare(0, root.size(), root) != 0) return false;
  return p.size() == root.size() || p[root.size()] == '/';
}

std::string parent(std::string_view p) {
  auto pos = p.find_last_of('/');
  if (pos == std::string_view::npos || pos == 0) return "/";
  return std::string(p.substr(0, pos));
}

std::string absolute(std::string_view p, std::string_view cwd, std::string_view home) {
  std::string s;
  if (p == "~") {
    s = home;
  } else if (p.starts_with("~/")) {
    s = join(home, p.substr(2));
  } else if (!p.empty() && p.front() == '/') {
    s = p;
  } else {
    s = join(cwd, p);
  }
  return normalize(s);
}

Result<Canonical> canonicalize(std::string_view abs) {
  // Walk up until an existing prefix is found, realpath it, then re-append the tail.
  std::string head(abs);
  std::string tail;
  for (;;) {
    char buf[PATH_MAX];
    if (::realpath(head.c_str(), buf) != nullptr) {
      std::string base(buf);
      Canonical c;
      c.exists = tail.empty();
      c.path = tail.empty() ? base : normalize(join(base, tail));
      return c;
    }
    if (errno != ENOENT && errno != ENOTDIR) return fail("realpath " + head);
    if (head == "/") return fail("realpath /");
    auto slash = head.find_last_of('/');
    std::string name = head.substr(slash + 1);
    tail = tail.empty() ? name : name + "/" + tail;
    head = slash == 0 ? "/" : head.substr(0, slash);
  }
}

Kind kind_of(const std::string& p) {
  struct stat st{};
  if (::stat(p.c_str(), &st) != 0) return Kind::Missing;
  if (S_ISDIR(st.st_mode)) return Kind::Directory;
  if (S_ISREG(st.st_mode)) return Kind::File;
  return Kind::Other;
}

std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == ',') {
      cur += ',';
      ++i;
    } else if (s[i] == ',') {
      out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += s[i];
    }
  }
  out.push_back(std::move(cur));
  return out;
}

Result<bool> is_empty_dir(const std::string& p) {
  // getdents64 with a small buffer: readdir() asks for 32 KiB of entries, which for /etc
  // or /usr/bin means reading the whole directory to learn it is not empty.
  UniqueFd fd(::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return fail("open " + p);
  alignas(dirent64) char buf[512];
  for (;;) {
    ssize_t n = ::getdents64(fd.get(), buf, sizeof buf);
    if (n < 0) return fail("getdents64 " + p);
    if (n == 0) return true;
    for (ssize_t off = 0; off < n;) {
      const auto* e = reinterpret_cast<const dirent64*>(buf + off);
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) return false;
      off += e->d_reclen;
    }
  }
}

LinkWalk walk_links(const std::string& abs) {
  LinkWalk w;
  std::deque<std::string> pending;  // components still to walk
  for (auto c : components(abs)) pending.emplace_back(c);
  std::string cur = "/";
  std::string first_missing;
  bool absent = false;
  while (!pending.empty()) {
    std::string c = std::move(pending.front());
    pending.pop_front();
    if (c == ".") continue;
    if (c == "..") {
      if (absent && w.open_end.empty()) w.open_end = first_missing;
      if (!absent && cur != "/") w.left.push_back(cur);
      cur = parent(cur);
      continue;
    }
    std::string next = join(cur, c);
    struct stat st{};
    if (absent || ::lstat(next.c_str(), &st) != 0) {
      if (!absent) first_missing = next;
      absent = true;
      cur = std::move(next);
      continue;
    }
    if (!S_ISLNK(st.st_mode)) {
      cur = std::move(next);
      continue;
    }
    if (w.links.size() >= 40) {
      w.loop = true;
      break;
    }
    char buf[PATH_MAX];
    ssize_t n = ::readlink(next.c_str(), buf, sizeof buf - 1);
    w.links.push_back(next);
    if (n <= 0) {
      absent = true;
      cur = std::move(next);
      continue;
    }
    std::string t(buf, static_cast<std::size_t>(n));
    auto comps = components(t);
    pending.insert(pending.begin(), comps.begin(), comps.end());
    if (t[0] == '/') cur = "/";
  }
  w.target = cur;
  w.exists = !absent && !w.loop;
  return w;
}

}  // namespace zb::path
