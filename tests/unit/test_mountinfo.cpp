// Tests for src/overlay/mountinfo.cpp, with libmount as the oracle.
#include <doctest/doctest.h>
#include <libmount/libmount.h>

#include "overlay/mountinfo.hpp"
#include "util/path.hpp"

using namespace zb;

TEST_CASE("parse_mountinfo reads the fifth field and decodes escapes") {
  auto t = overlay::parse_mountinfo(
      "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
      "30 22 0:5 / /mnt/with\\040space rw - tmpfs tmpfs rw\n"
      "31 22 0:6 / /mnt/new\\012line rw - tmpfs tmpfs rw\n");
  REQUIRE(t);
  CHECK(t->targets.count("/") == 1);
  CHECK(t->targets.count("/mnt/with space") == 1);
  CHECK(t->targets.count("/mnt/new\nline") == 1);
  CHECK(t->has_mounts_below("/"));
  CHECK(t->has_mounts_below("/mnt"));
  CHECK_FALSE(t->has_mounts_below("/mnt/with space"));
  CHECK_FALSE(t->has_mounts_below("/usr"));
}

TEST_CASE("parse_mountinfo refuses a truncated line") { CHECK_FALSE(overlay::parse_mountinfo("22 1 8:1\n")); }

TEST_CASE("the live mount table matches libmount's reading of it") {
  auto ours = overlay::read_mount_table();
  REQUIRE(ours);
  libmnt_table* tb = mnt_new_table_from_file("/proc/self/mountinfo");
  REQUIRE(tb != nullptr);
  libmnt_iter* it = mnt_new_iter(MNT_ITER_FORWARD);
  libmnt_fs* fs = nullptr;
  std::set<std::string> theirs;
  while (mnt_table_next_fs(tb, it, &fs) == 0) theirs.insert(path::normalize(mnt_fs_get_target(fs)));
  mnt_free_iter(it);
  mnt_unref_table(tb);
  CHECK(ours->targets == theirs);
}
