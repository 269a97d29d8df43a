// `zerobox snapshot diff --json` (diff.hpp, "Json"): one object per change, every key
// present, as one line a terminal can show safely.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "snapshot/diff_internal.hpp"
#include "util/text.hpp"

namespace zb::snapshot {
namespace diff_detail {
namespace {

using Json = nlohmann::ordered_json;

// Bytes as `key` when they are UTF-8, else base64 as `key_b64`; absent as `key: null`.
void put_bytes(Json& o, const std::string& key, const std::optional<std::string>& v) {
  if (!v) {
    o[key] = nullptr;
  } else if (text::valid_utf8(*v)) {
    o[key] = *v;
  } else {
    o[key + "_b64"] = text::base64(*v);
  }
}

template <class T>
Json or_null(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// The keys come in the order diff.hpp lists them: the old_ and new_ key of each value side
// by side, but old_uid, old_gid, new_uid, new_gid. An absent side's values are all null.
Json change_json(const Change& c) {
  const std::optional<Side>* sides[2] = {&c.before, &c.after};
  const std::string prefix[2] = {"old_", "new_"};
  Json o = Json::object();
  auto both = [&](const char* key, auto value) {
    for (int i = 0; i < 2; ++i) o[prefix[i] + key] = *sides[i] ? value(**sides[i]) : Json(nullptr);
  };
  put_bytes(o, "path", c.path);
  o["kind"] = std::string(store::to_string(c.kind));
  both("type", [](const Side& s) { return Json(std::string(store::to_string(s.type))); });
  both("mode", [](const Side& s) { return or_null(s.mode); });
  both("size", [](const Side& s) { return or_null(s.size); });
  for (int i = 0; i < 2; ++i) put_bytes(o, prefix[i] + "link", *sides[i] ? (*sides[i])->link : std::nullopt);
  both("mtime_ns", [](const Side& s) { return or_null(s.mtime_ns); });
  for (int i = 0; i < 2; ++i) {
    o[prefix[i] + "uid"] = *sides[i] ? or_null((*sides[i])->uid) : Json(nullptr);
    o[prefix[i] + "gid"] = *sides[i] ? or_null((*sides[i])->gid) : Json(nullptr);
  }
  return o;
}

}  // namespace

Result<void> write_json(std::FILE* out, const std::vector<const Change*>& changes, const DiffOptions& options) {
  if (!text::valid_utf8(options.session_id)) return fail_msg("session id is not UTF-8");
  Json doc = Json::object();
  doc["session"] = options.session_id;
  Json list = Json::array();
  for (const Change* c : changes) list.push_back(change_json(*c));
  doc["changes"] = std::move(list);
  std::string text;
  try {
    text = doc.dump();  // every string was checked above, so this does not throw
  } catch (const nlohmann::json::exception& e) {
    return fail_msg(std::string("diff --json: ") + e.what());
  }
  put_line(out, "", json_escape_controls(text), "");
  return {};
}

}  // namespace diff_detail

std::string json_escape_controls(std::string_view json) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(json.size());
  for (std::size_t i = 0; i < json.size(); ++i) {
    auto c = static_cast<unsigned char>(json[i]);
    unsigned cp = 0x100;  // none
    if (c == 0x7f) {
      cp = c;
    } else if (c == 0xc2 && i + 1 < json.size() && static_cast<unsigned char>(json[i + 1]) <= 0x9f &&
               static_cast<unsigned char>(json[i + 1]) >= 0x80) {
      cp = static_cast<unsigned char>(json[++i]);
    }
    if (cp == 0x100) {
      out += static_cast<char>(c);
      continue;
    }
    out += "\\u00";
    out += hex[cp >> 4];
    out += hex[cp & 15];
  }
  return out;
}

}  // namespace zb::snapshot
