#include "snapshot/journal.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "snapshot/apply.hpp"
#include "snapshot/changeset.hpp"
#include "util/beneath.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"
#include "util/path.hpp"
#include "util/text.hpp"

namespace zb::snapshot {

using store::Change;
using store::FileType;
using store::type_of;

namespace {

// Whether a change's new side holds other user.* xattrs (those a command may set,
// util::XattrScope::Carried) than its old side.
bool carried_xattrs_changed(const Change& c) {
  if (!c.before || !c.after || !c.before->xattrs || !c.after->xattrs) return false;
  auto old_x = store::decode_xattrs(*c.before->xattrs);
  auto new_x = store::decode_xattrs(*c.after->xattrs);
  if (!old_x || !new_x) return true;
  std::erase_if(*old_x,
                [](const auto& kv) { return !kv.first.starts_with("user.") || kv.first.starts_with("user.overlay."); });
  return *old_x != *new_x;
}

// Paths are bytes; JSON wants UTF-8. Non-UTF-8 paths are rare enough in policies that
// the store's own encoding of lists (base64 objects) is not worth repeating here:
// invalid bytes are replaced, and such a path simply protects nothing.
// Paths are bytes: one that is not UTF-8 is kept as {"b64": "..."}, never mangled (a
// protected path that no longer matched would protect nothing).
nlohmann::json to_array(const std::vector<std::string>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& s : v) {
    if (text::valid_utf8(s)) {
      a.push_back(s);
    } else {
      a.push_back(nlohmann::json{{"b64", text::base64(s)}});
    }
  }
  return a;
}

std::vector<std::string> from_array(const nlohmann::json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.contains(key) || !j[key].is_array()) return out;
  for (const auto& e : j[key]) {
    if (e.is_string()) {
      out.push_back(e.get<std::string>());
    } else if (e.is_object() && e.contains("b64") && e["b64"].is_string()) {
      out.push_back(text::unbase64(e["b64"].get<std::string>()).value_or(""));
    }
  }
  return out;
}

}  // namespace

// A change to a protected path, or one that puts a file or symlink where a protected
// path's parent belongs (a `.git` file or symlink would point git at another config and
// hooks; a `.config` symlink would move `.config/fish`).
bool protected_change(const std::string& abs, const Change& c, const std::vector<std::string>& protected_paths) {
  for (const auto& p : protected_paths) {
    if (path::is_under(abs, p)) return true;
    if (c.after && c.after->type != FileType::Directory && path::is_under(p, abs)) return true;
  }
  return false;
}

std::string SessionPolicy::to_json() const {
  nlohmann::json j;
  j["tracked"] = to_array(tracked);
  j["exclude"] = to_array(exclude);
  j["protected"] = to_array(protected_paths);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

SessionPolicy SessionPolicy::from_json(const std::string& text) {
  SessionPolicy p;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return p;
  p.tracked = from_array(j, "tracked");
  p.exclude = from_array(j, "exclude");
  p.protected_paths = from_array(j, "protected");
  return p;
}

Result<JournalStats> journal_session(store::Store& store, const store::Session& session, const SessionPolicy& policy) {
  JournalStats stats;
  // The walk holds two or three fds per level of the deepest directory the command made:
  // use the hard limit, not the (often 1024) soft one. The sandbox is gone by now.
  (void)util::raise_nofile_limit();
  auto excludes = Excludes::compile(policy.exclude);
  if (!excludes) return std::unexpected(excludes.error());
  std::string sdir = store.session_dir(session.id);
  std::vector<std::string> dropped_tops;

  for (std::size_t n = 0; n < session.roots.size(); ++n) {
    const std::string& root = session.roots[n];
    std::string upper = sdir + "/upper/" + std::to_string(n);
    // Nothing written, or a missing layer.
    if (auto empty = path::is_empty_dir(upper); empty ? *empty : empty.error().err == ENOENT) continue;
    // Excludes are relative to the tracked path the user named (or that was defaulted).
    std::string base = root;
    for (const auto& t : policy.tracked) {
      if (path::is_under(root, t) && (base == root || t.size() < base.size())) base = t;
    }
    UniqueFd upper_fd(::open(upper.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!upper_fd) return fail("open " + log::quote(upper));
    UniqueFd lower_fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!lower_fd) return fail("open tracked path " + log::quote(root));

    std::vector<Change> batch;
    std::vector<std::pair<Change, std::string>> excluded;
    auto flush = [&]() -> Result<void> {
      if (batch.empty()) return {};
      if (auto r = store.add_changes(session.id, batch); !r) return r;
      stats.changes += static_cast<std::int64_t>(batch.size());
      batch.clear();
      return {};
    };
    auto sink = [&](const ScannedChange& sc) -> Result<void> {
      const std::string& rel = sc.change.path;
      std::string abs = path::join(root, rel);
      if (protected_change(abs, sc.change, policy.protected_paths)) {
        ++stats.dropped;
        if (dropped_tops.empty() || !path::is_under(abs, dropped_tops.back())) {
          dropped_tops.push_back(abs);
          log::warning("dropped the change to " + log::quote(abs) + ": the path is protected");
        }
        return {};
      }
      std::string rel_base = base == "/" ? abs.substr(1) : (abs == base ? std::string() : abs.substr(base.size() + 1));
      bool is_dir = type_of(sc.change.after ? sc.change.after : sc.change.before) == FileType::Directory;
      Change c = sc.change;
      c.path = abs;
      // setuid and setgid made inside the sandbox never reach the journal, so no accept,
      // restore or redo can put them on the host.
      if (c.after && c.after->type != FileType::Directory && c.after->mode && (*c.after->mode & 06000u) != 0) {
        log::warning("dropped the setuid/setgid bits of " + log::quote(abs));
        *c.after->mode &= ~06000u;
        if (c.kind == store::ChangeKind::ModeChanged && c.before && c.after->mode == c.before->mode &&
            c.after->uid == c.before->uid && c.after->gid == c.before->gid && !carried_xattrs_changed(c)) {
          return {};
        }
      }
      if (!excludes->empty() && excludes->matches(rel_base, is_dir)) {
        excluded.emplace_back(std::move(c), upper + "/" + rel);
        return {};
      }
      if (type_of(c.before) == FileType::Regular) {
        auto f = util::open_beneath(lower_fd.get(), rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, abs);
        if (!f) return std::unexpected(f.error());
        auto b = store.put_blob_from_fd(f->get());
        if (!b) return std::unexpected(b.error());
        c.before->blob = b->hash;
      }
      if (type_of(c.after) == FileType::Regular) {
        auto slash = rel.rfind('/');
        std::string dir = slash == std::string::npos ? "." : rel.substr(0, slash);
        std::string name = slash == std::string::npos ? rel : rel.substr(slash + 1);
        auto d = dir == "." ? Result<UniqueFd>(UniqueFd(::dup(upper_fd.get())))
                            : util::open_beneath(upper_fd.get(), dir, O_PATH | O_DIRECTORY, upper + "/" + dir);
        if (!d) return std::unexpected(d.error());
        // The command may have left its directories read-only or its file unreadable
        // (Go's module cache does): zerobox owns the upper layer, and the modes are
        // already recorded.
        if (::geteuid() != 0) {
          std::string parent_rel = dir == "." ? "" : dir;
          struct stat pst{};
          if (::fstatat(upper_fd.get(), parent_rel.empty() ? "." : parent_rel.c_str(), &pst, AT_SYMLINK_NOFOLLOW) ==
                  0 &&
              (pst.st_mode & 0700) != 0700) {
            ::fchmodat(upper_fd.get(), parent_rel.empty() ? "." : parent_rel.c_str(), (pst.st_mode & 07777) | 0700, 0);
          }
        }
        // An unreadable file (mode 000) is made readable for the move, and given its mode
        // back in case other hard links keep the inode.
        bool unreadable = ::geteuid() != 0 && ::faccessat(d->get(), name.c_str(), R_OK, AT_SYMLINK_NOFOLLOW) != 0;
        if (unreadable) ::fchmodat(d->get(), name.c_str(), 0600, 0);
        auto b = store.put_blob_by_rename(d->get(), name);
        if (unreadable && c.after->mode) ::fchmodat(d->get(), name.c_str(), *c.after->mode, 0);
        if (!b) return std::unexpected(b.error());
        c.after->blob = b->hash;
      }
      batch.push_back(std::move(c));
      if (batch.size() >= 1000) return flush();
      return {};
    };
    // Directories the command replaced as a whole: what they held, so that accept can tell
    // the host's later additions from what the command left there.
    std::vector<store::OpaqueDir> opaque;
    auto on_opaque = [&](const std::string& rel, const std::vector<std::string>& names) -> Result<void> {
      std::string abs = rel.empty() ? root : path::join(root, rel);
      Change dir;
      dir.after = store::FileMeta{.type = FileType::Directory};
      if (protected_change(abs, dir, policy.protected_paths)) return {};
      std::string rel_base = base == "/" ? abs.substr(1) : (abs == base ? std::string() : abs.substr(base.size() + 1));
      if (!excludes->empty() && excludes->matches(rel_base, true)) return {};
      opaque.push_back({abs, names});
      return {};
    };
    ScanOptions scan{.xattrs = OverlayXattrs::User, .since_ns = session.created_at, .on_opaque = on_opaque};
    if (auto r = for_each_change(upper_fd.get(), lower_fd.get(), sink, scan); !r) return std::unexpected(r.error());
    if (auto r = flush(); !r) return std::unexpected(r.error());
    if (auto r = store.add_opaque_dirs(session.id, opaque); !r) return std::unexpected(r.error());
    // Excluded paths: applied now, in every mode, never journaled.
    for (const auto& [c, content] : excluded) {
      if (auto r = apply_from_file(root, c, content); !r) return std::unexpected(r.error());
      ++stats.excluded;
    }
  }
  // The pre-images must be durable before anything is applied (or the layers removed).
  if (stats.changes > 0 || stats.excluded > 0) {
    if (auto r = store.sync(); !r) return std::unexpected(r.error());
  }
  if (auto r = util::remove_tree(sdir + "/upper"); !r) return std::unexpected(r.error());
  if (auto r = util::remove_tree(sdir + "/work"); !r) return std::unexpected(r.error());
  return stats;
}

}  // namespace zb::snapshot
