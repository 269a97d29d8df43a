#include "exec/blocked.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "util/fd.hpp"
#include "util/log.hpp"
#include "util/path.hpp"

namespace zb::exec {
namespace {

// The parent directory of p, opened without following any symlink on the way.
UniqueFd open_parent(const std::string& p) {
  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return UniqueFd(static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path::parent(p).c_str(), &how, sizeof how)));
}

std::string base_name(const std::string& p) { return p.substr(p.find_last_of('/') + 1); }

}  // namespace

Result<void> Placeholders::create(const std::vector<std::string>& paths) {
  for (const auto& p : paths) {
    UniqueFd dir = open_parent(p);
    if (!dir) return fail("placeholder for denied path " + log::quote(p) + ": open its parent");
    std::string name = base_name(p);
    int fd = ::openat(dir.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      if (errno == EEXIST) continue;  // appeared meanwhile: the plan masks what is there
      return fail("placeholder for denied path " + log::quote(p));
    }
    struct stat st {};
    ::fstat(fd, &st);
    ::close(fd);
    m_made.push_back({p, st.st_dev, st.st_ino});
  }
  return {};
}

Placeholders::~Placeholders() {
  for (const auto& m : m_made) {
    UniqueFd dir = open_parent(m.path);
    if (!dir) continue;
    std::string name = base_name(m.path);
    struct stat st {};
    if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (st.st_dev == m.dev && st.st_ino == m.ino && S_ISREG(st.st_mode) && st.st_size == 0) {
      ::unlinkat(dir.get(), name.c_str(), 0);
    } else {
      log::warning("left " + log::quote(m.path) + " in place: it is no longer the empty placeholder zerobox made");
    }
  }
}

std::vector<std::string> move_created_aside(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    // Common case, one openat2(): the parent resolves without symlinks, and p is absent.
    {
      UniqueFd parent = open_parent(p);
      if (parent) {
        struct stat st {};
        if (::fstatat(parent.get(), base_name(p).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      } else if (errno == ENOENT) {
        continue;  // a directory on the way is missing: p was not created
      }
    }
    // Walk down from / without following anything. When the sandbox was built, every
    // existing component of p was a real directory (p is canonical) and p did not exist;
    // so a symlink on the way, or p itself, is the command's doing: move that aside.
    UniqueFd dir(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    std::vector<std::string> parts;
    for (size_t i = 1; i <= p.size();) {
      size_t j = p.find('/', i);
      if (j == std::string::npos) j = p.size();
      if (j > i) parts.push_back(p.substr(i, j - i));
      i = j + 1;
    }
    std::string here;
    for (size_t i = 0; dir && i < parts.size(); ++i) {
      const std::string& name = parts[i];
      struct stat st {};
      if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) break;  // not created
      if (i + 1 < parts.size() && S_ISDIR(st.st_mode)) {
        here = path::join(here.empty() ? "/" : here, name);
        dir.reset(::openat(dir.get(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        continue;
      }
      // Not a directory where one would be: a symlink, or a file such as a `.git` gitfile
      // ("gitdir: elsewhere", which would point git at a config the command wrote). Either
      // was put there by the command; it goes aside like p itself would.
      std::string what = path::join(here.empty() ? "/" : here, name);
      // An unguessable suffix: the command cannot pre-create the target to block the move.
      std::string target;
      int rc = -1;
      for (int attempt = 0; attempt < 16 && rc != 0; ++attempt) {
        uint32_t r = 0;
        if (::getrandom(&r, sizeof r, 0) != static_cast<ssize_t>(sizeof r)) r = static_cast<uint32_t>(::getpid() + attempt);
        char suffix[16];
        std::snprintf(suffix, sizeof suffix, "%08x", r);
        target = name + ".zerobox-blocked-" + suffix;
        rc = static_cast<int>(::syscall(SYS_renameat2, dir.get(), name.c_str(), dir.get(), target.c_str(), RENAME_NOREPLACE));
        if (rc != 0 && errno != EEXIST) break;
      }
      if (rc == 0) {
        out.push_back("the command created denied path " + log::quote(what) + (what == p ? "" : " (on the way to " + log::quote(p) + ")") +
                      "; moved it to " + log::quote(path::join(here.empty() ? "/" : here, target)) +
                      " (name it in --allow-write to allow it)");
      } else {
        out.push_back("error: the command created denied path " + log::quote(what) + " and it could not be moved aside: " +
                      std::strerror(errno) + "; remove it before using this directory");
      }
      break;
    }
  }
  return out;
}

struct LiveBlocker::Impl {
  std::vector<std::string> absent;
  UniqueFd inotify;
  UniqueFd stop_r, stop_w;
  std::map<int, std::string> dirs;   // watch descriptor -> the directory's path
  std::map<std::string, int> moves;  // path -> times moved aside
  std::mutex mu;
  std::vector<std::string> lines;
  std::thread thread;

  // Watches dir if it is the parent of, or on the way to, an absent path.
  void watch(const std::string& dir) {
    bool wanted = std::any_of(absent.begin(), absent.end(), [&](const std::string& a) {
      return path::is_under(a, dir) && a != dir;
    });
    if (!wanted) return;
    int wd = ::inotify_add_watch(inotify.get(), dir.c_str(), IN_CREATE | IN_MOVED_TO | IN_ONLYDIR | IN_DONT_FOLLOW);
    if (wd >= 0) dirs[wd] = dir;
  }

  // A name appeared in dir: move aside any absent path it is, or watch the way to one.
  void appeared(const std::string& dir, const std::string& name, bool is_dir) {
    std::string full = path::join(dir, name);
    std::vector<std::string> hit;
    for (const auto& a : absent) {
      if (a == full || (path::is_under(a, full) && !is_dir)) hit.push_back(a);  // a file on the way: the sweep decides
    }
    for (const auto& a : hit) {
      if (++moves[a] > 20) continue;
      auto out = move_created_aside({a});
      std::lock_guard lock(mu);
      lines.insert(lines.end(), out.begin(), out.end());
    }
    if (is_dir) {
      watch(full);
      // Created with content already in it (mkdir -p, a rename): look now.
      for (const auto& a : absent) {
        if (path::is_under(a, full) && a != full && ++moves[a] <= 20) {
          auto out = move_created_aside({a});
          std::lock_guard lock(mu);
          lines.insert(lines.end(), out.begin(), out.end());
        }
      }
    }
  }

  void run() {
    alignas(inotify_event) char buf[16 * 1024];
    for (;;) {
      pollfd fds[2] = {{inotify.get(), POLLIN, 0}, {stop_r.get(), POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[1].revents != 0) return;
      ssize_t n = ::read(inotify.get(), buf, sizeof buf);
      if (n <= 0) continue;
      for (char* p = buf; p < buf + n;) {
        auto* ev = reinterpret_cast<inotify_event*>(p);
        p += sizeof(inotify_event) + ev->len;
        auto it = dirs.find(ev->wd);
        if (it == dirs.end() || ev->len == 0) continue;
        appeared(it->second, ev->name, (ev->mask & IN_ISDIR) != 0);
      }
    }
  }
};

LiveBlocker::LiveBlocker(std::vector<std::string> absent_at_start) : m_impl(std::make_unique<Impl>()) {
  Impl& im = *m_impl;
  im.absent = std::move(absent_at_start);
  if (im.absent.empty()) return;
  im.inotify.reset(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  int p[2];
  if (!im.inotify || ::pipe2(p, O_CLOEXEC) != 0) {
    log::debug("protected paths: no inotify; created ones are moved aside at exit only");
    return;
  }
  im.stop_r.reset(p[0]);
  im.stop_w.reset(p[1]);
  for (const auto& a : im.absent) {
    // The deepest existing directory on the way to a.
    std::string d = path::parent(a);
    while (d != "/" && path::kind_of(d) != path::Kind::Directory) d = path::parent(d);
    im.watch(d);
  }
  im.thread = std::thread([&im] { im.run(); });
}

LiveBlocker::~LiveBlocker() { stop(); }

std::vector<std::string> LiveBlocker::stop() {
  if (!m_impl) return {};
  if (m_impl->thread.joinable()) {
    (void)!::write(m_impl->stop_w.get(), "x", 1);
    m_impl->thread.join();
  }
  std::lock_guard lock(m_impl->mu);
  return std::exchange(m_impl->lines, {});
}

}  // namespace zb::exec
