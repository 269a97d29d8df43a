#include "overlay/plan.hpp"

#include <sys/mount.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "overlay/plan_builder.hpp"
#include "util/log.hpp"
#include "util/path.hpp"

namespace zb::overlay {
namespace {

using plan_detail::Builder;
using plan_detail::in_new;
using plan_detail::in_old;
using plan_detail::in_scratch;
using plan_detail::k_scratch;

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
