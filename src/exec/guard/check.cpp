// The create guard's decision (exec/guard.hpp): the list of absent protected paths, the
// depth rule for protected names, the hash sets of the names they hold (which let most
// calls skip the full way), and prepare_guard, which copies all of it into init's own
// memory. A refusal is reported to the supervisor here, once per path (exec/report.hpp).
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <utility>

#include "exec/guard.hpp"
#include "exec/guard/internal.hpp"
#include "exec/report.hpp"

namespace zb::exec {
namespace guard_detail {
namespace {

// FNV-1a of a folded name, for the guard's sets of names.
std::size_t name_hash(const char* p, std::size_t n) {
  std::uint32_t h = 2166136261U;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 16777619U;
  return h;
}

// `name` (folded, NUL-terminated, `len` bytes) into a set of folded names.
void set_insert(const char** set, std::size_t mask, const char* name, std::size_t len) {
  for (std::size_t i = name_hash(name, len) & mask;; i = (i + 1) & mask) {
    if (set[i] == nullptr) {
      set[i] = name;
      return;
    }
    if (std::strncmp(set[i], name, len) == 0 && set[i][len] == '\0') return;
  }
}

// Whether `p` is `r` or lies below it.
bool under(const char* p, const char* r) {
  if (r[0] == '/' && r[1] == '\0') return p[0] == '/';
  return after(p, r) != nullptr;
}

bool under_any(const char* p, const char* const* list, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (under(p, list[i])) return true;
  }
  return false;
}

// Reports a path the depth rule refused (its first `len` bytes), once: the message and the
// path in one write, which a pipe keeps whole up to PIPE_BUF bytes.
void report_depth(GuardState& st, const char* path, std::size_t len) {
  if (st.report_fd < 0) return;
  auto h = static_cast<std::uint32_t>(name_hash(path, len));
  for (unsigned i = 0; i < st.n_depth_reported; ++i) {
    if (st.depth_reported[i] == h) return;
  }
  if (st.n_depth_reported < sizeof st.depth_reported / sizeof st.depth_reported[0]) {
    st.depth_reported[st.n_depth_reported++] = h;
  }
  char buf[PIPE_BUF];
  ChildMsg m{k_msg_guard_depth_refused, 0, 0, EACCES, 0};
  if (len > sizeof buf - sizeof m) return;
  m.value = static_cast<int32_t>(len);
  std::memcpy(buf, &m, sizeof m);
  std::memcpy(buf + sizeof m, path, len);
  while (::write(st.report_fd, buf, sizeof m + len) < 0 && errno == EINTR) {
  }
}

}  // namespace

bool refused_path(GuardState& st, const char* full, GuardMade made) {
  std::size_t which = 0;
  if (guard_check(st.list, full, made == GuardMade::new_dir, &which) != 0) {
    if (st.reported != nullptr && st.reported[which] == 0) {
      st.reported[which] = 1;
      send_msg(st.report_fd, k_msg_guard_refused, 0, static_cast<int32_t>(which), EACCES, 0);
    }
    return true;
  }
  return depth_refused(st, full, made);
}

bool depth_refused(GuardState& st, const char* full, GuardMade made) {
  if (st.list.n_names == 0) return false;
  char want[k_path_buf];
  std::size_t n = std::strlen(full);
  if (n >= sizeof want) return false;
  guard_fold(full, n, want);
  std::size_t len = 0;
  if (guard_depth_check(st.list, want, made, &len) == 0) return false;
  // As many components of the path as given as the folded prefix has (folding keeps '/').
  std::size_t slashes = 0;
  for (std::size_t i = 0; i < len; ++i) slashes += want[i] == '/' ? 1 : 0;
  std::size_t end = 0;
  for (std::size_t seen = 0; full[end] != '\0'; ++end) {
    if (full[end] == '/' && ++seen > slashes) break;
  }
  report_depth(st, full, end);
  return true;
}

bool deep_first_name(const GuardState& st, const char* name) {
  if (st.list.n_names == 0) return false;
  char folded[NAME_MAX + 1];
  std::size_t n = ::strnlen(name, NAME_MAX + 1);
  if (n > NAME_MAX) return false;
  n = guard_fold(name, n, folded);
  for (std::size_t i = 0; i < st.list.n_names; ++i) {
    const char* p = st.list.names[i];
    if (std::strncmp(p, folded, n) == 0 && (p[n] == '\0' || p[n] == '/')) return true;
  }
  return false;
}

bool leaves_lift(const GuardState& st, const char* from, const char* to) {
  const GuardList& g = st.list;
  char f[k_path_buf], d[k_path_buf];
  std::size_t nf = std::strlen(from), nd = std::strlen(to);
  if (nf >= sizeof f || nd >= sizeof d) return false;
  guard_fold(from, nf, f);
  guard_fold(to, nd, d);
  for (const auto& [list, count] : {std::pair{g.lifted, g.n_lifted}, std::pair{g.new_trees, g.n_new_trees}}) {
    for (std::size_t i = 0; i < count; ++i) {
      if ((under(f, list[i]) && !under(d, list[i])) || under(list[i], f)) return true;
    }
  }
  return false;
}

bool among(const char* const* set, std::size_t mask, const char* name, std::size_t len) {
  char folded[NAME_MAX + 1];
  if (len > NAME_MAX) return false;  // longer than any name the kernel takes
  len = guard_fold(name, len, folded);
  for (std::size_t i = name_hash(folded, len) & mask;; i = (i + 1) & mask) {
    if (set[i] == nullptr) return false;
    if (std::strncmp(set[i], folded, len) == 0 && set[i][len] == '\0') return true;
  }
}

}  // namespace guard_detail

using namespace guard_detail;

int guard_check(const GuardList& list, const char* full, bool is_mkdir, std::size_t* which) {
  // Folded first: a path longer than a guarded one may fold to it.
  char want[k_path_buf], have[k_path_buf];
  std::size_t n = std::strlen(full);
  if (n >= sizeof want) return 0;  // the caller's Buf holds no more
  n = guard_fold(full, n, want);
  for (std::size_t i = 0; i < list.count; ++i) {
    std::size_t len = std::strlen(list.paths[i]);
    if (len >= sizeof have) continue;
    guard_fold(list.paths[i], len, have);
    if (std::strcmp(have, want) == 0 || (!is_mkdir && std::strncmp(have, want, n) == 0 && have[n] == '/')) {
      if (which != nullptr) *which = i;
      return EACCES;
    }
  }
  return 0;
}

int guard_depth_check(const GuardList& g, const char* want, GuardMade made, std::size_t* refused_len) {
  if (g.n_names == 0 || !under_any(want, g.roots, g.n_roots) || under_any(want, g.exempt, g.n_exempt)) return 0;
  std::size_t n = std::strlen(want);
  // Every component that starts a protected name (each starts with a dot), against each
  // name: the path at or below all of it, or ending inside it at a '/'.
  for (std::size_t i = 0; i < n; ++i) {
    if (want[i] != '/' || want[i + 1] != '.') continue;
    const char* rest = want + i + 1;
    std::size_t m = n - i - 1;
    for (std::size_t k = 0; k < g.n_names; ++k) {
      const char* name = g.names[k];
      std::size_t len = std::strlen(name);
      bool whole = std::strncmp(rest, name, len) == 0 && (rest[len] == '\0' || rest[len] == '/');
      bool leading = !whole && m < len && std::strncmp(rest, name, m) == 0 && name[m] == '/';
      if (!whole && !leading) continue;
      if (leading) {
        bool gitfile = made == GuardMade::other && std::strncmp(name, ".git/", 5) == 0;
        if (made == GuardMade::new_dir || (made == GuardMade::other && !gitfile)) continue;
      }
      // Lifted: by a path named in --allow-write at or below the name's first directory
      // that holds `want`, or by a new tree that holds it.
      const char* first_end = std::strchr(name, '/');
      std::size_t top = i + 1 + (first_end != nullptr ? static_cast<std::size_t>(first_end - name) : len);
      bool lifted = under_any(want, g.new_trees, g.n_new_trees);
      for (std::size_t l = 0; !lifted && l < g.n_lifted; ++l) {
        const char* lift = g.lifted[l];
        lifted = under(want, lift) && std::strncmp(lift, want, top) == 0 && (lift[top] == '\0' || lift[top] == '/');
      }
      if (lifted) continue;
      if (refused_len != nullptr) *refused_len = whole ? i + 1 + len : n;
      return EACCES;
    }
  }
  return 0;
}

bool prepare_guard(const GuardList& in, int report_fd, GuardState& out) {
  // The paths, a second copy cut into names, and two hash sets with at least twice as
  // many slots as there can be names (one per byte at most); then the depth rule's lists,
  // folded.
  const std::pair<const char* const*, std::size_t> extra[] = {{in.names, in.n_names},
                                                              {in.roots, in.n_roots},
                                                              {in.exempt, in.n_exempt},
                                                              {in.lifted, in.n_lifted},
                                                              {in.new_trees, in.n_new_trees}};
  std::size_t text = 0, extra_text = 0, extra_count = 0;
  for (std::size_t i = 0; i < in.count; ++i) text += std::strlen(in.paths[i]) + 1;
  for (std::size_t i = 0; i < in.n_names; ++i) text += std::strlen(in.names[i]) + 1;  // into the sets too
  for (const auto& [list, count] : extra) {
    extra_count += count;
    for (std::size_t i = 0; i < count; ++i) extra_text += std::strlen(list[i]) + 1;
  }
  std::size_t slots = 16;
  while (slots < 2 * text) slots *= 2;
  std::size_t bytes = (in.count + extra_count + 2 * slots) * sizeof(char*) + 2 * text + extra_text + in.count;
  void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return false;  // mmap'd memory is zeroed: every slot empty
  auto** paths = static_cast<const char**>(m);
  auto** names = paths + in.count;
  auto** leaves = names + slots;
  auto** lists = leaves + slots;
  char* pool = reinterpret_cast<char*>(lists + extra_count);
  // Every name of `path` into the sets, from a copy cut in place.
  auto add_names = [&](const char* path) {
    std::size_t len = std::strlen(path);
    char* copy = pool;
    std::memcpy(copy, path, len + 1);
    pool += len + 1;
    char* last = nullptr;
    for (char* c = copy; *c != '\0';) {
      if (*c == '/') {
        *c++ = '\0';
        continue;
      }
      char* start = c;
      while (*c != '\0' && *c != '/') ++c;
      std::size_t n = static_cast<std::size_t>(c - start);
      if (*c != '\0') *c++ = '\0';
      n = guard_fold(start, n, start);  // in place: never longer
      set_insert(names, slots - 1, start, n);
      last = start;
    }
    if (last != nullptr) set_insert(leaves, slots - 1, last, std::strlen(last));
  };
  for (std::size_t i = 0; i < in.count; ++i) {
    std::size_t len = std::strlen(in.paths[i]);
    std::memcpy(pool, in.paths[i], len + 1);
    paths[i] = pool;
    pool += len + 1;
    add_names(in.paths[i]);
  }
  for (std::size_t i = 0; i < in.n_names; ++i) add_names(in.names[i]);
  const char* const* copied[5];
  std::size_t k = 0, at = 0;
  for (const auto& [list, count] : extra) {
    copied[k++] = lists + at;
    for (std::size_t i = 0; i < count; ++i) {
      std::size_t len = std::strlen(list[i]);
      guard_fold(list[i], len, pool);
      lists[at++] = pool;
      pool += len + 1;
    }
  }
  mode_t um = ::umask(022);
  ::umask(um);
  auto* reported = reinterpret_cast<unsigned char*>(pool);
  GuardList list{paths,     in.count,    copied[0], in.n_names,  copied[1], in.n_roots,
                 copied[2], in.n_exempt, copied[3], in.n_lifted, copied[4], in.n_new_trees};
  out = GuardState{list, names, slots - 1, leaves,   slots - 1, um, false, false,
                   0,    {},    0,         reported, report_fd, {}, 0,     false};
  for (auto& e : out.seen) e = {0, -1, 0, 0, 0};
  return true;
}

}  // namespace zb::exec
