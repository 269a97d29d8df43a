// Landlock applied in the child (exec/landlock.hpp): the plan's ruleset, and the further
// layer that refuses the command new regular files. Runs after clone(): no allocation
// (zb_child).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "exec/landlock.hpp"
#include "exec/landlock_uapi.hpp"

namespace zb::exec {

using namespace landlock_uapi;

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
    struct stat st{};
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
    struct stat st{};
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

}  // namespace zb::exec
