#include "overlay/mount.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/log.hpp"
#include "util/mount_api.hpp"

namespace zb::overlay {
namespace {

using namespace mount_api;

// `ms`: the MS_RDONLY, MS_NOSUID and MS_NODEV to set (0: all three).
int make_read_only(const char* dst, bool recursive, unsigned long ms) {
  if (ms == 0) ms = MS_RDONLY | MS_NOSUID | MS_NODEV;
  MountAttr attr{((ms & MS_RDONLY) ? k_attr_rdonly : 0) | ((ms & MS_NOSUID) ? k_attr_nosuid : 0) |
                     ((ms & MS_NODEV) ? k_attr_nodev : 0),
                 0, 0, 0};
  unsigned flags = AT_SYMLINK_NOFOLLOW | (recursive ? k_at_recursive : 0);
  if (::syscall(k_sys_mount_setattr, AT_FDCWD, dst, flags, &attr, sizeof attr) == 0) return 0;
  if (errno != ENOSYS) return -1;
  // Kernels before 5.12: a non-recursive remount (locked flags must be kept).
  return ::mount(nullptr, dst, nullptr, MS_REMOUNT | MS_BIND | (ms & (MS_RDONLY | MS_NOSUID | MS_NODEV)), nullptr);
}

int run_op(const FlatOp& op) {
  const char* dst = op.dst;
  switch (op.kind) {
    case OpKind::Mkdir:
      if (::mkdir(dst, op.mode) != 0 && errno != EEXIST) return -1;
      return 0;
    case OpKind::File: {
      int fd = ::open(dst, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, op.mode);
      if (fd < 0) return errno == EEXIST ? 0 : -1;
      ::close(fd);
      return 0;
    }
    case OpKind::Symlink:
      if (::symlink(op.src, dst) != 0 && errno != EEXIST) return -1;
      return 0;
    case OpKind::Tmpfs: return ::mount("tmpfs", dst, "tmpfs", op.flags, op.data);
    case OpKind::Overlay: return ::mount("overlay", dst, "overlay", op.flags, op.data);
    case OpKind::Bind: return ::mount(op.src, dst, nullptr, MS_BIND | (op.recursive ? MS_REC : 0), nullptr);
    case OpKind::Proc: return ::mount("proc", dst, "proc", op.flags, nullptr);
    case OpKind::Devpts: return ::mount("devpts", dst, "devpts", op.flags, op.data);
    case OpKind::ReadOnly: return make_read_only(dst, op.recursive, op.flags);
    case OpKind::PinLink: {
      // open_tree and move_mount without following the symlink at either end.
      int fd = static_cast<int>(
          ::syscall(k_sys_open_tree, AT_FDCWD, dst, k_open_tree_clone | AT_SYMLINK_NOFOLLOW | O_CLOEXEC));
      if (fd < 0) return -1;
      int rc = static_cast<int>(::syscall(k_sys_move_mount, fd, "", AT_FDCWD, dst, k_move_mount_f_empty_path));
      int err = errno;
      ::close(fd);
      errno = err;
      return rc;
    }
  }
  errno = EINVAL;
  return -1;
}

// An overlay op's superblock as a detached mount: fsopen, one fsconfig per option of
// op.data (split at unescaped commas; overlayfs undoes the escapes in the values), fsmount
// with op.flags. Returns the mount's fd, or -1.
int prepare_overlay(const FlatOp& op) {
  char buf[16384];
  std::size_t len = std::strlen(op.data);
  if (len >= sizeof buf) return -1;
  std::memcpy(buf, op.data, len + 1);
  int fs = static_cast<int>(::syscall(k_sys_fsopen, "overlay", k_fsopen_cloexec));
  if (fs < 0) return -1;
  // "overlay" as the source, as mount(2) is given: mountinfo reads the same either way.
  bool ok = ::syscall(k_sys_fsconfig, fs, k_fsconfig_set_string, "source", "overlay", 0) == 0;
  char* start = buf;
  for (std::size_t i = 0; ok && i <= len; ++i) {
    if (buf[i] == '\\' && i + 1 < len) {
      ++i;
      continue;
    }
    if (buf[i] != ',' && buf[i] != '\0') continue;
    buf[i] = '\0';
    if (*start != '\0') {
      char* eq = std::strchr(start, '=');
      if (eq != nullptr) {
        *eq = '\0';
        ok = ::syscall(k_sys_fsconfig, fs, k_fsconfig_set_string, start, eq + 1, 0) == 0;
      } else {
        ok = ::syscall(k_sys_fsconfig, fs, k_fsconfig_set_flag, start, nullptr, 0) == 0;
      }
    }
    start = buf + i + 1;
  }
  if (ok && (op.flags & MS_RDONLY)) ok = ::syscall(k_sys_fsconfig, fs, k_fsconfig_set_flag, "ro", nullptr, 0) == 0;
  if (ok) ok = ::syscall(k_sys_fsconfig, fs, k_fsconfig_cmd_create, nullptr, nullptr, 0) == 0;
  uint64_t attrs = ((op.flags & MS_RDONLY) ? k_attr_rdonly : 0) | ((op.flags & MS_NOSUID) ? k_attr_nosuid : 0) |
                   ((op.flags & MS_NODEV) ? k_attr_nodev : 0) | ((op.flags & MS_NOEXEC) ? k_attr_noexec : 0);
  int mnt = ok ? static_cast<int>(::syscall(k_sys_fsmount, fs, k_fsmount_cloexec, attrs)) : -1;
  ::close(fs);
  return mnt;
}

// Std fds that are device nodes (a terminal, /dev/null) are opened again through a
// read-only bind of the node (exec/stdio.hpp says why), while the host's tree is still at
// /oldroot: the node is found by the path its fd link shows there, and used only if it is
// the same inode. Returns a bit per fd reopened. No allocation.
unsigned reopen_std_devices() {
  unsigned reopened = 0;
  struct stat bound[3] = {};
  int bound_at[3] = {-1, -1, -1};  // which earlier fd's mount point serves this node
  for (int fd = 0; fd <= 2; ++fd) {
    struct stat st{};
    int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0 || (fl & O_PATH) != 0 || ::fstat(fd, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)))
      continue;
    char mp[] = "/.zb/stdio0";
    mp[sizeof mp - 2] = static_cast<char>('0' + fd);
    int same = -1;
    for (int j = 0; j < fd; ++j) {
      if (bound_at[j] >= 0 && bound[j].st_dev == st.st_dev && bound[j].st_ino == st.st_ino) same = bound_at[j];
    }
    if (same >= 0) {
      mp[sizeof mp - 2] = static_cast<char>('0' + same);
    } else {
      char link[] = "/oldroot/proc/self/fd/0", host[4096];
      link[sizeof link - 2] = static_cast<char>('0' + fd);
      std::size_t old_len = std::strlen(k_old);
      std::memcpy(host, k_old, old_len);
      ssize_t n = ::readlink(link, host + old_len, sizeof host - old_len - 1);
      if (n <= 0 || host[old_len] != '/') continue;
      host[old_len + static_cast<std::size_t>(n)] = '\0';
      struct stat there{};
      if (::lstat(host, &there) != 0 || there.st_dev != st.st_dev || there.st_ino != st.st_ino) continue;
      int m = ::open(mp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
      if (m < 0) continue;
      ::close(m);
      if (::mount(host, mp, nullptr, MS_BIND, nullptr) != 0) continue;
      // What was bound is checked again: the host may have replaced the node meanwhile.
      MountAttr attr{k_attr_rdonly | k_attr_nosuid | k_attr_noexec, 0, 0, 0};
      if (::stat(mp, &there) != 0 || there.st_dev != st.st_dev || there.st_ino != st.st_ino ||
          (::syscall(k_sys_mount_setattr, AT_FDCWD, mp, 0U, &attr, sizeof attr) != 0 &&
           (errno != ENOSYS ||
            ::mount(nullptr, mp, nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC, nullptr) != 0))) {
        ::umount2(mp, MNT_DETACH);
        continue;
      }
      bound[fd] = st;
      bound_at[fd] = fd;
    }
    int cloexec = (::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0 ? O_CLOEXEC : 0;
    int again = ::open(mp, (fl & (O_ACCMODE | O_APPEND | O_NONBLOCK)) | O_NOCTTY | O_CLOEXEC);
    if (again < 0) continue;
    if (::dup3(again, fd, cloexec) == fd) reopened |= 1U << fd;
    ::close(again);
  }
  return reopened;
}

// The helper's whole life: every overlay op's superblock, in plan order.
[[noreturn]] void prepare_overlays(const FlatPlan& plan) {
  for (std::size_t i = 0; i < plan.n_ops; ++i) {
    if (plan.ops[i].kind != OpKind::Overlay) continue;
    int fd = prepare_overlay(plan.ops[i]);
    plan.slots[i].fd = fd;
    __atomic_store_n(&plan.slots[i].state, fd >= 0 ? 1 : 2, __ATOMIC_RELEASE);
  }
  ::_exit(0);
}

// The helper, sharing the fd table and root, at a pid of its own choosing (clone3's
// set_tid, allowed by this process's capabilities in its user namespace): the next pid,
// 2, stays the command's, as everyone expects of a pid namespace's first process after
// its init. -1 (no helper: the plan then runs one op after the other) if that fails.
pid_t spawn_helper() {
  struct CloneArgs {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup;
  };
  pid_t want = 32767;  // below every pid_max
  CloneArgs args{};
  args.flags = CLONE_FILES | CLONE_FS;
  args.exit_signal = SIGCHLD;
  args.set_tid = reinterpret_cast<uint64_t>(&want);
  args.set_tid_size = 1;
  long pid = ::syscall(k_sys_clone3, &args, sizeof args);
  return pid < 0 ? -1 : static_cast<pid_t>(pid);
}

// Attaches op i's prepared overlay. false: do the op the ordinary way (the helper failed
// on it or is gone; its error would be mount(2)'s anyway).
bool attach_prepared(const FlatPlan& plan, std::size_t i, pid_t helper) {
  OverlaySlot& slot = plan.slots[i];
  for (unsigned spins = 0;; ++spins) {
    int32_t state = __atomic_load_n(&slot.state, __ATOMIC_ACQUIRE);
    if (state == 2) return false;
    if (state == 1) break;
    // The helper is on the other CPU, usually ahead: yield rather than sleep, which
    // would cost a wake-up each time. Now and then, check that it is still there; if it
    // is slow (a layer on a hung network file system), stop burning a CPU on it.
    if (spins % 4096 == 4095 && ::waitpid(helper, nullptr, WNOHANG) != 0) return false;
    if (spins < 100000) {
      ::sched_yield();
    } else {
      timespec pause{0, 200000};
      ::nanosleep(&pause, nullptr);
    }
  }
  int rc =
      static_cast<int>(::syscall(k_sys_move_mount, slot.fd, "", AT_FDCWD, plan.ops[i].dst, k_move_mount_f_empty_path));
  int err = errno;
  ::close(slot.fd);
  errno = err;
  return rc == 0;
}

bool failed(MountFailure& f, MountStep step, int32_t index = -1) {
  f.step = step;
  f.index = index;
  f.err = errno;
  return false;
}

// Receives root's idmapped host mounts (exec/ids.hpp: send_host_tree) and mounts each at
// its place under /oldroot, parents first as sent. Every one must go back: a mount left
// out would show what the host hides beneath it. No allocation. 0, or -1 with `f` set.
int attach_host_mounts(int channel, MountFailure& f) {
  static char data[65536 + 1];
  char target[8192];
  constexpr std::size_t k_max_fds = 256;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * k_max_fds)];
  int32_t index = 0;
  for (bool last = false; !last;) {
    iovec iov{data, sizeof data - 1};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n;
    do {
      n = ::recvmsg(channel, &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n <= 0 || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
      if (n >= 0) errno = EPROTO;
      return failed(f, MountStep::HostTree, index), -1;
    }
    data[n] = '\0';
    last = data[0] == 'E';
    int* fds = nullptr;
    std::size_t n_fds = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        fds = reinterpret_cast<int*>(CMSG_DATA(c));
        n_fds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      }
    }
    const char* point = data + 1;
    int rc = n_fds == 0 || (data[0] != 'M' && data[0] != 'E') ? -1 : 0;
    if (rc != 0) errno = EPROTO;
    for (std::size_t i = 0; i < n_fds; ++i) {
      std::size_t len = point < data + n ? std::strlen(point) : 0;
      if (rc == 0) {
        std::size_t old_len = std::strlen(k_old);
        if (len == 0 || point[0] != '/' || old_len + len + 1 > sizeof target) {
          errno = EPROTO;
          rc = -1;
        } else {
          std::memcpy(target, k_old, old_len);
          std::memcpy(target + old_len, point, len + 1);
          if (len == 1) target[old_len] = '\0';  // "/" itself
          rc = static_cast<int>(::syscall(k_sys_move_mount, fds[i], "", AT_FDCWD, target, k_move_mount_f_empty_path));
          if (rc == 0) ++index;
        }
      }
      int err = errno;
      ::close(fds[i]);
      errno = err;
      point += len + 1;
    }
    if (rc != 0) return failed(f, MountStep::HostTree, index), -1;
  }
  return 0;
}

}  // namespace

bool execute_plan(const FlatPlan& plan, const char* staging, const char* cwd, int host_tree, MountFailure& f,
                  MountReport& report) {
  // Nothing we mount may propagate back to the host.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return failed(f, MountStep::MakePrivate);
  if (::mount("tmpfs", staging, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755") != 0) return failed(f, MountStep::Staging);
  if (::chdir(staging) != 0) return failed(f, MountStep::Staging);
  for (const char* d :
       {"oldroot", "newroot", ".zb", ".zb/empty", ".zb/scratch", ".zb/scratch/tmp", ".zb/scratch/vartmp"}) {
    if (::mkdir(d, 0755) != 0) return failed(f, MountStep::Staging);
  }
  for (std::size_t i = 0; i < plan.n_scratch_dirs; ++i) {
    if (::mkdir(plan.scratch_dirs[i] + 1, 0755) != 0) return failed(f, MountStep::Staging);  // relative to staging
  }
  int fd = ::open(".zb/denied", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
  if (fd < 0) return failed(f, MountStep::Staging);
  ::close(fd);
  for (std::size_t i = 0; i < plan.n_files; ++i) {
    const FlatFile& file = plan.files[i];
    fd = ::open(file.path + 1, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);  // relative to staging
    if (fd < 0) return failed(f, MountStep::Staging);
    std::size_t done = 0;
    while (done < file.size) {
      ssize_t n = ::write(fd, file.data + done, file.size - done);
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        ::close(fd);
        return failed(f, MountStep::Staging);
      }
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
  }
  // The staging tmpfs becomes the root; the host's root moves to /oldroot.
  if (::syscall(SYS_pivot_root, ".", "oldroot") != 0) return failed(f, MountStep::PivotStaging);
  if (::chdir("/") != 0) return failed(f, MountStep::PivotStaging);
  if (host_tree >= 0) {
    // The host's root as this namespace copied it gives way to the idmapped mounts.
    if (::umount2(k_old, MNT_DETACH) != 0) return failed(f, MountStep::HostTree);
    if (attach_host_mounts(host_tree, f) != 0) return false;
  }

  // Overlay superblocks are the slowest ops. A helper process that shares this one's fd
  // table and root (not its memory: what it hands over goes through plan.slots, in the
  // shared arena) makes them as detached mounts, in order, while this one works through
  // the plan on the other CPU; each is attached when its turn comes.
  pid_t helper = -1;
  std::size_t n_overlays = 0;
  for (std::size_t i = 0; i < plan.n_ops; ++i) n_overlays += plan.ops[i].kind == OpKind::Overlay ? 1 : 0;
  if (plan.slots != nullptr && n_overlays >= 2) {
    helper = spawn_helper();
    if (helper == 0) prepare_overlays(plan);
  }
  auto stop_helper = [&] {
    if (helper <= 0) return;
    ::kill(helper, SIGKILL);
    while (::waitpid(helper, nullptr, 0) < 0 && errno == EINTR) {
    }
    helper = -1;
  };
  const char* skipped_at = nullptr;  // dst of the op just before, if it was skipped
  for (std::size_t i = 0; i < plan.n_ops; ++i) {
    const FlatOp& op = plan.ops[i];
    const char* skipped_before = skipped_at;
    skipped_at = nullptr;
    if (helper > 0 && op.kind == OpKind::Overlay && attach_prepared(plan, i, helper)) continue;
    // A bind that was skipped leaves no mount to make read-only there: the next mount up
    // (the new root, made read-only last) is not this op's to change.
    if (op.kind == OpKind::ReadOnly && op.optional && skipped_before != nullptr &&
        std::strcmp(op.dst, skipped_before) == 0) {
      continue;
    }
    if (run_op(op) == 0) continue;
    // "Optional" covers only a path this kernel or host does not have; any other
    // failure of a protective mount is fatal (fail closed).
    // A mask whose target is there but could not be covered (ENOENT from a host file
    // replaced since: its mount point is an unlinked dentry) fails the run too.
    int err = errno;
    struct stat there{};
    if (!op.optional || err != ENOENT || (op.hides && ::lstat(op.dst, &there) == 0)) {
      stop_helper();
      errno = err;
      return failed(f, MountStep::Op, static_cast<int32_t>(i));
    }
    skipped_at = op.dst;
    if (report.n_skipped < MountReport::k_max_skipped) {
      report.skipped[report.n_skipped] = static_cast<int32_t>(i);
      report.skipped_err[report.n_skipped] = err;
      ++report.n_skipped;
    }
  }

  stop_helper();  // done by now: this reaps it
  // Every denied path the new root shows must be one of the masks: the empty file, or a
  // mode-000 tmpfs. A symlink is left to what it leads to.
  struct stat denied{};
  if (plan.n_must_hide > 0 && ::stat(k_denied_file, &denied) != 0) return failed(f, MountStep::Staging);
  for (std::size_t i = 0; i < plan.n_must_hide; ++i) {
    struct stat st{};
    if (::lstat(plan.must_hide[i], &st) != 0 || S_ISLNK(st.st_mode)) continue;
    bool hidden = (st.st_dev == denied.st_dev && st.st_ino == denied.st_ino);
    if (!hidden && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0) {
      struct statfs sfs{};
      hidden = ::statfs(plan.must_hide[i], &sfs) == 0 && sfs.f_type == TMPFS_MAGIC;
    }
    if (!hidden) {
      errno = EEXIST;
      return failed(f, MountStep::Unmasked, static_cast<int32_t>(i));
    }
  }
  report.std_reopened = reopen_std_devices();
  report.host_pts_fd = ::open("/oldroot/dev/pts", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (::umount2(k_old, MNT_DETACH) != 0) return failed(f, MountStep::DetachOld);
  if (::chdir(k_new) != 0) return failed(f, MountStep::PivotNew);
  // pivot_root(".", ".") stacks the staging root on top of the new one; detaching it
  // leaves the new root alone (pivot_root(2), "new_root and put_old may be the same").
  if (::syscall(SYS_pivot_root, ".", ".") != 0) return failed(f, MountStep::PivotNew);
  if (::umount2(".", MNT_DETACH) != 0) return failed(f, MountStep::PivotNew);
  if (::chdir("/") != 0) return failed(f, MountStep::PivotNew);
  if (::chdir(cwd) != 0) return failed(f, MountStep::Chdir);
  return true;
}

std::string describe_failure(const Plan& plan, const MountFailure& f) {
  std::string what;
  switch (f.step) {
    case MountStep::MakePrivate: what = "make the mount namespace private"; break;
    case MountStep::Staging: what = "prepare the staging root"; break;
    case MountStep::PivotStaging: what = "pivot_root into the staging root"; break;
    case MountStep::Op:
      what = f.index >= 0 && static_cast<size_t>(f.index) < plan.ops.size()
                 ? describe(plan.ops[static_cast<size_t>(f.index)])
                 : "mount";
      break;
    default: what = "set up the mounts"; break;
    case MountStep::DetachOld: what = "detach the host root"; break;
    case MountStep::PivotNew: what = "pivot_root into the new root"; break;
    case MountStep::Chdir: what = "enter the working directory"; break;
    case MountStep::HostTree:
      what = "mount the host's mounts, idmapped, in the sandbox (mount " + std::to_string(f.index + 1) + ")";
      break;
    case MountStep::Unmasked:
      return "could not hide " +
             (f.index >= 0 && static_cast<size_t>(f.index) < plan.must_hide.size()
                  ? log::quote(plan.must_hide[static_cast<size_t>(f.index)].substr(std::strlen(k_new)))
                  : std::string("a denied path")) +
             ": it changed on the host while the sandbox was being built; run again";
  }
  std::string why = std::strerror(f.err);
  if (f.step == MountStep::Op && f.index >= 0 && static_cast<size_t>(f.index) < plan.ops.size()) {
    const Op& op = plan.ops[static_cast<size_t>(f.index)];
    if (op.kind == OpKind::Overlay && f.err == ELOOP) why = "overlay layers overlap (ELOOP)";
    if (op.kind == OpKind::Overlay && f.err == EINVAL) why = "overlayfs refused these layers here (EINVAL)";
  }
  return what + ": " + why;
}

}  // namespace zb::overlay
