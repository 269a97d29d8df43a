#include "exec/blocked.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

#include "exec/signals.hpp"
#include "util/beneath.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"
#include "util/path.hpp"

namespace zb::exec {
namespace {

// The parent directory of p, opened without following any symlink on the way.
UniqueFd open_parent(const std::string& p) {
  return UniqueFd(util::openat2_fd(AT_FDCWD, path::parent(p).c_str(), O_PATH | O_DIRECTORY,
                                   RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
}

std::string base_name(const std::string& p) { return p.substr(p.find_last_of('/') + 1); }

}  // namespace

Result<void> MaskAnchors::create(const std::vector<std::string>& paths) {
  for (const auto& p : paths) {
    UniqueFd dir = open_parent(p);
    if (!dir) return fail("anchor for denied path " + log::quote(p) + ": open its parent");
    std::string name = base_name(p);
    int fd = ::openat(dir.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      if (errno == EEXIST) continue;  // appeared meanwhile: the plan masks what is there
      return fail("anchor for denied path " + log::quote(p));
    }
    struct stat st{};
    ::fstat(fd, &st);
    ::close(fd);
    m_made.push_back({p, st.st_dev, st.st_ino});
  }
  return {};
}

MaskAnchors::~MaskAnchors() {
  for (const auto& m : m_made) {
    UniqueFd dir = open_parent(m.path);
    if (!dir) continue;
    std::string name = base_name(m.path);
    struct stat st{};
    if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (st.st_dev == m.dev && st.st_ino == m.ino && S_ISREG(st.st_mode) && st.st_size == 0) {
      ::unlinkat(dir.get(), name.c_str(), 0);
    } else {
      log::warning("left " + log::quote(m.path) + " in place: it is no longer the empty anchor zerobox made");
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
        struct stat st{};
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
      struct stat st{};
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
        if (::getrandom(&r, sizeof r, 0) != static_cast<ssize_t>(sizeof r))
          r = static_cast<uint32_t>(::getpid() + attempt);
        char suffix[16];
        std::snprintf(suffix, sizeof suffix, "%08x", r);
        target = name + ".zerobox-blocked-" + suffix;
        rc = static_cast<int>(
            ::syscall(SYS_renameat2, dir.get(), name.c_str(), dir.get(), target.c_str(), RENAME_NOREPLACE));
        if (rc != 0 && errno != EEXIST) break;
      }
      if (rc == 0) {
        out.push_back("the command created denied path " + log::quote(what) +
                      (what == p ? "" : " (on the way to " + log::quote(p) + ")") + "; moved it to " +
                      log::quote(path::join(here.empty() ? "/" : here, target)) +
                      " (name it in --allow-write to allow it)");
      } else {
        out.push_back("error: the command created denied path " + log::quote(what) +
                      " and it could not be moved aside: " + std::strerror(errno) +
                      "; remove it before using this directory");
      }
      break;
    }
  }
  return out;
}

// Polls rather than using inotify: closing an inotify descriptor waits for an SRCU grace
// period in the kernel (fsnotify_destroy_group), which added 10-15 ms to every run's exit.
// A few lstat() calls every 10 ms cost next to nothing.
struct LiveBlocker::Impl {
  struct Watched {
    std::string path;
    std::string gate;  // the first component of path that did not exist last time we looked
    int moves = 0;
  };
  std::vector<Watched> watched;
  // Held by the thread while it looks: once stop() has it, nothing moves any more.
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::vector<std::string> lines;

  // The first component of p that does not exist (p itself when only it is missing).
  static std::string first_missing(const std::string& p) {
    std::string gate = p;
    for (std::string d = path::parent(p); d != "/" && ::access(d.c_str(), F_OK) != 0; d = path::parent(d)) gate = d;
    return gate;
  }

  void tick() {
    for (auto& w : watched) {
      if (w.moves >= 20) continue;
      for (;;) {
        struct stat st{};
        if (::lstat(w.gate.c_str(), &st) != 0) break;
        if (S_ISDIR(st.st_mode) && w.gate != w.path) {
          // A directory on the way appeared: look one level further.
          w.gate = w.path.substr(0, w.path.find('/', w.gate.size() + 1));
          continue;
        }
        auto out = move_created_aside({w.path});
        ++w.moves;
        w.gate = first_missing(w.path);
        lines.insert(lines.end(), out.begin(), out.end());
        break;
      }
    }
  }

  void run() {
    std::unique_lock lock(mu);
    for (auto& w : watched) w.gate = first_missing(w.path);
    while (!stopping) {
      cv.wait_for(lock, std::chrono::milliseconds(10));
      if (stopping) break;
      tick();
    }
  }
};

LiveBlocker::LiveBlocker(const std::vector<std::string>& absent_at_start) : m_impl(std::make_shared<Impl>()) {
  for (const auto& a : absent_at_start) m_impl->watched.push_back({a, a, 0});
}

LiveBlocker::~LiveBlocker() { stop(); }

void LiveBlocker::start() {
  if (m_started || m_impl->watched.empty()) return;
  m_started = true;
  // The thread holds the state too: stop() does not wait for it to wake up and return.
  // It takes no signals: they are the supervisor's to forward.
  AllSignalsBlocked blocked;
  try {
    std::thread([impl = m_impl] { impl->run(); }).detach();
  } catch (const std::system_error&) {
    // No thread to spare: the sweep at exit still moves them aside.
    log::warning("cannot watch protected paths during the run (no thread); they are checked at exit");
  }
}

std::vector<std::string> LiveBlocker::stop() {
  std::lock_guard lock(m_impl->mu);
  m_impl->stopping = true;
  m_impl->cv.notify_all();
  return std::exchange(m_impl->lines, {});
}

}  // namespace zb::exec
