#include "exec/ids.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "overlay/mountinfo.hpp"
#include "util/mount_api.hpp"

namespace zb::exec {
namespace {

using namespace mount_api;

// File systems that never take an idmapping: not worth a system call each.
bool never_idmapped(const std::string& type) {
  static const std::set<std::string> k_types = {
      "proc",        "sysfs",      "devpts",    "devtmpfs", "cgroup", "cgroup2",    "tracefs",
      "debugfs",     "securityfs", "bpf",       "mqueue",   "pstore", "configfs",   "fusectl",
      "binfmt_misc", "efivarfs",   "hugetlbfs", "autofs",   "nsfs",   "rpc_pipefs", "selinuxfs"};
  return k_types.count(type) != 0;
}

// The whole-range identity map: this process is root of the initial user namespace (a
// container's root maps a smaller range, or maps uid 0 elsewhere).
bool full_identity(const char* map_file) {
  std::ifstream in(map_file);
  unsigned long inside = 1, outside = 1, count = 0;
  std::string rest;
  if (!(in >> inside >> outside >> count)) return false;
  return inside == 0 && outside == 0 && count == 4294967295UL && !(in >> rest);
}

}  // namespace

std::string own_ids_unavailable() {
  if (::geteuid() != 0) return "not root";
  if (!full_identity("/proc/self/uid_map") || !full_identity("/proc/self/gid_map")) {
    return "zerobox runs as root of a user namespace of its own, whose uid 0 is not the host's";
  }
  utsname u{};
  unsigned major = 0, minor = 0;
  if (::uname(&u) != 0 || std::sscanf(u.release, "%u.%u", &major, &minor) != 2) return "unknown kernel release";
  if (major < 5 || (major == 5 && minor < 19)) {
    return std::string("Linux ") + u.release + " is older than 5.19, where overlayfs takes idmapped layers";
  }
  return "";
}

std::string own_id_map() {
  return "0 " + std::to_string(k_own_ids_base) + " " + std::to_string(k_own_ids_count) + "\n";
}

Result<IdmappedTree> idmapped_host_tree(int userns_fd) {
  std::ifstream in("/proc/self/mountinfo");
  if (!in) return fail("open /proc/self/mountinfo");
  struct Listed {
    uint64_t id;
    std::string point, type;
  };
  std::vector<Listed> listed;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    uint64_t id = 0;
    std::string parent, dev, root, point, field;
    if (!(f >> id >> parent >> dev >> root >> point)) continue;
    while (f >> field && field != "-") {
    }
    std::string type;
    f >> type;
    listed.push_back({id, overlay::unescape_mountinfo(point), type});
  }

  IdmappedTree t;
  MountAttr priv{0, 0, MS_PRIVATE, 0};
  MountAttr idmap{k_attr_idmap, 0, 0, static_cast<uint64_t>(userns_fd)};
  // /proc and /sys go as one recursive clone each, their mounts below included as they
  // are: nothing there is idmapped, or written, and a clone per cgroup hierarchy would
  // cost a few system calls each on every start.
  auto kernel_tree = [](const std::string& p) { return p == "/proc" || p == "/sys"; };
  auto in_kernel_tree = [](const std::string& p) { return p.starts_with("/proc/") || p.starts_with("/sys/"); };
  for (const auto& m : listed) {
    if (m.point.empty() || m.point[0] != '/' || in_kernel_tree(m.point)) continue;
    // Only the mount its path reaches now: a mount covered by a later one (stacked on the
    // same point, or on a directory above) stays out of sight, as on the host.
    struct statx sx{};
    if (::statx(AT_FDCWD, m.point.c_str(), AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_MNT_ID, &sx) != 0) {
      if (errno == ENOENT) continue;  // unmounted since
      return fail("statx " + m.point);
    }
    if ((sx.stx_mask & STATX_MNT_ID) == 0) return fail_msg("statx " + m.point + ": no mount id (Linux before 5.8)");
    if (sx.stx_mnt_id != m.id) continue;
    unsigned recursive = kernel_tree(m.point) ? k_at_recursive : 0;
    UniqueFd fd(
        static_cast<int>(::syscall(k_sys_open_tree, AT_FDCWD, m.point.c_str(),
                                   k_open_tree_clone | recursive | AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | O_CLOEXEC)));
    if (!fd) {
      if (errno == ENOENT) continue;
      return fail("clone the host's mount " + m.point + " (open_tree)");
    }
    // A clone of a shared mount joins its peer group.
    if (::syscall(k_sys_mount_setattr, fd.get(), "", AT_EMPTY_PATH | recursive, &priv, sizeof priv) != 0) {
      return fail("make the clone of " + m.point + " private");
    }
    bool is_root = m.point == "/";
    bool mapped = recursive == 0 && !never_idmapped(m.type) &&
                  ::syscall(k_sys_mount_setattr, fd.get(), "", AT_EMPTY_PATH, &idmap, sizeof idmap) == 0;
    if (!mapped && is_root) return fail("idmap the root mount (" + m.type + ")");
    if (!mapped) t.unmapped.push_back(m.point);
    t.mounts.push_back({m.point, std::move(fd)});
  }
  // Parents first: a visible mount's parent is a visible mount on a shorter path.
  auto depth = [](const std::string& p) { return p == "/" ? 0 : std::count(p.begin(), p.end(), '/'); };
  std::stable_sort(t.mounts.begin(), t.mounts.end(),
                   [&](const HostMount& a, const HostMount& b) { return depth(a.point) < depth(b.point); });
  if (t.mounts.empty() || t.mounts[0].point != "/") return fail_msg("the host's mount table lists no /");
  return t;
}

int send_host_tree(int channel, const IdmappedTree& tree) {
  std::size_t i = 0;
  do {
    std::string data(1, 'M');
    std::vector<int> fds;
    while (i < tree.mounts.size() && fds.size() < k_tree_batch &&
           data.size() + tree.mounts[i].point.size() + 1 <= k_tree_message) {
      data += tree.mounts[i].point;
      data += '\0';
      fds.push_back(tree.mounts[i].fd.get());
      ++i;
    }
    if (fds.empty()) {
      errno = ENAMETOOLONG;
      return -1;
    }
    if (i == tree.mounts.size()) data[0] = 'E';
    std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
    iovec iov{data.data(), data.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    if (c == nullptr) {
      errno = EINVAL;
      return -1;
    }
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    ssize_t n;
    do {
      n = ::sendmsg(channel, &msg, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(data.size())) return -1;
  } while (i < tree.mounts.size());
  return 0;
}

int become_own_root(int death_signal) {
  // Raw system calls: glibc's wrappers change the ids of every thread of the process
  // (setxid broadcast), and this copy of a multi-threaded process still lists threads that
  // are not in it, so they would wait for those forever.
  if (::syscall(SYS_setresgid, 0, 0, 0) != 0 || ::syscall(SYS_setgroups, 0, nullptr) != 0 ||
      ::syscall(SYS_setresuid, 0, 0, 0) != 0) {
    return -1;
  }
  if (::prctl(PR_SET_PDEATHSIG, death_signal, 0, 0, 0) != 0) return -1;
  return 0;
}

}  // namespace zb::exec
