#include "exec/landlock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace zb::exec {
namespace {

// Debian 12's <linux/landlock.h> predates ABI 4-7, so the UAPI is spelled out here
// (values from the kernel's include/uapi/linux/landlock.h).
constexpr uint64_t k_execute = 1ULL << 0;
constexpr uint64_t k_write_file = 1ULL << 1;
constexpr uint64_t k_read_file = 1ULL << 2;
constexpr uint64_t k_read_dir = 1ULL << 3;
constexpr uint64_t k_remove_dir = 1ULL << 4;
constexpr uint64_t k_remove_file = 1ULL << 5;
constexpr uint64_t k_make_char = 1ULL << 6;
constexpr uint64_t k_make_dir = 1ULL << 7;
constexpr uint64_t k_make_reg = 1ULL << 8;
constexpr uint64_t k_make_sock = 1ULL << 9;
constexpr uint64_t k_make_fifo = 1ULL << 10;
constexpr uint64_t k_make_block = 1ULL << 11;
constexpr uint64_t k_make_sym = 1ULL << 12;
constexpr uint64_t k_refer = 1ULL << 13;     // ABI 2
constexpr uint64_t k_truncate = 1ULL << 14;  // ABI 3
constexpr uint64_t k_scope_abstract_unix = 1ULL << 0;  // ABI 6
constexpr uint64_t k_scope_signal = 1ULL << 1;         // ABI 6
constexpr uint32_t k_create_ruleset_version = 1U << 0;
constexpr int k_rule_path_beneath = 1;

struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;  // ABI 4
  uint64_t scoped;              // ABI 6
};
struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
};

#ifndef SYS_landlock_create_ruleset
constexpr long k_sys_create = 444, k_sys_add = 445, k_sys_restrict = 446;
#else
constexpr long k_sys_create = SYS_landlock_create_ruleset, k_sys_add = SYS_landlock_add_rule,
               k_sys_restrict = SYS_landlock_restrict_self;
#endif

constexpr uint64_t k_file_rights = k_execute | k_write_file | k_read_file | k_truncate;

uint64_t write_rights(int abi) {
  uint64_t w = k_write_file | k_remove_dir | k_remove_file | k_make_char | k_make_dir | k_make_reg | k_make_sock |
               k_make_fifo | k_make_block | k_make_sym;
  if (abi >= 2) w |= k_refer;
  if (abi >= 3) w |= k_truncate;
  return w;
}

}  // namespace

int landlock_abi() {
  long v = ::syscall(k_sys_create, nullptr, 0, k_create_ruleset_version);
  return v < 0 ? 0 : static_cast<int>(v);
}

LandlockPlan make_landlock_plan(const policy::FsRules& fs, int abi) {
  LandlockPlan plan;
  plan.abi = abi;
  if (abi <= 0) return plan;
  const uint64_t w = write_rights(abi);
  // Only writes are handled. Reads are fenced by the mount view (masks, the skeleton of
  // --allow-read), and a handled read right would make the kernel walk every opened
  // path up to a rule: a measurable cost for import-heavy programs, for no protection.
  plan.handled_fs = w;
  if (abi >= 6) plan.scoped = k_scope_abstract_unix | k_scope_signal;
  if (fs.write_all) {
    plan.rules.push_back({"/", w});
    return plan;
  }
  for (const auto& p : fs.writable) plan.rules.push_back({p, w});
  for (const char* p : {"/tmp", "/var/tmp", "/dev/shm"}) plan.rules.push_back({p, w});
  // Character devices (/dev/null, /dev/tty) and pty slaves accept writes, and so do the
  // command's own /proc files (/proc/self/fd/N of its pipes, /proc/self/attr, ...).
  const uint64_t file_w = k_write_file | (abi >= 3 ? k_truncate : 0);
  plan.rules.push_back({"/dev", file_w});
  plan.rules.push_back({"/proc", file_w});
  return plan;
}

int apply_landlock(const FlatLandlock& plan, int tty_dir_fd, int& failed_rule) {
  failed_rule = -1;
  RulesetAttr attr{plan.handled_fs, 0, plan.scoped};
  size_t size = plan.abi >= 6 ? sizeof attr : sizeof(uint64_t);
  int ruleset = static_cast<int>(::syscall(k_sys_create, &attr, size, 0));
  if (ruleset < 0) return -1;
  if (tty_dir_fd >= 0) {
    PathBeneathAttr pb{(k_read_file | k_write_file) & plan.handled_fs, tty_dir_fd};
    (void)::syscall(k_sys_add, ruleset, k_rule_path_beneath, &pb, 0);  // best effort
  }
  // The files the caller handed over as stdin/stdout/stderr may be reopened through
  // /dev/stdout and friends, with the access the caller opened them with: a read-only
  // stdin does not become writable that way.
  for (int fd = 0; fd <= 2; ++fd) {
    struct stat st {};
    int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0 || ::fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode))) continue;
    uint64_t access = 0;
    if ((fl & O_ACCMODE) != O_WRONLY) access |= k_read_file;
    if ((fl & O_ACCMODE) != O_RDONLY) access |= k_write_file | k_truncate;
    PathBeneathAttr pb{access & plan.handled_fs, fd};
    (void)::syscall(k_sys_add, ruleset, k_rule_path_beneath, &pb, 0);  // best effort
  }
  for (std::size_t i = 0; i < plan.n_rules; ++i) {
    const FlatLandlockRule& rule = plan.rules[i];
    int fd = ::open(rule.path, O_PATH | O_CLOEXEC);
    if (fd < 0) continue;  // not present in this sandbox: nothing to grant
    struct stat st {};
    uint64_t access = rule.access & plan.handled_fs;
    if (::fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) access &= k_file_rights;
    PathBeneathAttr pb{access, fd};
    long rc = ::syscall(k_sys_add, ruleset, k_rule_path_beneath, &pb, 0);
    int err = errno;
    ::close(fd);
    if (rc != 0) {
      failed_rule = static_cast<int>(i);
      ::close(ruleset);
      errno = err;
      return -1;
    }
  }
  long rc = ::syscall(k_sys_restrict, ruleset, 0);
  int err = errno;
  ::close(ruleset);
  errno = err;
  return rc == 0 ? 0 : -1;
}

int forbid_making_files() {
  RulesetAttr attr{k_make_reg, 0, 0};
  int ruleset = static_cast<int>(::syscall(k_sys_create, &attr, sizeof(uint64_t), 0));
  if (ruleset < 0) return -1;
  long rc = ::syscall(k_sys_restrict, ruleset, 0);
  int err = errno;
  ::close(ruleset);
  errno = err;
  return rc == 0 ? 0 : -1;
}

std::string describe(const LandlockPlan& plan) {
  if (plan.abi <= 0) return "landlock: unavailable";
  std::string s = "landlock: ABI " + std::to_string(plan.abi) + ", writes allowed under";
  for (const auto& r : plan.rules) {
    if (r.access & k_make_reg) s += " " + r.path;
  }
  if (plan.scoped) s += "; abstract unix sockets and signals scoped to the sandbox";
  return s;
}

}  // namespace zb::exec
