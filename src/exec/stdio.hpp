// The command's stdin, stdout and stderr without the caller's files behind them.
//
// A file description carries the mount it was opened on. The caller's stdio lives on the
// host's mounts, not under the sandbox's read-only views, so the command could change a
// host file's mode, owner, times or xattrs through it: fchmod(1, 04755) on a
// `> build.log`, chmod("/proc/self/fd/0", 0666) on a read-only stdin, chmod of the
// caller's terminal. So the child gives the command stdio that leads to no host inode
// it could change:
// - a device node (a terminal, /dev/null) is opened again through a read-only bind of
//   the node (overlay::execute_plan): reads, writes and ioctls work as before, since a
//   device needs no writable mount, and a change of its metadata fails with EROFS;
// - anything else on a file system (a regular file, a named FIFO, a directory, a device
//   whose path the child cannot find) becomes a pipe, whose other end the supervisor
//   copies to or from the caller's file (StdioRelay);
// - a pipe or a socket stays: its inode is the kernel's own, on no file system of the host.
#pragma once

#include <termios.h>

#include <memory>
#include <thread>
#include <vector>

#include "util/fd.hpp"

namespace zb::exec {

// Whether std fd `fd` (0, 1 or 2) must not reach the command as it is. No allocation.
bool std_fd_needs_relay(int fd);

// The child's side, after the mount plan: every std fd not in `reopened` (a bit per fd)
// that needs it becomes a pipe, except, with `keep_devices`, a device node (root's own
// ids, exec/ids.hpp: the command's root owns no host inode outside the idmapped tree, so
// it cannot change the node's metadata, while the node's mode may deny it the reopen); the other ends go to the
// supervisor over `channel` in one message (always sent, with zero fds if none). Close-on-exec flags are kept. No
// allocation. 0 or -1/errno.
int relay_std_fds(int channel, unsigned reopened, bool keep_devices);

// relay_std_fds' message: a byte with how many fds it carries, then for each the std fd
// it serves, or this mark for a second read end of stdin's pipe, through which the
// supervisor sees what the command left unread.
inline constexpr unsigned char k_stdin_peek = 0x10;

// The supervisor's side: copies between the pipes of relay_std_fds and the caller's own
// fds 0, 1 and 2, on a thread per pipe.
class StdioRelay {
 public:
  StdioRelay();
  ~StdioRelay();
  StdioRelay(const StdioRelay&) = delete;
  StdioRelay& operator=(const StdioRelay&) = delete;

  // Takes the child's message from `channel` (without waiting: the child sent it before
  // the command started) and starts copying.
  void start(int channel);
  // Waits until the sandbox has closed its ends of the output pipes and everything they
  // held is written out; stops feeding stdin, leaving the caller's file offset after
  // what the command read. Called by the destructor if not before.
  void finish();

 private:
  struct Pipe;
  std::vector<std::unique_ptr<Pipe>> m_pipes;
  UniqueFd m_stop;  // an eventfd: readable once finish() wants stdin's copy to end
};

// The caller's terminal modes (echo, canonical mode, ...), put back at exit if the
// command left them changed.
class TerminalModes {
 public:
  TerminalModes();
  ~TerminalModes();
  TerminalModes(const TerminalModes&) = delete;
  TerminalModes& operator=(const TerminalModes&) = delete;

 private:
  int m_fd = -1;
  termios m_saved{};
};

// Root's own ids (exec/ids.hpp): the caller's pipes on fds 0, 1 and 2 belong to host uid
// 0, whom the command's root is not, and a pipe is mode 0600, so opening /dev/stdout (the
// pipe again, through /proc/self/fd/1) would be refused inside. For the run such a pipe
// is lent to the sandbox's root (fchown); its owner is put back when this object goes.
// A pipe has no file on disk, and host users other than root cannot reach it through
// /proc either way.
class LentPipes {
 public:
  LentPipes() = default;
  ~LentPipes();
  LentPipes(const LentPipes&) = delete;
  LentPipes& operator=(const LentPipes&) = delete;

  void lend(uid_t uid, gid_t gid);

 private:
  struct Saved {
    int fd;
    dev_t dev;
    ino_t ino;
    uid_t uid;
    gid_t gid;
  };
  std::vector<Saved> m_saved;
};

}  // namespace zb::exec
