#include "exec/seccomp.hpp"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>

#include "util/fd.hpp"

namespace zb::exec {
namespace {

struct CtxFree {
  void operator()(scmp_filter_ctx ctx) const { seccomp_release(ctx); }
};

// Refused outright: escapes from the mount view, kernel attack surface an untrusted
// build never needs, and ways to reach other processes.
constexpr const char* k_denied[] = {
    // the mount family, old and new API
    "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
    "mount_setattr",
    // other processes
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp", "setns",
    // kernel attack surface
    "io_uring_setup", "io_uring_enter", "io_uring_register", "bpf", "perf_event_open", "userfaultfd", "add_key",
    "request_key", "keyctl", "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
    "swapon", "swapoff", "acct", "clock_settime", "clock_adjtime", "settimeofday", "adjtimex", "syslog",
    "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "quotactl", "vhangup", "iopl", "ioperm", "uselib",
    "nfsservctl", "fanotify_init"};

constexpr long k_open_tree_attr = 467;  // Linux 6.15; unknown to libseccomp 2.5
// Refused ioctl requests. Typing into the terminal's input queue (TIOCSTI) and the Linux
// console's ioctl (TIOCLINUX) are live escapes to the caller's shell. The file-system
// ioctls that give a path a new name, beside the calls the create guard traps, and copy
// a whole tree (past --deny-read mounts): btrfs's subvolume and snapshot creation
// (BTRFS_IOC_SNAP_CREATE, _SUBVOL_CREATE, _SNAP_CREATE_V2, _SUBVOL_CREATE_V2), ocfs2's
// OCFS2_IOC_REFLINK and bcachefs's BCH_IOCTL_SUBVOLUME_CREATE and _CREATE_v2.
constexpr unsigned long k_refused_ioctls[] = {0x5412,     0x541C,     0x50009401, 0x5000940e, 0x50009417,
                                              0x50009418, 0x40186f04, 0x4020bc10, 0x4030bc1d};

Result<std::vector<sock_filter>> export_bpf(scmp_filter_ctx ctx);

// What init needs to serve the create guard (exec/guard/).
constexpr const char* k_guard_tools[] = {"process_vm_readv", "pidfd_getfd"};

// What the command may not do to pid 1 when it serves the guard (or runs its fallback):
// use the two calls pid 1 works with, or set pid 1's resource limits (the command has its
// uid, and a lower RLIMIT_NOFILE would fail every call pid 1 serves). pid_t is 32 bits.
int refuse_guard_tools(scmp_filter_ctx ctx, const char** what) {
  for (const char* name : k_guard_tools) {
    *what = name;
    if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), seccomp_syscall_resolve_name(name), 0); rc < 0) return rc;
  }
  *what = "prlimit64";
  return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prlimit64), 2,
                          SCMP_A0(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, 1), SCMP_A2(SCMP_CMP_NE, 0));
}

bool is_guard_tool(const char* name) {
  for (const char* t : k_guard_tools) {
    if (std::strcmp(t, name) == 0) return true;
  }
  return false;
}

using Ctx = std::unique_ptr<void, CtxFree>;

// The address families socket() and socketpair() may create (values of <sys/socket.h>,
// in order): AF_UNIX, AF_INET, AF_INET6, AF_NETLINK.
constexpr uint64_t k_allowed_families[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};

// libseccomp takes one comparison per argument in a rule, so "not one of these" is
// spelled as one rule for each family in a gap below the largest allowed one, and one
// for everything above it (compared as 64 bits). Returns libseccomp's rc.
int refuse_socket_families(scmp_filter_ctx ctx) {
  static_assert(std::is_sorted(std::begin(k_allowed_families), std::end(k_allowed_families)));
  const uint32_t eafnosupport = SCMP_ACT_ERRNO(EAFNOSUPPORT);
  for (int nr : {SCMP_SYS(socket), SCMP_SYS(socketpair)}) {
    uint64_t next = 0;  // the lowest family neither refused nor allowed yet
    for (uint64_t allowed : k_allowed_families) {
      for (uint64_t f = next; f < allowed; ++f) {
        if (int rc = seccomp_rule_add(ctx, eafnosupport, nr, 1, SCMP_A0(SCMP_CMP_EQ, f)); rc < 0) return rc;
      }
      next = allowed + 1;
    }
    if (int rc = seccomp_rule_add(ctx, eafnosupport, nr, 1, SCMP_A0(SCMP_CMP_GE, next)); rc < 0) return rc;
  }
  return 0;
}

// A default-allow filter; `bad_arch` for a foreign ABI's calls.
Result<Ctx> new_filter(uint32_t bad_arch) {
  Ctx ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return fail("seccomp_init", ENOMEM);
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, bad_arch); rc < 0)
    return fail("seccomp badarch", -rc);
  // A binary tree of syscall numbers instead of a linear chain: the kernel evaluates
  // the filter for every syscall number when it loads it (to build its allow cache),
  // so a shorter path per number makes loading faster as well as every syscall.
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2); rc < 0) return fail("seccomp optimize", -rc);
  return ctx;
}

}  // namespace

Result<std::vector<sock_filter>> build_seccomp_filter(bool for_guard) {
  auto made = new_filter(SCMP_ACT_KILL_PROCESS);
  if (!made) return std::unexpected(made.error());
  Ctx& ctx = *made;
  auto check = [](int rc, const char* what) -> Result<void> {
    if (rc < 0) return fail(std::string("seccomp rule ") + what, -rc);
    return {};
  };
  const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  for (const char* name : k_denied) {
    // init of a guarded run reads the command's memory and fds; the guard filter refuses
    // them to the command (build_guard_filter).
    if (for_guard && is_guard_tool(name)) continue;
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    if (auto r = check(seccomp_rule_add(ctx.get(), eperm, nr, 0), name); !r) return std::unexpected(r.error());
  }
  if (auto r = check(seccomp_rule_add(ctx.get(), eperm, static_cast<int>(k_open_tree_attr), 0), "open_tree_attr"); !r)
    return std::unexpected(r.error());
  // Sockets of the address families a build, a test runner or a package manager uses:
  // unix, IPv4/IPv6 (loopback or the host's network, as the policy says) and netlink
  // (interface and address lookups). Every other family is kernel code the command never
  // needs and some lead out of the sandbox: AF_VSOCK reaches the hypervisor's agents from
  // a VM guest, whatever the network namespace; AF_PACKET, AF_CAN, AF_TIPC, AF_RDS and
  // AF_ALG are where most socket CVEs were. They get EAFNOSUPPORT, as from a kernel
  // without them. The kernel reads the family as an int: a value with any of the upper 32
  // bits set is refused whole. (io_uring's IORING_OP_SOCKET is out of reach: io_uring_setup
  // is refused above; i386's socketcall is an i386 call, whose ABI is killed.)
  if (auto r = check(refuse_socket_families(ctx.get()), "socket families"); !r) return std::unexpected(r.error());
  // clone3 passes its flags in memory, out of seccomp's reach: ENOSYS makes libc use clone.
  if (auto r = check(seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0), "clone3"); !r)
    return std::unexpected(r.error());
  // No nested user namespaces (they would hand the command a full set of capabilities).
  for (int nr : {SCMP_SYS(clone), SCMP_SYS(unshare)}) {
    if (auto r =
            check(seccomp_rule_add(ctx.get(), eperm, nr, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)),
                  "clone/unshare");
        !r)
      return std::unexpected(r.error());
  }
  // The kernel compares only the low 32 bits of cmd.
  for (unsigned long cmd : k_refused_ioctls) {
    if (auto r =
            check(seccomp_rule_add(ctx.get(), eperm, SCMP_SYS(ioctl), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, cmd)),
                  "ioctl");
        !r)
      return std::unexpected(r.error());
  }
  // No setuid or setgid bit from inside, on any file: not by chmod (a file the command
  // owns, made setuid-root by root inside, is one on the host too), not at creation
  // (open's and mknod's mode). libseccomp tests one mask per argument, so each bit is a
  // rule of its own.
  constexpr long k_fchmodat2 = 452;  // Linux 6.6; unknown to libseccomp 2.5
  struct ModeArg {
    int nr;
    unsigned mode_arg;  // which argument is the mode
    int flags_arg;      // which argument holds O_CREAT and the tmpfile bit, or -1
  };
  const ModeArg mode_calls[] = {{SCMP_SYS(chmod), 1, -1},    {SCMP_SYS(fchmod), 1, -1},
                                {SCMP_SYS(fchmodat), 2, -1}, {static_cast<int>(k_fchmodat2), 2, -1},
                                {SCMP_SYS(creat), 1, -1},    {SCMP_SYS(mknod), 1, -1},
                                {SCMP_SYS(mknodat), 2, -1},  {SCMP_SYS(open), 2, 1},
                                {SCMP_SYS(openat), 3, 2}};
  constexpr unsigned k_tmpfile_bit = 020000000;  // __O_TMPFILE, without O_DIRECTORY
  for (const ModeArg& c : mode_calls) {
    for (unsigned bit : {static_cast<unsigned>(S_ISUID), static_cast<unsigned>(S_ISGID)}) {
      scmp_arg_cmp mode = SCMP_CMP(c.mode_arg, SCMP_CMP_MASKED_EQ, bit, bit);
      int rc;
      if (c.flags_arg < 0) {
        rc = seccomp_rule_add(ctx.get(), eperm, c.nr, 1, mode);
      } else {
        auto flags_arg = static_cast<unsigned>(c.flags_arg);
        rc = seccomp_rule_add(ctx.get(), eperm, c.nr, 2, mode,
                              SCMP_CMP(flags_arg, SCMP_CMP_MASKED_EQ, O_CREAT, O_CREAT));
        if (rc >= 0) {
          rc = seccomp_rule_add(ctx.get(), eperm, c.nr, 2, mode,
                                SCMP_CMP(flags_arg, SCMP_CMP_MASKED_EQ, k_tmpfile_bit, k_tmpfile_bit));
        }
      }
      if (auto r = check(rc, "setuid bits"); !r) return std::unexpected(r.error());
    }
  }
  // openat2() keeps its mode in memory, out of seccomp's reach: ENOSYS makes callers fall
  // back to openat(). init of a guarded run resolves paths with it; its command gets the
  // same answer from the guard's filter.
  if (!for_guard) {
    if (auto r = check(seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0), "openat2"); !r)
      return std::unexpected(r.error());
  }
  // personality(): querying (0xffffffff) and plain PER_LINUX/PER_LINUX32 are fine; the
  // flags that weaken exploit mitigations are not (ADDR_NO_RANDOMIZE, MMAP_PAGE_ZERO,
  // ADDR_COMPAT_LAYOUT, READ_IMPLIES_EXEC, ADDR_LIMIT_32BIT, ADDR_LIMIT_3GB).
  // libseccomp allows one comparison per argument, so "flag set and not the query" is
  // spelled with bit 31, which no persona uses: (1) bit 31 clear and a flag set;
  // (2) bit 31 set and any other bit clear, which is never the query.
  constexpr unsigned long k_bit31 = 0x80000000UL;
  for (unsigned long flag : {0x0040000UL, 0x0100000UL, 0x0200000UL, 0x0400000UL, 0x0800000UL, 0x8000000UL}) {
    if (auto r = check(seccomp_rule_add(ctx.get(), eperm, SCMP_SYS(personality), 1,
                                        SCMP_A0(SCMP_CMP_MASKED_EQ, flag | k_bit31, flag)),
                       "personality");
        !r)
      return std::unexpected(r.error());
  }
  for (unsigned long bit = 1; bit < k_bit31; bit <<= 1) {
    if (auto r = check(seccomp_rule_add(ctx.get(), eperm, SCMP_SYS(personality), 1,
                                        SCMP_A0(SCMP_CMP_MASKED_EQ, bit | k_bit31, k_bit31)),
                       "personality");
        !r)
      return std::unexpected(r.error());
  }

  return export_bpf(ctx.get());
}

Result<std::vector<sock_filter>> build_guard_filter(bool writes) {
  // Foreign ABIs are the first filter's business (it kills them).
  auto made = new_filter(SCMP_ACT_ALLOW);
  if (!made) return std::unexpected(made.error());
  Ctx& ctx = *made;
  auto check = [](int rc, const char* what) -> Result<void> {
    if (rc < 0) return fail(std::string("guard rule ") + what, -rc);
    return {};
  };
  // Everything that can give a path a new name: creating a file, directory, node, symlink
  // or hard link, and renaming. open() and openat() only with O_CREAT (a register
  // argument, so the filter can look); openat2() keeps its flags in memory, where
  // seccomp cannot, and gets ENOSYS so that callers fall back to openat().
  // umask() too, only so that init knows it must read the caller's umask from then on;
  // bind(), whose unix socket paths are new names too.
  for (const char* name : {"creat", "mkdir", "mkdirat", "mknod", "mknodat", "symlink", "symlinkat", "link", "linkat",
                           "rename", "renameat", "renameat2", "umask", "bind"}) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;
    if (auto r = check(seccomp_rule_add(ctx.get(), SCMP_ACT_NOTIFY, nr, 0), name); !r)
      return std::unexpected(r.error());
  }
  // O_PATH makes the kernel ignore O_CREAT (and an O_PATH fd cannot be handed over).
  constexpr unsigned k_creating = O_CREAT | O_PATH;
  if (auto r = check(seccomp_rule_add(ctx.get(), SCMP_ACT_NOTIFY, SCMP_SYS(open), 1,
                                      SCMP_A1(SCMP_CMP_MASKED_EQ, k_creating, O_CREAT)),
                     "open");
      !r)
    return std::unexpected(r.error());
  if (auto r = check(seccomp_rule_add(ctx.get(), SCMP_ACT_NOTIFY, SCMP_SYS(openat), 1,
                                      SCMP_A2(SCMP_CMP_MASKED_EQ, k_creating, O_CREAT)),
                     "openat");
      !r)
    return std::unexpected(r.error());
  // With the depth rule, opening an existing file for writing too (O_WRONLY, O_RDWR or
  // O_TRUNC without O_CREAT), and truncate(): an existing protected name deep in a
  // writable tree (a nested repository's .git/config) has no mount to cover it. One rule
  // per bit: libseccomp compares an argument once per rule. Read-only opens go on.
  if (writes) {
    for (unsigned bit :
         {static_cast<unsigned>(O_WRONLY), static_cast<unsigned>(O_RDWR), static_cast<unsigned>(O_TRUNC)}) {
      for (auto [nr, rule] : {std::pair{SCMP_SYS(open), SCMP_A1(SCMP_CMP_MASKED_EQ, k_creating | bit, bit)},
                              std::pair{SCMP_SYS(openat), SCMP_A2(SCMP_CMP_MASKED_EQ, k_creating | bit, bit)}}) {
        if (auto r = check(seccomp_rule_add(ctx.get(), SCMP_ACT_NOTIFY, nr, 1, rule), "write open"); !r)
          return std::unexpected(r.error());
      }
    }
    if (auto r = check(seccomp_rule_add(ctx.get(), SCMP_ACT_NOTIFY, SCMP_SYS(truncate), 0), "truncate"); !r)
      return std::unexpected(r.error());
  }
  if (auto r = check(seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0), "openat2"); !r)
    return std::unexpected(r.error());
  const char* what = nullptr;
  if (int rc = refuse_guard_tools(ctx.get(), &what); rc < 0) return fail(std::string("guard rule ") + what, -rc);
  return export_bpf(ctx.get());
}

Result<std::vector<sock_filter>> build_guard_fallback_filter() {
  auto made = new_filter(SCMP_ACT_ALLOW);
  if (!made) return std::unexpected(made.error());
  Ctx& ctx = *made;
  const char* what = nullptr;
  if (int rc = refuse_guard_tools(ctx.get(), &what); rc < 0) return fail(std::string("rule ") + what, -rc);
  return export_bpf(ctx.get());
}

namespace {

Result<std::vector<sock_filter>> export_bpf(scmp_filter_ctx ctx) {
  // Export the BPF program through a memfd and read it back.
  UniqueFd mem(::memfd_create("zerobox-seccomp", MFD_CLOEXEC));
  if (!mem) return fail("memfd_create");
  if (int rc = seccomp_export_bpf(ctx, mem.get()); rc < 0) return fail("seccomp export", -rc);
  off_t size = ::lseek(mem.get(), 0, SEEK_END);
  if (size <= 0 || size % static_cast<off_t>(sizeof(sock_filter)) != 0) return fail_msg("seccomp: bad BPF size");
  std::vector<sock_filter> prog(static_cast<size_t>(size) / sizeof(sock_filter));
  if (::pread(mem.get(), prog.data(), static_cast<size_t>(size), 0) != size) return fail("seccomp: read BPF");
  return prog;
}

}  // namespace
}  // namespace zb::exec
