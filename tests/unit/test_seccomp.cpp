// Tests for the seccomp filters of src/exec/seccomp.cpp, as zerobox loads them (the
// build-time copies of seccomp_embedded.cpp), and for the create guard's decision
// (src/exec/guard/).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <expected>
#include <initializer_list>
#include <span>
#include <string>

#include "exec/guard.hpp"
#include "exec/seccomp.hpp"

namespace {

// Runs a classic BPF program on one system call as the kernel runs a seccomp filter and
// returns the filter's action. What the kernel would refuse to load (an instruction
// outside the seccomp subset, a load outside seccomp_data, a jump past the end, a
// division by zero) is an error.
std::expected<uint32_t, std::string> run_bpf(std::span<const sock_filter> prog, const seccomp_data& data) {
  uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {};
  for (std::size_t pc = 0; pc < prog.size(); ++pc) {
    const sock_filter& f = prog[pc];
    auto bad = [&](const char* why) {
      return std::unexpected(std::string(why) + " at instruction " + std::to_string(pc));
    };
    const uint32_t src = BPF_SRC(f.code) == BPF_X ? x : f.k;
    switch (BPF_CLASS(f.code)) {
      case BPF_LD:
      case BPF_LDX: {
        uint32_t v = 0;
        if (BPF_MODE(f.code) == BPF_ABS && BPF_CLASS(f.code) == BPF_LD && BPF_SIZE(f.code) == BPF_W && f.k % 4 == 0 &&
            f.k < sizeof data) {
          std::memcpy(&v, reinterpret_cast<const unsigned char*>(&data) + f.k, sizeof v);
        } else if (BPF_MODE(f.code) == BPF_LEN && BPF_SIZE(f.code) == BPF_W) {
          v = sizeof data;
        } else if (BPF_MODE(f.code) == BPF_IMM) {
          v = f.k;
        } else if (BPF_MODE(f.code) == BPF_MEM && f.k < BPF_MEMWORDS) {
          v = mem[f.k];
        } else {
          return bad("a load seccomp does not allow");
        }
        (BPF_CLASS(f.code) == BPF_LD ? a : x) = v;
        break;
      }
      case BPF_ST:
      case BPF_STX:
        if (f.k >= BPF_MEMWORDS) return bad("a store outside the scratch memory");
        mem[f.k] = BPF_CLASS(f.code) == BPF_ST ? a : x;
        break;
      case BPF_ALU:
        switch (BPF_OP(f.code)) {
          case BPF_ADD: a += src; break;
          case BPF_SUB: a -= src; break;
          case BPF_MUL: a *= src; break;
          case BPF_OR: a |= src; break;
          case BPF_AND: a &= src; break;
          case BPF_XOR: a ^= src; break;
          case BPF_NEG: a = -a; break;
          case BPF_DIV:
          case BPF_MOD:
            if (src == 0) return bad("a division by zero");
            a = BPF_OP(f.code) == BPF_DIV ? a / src : a % src;
            break;
          case BPF_LSH:
          case BPF_RSH:
            if (src >= 32) return bad("a shift by 32 or more");
            a = BPF_OP(f.code) == BPF_LSH ? a << src : a >> src;
            break;
          default: return bad("an unknown ALU operation");
        }
        break;
      case BPF_JMP: {
        std::size_t next = pc + 1;
        switch (BPF_OP(f.code)) {
          case BPF_JA: next += f.k; break;
          case BPF_JEQ: next += a == src ? f.jt : f.jf; break;
          case BPF_JGT: next += a > src ? f.jt : f.jf; break;
          case BPF_JGE: next += a >= src ? f.jt : f.jf; break;
          case BPF_JSET: next += (a & src) != 0 ? f.jt : f.jf; break;
          default: return bad("an unknown jump");
        }
        if (next >= prog.size()) return bad("a jump past the end");
        pc = next - 1;
        break;
      }
      case BPF_RET:
        if (BPF_RVAL(f.code) == BPF_K) return f.k;
        if (BPF_RVAL(f.code) == BPF_A) return a;
        return bad("an unknown return");
      case BPF_MISC:
        if (BPF_MISCOP(f.code) == BPF_TAX) {
          x = a;
        } else if (BPF_MISCOP(f.code) == BPF_TXA) {
          a = x;
        } else {
          return bad("an unknown misc instruction");
        }
        break;
      default: return bad("an unknown instruction class");
    }
  }
  return std::unexpected(std::string("the program ends without a return"));
}

constexpr uint32_t k_allow = SECCOMP_RET_ALLOW;
constexpr uint32_t k_kill = SECCOMP_RET_KILL_PROCESS;
constexpr uint32_t k_notify = SECCOMP_RET_USER_NOTIF;
constexpr uint32_t err(int e) { return SECCOMP_RET_ERRNO | static_cast<uint32_t>(e); }

std::string action_name(uint32_t action) {
  switch (action & SECCOMP_RET_ACTION_FULL) {
    case SECCOMP_RET_ALLOW: return "ALLOW";
    case SECCOMP_RET_KILL_PROCESS: return "KILL_PROCESS";
    case SECCOMP_RET_USER_NOTIF: return "USER_NOTIF";
    case SECCOMP_RET_ERRNO:
      return "ERRNO(" + std::string(strerrorname_np(static_cast<int>(action & SECCOMP_RET_DATA))) + ")";
    default: return "action " + std::to_string(action);
  }
}

#if defined(__x86_64__)
constexpr uint32_t k_arch = AUDIT_ARCH_X86_64;
constexpr int k_x32_bit = 0x40000000;  // __X32_SYSCALL_BIT
constexpr int k_fchmodat2 = 452;       // as in seccomp.cpp: newer than libseccomp 2.5
constexpr int k_open_tree_attr = 467;
constexpr uint64_t k_hi = uint64_t{1} << 32;                          // a bit the kernel drops from an int argument
constexpr uint64_t k_any_ptr = 0x7fff0000;                            // a pointer argument (never read)
constexpr uint64_t k_o_tmpfile = 020000000;                           // __O_TMPFILE, without O_DIRECTORY
constexpr uint64_t k_cwd = static_cast<uint64_t>(int64_t{AT_FDCWD});  // as in a register

seccomp_data call(int nr, std::initializer_list<uint64_t> args = {}, uint32_t arch = k_arch) {
  seccomp_data d{};
  d.nr = nr;
  d.arch = arch;
  std::size_t i = 0;
  for (uint64_t v : args) d.args[i++] = v;
  return d;
}

// One system call and the action of each of the five filters on it: the base filter,
// the base filter of a guarded run, the guard's filter, the guard's filter with the
// depth rule (writes) and the guard's fallback.
struct Row {
  const char* what;
  seccomp_data call;
  uint32_t base, base_for_guard, guard, guard_writes, fallback;
};

// Refused outright by the base filter (k_denied and open_tree_attr), as far as this
// architecture has them; process_vm_readv and pidfd_getfd are left to a guarded run's
// init and refused by the guard's filters instead (rows below).
constexpr int k_denied_nrs[] = {SYS_mount,
                                SYS_umount2,
                                SYS_pivot_root,
                                SYS_chroot,
                                SYS_move_mount,
                                SYS_open_tree,
                                SYS_fsopen,
                                SYS_fsconfig,
                                SYS_fsmount,
                                SYS_fspick,
                                SYS_mount_setattr,
                                SYS_ptrace,
                                SYS_kcmp,
                                SYS_setns,
                                SYS_io_uring_setup,
                                SYS_io_uring_enter,
                                SYS_io_uring_register,
                                SYS_bpf,
                                SYS_perf_event_open,
                                SYS_userfaultfd,
                                SYS_add_key,
                                SYS_request_key,
                                SYS_keyctl,
                                SYS_init_module,
                                SYS_finit_module,
                                SYS_delete_module,
                                SYS_kexec_load,
                                SYS_kexec_file_load,
                                SYS_reboot,
                                SYS_swapon,
                                SYS_swapoff,
                                SYS_acct,
                                SYS_clock_settime,
                                SYS_clock_adjtime,
                                SYS_settimeofday,
                                SYS_adjtimex,
                                SYS_syslog,
                                SYS_open_by_handle_at,
                                SYS_name_to_handle_at,
                                SYS_lookup_dcookie,
                                SYS_quotactl,
                                SYS_vhangup,
                                SYS_iopl,
                                SYS_ioperm,
                                SYS_uselib,
                                SYS_nfsservctl,
                                SYS_fanotify_init,
                                k_open_tree_attr};

constexpr uint32_t k_eperm = err(EPERM), k_enosys = err(ENOSYS), k_eafnosupport = err(EAFNOSUPPORT);

const Row k_rows[] = {
    {"read", call(SYS_read, {0, k_any_ptr, 1}), k_allow, k_allow, k_allow, k_allow, k_allow},
    {"getpid", call(SYS_getpid), k_allow, k_allow, k_allow, k_allow, k_allow},
    // Kept from the command of a guarded run, which pid 1 serves with them.
    {"process_vm_readv", call(SYS_process_vm_readv, {1}), k_eperm, k_allow, k_eperm, k_eperm, k_eperm},
    {"pidfd_getfd", call(SYS_pidfd_getfd, {3, 4, 0}), k_eperm, k_allow, k_eperm, k_eperm, k_eperm},
    {"prlimit64 setting pid 1's limit", call(SYS_prlimit64, {1, RLIMIT_NOFILE, k_any_ptr, 0}), k_allow, k_allow,
     k_eperm, k_eperm, k_eperm},
    {"prlimit64 of pid 1 with a high bit", call(SYS_prlimit64, {k_hi | 1, RLIMIT_NOFILE, k_any_ptr, 0}), k_allow,
     k_allow, k_eperm, k_eperm, k_eperm},
    {"prlimit64 reading pid 1's limit", call(SYS_prlimit64, {1, RLIMIT_NOFILE, 0, k_any_ptr}), k_allow, k_allow,
     k_allow, k_allow, k_allow},
    {"prlimit64 setting its own limit", call(SYS_prlimit64, {0, RLIMIT_NOFILE, k_any_ptr, 0}), k_allow, k_allow,
     k_allow, k_allow, k_allow},
    // Terminal input and the console.
    {"ioctl TIOCSTI", call(SYS_ioctl, {0, TIOCSTI, k_any_ptr}), k_eperm, k_eperm, k_allow, k_allow, k_allow},
    {"ioctl TIOCSTI with a high bit", call(SYS_ioctl, {0, k_hi | TIOCSTI, k_any_ptr}), k_eperm, k_eperm, k_allow,
     k_allow, k_allow},
    {"ioctl TIOCLINUX", call(SYS_ioctl, {0, TIOCLINUX, k_any_ptr}), k_eperm, k_eperm, k_allow, k_allow, k_allow},
    {"ioctl TCGETS", call(SYS_ioctl, {0, TCGETS, k_any_ptr}), k_allow, k_allow, k_allow, k_allow, k_allow},
    {"ioctl BTRFS_IOC_SNAP_CREATE", call(SYS_ioctl, {3, 0x50009401, k_any_ptr}), k_eperm, k_eperm, k_allow, k_allow,
     k_allow},
    {"ioctl BCH_IOCTL_SUBVOLUME_CREATE_v2", call(SYS_ioctl, {3, 0x4030bc1d, k_any_ptr}), k_eperm, k_eperm, k_allow,
     k_allow, k_allow},
    // New processes: no user namespace, and clone3's flags are out of reach.
    {"clone3", call(SYS_clone3, {k_any_ptr, 88}), k_enosys, k_enosys, k_allow, k_allow, k_allow},
    {"clone (fork)", call(SYS_clone, {SIGCHLD}), k_allow, k_allow, k_allow, k_allow, k_allow},
    {"clone CLONE_NEWUSER", call(SYS_clone, {CLONE_NEWUSER | SIGCHLD}), k_eperm, k_eperm, k_allow, k_allow, k_allow},
    {"clone CLONE_NEWNS", call(SYS_clone, {CLONE_NEWNS | SIGCHLD}), k_allow, k_allow, k_allow, k_allow, k_allow},
    {"unshare CLONE_NEWUSER", call(SYS_unshare, {CLONE_NEWUSER}), k_eperm, k_eperm, k_allow, k_allow, k_allow},
    {"unshare CLONE_NEWNS|CLONE_NEWUSER", call(SYS_unshare, {CLONE_NEWNS | CLONE_NEWUSER}), k_eperm, k_eperm, k_allow,
     k_allow, k_allow},
    {"unshare CLONE_NEWNS", call(SYS_unshare, {CLONE_NEWNS}), k_allow, k_allow, k_allow, k_allow, k_allow},
    // Socket families.
    {"socket AF_UNIX", call(SYS_socket, {AF_UNIX, SOCK_STREAM, 0}), k_allow, k_allow, k_allow, k_allow, k_allow},
    {"socket AF_INET", call(SYS_socket, {AF_INET, SOCK_STREAM, 0}), k_allow, k_allow, k_allow, k_allow, k_allow},
    {"socket AF_INET6", call(SYS_socket, {AF_INET6, SOCK_DGRAM, 0}), k_allow, k_allow, k_allow, k_allow, k_allow},
    {"socket AF_NETLINK", call(SYS_socket, {AF_NETLINK, SOCK_RAW, 0}), k_allow, k_allow, k_allow, k_allow, k_allow},
    {"socket AF_VSOCK", call(SYS_socket, {AF_VSOCK, SOCK_STREAM, 0}), k_eafnosupport, k_eafnosupport, k_allow, k_allow,
     k_allow},
    {"socket AF_PACKET", call(SYS_socket, {AF_PACKET, SOCK_RAW, 0}), k_eafnosupport, k_eafnosupport, k_allow, k_allow,
     k_allow},
    {"socket AF_UNSPEC", call(SYS_socket, {AF_UNSPEC, SOCK_STREAM, 0}), k_eafnosupport, k_eafnosupport, k_allow,
     k_allow, k_allow},
    {"socket AF_UNIX with a high bit", call(SYS_socket, {k_hi | AF_UNIX, SOCK_STREAM, 0}), k_eafnosupport,
     k_eafnosupport, k_allow, k_allow, k_allow},
    {"socketpair AF_UNIX", call(SYS_socketpair, {AF_UNIX, SOCK_STREAM, 0, k_any_ptr}), k_allow, k_allow, k_allow,
     k_allow, k_allow},
    {"socketpair AF_ALG", call(SYS_socketpair, {AF_ALG, SOCK_SEQPACKET, 0, k_any_ptr}), k_eafnosupport, k_eafnosupport,
     k_allow, k_allow, k_allow},
    // Setuid and setgid bits.
    {"chmod 04755", call(SYS_chmod, {k_any_ptr, 04755}), k_eperm, k_eperm, k_allow, k_allow, k_allow},
    {"chmod 0755", call(SYS_chmod, {k_any_ptr, 0755}), k_allow, k_allow, k_allow, k_allow, k_allow},
    {"fchmod 02755", call(SYS_fchmod, {3, 02755}), k_eperm, k_eperm, k_allow, k_allow, k_allow},
    {"fchmodat 04700", call(SYS_fchmodat, {k_cwd, k_any_ptr, 04700}), k_eperm, k_eperm, k_allow, k_allow, k_allow},
    {"fchmodat2 02700", call(k_fchmodat2, {k_cwd, k_any_ptr, 02700, 0}), k_eperm, k_eperm, k_allow, k_allow, k_allow},
    {"creat 04755", call(SYS_creat, {k_any_ptr, 04755}), k_eperm, k_eperm, k_notify, k_notify, k_allow},
    {"mknodat S_IFREG|02644", call(SYS_mknodat, {k_cwd, k_any_ptr, S_IFREG | 02644, 0}), k_eperm, k_eperm, k_notify,
     k_notify, k_allow},
    {"open O_CREAT 04755", call(SYS_open, {k_any_ptr, O_WRONLY | O_CREAT, 04755}), k_eperm, k_eperm, k_notify, k_notify,
     k_allow},
    {"openat O_CREAT 02755", call(SYS_openat, {k_cwd, k_any_ptr, O_WRONLY | O_CREAT, 02755}), k_eperm, k_eperm,
     k_notify, k_notify, k_allow},
    {"openat O_TMPFILE 04755", call(SYS_openat, {k_cwd, k_any_ptr, O_TMPFILE | O_WRONLY, 04755}), k_eperm, k_eperm,
     k_allow, k_notify, k_allow},
    {"openat O_TMPFILE 0644", call(SYS_openat, {k_cwd, k_any_ptr, k_o_tmpfile | O_DIRECTORY | O_RDWR, 0644}), k_allow,
     k_allow, k_allow, k_notify, k_allow},
    {"openat O_RDONLY with mode 04755 (ignored)", call(SYS_openat, {k_cwd, k_any_ptr, O_RDONLY, 04755}), k_allow,
     k_allow, k_allow, k_allow, k_allow},
    // What the create guard traps: names made, and with the depth rule files written.
    {"openat O_CREAT", call(SYS_openat, {k_cwd, k_any_ptr, O_WRONLY | O_CREAT | O_TRUNC, 0644}), k_allow, k_allow,
     k_notify, k_notify, k_allow},
    {"openat O_CREAT|O_PATH (O_CREAT ignored)", call(SYS_openat, {k_cwd, k_any_ptr, O_CREAT | O_PATH, 0644}), k_allow,
     k_allow, k_allow, k_allow, k_allow},
    {"openat O_WRONLY", call(SYS_openat, {k_cwd, k_any_ptr, O_WRONLY, 0}), k_allow, k_allow, k_allow, k_notify,
     k_allow},
    {"openat O_RDWR", call(SYS_openat, {k_cwd, k_any_ptr, O_RDWR, 0}), k_allow, k_allow, k_allow, k_notify, k_allow},
    {"openat O_RDONLY|O_TRUNC", call(SYS_openat, {k_cwd, k_any_ptr, O_RDONLY | O_TRUNC, 0}), k_allow, k_allow, k_allow,
     k_notify, k_allow},
    {"openat O_RDONLY", call(SYS_openat, {k_cwd, k_any_ptr, O_RDONLY, 0}), k_allow, k_allow, k_allow, k_allow, k_allow},
    {"open O_CREAT", call(SYS_open, {k_any_ptr, O_WRONLY | O_CREAT, 0644}), k_allow, k_allow, k_notify, k_notify,
     k_allow},
    {"open O_WRONLY", call(SYS_open, {k_any_ptr, O_WRONLY, 0}), k_allow, k_allow, k_allow, k_notify, k_allow},
    {"open O_RDONLY", call(SYS_open, {k_any_ptr, O_RDONLY, 0}), k_allow, k_allow, k_allow, k_allow, k_allow},
    {"truncate", call(SYS_truncate, {k_any_ptr, 0}), k_allow, k_allow, k_allow, k_notify, k_allow},
    {"ftruncate", call(SYS_ftruncate, {3, 0}), k_allow, k_allow, k_allow, k_allow, k_allow},
    {"mkdir", call(SYS_mkdir, {k_any_ptr, 0755}), k_allow, k_allow, k_notify, k_notify, k_allow},
    {"mkdirat", call(SYS_mkdirat, {k_cwd, k_any_ptr, 0755}), k_allow, k_allow, k_notify, k_notify, k_allow},
    {"mknod", call(SYS_mknod, {k_any_ptr, S_IFIFO | 0644, 0}), k_allow, k_allow, k_notify, k_notify, k_allow},
    {"symlink", call(SYS_symlink, {k_any_ptr, k_any_ptr}), k_allow, k_allow, k_notify, k_notify, k_allow},
    {"symlinkat", call(SYS_symlinkat, {k_any_ptr, k_cwd, k_any_ptr}), k_allow, k_allow, k_notify, k_notify, k_allow},
    {"link", call(SYS_link, {k_any_ptr, k_any_ptr}), k_allow, k_allow, k_notify, k_notify, k_allow},
    {"linkat", call(SYS_linkat, {k_cwd, k_any_ptr, k_cwd, k_any_ptr, 0}), k_allow, k_allow, k_notify, k_notify,
     k_allow},
    {"rename", call(SYS_rename, {k_any_ptr, k_any_ptr}), k_allow, k_allow, k_notify, k_notify, k_allow},
    {"renameat", call(SYS_renameat, {k_cwd, k_any_ptr, k_cwd, k_any_ptr}), k_allow, k_allow, k_notify, k_notify,
     k_allow},
    {"renameat2", call(SYS_renameat2, {k_cwd, k_any_ptr, k_cwd, k_any_ptr, 0}), k_allow, k_allow, k_notify, k_notify,
     k_allow},
    {"umask", call(SYS_umask, {022}), k_allow, k_allow, k_notify, k_notify, k_allow},
    {"bind", call(SYS_bind, {3, k_any_ptr, 110}), k_allow, k_allow, k_notify, k_notify, k_allow},
    {"unlink (no new name)", call(SYS_unlink, {k_any_ptr}), k_allow, k_allow, k_allow, k_allow, k_allow},
    // openat2's flags are in memory: ENOSYS, so callers fall back to openat; a guarded
    // run's init uses it, and its command gets ENOSYS from the guard's filter.
    {"openat2", call(SYS_openat2, {k_cwd, k_any_ptr, k_any_ptr, 24}), k_enosys, k_allow, k_enosys, k_enosys, k_allow},
    // personality: the query and plain personas, not the flags that weaken mitigations.
    {"personality query", call(SYS_personality, {0xffffffff}), k_allow, k_allow, k_allow, k_allow, k_allow},
    {"personality PER_LINUX", call(SYS_personality, {PER_LINUX}), k_allow, k_allow, k_allow, k_allow, k_allow},
    {"personality PER_LINUX32", call(SYS_personality, {PER_LINUX32}), k_allow, k_allow, k_allow, k_allow, k_allow},
    {"personality ADDR_NO_RANDOMIZE", call(SYS_personality, {ADDR_NO_RANDOMIZE}), k_eperm, k_eperm, k_allow, k_allow,
     k_allow},
    {"personality READ_IMPLIES_EXEC", call(SYS_personality, {READ_IMPLIES_EXEC}), k_eperm, k_eperm, k_allow, k_allow,
     k_allow},
    {"personality MMAP_PAGE_ZERO", call(SYS_personality, {MMAP_PAGE_ZERO}), k_eperm, k_eperm, k_allow, k_allow,
     k_allow},
    {"personality bit 31 alone", call(SYS_personality, {0x80000000}), k_eperm, k_eperm, k_allow, k_allow, k_allow},
    {"personality all bits but the first", call(SYS_personality, {0xfffffffe}), k_eperm, k_eperm, k_allow, k_allow,
     k_allow},
    // Foreign ABIs: the base filter kills them; the guard's filters leave them to it.
    {"x32 getpid", call(SYS_getpid | k_x32_bit), k_kill, k_kill, k_allow, k_allow, k_allow},
    {"x32 kexec_load", call(SYS_kexec_load | k_x32_bit), k_kill, k_kill, k_allow, k_allow, k_allow},
    {"x32 mkdir", call(SYS_mkdir | k_x32_bit, {k_any_ptr, 0755}), k_kill, k_kill, k_allow, k_allow, k_allow},
    {"i386 getpid", call(20, {}, AUDIT_ARCH_I386), k_kill, k_kill, k_allow, k_allow, k_allow},
    {"i386 socketcall", call(102, {1, k_any_ptr}, AUDIT_ARCH_I386), k_kill, k_kill, k_allow, k_allow, k_allow},
    {"aarch64 getpid", call(172, {}, AUDIT_ARCH_AARCH64), k_kill, k_kill, k_allow, k_allow, k_allow},
};
#endif

}  // namespace

#if defined(__x86_64__)
TEST_CASE("the seccomp filters give each system call its action") {
  const std::pair<const char*, std::span<const sock_filter>> filters[] = {
      {"base", zb::exec::embedded_seccomp_filter()},
      {"base for a guarded run", zb::exec::embedded_seccomp_filter_for_guard()},
      {"guard", zb::exec::embedded_guard_filter()},
      {"guard with the depth rule", zb::exec::embedded_guard_filter(true)},
      {"guard fallback", zb::exec::embedded_guard_fallback_filter()}};
  for (const Row& row : k_rows) {
    const uint32_t want[] = {row.base, row.base_for_guard, row.guard, row.guard_writes, row.fallback};
    for (std::size_t i = 0; i < std::size(filters); ++i) {
      const std::string system_call = row.what, filter = filters[i].first;
      CAPTURE(system_call);
      CAPTURE(filter);
      auto got = run_bpf(filters[i].second, row.call);
      REQUIRE_MESSAGE(got.has_value(), got.error());
      CHECK(action_name(*got) == action_name(want[i]));
    }
  }
  for (int nr : k_denied_nrs) {
    CAPTURE(nr);
    for (auto prog : {filters[0].second, filters[1].second}) {
      auto got = run_bpf(prog, call(nr));
      REQUIRE_MESSAGE(got.has_value(), got.error());
      CHECK(action_name(*got) == action_name(k_eperm));
    }
    for (auto prog : {filters[2].second, filters[3].second, filters[4].second}) {
      auto got = run_bpf(prog, call(nr));
      REQUIRE_MESSAGE(got.has_value(), got.error());
      CHECK(action_name(*got) == action_name(k_allow));
    }
  }
}

TEST_CASE("the BPF interpreter runs small programs and refuses what the kernel would not load") {
  const seccomp_data d = call(SYS_write, {1, k_hi | 7});
  const sock_filter by_nr[] = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
                               BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 0, 1),
                               BPF_STMT(BPF_RET | BPF_K, err(EPERM)), BPF_STMT(BPF_RET | BPF_K, k_allow)};
  CHECK(run_bpf(by_nr, d) == k_eperm);
  CHECK(run_bpf(by_nr, call(SYS_read)) == k_allow);
  // The upper half of args[1], masked, through the scratch memory and X.
  const sock_filter hi_arg[] = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[1]) + 4),
                                BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 1),
                                BPF_STMT(BPF_ST, 3),
                                BPF_STMT(BPF_LDX | BPF_MEM, 3),
                                BPF_STMT(BPF_MISC | BPF_TXA, 0),
                                BPF_STMT(BPF_ALU | BPF_OR | BPF_K, SECCOMP_RET_ERRNO),
                                BPF_STMT(BPF_RET | BPF_A, 0)};
  CHECK(run_bpf(hi_arg, d) == err(1));
  const sock_filter past_end[] = {BPF_JUMP(BPF_JMP | BPF_JA, 1, 0, 0), BPF_STMT(BPF_RET | BPF_K, k_allow)};
  CHECK_FALSE(run_bpf(past_end, d).has_value());
  const sock_filter no_ret[] = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0)};
  CHECK_FALSE(run_bpf(no_ret, d).has_value());
  const sock_filter out_of_data[] = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, sizeof(seccomp_data)),
                                     BPF_STMT(BPF_RET | BPF_K, k_allow)};
  CHECK_FALSE(run_bpf(out_of_data, d).has_value());
  const sock_filter byte_load[] = {BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0), BPF_STMT(BPF_RET | BPF_K, k_allow)};
  CHECK_FALSE(run_bpf(byte_load, d).has_value());
}

namespace {

// The errno of one system call in a child under the base filter (0: it succeeded).
int errno_under_base_filter(const seccomp_data& c) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        zb::exec::apply_seccomp(zb::exec::embedded_seccomp_filter()) != 0)
      ::_exit(255);
    long r = ::syscall(c.nr, c.args[0], c.args[1], c.args[2], c.args[3], c.args[4], c.args[5]);
    ::_exit(r < 0 ? errno : 0);
  }
  int st = 0;
  if (pid < 0 || ::waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return -1;
  return WEXITSTATUS(st);
}

}  // namespace

TEST_CASE("the BPF interpreter agrees with the kernel on the base filter") {
  // Calls that fail harmlessly when the filter lets them through (a bad fd, an empty
  // path, an unknown operation) with an errno the filter never gives.
  struct Case {
    const char* what;
    seccomp_data call;
    int unfiltered;  // the kernel's errno when the filter allows the call
  };
  const Case cases[] = {
      {"keyctl of an unknown operation", call(SYS_keyctl, {~0ULL}), EOPNOTSUPP},
      {"ioctl TIOCSTI on a bad fd", call(SYS_ioctl, {~0ULL, TIOCSTI, 0}), EBADF},
      {"ioctl TCGETS on a bad fd", call(SYS_ioctl, {~0ULL, TCGETS, 0}), EBADF},
      {"clone3 of a bad size", call(SYS_clone3, {0, 1}), EINVAL},
      {"chmod 04755 of an empty path", call(SYS_chmod, {reinterpret_cast<uint64_t>(""), 04755}), ENOENT},
      {"chmod 0755 of an empty path", call(SYS_chmod, {reinterpret_cast<uint64_t>(""), 0755}), ENOENT},
      {"openat2 of a bad size", call(SYS_openat2, {~0ULL, 0, 0, 1}), EINVAL},
      {"unshare CLONE_NEWUSER with an unknown flag", call(SYS_unshare, {CLONE_NEWUSER | 0x1}), EINVAL},
      {"socket AF_VSOCK of a bad type", call(SYS_socket, {AF_VSOCK, 0x7fff, 0}), EINVAL},
  };
  for (const Case& c : cases) {
    const std::string what = c.what;
    CAPTURE(what);
    auto action = run_bpf(zb::exec::embedded_seccomp_filter(), c.call);
    REQUIRE_MESSAGE(action.has_value(), action.error());
    const int want = *action == k_allow ? c.unfiltered : static_cast<int>(*action & SECCOMP_RET_DATA);
    REQUIRE(((*action & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO || *action == k_allow));
    CHECK(errno_under_base_filter(c.call) == want);
  }
}
#else
TEST_CASE("the seccomp filters give each system call its action") {
  FAIL("the table of system calls is x86_64's: add this architecture's numbers");
}
#endif

namespace {

// socket() and socketpair() of `family` with a flag bit no kernel takes, in a child under
// the base filter: EINVAL means the call reached the kernel, EAFNOSUPPORT the filter.
int socket_errno_under_filter(unsigned long family, bool pair) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        zb::exec::apply_seccomp(zb::exec::embedded_seccomp_filter()) != 0)
      ::_exit(255);
    int sv[2];
    long r = pair ? ::syscall(SYS_socketpair, family, SOCK_STREAM | 0x40000000UL, 0UL, sv)
                  : ::syscall(SYS_socket, family, SOCK_STREAM | 0x40000000UL, 0UL);
    ::_exit(r < 0 ? errno : 0);
  }
  int st = 0;
  if (pid < 0 || ::waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return -1;
  return WEXITSTATUS(st);
}

}  // namespace

TEST_CASE("the base filter lets only unix, inet, inet6 and netlink sockets be made") {
  for (unsigned long f : {1UL, 2UL, 10UL, 16UL}) {  // AF_UNIX, AF_INET, AF_INET6, AF_NETLINK
    CAPTURE(f);
    CHECK(socket_errno_under_filter(f, false) == EINVAL);
  }
  CHECK(socket_errno_under_filter(AF_UNIX, true) == EINVAL);
  for (unsigned long f : {0UL, 3UL, 9UL, 11UL, 15UL, 17UL, 29UL, 30UL, 31UL, 38UL, 40UL, 44UL, 45UL, 46UL, 255UL,
                          1UL << 31, (1UL << 32) | AF_UNIX, (1UL << 32) | 40UL, ~0UL}) {
    CAPTURE(f);
    CHECK(socket_errno_under_filter(f, false) == EAFNOSUPPORT);
    CHECK(socket_errno_under_filter(f, true) == EAFNOSUPPORT);
  }
}

TEST_CASE("the create guard's depth rule refuses protected names at any depth below writable paths") {
  const char* names[] = {".git/hooks", ".git/config", ".envrc", ".config/git"};
  const char* roots[] = {"/w", "/o"};
  const char* exempt[] = {"/o/tmp"};
  const char* lifted[] = {"/w", "/w/sub/.git", "/w/new", "/w/r/.git/config"};
  const char* new_trees[] = {"/w/new"};
  zb::exec::GuardList list{nullptr, 0, names, 4, roots, 2, exempt, 1, lifted, 4, new_trees, 1};
  using zb::exec::guard_depth_check;
  using M = zb::exec::GuardMade;
  std::size_t len = 0;
  CHECK(guard_depth_check(list, "/w/a/b/.git/hooks", M::new_dir, &len) == EACCES);
  CHECK(len == std::strlen("/w/a/b/.git/hooks"));
  CHECK(guard_depth_check(list, "/w/a/.git/hooks/pre-commit", M::other, &len) == EACCES);
  CHECK(len == std::strlen("/w/a/.git/hooks"));
  CHECK(guard_depth_check(list, "/w/a/.git/config", M::other) == EACCES);
  CHECK(guard_depth_check(list, "/w/x/y/z/.envrc", M::new_dir) == EACCES);
  CHECK(guard_depth_check(list, "/w/h/.config/git", M::new_dir) == EACCES);
  // Where a name's leading directory belongs: a new empty directory, or a plain file
  // except a gitfile.
  CHECK(guard_depth_check(list, "/w/a/.git", M::new_dir) == 0);
  CHECK(guard_depth_check(list, "/w/a/.git", M::other) == EACCES);
  CHECK(guard_depth_check(list, "/w/a/.git", M::dir) == EACCES);
  CHECK(guard_depth_check(list, "/w/a/.git", M::symlink) == EACCES);
  CHECK(guard_depth_check(list, "/w/k/.config", M::other) == 0);  // a kernel tree's .config
  CHECK(guard_depth_check(list, "/w/k/.config", M::symlink) == EACCES);
  // Not protected: other names, and outside the roots or in the exempt scratch.
  CHECK(guard_depth_check(list, "/w/a/.git/objects/ab", M::other) == 0);
  CHECK(guard_depth_check(list, "/w/a/.git/config.lock", M::other) == 0);
  CHECK(guard_depth_check(list, "/w/a/.gitx/hooks", M::new_dir) == 0);
  CHECK(guard_depth_check(list, "/elsewhere/.git/hooks", M::new_dir) == 0);
  CHECK(guard_depth_check(list, "/o/tmp/r/.git/hooks", M::new_dir) == 0);
  CHECK(guard_depth_check(list, "/o/r/.git/hooks", M::new_dir) == EACCES);
  // Lifted at or below the name's first directory; a new tree lifts everything in it; a
  // lift of the root itself (or of a sibling name) does not.
  CHECK(guard_depth_check(list, "/w/sub/.git/hooks/pre-commit", M::other) == 0);
  CHECK(guard_depth_check(list, "/w/new/.git/hooks", M::new_dir) == 0);
  CHECK(guard_depth_check(list, "/w/new/x/.envrc", M::other) == 0);
  CHECK(guard_depth_check(list, "/w/r/.git/config", M::other) == 0);
  CHECK(guard_depth_check(list, "/w/r/.git/hooks", M::new_dir) == EACCES);
  CHECK(guard_depth_check(list, "/w/.envrc", M::other) == EACCES);
  CHECK(guard_depth_check(zb::exec::GuardList{nullptr, 0}, "/w/.envrc", M::other) == 0);
}

TEST_CASE("the create guard refuses guarded paths and whatever but mkdir stands on their way") {
  const char* paths[] = {"/p/.envrc", "/p/.git/hooks", "/home/u/.config/fish"};
  zb::exec::GuardList list{paths, 3};
  using zb::exec::guard_check;
  CHECK(guard_check(list, "/p/.envrc", false) == EACCES);
  CHECK(guard_check(list, "/p/.envrc", true) == EACCES);  // not even as a directory
  CHECK(guard_check(list, "/p/.git/hooks", true) == EACCES);
  // An ancestor: an empty directory is fine; a file, symlink or moved directory is not.
  CHECK(guard_check(list, "/p/.git", true) == 0);
  CHECK(guard_check(list, "/p/.git", false) == EACCES);
  CHECK(guard_check(list, "/home/u/.config", false) == EACCES);
  CHECK(guard_check(list, "/home/u/.config", true) == 0);
  // Names that only share a prefix, and unrelated paths.
  CHECK(guard_check(list, "/p/.envrc2", false) == 0);
  CHECK(guard_check(list, "/p/.env", false) == 0);
  CHECK(guard_check(list, "/p/.git/hooks2", false) == 0);
  CHECK(guard_check(list, "/p/.git/config", false) == 0);
  CHECK(guard_check(list, "/p/src/.envrc", false) == 0);
  CHECK(guard_check(list, "/q/.envrc", false) == 0);
  CHECK(guard_check(zb::exec::GuardList{paths, 0}, "/p/.envrc", false) == 0);
  // Any ASCII case: on a case-insensitive file system it is the same name.
  CHECK(guard_check(list, "/p/.ENVRC", false) == EACCES);
  CHECK(guard_check(list, "/P/.Git/Hooks", true) == EACCES);
  CHECK(guard_check(list, "/p/.GIT", false) == EACCES);
  // Characters that Unicode case folding turns into ASCII letters (casefolded ext4,
  // tmpfs, exfat): the long s, the Kelvin sign, the fi ligature.
  CHECK(guard_check(list, "/home/u/.config/fi\xC5\xBFh", false) == EACCES);
  CHECK(guard_check(list, "/home/u/.config/\xEF\xAC\x81sh", false) == EACCES);
  CHECK(guard_check(list, "/p/.git/hoo\xE2\x84\xAAs", true) == EACCES);
  CHECK(guard_check(list, "/p/.git/hooks\xC3\xA9", false) == 0);       // é folds to nothing ASCII
  CHECK(guard_check(list, "/p/.env\xE2\x80\x8Brc", false) == EACCES);  // a zero-width space
  // A path longer than PATH_MAX that folds to a guarded one just shorter than it.
  std::string root = "/" + std::string(PATH_MAX - 14, 'w');
  std::string guarded = root + "/.git/hooks";  // PATH_MAX - 2 bytes
  const char* deep[] = {guarded.c_str()};
  std::string alias = root + "/.git/hoo\xE2\x84\xAA\xC5\xBF";  // Kelvin sign, long s: 3 bytes longer
  REQUIRE(alias.size() > PATH_MAX);
  CHECK(guard_check(zb::exec::GuardList{deep, 1}, alias.c_str(), false) == EACCES);
}

TEST_CASE("guard names fold as a case-insensitive file system folds them") {
  using zb::exec::guard_fold;
  auto fold = [](std::string in) {
    std::string out(in.size() + 1, '\0');
    out.resize(guard_fold(in.data(), in.size(), out.data()));
    return out;
  };
  CHECK(fold(".ENVRC") == ".envrc");
  CHECK(fold(".ba\xC5\xBFhrc") == ".bashrc");                       // U+017F long s
  CHECK(fold("\xC3\x9F") == "ss");                                  // U+00DF sharp s
  CHECK(fold("\xE1\xBA\x9E") == "ss");                              // U+1E9E capital sharp s
  CHECK(fold("hoo\xE2\x84\xAAs") == "hooks");                       // U+212A Kelvin sign
  CHECK(fold("\xEF\xAC\x80\xEF\xAC\x81\xEF\xAC\x82") == "fffifl");  // U+FB00..FB02
  CHECK(fold("\xEF\xAC\x83\xEF\xAC\x84") == "ffiffl");              // U+FB03, U+FB04
  CHECK(fold("\xEF\xAC\x85\xEF\xAC\x86") == "stst");                // U+FB05, U+FB06
  CHECK(fold("Jos\xC3\xA9") == "jos\xC3\xA9");                      // others stay as they are
  CHECK(fold("\xC5") == "\xC5");                                    // a cut sequence too
  // Default-ignorable code points are dropped, as Linux's casefolding drops them: the
  // zero-width space, the soft hyphen, a variation selector, a tag character.
  CHECK(fold("hoo\xE2\x80\x8Bks") == "hooks");
  CHECK(fold(".bash\xC2\xADrc") == ".bashrc");
  CHECK(fold("hook\xEF\xB8\x8Fs") == "hooks");
  CHECK(fold("hoo\xF3\xA0\x80\x81ks") == "hooks");
  // Invalid UTF-8 (an overlong zero-width space, a surrogate) is opaque, as to the kernel.
  CHECK(fold("a\xF0\x82\x80\x8B"
             "b") ==
        "a\xF0\x82\x80\x8B"
        "b");
  CHECK(fold("a\xED\xA0\x80"
             "b") ==
        "a\xED\xA0\x80"
        "b");
  std::string in = ".Ba\xC5\xBFhrc";  // in place
  in.resize(guard_fold(in.data(), in.size(), in.data()));
  CHECK(in == ".bashrc");
}
