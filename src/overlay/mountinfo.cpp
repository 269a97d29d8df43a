#include "overlay/mountinfo.hpp"

#include <libmount/libmount.h>

#include <memory>

#include "util/path.hpp"

namespace zb::overlay {

bool MountTable::has_mounts_below(const std::string& dir) const {
  std::string prefix = dir == "/" ? "/" : dir + "/";
  for (auto it = targets.lower_bound(prefix); it != targets.end(); ++it) {
    if (it->compare(0, prefix.size(), prefix) != 0) break;
    if (*it != dir) return true;
  }
  return false;
}

Result<MountTable> read_mount_table(const char* file) {
  struct TableFree {
    void operator()(libmnt_table* t) const { mnt_unref_table(t); }
  };
  struct IterFree {
    void operator()(libmnt_iter* i) const { mnt_free_iter(i); }
  };
  std::unique_ptr<libmnt_table, TableFree> table(mnt_new_table_from_file(file));
  if (!table) return fail(std::string("read mount table ") + file);
  std::unique_ptr<libmnt_iter, IterFree> iter(mnt_new_iter(MNT_ITER_FORWARD));
  if (!iter) return fail("mnt_new_iter", ENOMEM);
  MountTable out;
  libmnt_fs* fs = nullptr;
  while (mnt_table_next_fs(table.get(), iter.get(), &fs) == 0) {
    const char* target = mnt_fs_get_target(fs);
    if (target != nullptr && target[0] == '/') out.targets.insert(path::normalize(target));
  }
  return out;
}

}  // namespace zb::overlay
