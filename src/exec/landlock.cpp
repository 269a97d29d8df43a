// Landlock's plan (exec/landlock.hpp), made in the supervisor from the filesystem rules,
// and the probe of the kernel's ABI. The child applies it (landlock_apply.cpp).
#include "exec/landlock.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include "exec/landlock_uapi.hpp"

namespace zb::exec {

using namespace landlock_uapi;

namespace {

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
