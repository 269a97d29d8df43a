#include "overlay/mount.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace zb::overlay {
namespace {

// <linux/mount.h> clashes with <sys/mount.h> on glibc 2.36, so the few names needed for
// mount_setattr(2) are spelled out here.
struct MountAttr {
  uint64_t attr_set;
  uint64_t attr_clr;
  uint64_t propagation;
  uint64_t userns_fd;
};
constexpr uint64_t k_attr_rdonly = 0x1;
constexpr uint64_t k_attr_nosuid = 0x2;
constexpr uint64_t k_attr_nodev = 0x4;
constexpr unsigned k_at_recursive = 0x8000;
#ifndef SYS_mount_setattr
constexpr long k_sys_mount_setattr = 442;
#else
constexpr long k_sys_mount_setattr = SYS_mount_setattr;
#endif

int make_read_only(const char* dst, bool recursive) {
  MountAttr attr{k_attr_rdonly | k_attr_nosuid | k_attr_nodev, 0, 0, 0};
  unsigned flags = AT_SYMLINK_NOFOLLOW | (recursive ? k_at_recursive : 0);
  if (::syscall(k_sys_mount_setattr, AT_FDCWD, dst, flags, &attr, sizeof attr) == 0) return 0;
  if (errno != ENOSYS) return -1;
  // Kernels before 5.12: a non-recursive remount (locked flags must be kept).
  return ::mount(nullptr, dst, nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr);
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
    case OpKind::Tmpfs:
      return ::mount("tmpfs", dst, "tmpfs", op.flags, op.data);
    case OpKind::Overlay:
      return ::mount("overlay", dst, "overlay", op.flags, op.data);
    case OpKind::Bind:
      return ::mount(op.src, dst, nullptr, MS_BIND | (op.recursive ? MS_REC : 0), nullptr);
    case OpKind::Proc:
      return ::mount("proc", dst, "proc", op.flags, nullptr);
    case OpKind::Devpts:
      return ::mount("devpts", dst, "devpts", op.flags, op.data);
    case OpKind::ReadOnly:
      return make_read_only(dst, op.recursive);
  }
  errno = EINVAL;
  return -1;
}

bool failed(MountFailure& f, MountStep step, int32_t index = -1) {
  f.step = step;
  f.index = index;
  f.err = errno;
  return false;
}

}  // namespace

bool execute_plan(const FlatPlan& plan, const char* staging, const char* cwd, MountFailure& f, MountReport& report) {
  // Nothing we mount may propagate back to the host.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return failed(f, MountStep::MakePrivate);
  if (::mount("tmpfs", staging, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755") != 0) return failed(f, MountStep::Staging);
  if (::chdir(staging) != 0) return failed(f, MountStep::Staging);
  for (const char* d : {"oldroot", "newroot", ".zb", ".zb/empty", ".zb/scratch", ".zb/scratch/tmp", ".zb/scratch/vartmp"}) {
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

  for (std::size_t i = 0; i < plan.n_ops; ++i) {
    const FlatOp& op = plan.ops[i];
    if (run_op(op) == 0) continue;
    // "Optional" covers only a path this kernel or host does not have; any other
    // failure of a protective mount is fatal (fail closed).
    if (!op.optional || errno != ENOENT) return failed(f, MountStep::Op, static_cast<int32_t>(i));
    if (report.n_skipped < MountReport::k_max_skipped) {
      report.skipped[report.n_skipped] = static_cast<int32_t>(i);
      report.skipped_err[report.n_skipped] = errno;
      ++report.n_skipped;
    }
  }

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
      what = f.index >= 0 && static_cast<size_t>(f.index) < plan.ops.size() ? describe(plan.ops[static_cast<size_t>(f.index)]) : "mount";
      break;
    default: what = "set up the mounts"; break;
    case MountStep::DetachOld: what = "detach the host root"; break;
    case MountStep::PivotNew: what = "pivot_root into the new root"; break;
    case MountStep::Chdir: what = "enter the working directory"; break;
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
