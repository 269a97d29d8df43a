#include "overlay/plan_builder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>

#include "util/log.hpp"
#include "util/path.hpp"

namespace zb::overlay::plan_detail {
namespace {

constexpr unsigned long k_ro_flags = MS_RDONLY | MS_NOSUID | MS_NODEV;

#ifndef BINFMTFS_MAGIC
#define BINFMTFS_MAGIC 0x42494e4d
#endif

// The file system type of the mount at host_path (0 if unknown). O_PATH: neither an open
// for reading nor a trigger of an automount point.
long fs_magic(const std::string& host_path) {
  int fd = ::open(host_path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return 0;
  struct statfs sfs{};
  long magic = ::fstatfs(fd, &sfs) == 0 ? static_cast<long>(sfs.f_type) : 0;
  ::close(fd);
  return magic;
}

// A host mount the sandbox leaves out (an empty directory in its place) wherever it sits
// outside /proc, /sys and /dev: a proc (a chroot's, mounted under /srv; the host's
// processes and its kernel knobs, such as /proc/sysrq-trigger, which uid 0 may write with
// no capability), binfmt_misc (registers interpreters for every exec on the host), and
// hugetlbfs. overlayfs refuses all three as a lower layer, so a read-only view of them
// cannot be had anyway.
const char* left_out_fs(long magic) {
  switch (magic) {
    case PROC_SUPER_MAGIC: return "proc";
    case BINFMTFS_MAGIC: return "binfmt_misc";
    case HUGETLBFS_MAGIC: return "hugetlbfs";
    default: return nullptr;
  }
}

// Kernel interfaces other than those: shown read-only even inside a writable path. Their
// files check the writer's uid, not a capability, and the command's uid 0 may be the
// host's (sysfs knobs, cgroup files that move and freeze host processes, EFI variables).
bool kernel_interface_fs(long magic) {
  switch (magic) {
    case SYSFS_MAGIC:
    case CGROUP_SUPER_MAGIC:
    case CGROUP2_SUPER_MAGIC:
    case DEBUGFS_MAGIC:
    case TRACEFS_MAGIC:
    case SECURITYFS_MAGIC:
    case BPF_FS_MAGIC:
    case PSTOREFS_MAGIC:
    case EFIVARFS_MAGIC:
    case SELINUX_MAGIC:
    case SMACK_MAGIC:
    case 0x62656570 /* configfs */:
    case 0x65735543 /* fusectl */: return true;
    default: return false;
  }
}

}  // namespace

Builder::Builder(const MountTable& mounts, const policy::FsRules& fs, const PlanOptions& opts)
    : m_mounts(mounts),
      m_masked(fs.masked.begin(), fs.masked.end()),
      m_mask_later(fs.masked.begin(), fs.masked.end()),
      m_tracked(fs.tracked),
      m_session(opts.session_dir),
      m_store(opts.store_dir) {
  m_masked.insert(fs.deny_read_all.begin(), fs.deny_read_all.end());
}

void Builder::mkdir(const std::string& host_path, unsigned mode) {
  if (!m_made.insert(host_path).second) return;
  op({.kind = OpKind::Mkdir, .dst = in_new(host_path), .mode = mode});
}

void Builder::mkdir_p(const std::string& host_path) {
  if (host_path == "/") return;
  mkdir_p(path::parent(host_path));
  struct stat st{};
  unsigned mode = ::stat(host_path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0755;
  mkdir(host_path, mode);
}

void Builder::file_mountpoint(const std::string& host_path) {
  if (!m_made.insert(host_path).second) return;
  op({.kind = OpKind::File, .dst = in_new(host_path), .mode = 0444});
}

void Builder::ro_overlay(const std::string& host_path, bool gone_ok) {
  op({.kind = OpKind::Overlay,
      .dst = in_new(host_path),
      .data = "lowerdir=" + overlay_escape(in_old(host_path)) + ":" + k_empty_dir,
      .flags = k_ro_flags,
      .optional = gone_ok});
}

void Builder::ro_file(const std::string& host_path, bool gone_ok) {
  op({.kind = OpKind::Bind, .src = in_old(host_path), .dst = in_new(host_path), .optional = gone_ok});
  op({.kind = OpKind::ReadOnly, .dst = in_new(host_path), .optional = gone_ok});
}

void Builder::ro_tree(const std::string& host_path, const std::set<std::string>& special) {
  struct stat st{};
  if (::lstat(host_path.c_str(), &st) != 0) return;
  if (S_ISLNK(st.st_mode)) {
    char buf[4096];
    ssize_t n = ::readlink(host_path.c_str(), buf, sizeof buf - 1);
    if (n < 0) return;
    if (m_made.insert(host_path).second) {
      op({.kind = OpKind::Symlink, .src = std::string(buf, static_cast<size_t>(n)), .dst = in_new(host_path)});
    }
    return;
  }
  // A path to be masked gets only its mount point, covered by mask() with nothing of
  // the host's: a host file bound here first would pin the inode it had at the plan,
  // and one the host replaces meanwhile could not be covered at all. A --deny-read path
  // that was absent when the policy was made, but is here now, is masked here.
  bool masked = m_masked.count(host_path) != 0;
  bool mask_now = masked && m_mask_later.count(host_path) == 0;
  if (S_ISREG(st.st_mode)) {
    file_mountpoint(host_path);
    if (!masked) ro_file(host_path, true);
    if (mask_now) mask_one_late(host_path);
    return;
  }
  if (!S_ISDIR(st.st_mode)) return;  // sockets, fifos and devices are left out
  if (host_path != "/") mkdir(host_path, st.st_mode & 07777);
  if (masked) {
    if (mask_now) mask_one_late(host_path);
    return;
  }
  if (left_out(host_path)) return;
  if (host_path != "/" && !m_mounts.has_mounts_below(host_path)) {
    // An empty directory (/srv, /media, /boot on many machines) is shown as the empty
    // skeleton directory it already is: an overlay would cost a superblock to mount and
    // an RCU grace period to tear down, and show nothing more.
    // More than two links means subdirectories (where the filesystem counts them):
    // not empty, without reading it.
    bool empty = false;
    if (st.st_nlink <= 2) {
      auto e = path::is_empty_dir(host_path);
      empty = e && *e;
    }
    if (!empty) ro_overlay(host_path, true);
    return;
  }
  for (const auto& name : list_dir(host_path)) {
    std::string child = path::join(host_path, name);
    if (special.count(child) != 0) {
      mkdir(child, 0755);
      continue;
    }
    ro_tree(child, special);
  }
}

bool Builder::left_out(const std::string& host_path) {
  if (host_path == "/" || m_mounts.targets.count(host_path) == 0) return false;
  const char* type = left_out_fs(fs_magic(host_path));
  if (type == nullptr) return false;
  note("left out (a " + std::string(type) + " mount): " + log::quote(host_path));
  return true;
}

void Builder::seal_kernel_mounts(const std::string& host_path) {
  for (const auto& m : m_mounts.targets) {
    if (m == "/" || !path::is_under(m, host_path)) continue;
    if (path::is_under(m, "/proc") || path::is_under(m, "/sys") || path::is_under(m, "/dev")) continue;
    long magic = fs_magic(m);
    if (const char* type = left_out_fs(magic); type != nullptr) {
      op({.kind = OpKind::Tmpfs,
          .src = "tmpfs",
          .dst = in_new(m),
          .data = "mode=555,size=4k,nr_inodes=2",
          .flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
          .optional = true});
      note("left out (a " + std::string(type) + " mount): " + log::quote(m));
    } else if (kernel_interface_fs(magic)) {
      op({.kind = OpKind::ReadOnly, .dst = in_new(m), .recursive = true, .optional = true});
      note("read-only (a kernel interface): " + log::quote(m));
    }
  }
}

void Builder::ro_view(const std::string& host_path) {
  struct stat st{};
  if (::stat(host_path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    if (m_mounts.has_mounts_below(host_path)) {
      char mode[16];
      std::snprintf(mode, sizeof mode, "mode=%o", st.st_mode & 07777);
      op({.kind = OpKind::Tmpfs,
          .src = "tmpfs",
          .dst = in_new(host_path),
          .data = mode,
          .flags = MS_NOSUID | MS_NODEV});
      // Paths below were shown by the view this tmpfs covers: make them again in it.
      std::string below = host_path == "/" ? "/" : host_path + "/";
      for (auto it = m_made.lower_bound(below); it != m_made.end() && it->compare(0, below.size(), below) == 0;) {
        it = m_made.erase(it);
      }
      for (const auto& name : list_dir(host_path)) ro_tree(path::join(host_path, name), {});
      op({.kind = OpKind::ReadOnly, .dst = in_new(host_path)});
      note("read-only skeleton (not an overlay) for " + log::quote(host_path) + ": it has mounts below it");
    } else {
      ro_overlay(host_path);
    }
  } else {
    ro_file(host_path);
  }
}

void Builder::mask(const std::string& host_path, bool late) {
  // A mask must land: if the host takes the path away before the mount (a delete and
  // create, a directory swapped), the run fails rather than show what may be back by
  // then. Optional only where the new root may not show the path: in a scratch
  // directory (empty when the host has mounts below it), and for a late one.
  bool optional = late || in_scratch(host_path) || path::is_under(host_path, "/dev/shm");
  struct stat st{};
  if (::lstat(host_path.c_str(), &st) != 0) {
    // Gone since the policy saw it: a file's mask all the same, which covers it if it
    // is back by the mount and fails the run if not (or if it is back as a directory).
    if (!optional) op({.kind = OpKind::Bind, .src = k_denied_file, .dst = in_new(host_path), .hides = true});
    return;
  }
  // A dangling symlink (kept as it is by canonicalisation) holds nothing to hide, and a
  // bind onto it would follow it to nothing.
  if (S_ISLNK(st.st_mode) && ::stat(host_path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    op({.kind = OpKind::Tmpfs,
        .src = "tmpfs",
        .dst = in_new(host_path),
        .data = "mode=000,size=4k,nr_inodes=2",
        .flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
        .optional = optional,
        .hides = true});
  } else {
    op({.kind = OpKind::Bind, .src = k_denied_file, .dst = in_new(host_path), .optional = optional, .hides = true});
    op({.kind = OpKind::ReadOnly, .dst = in_new(host_path), .optional = true});
  }
}

void Builder::mask_one_late(const std::string& host_path) {
  if (m_late_done.insert(host_path).second) mask(host_path, true);
}

void Builder::mask_late() {
  for (const auto& d : m_masked) {
    if (m_mask_later.count(d) == 0) mask_one_late(d);
  }
}

bool Builder::is_tracked(const std::string& p) const {
  return std::any_of(m_tracked.begin(), m_tracked.end(), [&](const std::string& t) { return path::is_under(p, t); });
}

bool Builder::overlaid(const std::string& p) const {
  return std::find(m_plan.tracked.begin(), m_plan.tracked.end(), p) != m_plan.tracked.end();
}

bool Builder::is_tracked_root(const std::string& p) const {
  return std::find(m_tracked.begin(), m_tracked.end(), p) != m_tracked.end();
}

void Builder::tracked_overlay(const std::string& dir) {
  std::string n = std::to_string(m_plan.tracked.size());
  m_plan.tracked.push_back(dir);
  op({.kind = OpKind::Overlay,
      .dst = in_new(dir),
      .data = "lowerdir=" + overlay_escape(in_old(dir)) +
              ",upperdir=" + overlay_escape(in_old(m_session + "/upper/" + n)) +
              ",workdir=" + overlay_escape(in_old(m_session + "/work/" + n)) + ",userxattr",
      .flags = MS_NOSUID | MS_NODEV});
}

void Builder::tracked_tree(const std::string& host_path, const std::set<std::string>& special) {
  struct stat st{};
  if (::lstat(host_path.c_str(), &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    ro_tree(host_path, special);  // files directly in a walked directory stay read-only
    return;
  }
  if (host_path != "/") mkdir(host_path, st.st_mode & 07777);
  if (left_out(host_path)) return;
  if (host_path != "/" && !m_mounts.has_mounts_below(host_path)) {
    tracked_overlay(host_path);
    return;
  }
  if (host_path != "/") note("tracked by its entries (it has mounts below it): " + log::quote(host_path));
  for (const auto& name : list_dir(host_path)) {
    std::string child = path::join(host_path, name);
    if (special.count(child) != 0) {
      mkdir(child, 0755);
      continue;
    }
    tracked_tree(child, special);
  }
}

std::vector<std::string> Builder::list_dir(const std::string& host_path) {
  std::vector<std::string> names;
  DIR* d = ::opendir(host_path.c_str());
  if (d == nullptr) {
    note("cannot list " + log::quote(host_path) + ": left empty");
    return names;
  }
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    names.push_back(std::move(name));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

void Builder::rw_bind(const std::string& host_path) {
  op({.kind = OpKind::Bind, .src = in_old(host_path), .dst = in_new(host_path), .recursive = true});
  if (m_mounts.has_mounts_below(host_path) || m_mounts.targets.count(host_path) != 0) seal_kernel_mounts(host_path);
}

}  // namespace zb::overlay::plan_detail
