// The two sides of a change and what they hold (diff_internal.hpp): which sections a
// change is, reading no more of a blob than it takes to tell text from binary, and the
// line diff of two texts.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <dtl/dtl.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "snapshot/diff_internal.hpp"
#include "util/fd.hpp"

namespace zb::snapshot::diff_detail {
namespace {

// Larger files are shown as binary without being read: the line diff holds the whole of
// both sides in memory.
constexpr std::int64_t k_max_text = std::int64_t{64} << 20;
// git's buffer_is_binary() looks for a NUL in this many leading bytes.
constexpr std::size_t k_sniff_bytes = 8000;

}  // namespace

// --- The two sides of a change ----------------------------------------------------

std::vector<Pair> pairs_of(const Change& c) {
  const auto& a = c.before;
  const auto& b = c.after;
  if (a && b && a->type != b->type) return {Pair{a, std::nullopt}, Pair{std::nullopt, b}};
  return {Pair{a, b}};
}

namespace {

// True when the two sides are known to hold the same bytes, so only the header differs.
bool same_content(const Pair& p, ChangeKind kind) {
  if (!p.a || !p.b) return false;
  if (p.a->type == FileType::Symlink) return p.a->link == p.b->link;
  if (p.a->type != FileType::Regular) return true;
  if (p.a->blob && p.b->blob) return *p.a->blob == *p.b->blob;
  // A mode_changed change has equal contents by definition (changeset.hpp), whether or
  // not they were kept.
  if (kind == ChangeKind::ModeChanged) return true;
  return !p.a->blob && !p.b->blob && p.a->size.value_or(0) == 0 && p.b->size.value_or(0) == 0;
}

// --- Contents -----------------------------------------------------------------------

// Appends bytes from fd to out until out holds limit bytes or the file ends.
Result<void> read_into(int fd, std::string& out, std::size_t limit, const std::string& hash) {
  while (out.size() < limit) {
    std::size_t want = std::min<std::size_t>(limit - out.size(), std::size_t{1} << 16);
    std::size_t had = out.size();
    out.resize(had + want);
    ssize_t n = ::read(fd, out.data() + had, want);
    if (n < 0) {
      int err = errno;
      out.resize(had);
      if (err == EINTR) continue;
      return fail("read blob " + hash, err);
    }
    out.resize(had + static_cast<std::size_t>(n));
    if (n == 0) break;
  }
  return {};
}

// Reads no more of a side than it takes to tell text from binary.
Result<Content> probe(store::Store& store, const std::optional<Side>& side) {
  Content c;
  if (!side) return c;
  if (side->type == FileType::Symlink) {
    c.body = Body::Text;
    c.text = side->link.value_or("");
    c.size = static_cast<std::int64_t>(c.text.size());
    return c;
  }
  if (side->type != FileType::Regular) return c;
  c.size = side->size.value_or(0);
  if (!side->blob) {
    c.body = c.size == 0 ? Body::Text : Body::NotKept;
    return c;
  }
  auto fd = store.open_blob(*side->blob);
  if (!fd) {
    if (fd.error().err != ENOENT) return std::unexpected(fd.error());
    c.body = Body::NotKept;
    return c;
  }
  struct stat st{};
  if (::fstat(fd->get(), &st) != 0) return fail("fstat blob " + *side->blob);
  c.size = st.st_size;
  if (c.size > k_max_text) {
    c.body = Body::Binary;
    return c;
  }
  if (auto r = read_into(fd->get(), c.text, k_sniff_bytes, *side->blob); !r) return std::unexpected(r.error());
  if (c.text.find('\0') != std::string::npos) {
    c.body = Body::Binary;
    c.text.clear();
    return c;
  }
  c.body = Body::Text;
  if (c.text.size() == k_sniff_bytes) c.fd = std::move(*fd);
  return c;
}

// Reads the rest of a text blob.
Result<void> finish(Content& c, const std::optional<Side>& side) {
  if (!c.fd) return {};
  const std::string& hash = *side->blob;
  c.text.reserve(static_cast<std::size_t>(c.size));
  if (auto r = read_into(c.fd.get(), c.text, static_cast<std::size_t>(k_max_text) + 1, hash); !r) return r;
  c.fd.reset();
  c.size = static_cast<std::int64_t>(c.text.size());
  if (c.size > k_max_text) {  // grew after the fstat: blobs do not, but stay bounded
    c.body = Body::Binary;
    c.text = std::string();
  }
  return {};
}

// --- Line diff ----------------------------------------------------------------------

std::vector<std::string_view> split_lines(std::string_view s) {
  std::vector<std::string_view> lines;
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t nl = s.find('\n', i);
    std::size_t end = nl == std::string_view::npos ? s.size() : nl + 1;
    lines.push_back(s.substr(i, end - i));
    i = end;
  }
  return lines;
}

std::vector<Op> diff_lines(std::string_view old_text, std::string_view new_text) {
  auto a = split_lines(old_text);
  auto b = split_lines(new_text);
  // The common head and tail are cut before dtl sees the rest: most edits touch a small
  // part of a file, and dtl's cost grows with the length of what it compares.
  std::size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  std::size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head && a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) {
    ++tail;
  }
  std::vector<Op> ops;
  ops.reserve(std::max(a.size(), b.size()));
  for (std::size_t i = 0; i < head; ++i) ops.push_back({' ', a[i]});
  auto at = [](const std::vector<std::string_view>& v, std::size_t i) {
    return v.begin() + static_cast<std::ptrdiff_t>(i);
  };
  std::vector<std::string_view> mid_a(at(a, head), at(a, a.size() - tail));
  std::vector<std::string_view> mid_b(at(b, head), at(b, b.size() - tail));
  if (mid_a.empty() || mid_b.empty()) {
    for (auto l : mid_a) ops.push_back({'-', l});
    for (auto l : mid_b) ops.push_back({'+', l});
  } else {
    dtl::Diff<std::string_view, std::vector<std::string_view>> d(mid_a, mid_b);
    d.compose();
    for (const auto& [line, info] : d.getSes().getSequence()) {
      char sign = info.type == dtl::SES_ADD ? '+' : info.type == dtl::SES_DELETE ? '-' : ' ';
      ops.push_back({sign, line});
    }
  }
  for (std::size_t i = a.size() - tail; i < a.size(); ++i) ops.push_back({' ', a[i]});
  return ops;
}

}  // namespace

// --- One section ------------------------------------------------------------------

Result<void> diff_pair(store::Store& store, const Pair& p, ChangeKind kind, PairDiff& d) {
  if (same_content(p, kind)) return {};
  auto a = probe(store, p.a);
  if (!a) return std::unexpected(a.error());
  auto b = probe(store, p.b);
  if (!b) return std::unexpected(b.error());
  d.a = std::move(*a);
  d.b = std::move(*b);
  auto either = [&](Body x) { return d.a.body == x || d.b.body == x; };
  if (either(Body::NotKept)) {
    d.body = Body::NotKept;
  } else if (either(Body::Binary)) {
    d.body = Body::Binary;
  } else if (either(Body::Text)) {
    d.body = Body::Text;
    if (auto r = finish(d.a, p.a); !r) return std::unexpected(r.error());
    if (auto r = finish(d.b, p.b); !r) return std::unexpected(r.error());
    if (d.a.body == Body::Binary || d.b.body == Body::Binary) {
      d.body = Body::Binary;
      return {};
    }
    d.ops = diff_lines(d.a.text, d.b.text);
    for (const auto& op : d.ops) {
      if (op.sign == '+') ++d.insertions;
      if (op.sign == '-') ++d.deletions;
    }
  }
  return {};
}

}  // namespace zb::snapshot::diff_detail
