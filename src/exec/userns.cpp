// The uid/gid maps of the sandbox's user namespace (exec/userns.hpp), written by the
// supervisor while the child waits, and the reasons a clone() into new namespaces fails.
#include "exec/userns.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "util/fd.hpp"

namespace zb::exec {
namespace {

Result<void> write_file(const std::string& path, const std::string& data) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return fail("open " + path);
  if (::write(fd.get(), data.data(), data.size()) != static_cast<ssize_t>(data.size())) return fail("write " + path);
  return {};
}

// Identity map of every id the supervisor's own namespace maps (all of them for root on
// the host), so files keep their owners; an unprivileged caller can map only itself.
std::string identity_map(const char* self_map) {
  std::ifstream in(self_map);
  std::string out, line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    unsigned long inside = 0, outside = 0, count = 0;
    if (ls >> inside >> outside >> count)
      out += std::to_string(inside) + " " + std::to_string(inside) + " " + std::to_string(count) + "\n";
  }
  return out;
}

}  // namespace

Result<void> write_id_maps(pid_t pid, bool own_ids) {
  std::string base = "/proc/" + std::to_string(pid);
  unsigned uid = ::geteuid(), gid = ::getegid();
  if (uid == 0) {
    std::string uids = own_ids ? own_id_map() : identity_map("/proc/self/uid_map");
    std::string gids = own_ids ? own_id_map() : identity_map("/proc/self/gid_map");
    auto u = write_file(base + "/uid_map", uids);
    if (u) {
      auto g = write_file(base + "/gid_map", gids);
      if (g) return {};
      return g;
    }
    if (own_ids) return u;
  }
  // Linux before 3.19 has no setgroups file, and needs no "deny" for an unprivileged
  // gid_map: the file came with the rule (the fix for CVE-2014-8989).
  if (auto r = write_file(base + "/setgroups", "deny"); !r && r.error().err != ENOENT) return r;
  if (auto r = write_file(base + "/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1\n"); !r) return r;
  return write_file(base + "/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1\n");
}

std::string ids_note(bool own, const std::string& why_not, const IdmappedTree* tree) {
  if (::geteuid() != 0) return "";
  if (!own) return "ids: root keeps the host's ids (identity map): " + why_not;
  std::string note = "ids: the sandbox's uid and gid 0 are host id " + std::to_string(k_own_ids_base) + "; " +
                     std::to_string(tree->mounts.size() - tree->unmapped.size()) + " of " +
                     std::to_string(tree->mounts.size()) + " host mounts idmapped";
  if (!tree->unmapped.empty()) {
    note += "; files show as nobody's on";
    std::size_t shown = 0;
    for (const auto& m : tree->unmapped) {
      if (shown++ == 6) {
        note += " and " + std::to_string(tree->unmapped.size() - 6) + " more";
        break;
      }
      note += " " + m;
    }
  }
  return note;
}

std::string clone_error(int err) {
  std::string msg = std::string("create namespaces (clone): ") + std::strerror(err);
  // The kernel refuses CLONE_NEWUSER (EPERM) to a process whose root is not its mount
  // namespace's: a chroot. There /proc/self/mountinfo (when /proc is mounted) lists no
  // mount at "/" unless the chroot's directory is itself a mount point.
  bool chrooted = false;
  if (err == EPERM) {
    std::ifstream mountinfo("/proc/self/mountinfo");
    std::string line;
    bool any = false, root_seen = false;
    while (std::getline(mountinfo, line)) {
      any = true;
      std::istringstream fields(line);
      std::string id, parent, devno, root, mount_point;
      if (fields >> id >> parent >> devno >> root >> mount_point && mount_point == "/") root_seen = true;
    }
    chrooted = any && !root_seen;
  }
  // The errnos clone(2) gives for CLONE_NEWUSER: EPERM (refused by a sysctl or a security
  // module, or a chroot), ENOSPC (a max_user_namespaces limit or the nesting depth), EUSERS
  // (the same before Linux 4.9), EINVAL (a kernel built without user namespaces).
  if (chrooted) {
    msg +=
        " (this process runs in a chroot, where the kernel refuses new user namespaces: run zerobox "
        "outside the chroot, or in a container with its own mount namespace)";
  } else if (err == EPERM || err == ENOSPC || err == EUSERS || err == EINVAL) {
    msg +=
        " (user namespaces are disabled or exhausted on this machine, or this process runs in a chroot, "
        "where the kernel refuses them; --no-sandbox runs without isolation)";
  }
  return msg;
}

}  // namespace zb::exec
