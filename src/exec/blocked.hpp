// Denied paths that did not exist when the sandbox was built have no inode to mount
// over. A --deny-* path whose parent is writable gets an empty anchor for the run
// (MaskAnchors); a protected name, or a deeper missing path, that the command creates
// is renamed aside at exit (move_created_aside), so it never takes effect on the host
// under its denied name.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace zb::exec {

// For each path that now exists, renames it to PATH.zerobox-blocked (or -2, -3, ...)
// without following symlinks anywhere in its path, and returns one line per path for
// the user.
std::vector<std::string> move_created_aside(const std::vector<std::string>& absent_at_start);

// While the command runs, looks every 10 ms for the absent denied or protected paths (and
// for directories created on the way to them), and moves such a path aside once the command
// has created it, so that a host process (an editor, direnv, a shell) does not meet it while
// the run goes on. The sweep at exit (move_created_aside) still follows. A path moved 20
// times is left to that sweep.
class LiveBlocker {
 public:
  explicit LiveBlocker(const std::vector<std::string>& absent_at_start);
  ~LiveBlocker();
  LiveBlocker(const LiveBlocker&) = delete;
  LiveBlocker& operator=(const LiveBlocker&) = delete;

  // Starts watching, on a thread of its own: once the command is about to run (nothing
  // can create a path before), so the thread's start is off the sandbox's start-up.
  void start();
  // Stops watching; the lines for the user (as move_created_aside's). Does not wait for
  // the thread to wake up: once this returns it moves nothing more, and it returns on
  // its own.
  std::vector<std::string> stop();

 private:
  struct Impl;
  std::shared_ptr<Impl> m_impl;
  bool m_started = false;
};

}  // namespace zb::exec

namespace zb::exec {

// Empty files standing in, for the length of a run, for denied paths that do not exist
// yet, so that the mount plan can mask them. Each is created with O_EXCL in a parent
// opened without following symlinks, and removed when this object goes out of scope if
// it is still the same empty file.
class MaskAnchors {
 public:
  MaskAnchors() = default;
  MaskAnchors(const MaskAnchors&) = delete;
  MaskAnchors& operator=(const MaskAnchors&) = delete;
  ~MaskAnchors();

  Result<void> create(const std::vector<std::string>& paths);

 private:
  struct Made {
    std::string path;
    dev_t dev;
    ino_t ino;
  };
  std::vector<Made> m_made;
};

}  // namespace zb::exec
