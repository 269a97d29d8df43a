#include "exec/caps.hpp"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace zb::exec {

int drop_all_capabilities(int keep) {
  // The last capability the running kernel knows; probing past it returns EINVAL.
  for (int cap = 0; cap < 64; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      if (errno == EINVAL) break;
      return -1;
    }
  }
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) return -1;
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (keep >= 0 && keep < 64) {
    auto bit = static_cast<unsigned>(1U << (keep % 32));
    data[keep / 32].effective = bit;
    data[keep / 32].permitted = bit;
  }
  if (::syscall(SYS_capset, &hdr, data) != 0) return -1;
  return 0;
}

int clear_capabilities() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  return ::syscall(SYS_capset, &hdr, data) == 0 ? 0 : -1;
}

int set_no_new_privs() { return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); }

}  // namespace zb::exec
