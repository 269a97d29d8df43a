#include "overlay/plan.hpp"

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

namespace zb::overlay {
namespace {

std::string in_new(const std::string& p) { return path::join(k_new, p); }
std::string in_old(const std::string& p) { return path::join(k_old, p); }

constexpr unsigned long k_ro_flags = MS_RDONLY | MS_NOSUID | MS_NODEV;

bool in_scratch(const std::string& p) { return path::is_under(p, "/tmp") || path::is_under(p, "/var/tmp"); }

// The scratch tmpfs: the upper layers of /tmp and /var/tmp and the sandbox's /dev/shm, in
// one tmpfs with one size limit (see build_plan, step 0).
constexpr const char* k_scratch = "/.zb/scratch";

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

class Builder {
 public:
  Builder(const MountTable& mounts, const policy::FsRules& fs, const PlanOptions& opts)
      : m_mounts(mounts),
        m_masked(fs.masked.begin(), fs.masked.end()),
        m_mask_later(fs.masked.begin(), fs.masked.end()),
        m_tracked(fs.tracked),
        m_session(opts.session_dir),
        m_store(opts.store_dir) {
    m_masked.insert(fs.deny_read_all.begin(), fs.deny_read_all.end());
  }

  Plan take() { return std::move(m_plan); }

  void op(Op o) { m_plan.ops.push_back(std::move(o)); }
  void note(std::string s) { m_plan.notes.push_back(std::move(s)); }

  void mkdir(const std::string& host_path, unsigned mode = 0755) {
    if (!m_made.insert(host_path).second) return;
    op({.kind = OpKind::Mkdir, .dst = in_new(host_path), .mode = mode});
  }
  // mkdir -p of host_path's ancestors and itself inside the new root's skeleton.
  void mkdir_p(const std::string& host_path) {
    if (host_path == "/") return;
    mkdir_p(path::parent(host_path));
    struct stat st{};
    unsigned mode = ::stat(host_path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0755;
    mkdir(host_path, mode);
  }
  void file_mountpoint(const std::string& host_path) {
    if (!m_made.insert(host_path).second) return;
    op({.kind = OpKind::File, .dst = in_new(host_path), .mode = 0444});
  }

  // A read-only view of one host directory with no mounts below it. `gone_ok`: where it
  // covers a read-only skeleton directory, a host directory gone since the plan was made
  // (a mount taken down meanwhile) leaves that directory empty instead of failing.
  void ro_overlay(const std::string& host_path, bool gone_ok = false) {
    op({.kind = OpKind::Overlay,
        .dst = in_new(host_path),
        .data = "lowerdir=" + overlay_escape(in_old(host_path)) + ":" + k_empty_dir,
        .flags = k_ro_flags,
        .optional = gone_ok});
  }

  // A read-only view of a host file; `gone_ok` as above.
  void ro_file(const std::string& host_path, bool gone_ok = false) {
    op({.kind = OpKind::Bind, .src = in_old(host_path), .dst = in_new(host_path), .optional = gone_ok});
    op({.kind = OpKind::ReadOnly, .dst = in_new(host_path), .optional = gone_ok});
  }

  // A read-only view of the host tree at host_path, whose mount point already exists in
  // the new root. Directories with mounts below them become skeleton directories of the
  // new root's tmpfs and are walked one level down; everything else is one overlay.
  void ro_tree(const std::string& host_path, const std::set<std::string>& special) {
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

  // True (and noted) for a host mount point of a file system the sandbox leaves out.
  bool left_out(const std::string& host_path) {
    if (host_path == "/" || m_mounts.targets.count(host_path) == 0) return false;
    const char* type = left_out_fs(fs_magic(host_path));
    if (type == nullptr) return false;
    note("left out (a " + std::string(type) + " mount): " + log::quote(host_path));
    return true;
  }

  // The kernel interfaces mounted under a writable bind of host_path, outside the
  // sandbox's own /proc, /sys and /dev: a proc, binfmt_misc or hugetlbfs is covered by an
  // empty read-only tmpfs, the others made read-only.
  void seal_kernel_mounts(const std::string& host_path) {
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

  // A read-only view of a directory that may have mounts below it, over a writable
  // bind (--deny-write paths, protected names, socket directories): an overlay when
  // possible. A directory with mounts below cannot be an overlay's lower layer (they are
  // locked), and a bind would keep the host's sockets in it connectable: it becomes a
  // read-only tmpfs skeleton walked like the root, whose sockets are not shown at all.
  void ro_view(const std::string& host_path) {
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

  // Covers a path the policy shows with nothing of the host's. `late`: the policy found
  // it absent (see ro_tree and build_plan).
  void mask(const std::string& host_path, bool late = false) {
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
  void mask_one_late(const std::string& host_path) {
    if (m_late_done.insert(host_path).second) mask(host_path, true);
  }
  // The --deny-read paths absent when the policy was made and here now, outside the walk.
  void mask_late() {
    for (const auto& d : m_masked) {
      if (m_mask_later.count(d) == 0) mask_one_late(d);
    }
  }

  bool is_tracked(const std::string& p) const {
    return std::any_of(m_tracked.begin(), m_tracked.end(), [&](const std::string& t) { return path::is_under(p, t); });
  }
  bool overlaid(const std::string& p) const {
    return std::find(m_plan.tracked.begin(), m_plan.tracked.end(), p) != m_plan.tracked.end();
  }
  bool is_tracked_root(const std::string& p) const {
    return std::find(m_tracked.begin(), m_tracked.end(), p) != m_tracked.end();
  }

  // A read-write overlay of a tracked directory whose upper layer is in the session. It
  // has no mounts below it: overlayfs takes none as a lower layer in a user namespace
  // (run() refuses such a tracked path, and tracked_tree walks around them).
  void tracked_overlay(const std::string& dir) {
    std::string n = std::to_string(m_plan.tracked.size());
    m_plan.tracked.push_back(dir);
    op({.kind = OpKind::Overlay,
        .dst = in_new(dir),
        .data = "lowerdir=" + overlay_escape(in_old(dir)) +
                ",upperdir=" + overlay_escape(in_old(m_session + "/upper/" + n)) +
                ",workdir=" + overlay_escape(in_old(m_session + "/work/" + n)) + ",userxattr",
        .flags = MS_NOSUID | MS_NODEV});
  }

  // A tracked "/": like ro_tree, but each directory becomes a tracked overlay; those with
  // mounts below are walked instead. One of them holds the store: overlayfs (6.x) takes
  // an upper layer inside its lower, and the store is masked inside the sandbox, so the
  // overlay never looks at the part of its lower layer that changes during the run.
  void tracked_tree(const std::string& host_path, const std::set<std::string>& special) {
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

  std::vector<std::string> list_dir(const std::string& host_path) {
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

  void rw_bind(const std::string& host_path) {
    op({.kind = OpKind::Bind, .src = in_old(host_path), .dst = in_new(host_path), .recursive = true});
    if (m_mounts.has_mounts_below(host_path) || m_mounts.targets.count(host_path) != 0) seal_kernel_mounts(host_path);
  }

  std::set<std::string> m_made;

 private:
  const MountTable& m_mounts;
  std::set<std::string> m_masked;      // never shown from the host (fs.masked, fs.deny_read_all)
  std::set<std::string> m_mask_later;  // mask() is called for these after the walk (fs.masked)
  std::set<std::string> m_late_done;   // the others, once masked
  std::vector<std::string> m_tracked;
  std::string m_session;
  std::string m_store;
  Plan m_plan;
};

// Exposes one readable root of a --allow-read policy in the new root: read-only, or left
// to the writable bind that follows when it is writable.
void expose(Builder& b, const policy::FsRules& fs, const std::string& r, const std::set<std::string>& special) {
  bool is_dir = path::kind_of(r) == path::Kind::Directory;
  b.mkdir_p(path::parent(r));
  if (fs.write_all || std::find(fs.writable.begin(), fs.writable.end(), r) != fs.writable.end()) {
    if (is_dir) {
      b.mkdir(r);
    } else {
      b.file_mountpoint(r);
    }
    if (b.is_tracked(r)) {
      b.tracked_overlay(r);
    } else if (fs.write_all) {
      b.rw_bind(r);
    }
    return;
  }
  b.ro_tree(r, special);
}

}  // namespace

std::string tmpfs_size_option(std::uint64_t bytes) { return bytes == 0 ? "size=50%" : "size=" + std::to_string(bytes); }

std::string overlay_escape(const std::string& p) {
  std::string out;
  for (char c : p) {
    if (c == ',' || c == ':' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

Plan build_plan(const policy::FsRules& fs, const MountTable& mounts, const std::string& cwd, const PlanOptions& opts) {
  Builder b(mounts, fs, opts);
  bool tracks_root = b.is_tracked_root("/");
  const std::set<std::string> special = {"/proc", "/sys", "/dev", "/tmp"};

  // 0. The scratch tmpfs, in the staging root: the upper layers of scratch /tmp and
  // /var/tmp and the sandbox's /dev/shm share it, so that one limit bounds all the
  // memory the command can fill with files (three tmpfs mounts at the kernel's default
  // of half the RAM each could take all of it). Its directories are made after it is
  // mounted; the overlay helper (mount.cpp) finds them there or leaves the overlay to
  // the plan, never another directory by those names.
  if (!fs.tmp_writable || !fs.var_tmp_writable || !fs.shm_writable) {
    b.op({.kind = OpKind::Tmpfs,
          .src = "tmpfs",
          .dst = k_scratch,
          .data = "mode=755," + tmpfs_size_option(fs.tmpfs_size),
          .flags = MS_NOSUID | MS_NODEV});
    for (const char* d : {"tmp", "tmp/upper", "tmp/work", "vartmp", "vartmp/upper", "vartmp/work"}) {
      b.op({.kind = OpKind::Mkdir, .dst = path::join(k_scratch, d), .mode = 0755});
    }
    b.op({.kind = OpKind::Mkdir, .dst = path::join(k_scratch, "shm"), .mode = 01777});
  }

  // 1. The root.
  bool skeleton = true;
  if (fs.write_all && !fs.read_restricted && !tracks_root) {
    skeleton = false;
    b.op({.kind = OpKind::Bind, .src = k_old, .dst = k_new, .recursive = true});
    b.seal_kernel_mounts("/");
    b.note("root: the host's root, read-write (bare --allow-write)");
  } else {
    b.op({.kind = OpKind::Tmpfs, .src = "tmpfs", .dst = k_new, .data = "mode=755", .flags = MS_NOSUID | MS_NODEV});
    for (const auto& s : special) b.mkdir(s, s == "/tmp" ? 01777 : 0555);
    if (!fs.read_restricted && tracks_root) {
      // /tmp and /var/tmp are part of a tracked root (an installer's temporary files
      // show up in its review), and /tmp may hold the store: walked like the rest.
      b.tracked_tree("/", {"/proc", "/sys", "/dev"});
      b.note("root: tracked overlays of the host's root (snapshot of bare --allow-write)");
    } else if (!fs.read_restricted) {
      // The walk leaves out /var/tmp as it does /tmp: the scratch layer below covers
      // whatever it would build there (a mount point for each entry, when the host has
      // mounts below /var/tmp). A symlinked /var/tmp is shown as it is.
      std::set<std::string> walk_skip = special;
      if (path::kind_of("/var/tmp") == path::Kind::Directory) walk_skip.insert("/var/tmp");
      b.ro_tree("/", walk_skip);
      b.note("root: read-only overlays of the host's root");
    } else {
      for (const auto& link : fs.system_links) b.ro_tree(link, special);
      for (const auto& r : fs.readable) {
        if (special.count(r) != 0) continue;
        if (in_scratch(r)) continue;  // mounted after the scratch layer, below
        expose(b, fs, r, special);
      }
      b.mkdir_p("/var/tmp");
      if (!in_scratch(cwd) && !path::is_under(cwd, "/proc") && !path::is_under(cwd, "/sys") &&
          !path::is_under(cwd, "/dev")) {
        b.mkdir_p(cwd);  // the command starts in its directory even when it is not readable
      }
      b.note("root: a skeleton with read-only overlays of the readable paths only");
    }
  }

  // 2. /proc: a fresh instance for the new pid namespace; kernel knobs stay read-only.
  b.op({.kind = OpKind::Proc, .dst = in_new("/proc"), .flags = MS_NOSUID | MS_NODEV | MS_NOEXEC});
  if (opts.uid0_is_host_root) {
    for (const char* p : {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"}) {
      b.op({.kind = OpKind::Bind, .src = in_new(p), .dst = in_new(p), .optional = true});
      b.op({.kind = OpKind::ReadOnly, .dst = in_new(p), .optional = true});
    }
  }

  // 3. /sys, read-only.
  b.op({.kind = OpKind::Bind, .src = in_old("/sys"), .dst = in_new("/sys"), .recursive = true, .optional = true});
  b.op({.kind = OpKind::ReadOnly, .dst = in_new("/sys"), .recursive = true, .optional = true});

  // 4. A minimal /dev.
  b.op({.kind = OpKind::Tmpfs,
        .src = "tmpfs",
        .dst = in_new("/dev"),
        .data = "mode=755",
        .flags = MS_NOSUID | MS_NOEXEC});
  // The host's device nodes, each on a read-only bind: reading and writing a device
  // needs no writable mount, but chmod, chown, utimes and setxattr on the node do, and the
  // command's uid 0 may own the host's /dev/null (nodev would stop it working at all).
  for (const char* dev : {"null", "zero", "full", "random", "urandom", "tty"}) {
    std::string d = std::string("/dev/") + dev;
    b.op({.kind = OpKind::File, .dst = in_new(d), .mode = 0666});
    b.op({.kind = OpKind::Bind, .src = in_old(d), .dst = in_new(d)});
    b.op({.kind = OpKind::ReadOnly, .dst = in_new(d), .flags = MS_RDONLY | MS_NOSUID});
  }
  b.op({.kind = OpKind::Mkdir, .dst = in_new("/dev/pts"), .mode = 0755});
  b.op({.kind = OpKind::Devpts,
        .dst = in_new("/dev/pts"),
        .data = "newinstance,ptmxmode=0666,mode=620",
        .flags = MS_NOSUID | MS_NOEXEC});
  b.op({.kind = OpKind::Symlink, .src = "pts/ptmx", .dst = in_new("/dev/ptmx")});
  b.op({.kind = OpKind::Mkdir, .dst = in_new("/dev/shm"), .mode = 01777});
  if (fs.shm_writable) {
    b.op({.kind = OpKind::Bind, .src = in_old("/dev/shm"), .dst = in_new("/dev/shm"), .optional = true});
  } else {
    b.op({.kind = OpKind::Bind, .src = path::join(k_scratch, "shm"), .dst = in_new("/dev/shm")});
  }
  for (auto [link, target] : {std::pair{"fd", "/proc/self/fd"},
                              {"stdin", "/proc/self/fd/0"},
                              {"stdout", "/proc/self/fd/1"},
                              {"stderr", "/proc/self/fd/2"}}) {
    b.op({.kind = OpKind::Symlink, .src = target, .dst = in_new(std::string("/dev/") + link)});
  }

  // 5. Scratch /tmp and /var/tmp: the host's files, writes into a throw-away layer.
  auto scratch = [&](const std::string& dir, const std::string& tag, bool really_writable) {
    if (path::kind_of(dir) != path::Kind::Directory) return;
    if (really_writable) {
      if (b.is_tracked(dir)) {
        if (!tracks_root) b.tracked_overlay(dir);  // else done by tracked_tree
      } else if (skeleton) {
        b.rw_bind(dir);
      }
      return;
    }
    std::string up = std::string(k_scratch) + "/" + tag + "/upper";
    std::string work = std::string(k_scratch) + "/" + tag + "/work";
    bool host_content = fs.scratch_host_content;
    if (host_content && mounts.has_mounts_below(dir)) {
      host_content = false;
      b.note("scratch " + dir + " starts empty: the host has mounts below it");
    }
    if (host_content) {
      b.op({.kind = OpKind::Overlay,
            .dst = in_new(dir),
            .data = "lowerdir=" + overlay_escape(in_old(dir)) + ",upperdir=" + up + ",workdir=" + work + ",userxattr",
            .flags = MS_NOSUID | MS_NODEV});
    } else {
      b.op({.kind = OpKind::Bind, .src = up, .dst = in_new(dir)});  // empty, in the scratch tmpfs
    }
  };
  scratch("/tmp", "tmp", fs.tmp_writable);
  scratch("/var/tmp", "vartmp", fs.var_tmp_writable);
  if (fs.read_restricted) {
    // Readable paths inside scratch directories go on top of the scratch layer.
    for (const auto& r : fs.readable) {
      if (in_scratch(r) && special.count(r) == 0) expose(b, fs, r, special);
    }
    if (in_scratch(cwd)) b.mkdir_p(cwd);
  }

  // 6. Writable paths, then what must stay read-only inside them, then masks.
  if (!fs.write_all) {
    for (const auto& w : fs.writable) {
      // Inside the fresh scratch layers and /dev/shm the mount point may not exist yet
      // (an empty scratch, or host mounts hidden below it): create it and its parents.
      const char* fresh = nullptr;
      for (const char* top : {"/tmp", "/var/tmp", "/dev/shm"}) {
        if (path::is_under(w, top)) fresh = top;
      }
      if (fresh != nullptr && w != fresh) {
        std::vector<std::string> chain;
        for (std::string a = path::parent(w); a != fresh && a != "/"; a = path::parent(a)) chain.push_back(a);
        for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
          b.op({.kind = OpKind::Mkdir, .dst = in_new(*it), .mode = 0755, .optional = true});
        }
        bool is_dir = path::kind_of(w) == path::Kind::Directory;
        b.op({.kind = is_dir ? OpKind::Mkdir : OpKind::File,
              .dst = in_new(w),
              .mode = is_dir ? 0755u : 0644u,
              .optional = true});
      }
      if (b.is_tracked_root(w)) {
        if (!b.overlaid(w)) b.tracked_overlay(w);
      } else if (!b.is_tracked(w)) {
        b.rw_bind(w);
      }
    }
    // Tracked roots strictly inside a writable path go on top of its bind.
    for (const auto& t : fs.tracked) {
      if (!b.overlaid(t)) b.tracked_overlay(t);
    }
  } else {
    for (const auto& t : fs.tracked) {
      if (t != "/" && !b.overlaid(t)) b.tracked_overlay(t);
    }
  }
  // A read-only or masked path inside a writable one must keep its place: make each
  // directory between them a mount point, which cannot be renamed or removed. Otherwise
  // `mv .git .git.old; mkdir -p .git/hooks` would recreate a writable hooks directory,
  // and `mv a a2; mkdir a; echo x > a/secret` would replace a denied file.
  std::set<std::string> anchors;
  std::vector<std::string> fixed = fs.read_only;
  fixed.insert(fixed.end(), fs.masked.begin(), fs.masked.end());
  fixed.insert(fixed.end(), fs.protected_links.begin(), fs.protected_links.end());
  // Each directory from `from` up to, not including, the writable root that holds `inside`.
  auto anchor_up = [&](const std::string& inside, const std::string& from) {
    std::string root = fs.write_all ? "/" : "";
    for (const auto& w : fs.writable) {
      if (!fs.write_all && path::is_under(inside, w) && w.size() > root.size()) root = w;
    }
    if (root.empty()) return;
    for (std::string a = from; a != root && path::is_under(a, root) && a != "/"; a = path::parent(a)) anchors.insert(a);
  };
  for (const auto& r : fixed) anchor_up(r, path::parent(r));
  for (const auto& d : fs.pinned_dirs) anchor_up(d, d);
  for (const auto& a : anchors) {
    b.op({.kind = OpKind::Bind, .src = in_new(a), .dst = in_new(a), .recursive = true});
  }
  for (const auto& l : fs.protected_links) b.op({.kind = OpKind::PinLink, .dst = in_new(l), .optional = true});
  for (const auto& r : fs.read_only) b.ro_view(r);
  for (const auto& s : fs.socket_dirs) b.ro_view(s);
  for (const auto& m : fs.masked) b.mask(m);
  b.mask_late();
  for (const auto& sock : fs.masked_sockets) {
    b.op({.kind = OpKind::Bind, .src = k_denied_file, .dst = in_new(sock), .optional = true});
  }

  // Secrets: the trust bundle (system CAs and the run's CA), read-only over each system bundle.
  // The file itself is written into the staging root by execute_plan.
  for (const auto& t : opts.ca_bundle_targets) {
    b.op({.kind = OpKind::Bind, .src = k_ca_bundle, .dst = in_new(t), .optional = true});
    b.op({.kind = OpKind::ReadOnly, .dst = in_new(t), .optional = true});
  }

  // 7. Seal the skeletons.
  if (skeleton) b.op({.kind = OpKind::ReadOnly, .dst = k_new});
  b.op({.kind = OpKind::ReadOnly, .dst = in_new("/dev")});

  Plan plan = b.take();
  std::set<std::string> hide(fs.masked.begin(), fs.masked.end());
  hide.insert(fs.deny_read_all.begin(), fs.deny_read_all.end());
  for (const auto& h : hide) plan.must_hide.push_back(in_new(h));
  if (!opts.ca_bundle_targets.empty()) plan.files.emplace_back(k_ca_bundle, opts.ca_bundle);
  return plan;
}

std::string describe(const Op& op) {
  auto q = [](const std::string& s) { return log::quote(s); };
  switch (op.kind) {
    case OpKind::Mkdir: return "mkdir " + q(op.dst);
    case OpKind::File: return "create " + q(op.dst);
    case OpKind::Symlink: return "symlink " + q(op.dst) + " -> " + q(op.src);
    case OpKind::Tmpfs: return std::string("tmpfs") + ((op.flags & MS_RDONLY) ? " (ro)" : "") + " on " + q(op.dst);
    case OpKind::Overlay:
      return std::string("overlay") + ((op.flags & MS_RDONLY) ? " (ro)" : " (rw)") + " on " + q(op.dst) + " [" +
             op.data + "]";
    case OpKind::Bind: return std::string(op.recursive ? "rbind " : "bind ") + q(op.src) + " on " + q(op.dst);
    case OpKind::Proc: return "proc on " + q(op.dst);
    case OpKind::Devpts: return "devpts on " + q(op.dst);
    case OpKind::ReadOnly: return std::string("read-only") + (op.recursive ? " (recursive) " : " ") + q(op.dst);
    case OpKind::PinLink: return "pin symlink " + q(op.dst);
  }
  return "?";
}

}  // namespace zb::overlay
