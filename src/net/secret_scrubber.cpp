// The response scrubber (Redactor: an automaton over the values, matched through the
// decoded views of secret_codecs.hpp) and the zlib decoder of the bodies it scrubs.
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "net/secret_codecs.hpp"
#include "net/secrets.hpp"

namespace zb::net {

namespace {

using codec::Codec;
using codec::introduces;
using codec::k_max_escape;
using codec::k_view_count;
using codec::k_views;
using codec::parse;
using codec::Step;

constexpr std::uint32_t k_none = 0xffffffff;

}  // namespace

// Aho-Corasick over the strings scrubbed: each value, and the forms added.
struct Redactor::Patterns {
  struct Node {
    std::vector<std::pair<unsigned char, std::uint32_t>> next;
    std::uint32_t fail = 0;
    std::uint32_t dict = k_none;  // the nearest node down the fail links where a string ends
    std::uint32_t depth = 0;
    std::uint32_t pattern = k_none;  // the string that ends here
  };
  std::vector<std::pair<std::string, std::string>> pairs;  // found, written in its place
  std::vector<Node> nodes;
  std::array<std::uint32_t, 256> root{};  // the root's transitions, in full
  std::array<bool, 256> wakes{};          // bytes that can take a view out of its resting state
  std::size_t longest = 0;

  explicit Patterns(std::vector<std::pair<std::string, std::string>> p) : pairs(std::move(p)) {
    nodes.emplace_back();
    for (std::uint32_t k = 0; k < pairs.size(); ++k) {
      std::uint32_t at = 0;
      for (char ch : pairs[k].first) {
        auto b = static_cast<unsigned char>(ch);
        std::uint32_t to = child(at, b);
        if (to == k_none) {
          to = static_cast<std::uint32_t>(nodes.size());
          Node n;
          n.depth = nodes[at].depth + 1;
          nodes.push_back(std::move(n));
          nodes[at].next.emplace_back(b, to);
        }
        at = to;
      }
      if (nodes[at].pattern == k_none) nodes[at].pattern = k;
      longest = std::max(longest, pairs[k].first.size());
    }
    for (unsigned b = 0; b < 256; ++b) {
      std::uint32_t to = child(0, static_cast<unsigned char>(b));
      root[b] = to == k_none ? 0 : to;
      wakes[b] = root[b] != 0 || b == '%' || b == '+' || b == '\\' || b == '&';
    }
    // Breadth first, so that every fail link points to a node already linked.
    std::vector<std::uint32_t> queue;
    for (const auto& [b, to] : nodes[0].next) queue.push_back(to);
    for (std::size_t q = 0; q < queue.size(); ++q) {
      std::uint32_t at = queue[q];
      for (const auto& [b, to] : nodes[at].next) {
        std::uint32_t f = nodes[at].fail;
        nodes[to].fail = at == 0 ? 0 : step(f, b);
        std::uint32_t fl = nodes[to].fail;
        nodes[to].dict = nodes[fl].pattern != k_none ? fl : nodes[fl].dict;
        queue.push_back(to);
      }
    }
  }

  std::uint32_t child(std::uint32_t at, unsigned char b) const {
    for (const auto& [c, to] : nodes[at].next)
      if (c == b) return to;
    return k_none;
  }
  std::uint32_t step(std::uint32_t at, unsigned char b) const {
    for (;;) {
      if (at == 0) return root[b];
      std::uint32_t to = child(at, b);
      if (to != k_none) return to;
      at = nodes[at].fail;
    }
  }
};

// One stream through the views. Offsets count the stream's bytes from its start.
struct Redactor::Scan {
  // A decoded byte and the stream's bytes it came from.
  struct Unit {
    unsigned char byte;
    std::uint64_t start, end;
  };
  struct Layer {
    Codec codec = Codec::percent;
    std::size_t n = 0;  // the bytes held: a possible escape not complete yet
    char bytes[k_max_escape]{};
    std::uint64_t start[k_max_escape]{}, end[k_max_escape]{};
  };
  struct View {
    std::size_t depth = 0;
    Layer layers[2];
    std::uint32_t state = 0;            // in the automaton
    std::uint64_t units = 0;            // units matched so far
    std::vector<std::uint64_t> starts;  // where the last `longest` of them start (a ring)
  };
  struct Found {
    std::uint64_t start, end;
    std::uint32_t pattern;
  };

  const Patterns& p;
  std::vector<View> views;
  bool resting = true;         // no view holds a byte or is inside a match
  std::vector<Found> found;    // matches not yet acted on
  std::string pending;         // the stream from `base` on
  std::uint64_t base = 0;      // the offset of pending[0]; what is before it is written out
  std::uint64_t fed = 0;       // bytes given to the views
  std::uint64_t next = 0;      // where the next replaced match may start
  std::uint64_t out_mark = 0;  // everything before it is written out or replaced

  explicit Scan(const Patterns& patterns) : p(patterns), views(k_view_count) {
    for (std::size_t v = 0; v < k_view_count; ++v) {
      views[v].depth = k_views[v].depth;
      for (std::size_t l = 0; l < views[v].depth; ++l) views[v].layers[l].codec = k_views[v].layers[l];
      views[v].starts.assign(std::max<std::size_t>(p.longest, 1), 0);
    }
  }

  void match(View& v, Unit u) {
    v.state = p.step(v.state, u.byte);
    std::size_t ring = v.starts.size();
    v.starts[v.units % ring] = u.start;
    ++v.units;
    const auto& nodes = p.nodes;
    for (std::uint32_t at = nodes[v.state].pattern != k_none ? v.state : nodes[v.state].dict; at != k_none;
         at = nodes[at].dict) {
      std::uint64_t len = nodes[at].depth;
      found.push_back({v.starts[(v.units - len) % ring], u.end, nodes[at].pattern});
    }
  }

  void push(View& v, std::size_t layer, Unit u) {
    if (layer == v.depth) return match(v, u);
    Layer& l = v.layers[layer];
    if (l.n == 0 && !introduces(l.codec, u.byte)) return push(v, layer + 1, u);
    l.bytes[l.n] = static_cast<char>(u.byte);
    l.start[l.n] = u.start;
    l.end[l.n] = u.end;
    ++l.n;
    drain(v, layer, false);
  }

  void drop(Layer& l, std::size_t k) {
    std::memmove(l.bytes, l.bytes + k, l.n - k);
    std::memmove(l.start, l.start + k, (l.n - k) * sizeof l.start[0]);
    std::memmove(l.end, l.end + k, (l.n - k) * sizeof l.end[0]);
    l.n -= k;
  }

  // Decodes what the layer holds, as far as it can be decided.
  void drain(View& v, std::size_t layer, bool at_end) {
    Layer& l = v.layers[layer];
    while (l.n > 0) {
      Step s = parse(l.codec, std::string_view(l.bytes, l.n), at_end);
      if (s.kind == Step::Kind::more && l.n < k_max_escape) return;
      if (s.kind != Step::Kind::decoded) {
        Unit u{static_cast<unsigned char>(l.bytes[0]), l.start[0], l.end[0]};
        drop(l, 1);
        push(v, layer + 1, u);
      } else {
        std::uint64_t start = l.start[0], end = l.end[s.used - 1];
        drop(l, s.used);
        for (std::size_t i = 0; i < s.n; ++i) push(v, layer + 1, {static_cast<unsigned char>(s.out[i]), start, end});
      }
    }
  }

  bool at_rest(const View& v) const {
    for (std::size_t l = 0; l < v.depth; ++l)
      if (v.layers[l].n > 0) return false;
    return v.state == 0;
  }

  // The first offset a match still to be found may start at.
  std::uint64_t frontier() const {
    std::uint64_t f = fed;
    for (const View& v : views) {
      for (std::size_t l = 0; l < v.depth; ++l)
        if (v.layers[l].n > 0) f = std::min(f, v.layers[l].start[0]);
      std::uint64_t depth = p.nodes[v.state].depth;
      if (depth > 0) f = std::min(f, v.starts[(v.units - depth) % v.starts.size()]);
    }
    return f;
  }

  // Writes out what lies before `upto` (no match found later can start there): the matches
  // that start there, leftmost first and the longest at a tie, replaced.
  void settle(std::uint64_t upto, std::string& out) {
    std::sort(found.begin(), found.end(),
              [](const Found& a, const Found& b) { return a.start != b.start ? a.start < b.start : a.end > b.end; });
    std::uint64_t written = out_mark;
    std::size_t keep = 0;
    for (const Found& f : found) {
      if (f.start < next) continue;  // overlaps one replaced already
      if (f.start >= upto) {
        found[keep++] = f;
        continue;
      }
      out.append(pending, written - base, f.start - written);
      out += p.pairs[f.pattern].second;
      written = next = f.end;
    }
    found.resize(keep);
    if (upto > written) {
      out.append(pending, written - base, upto - written);
      written = upto;
    }
    out_mark = written;
    next = std::max(next, written);
  }

  std::string feed(std::string_view in) {
    pending.append(in);
    std::string out;
    std::uint64_t end = base + pending.size();
    const auto* bytes = reinterpret_cast<const unsigned char*>(pending.data());
    while (fed < end) {
      if (resting) {
        while (fed < end && !p.wakes[bytes[fed - base]]) ++fed;
        if (fed == end) break;
      }
      unsigned char b = bytes[fed - base];
      for (View& v : views) push(v, 0, {b, fed, fed + 1});
      ++fed;
      resting = std::all_of(views.begin(), views.end(), [&](const View& v) { return at_rest(v); });
      // Matches are acted on as they pile up, so that a long run of them (a value repeated
      // in one large piece) does not grow this list without bound.
      if (found.size() > 256) settle(frontier(), out);
    }
    settle(frontier(), out);
    pending.erase(0, out_mark - base);
    base = out_mark;
    return out;
  }

  std::string finish() {
    for (View& v : views)
      for (std::size_t l = 0; l < v.depth; ++l) drain(v, l, true);
    std::string out;
    settle(fed, out);
    pending.clear();
    base = out_mark;
    return out;
  }
};

Redactor::Redactor(const Approved& subs) {
  for (const SecretEntry* e : subs) {
    if (e->value.size() < k_min_redacted) continue;
    m_pairs.emplace_back(e->value, e->placeholder);
  }
  rebuild();
}

Redactor::Redactor(Redactor&&) noexcept = default;
Redactor& Redactor::operator=(Redactor&&) noexcept = default;
Redactor::~Redactor() = default;

void Redactor::rebuild() {
  m_patterns = std::make_unique<Patterns>(m_pairs);
  m_scan = std::make_unique<Scan>(*m_patterns);
}

void Redactor::add(std::string sent, std::string shown) {
  if (sent.size() < k_min_redacted || sent == shown) return;
  for (const auto& p : m_pairs)
    if (p.first == sent) return;
  m_pairs.emplace_back(std::move(sent), std::move(shown));
  rebuild();
}

bool Redactor::active() const { return !m_pairs.empty(); }

std::string Redactor::feed(std::string_view in) {
  if (m_pairs.empty()) return std::string(in);
  return m_scan->feed(in);
}

std::string Redactor::finish() {
  if (m_pairs.empty()) return {};
  return m_scan->finish();
}

std::string Redactor::redact(std::string_view s) const {
  if (m_pairs.empty()) return std::string(s);
  Scan scan(*m_patterns);
  std::string out = scan.feed(s);
  out += scan.finish();
  return out;
}

struct Decoder::Z {
  z_stream zs{};
  bool raw_fallback = false;  // "deflate": retry as raw deflate if the zlib header is wrong
  bool started = false;       // some output was produced
  bool ended = false;         // Z_STREAM_END seen
};

Decoder::Decoder(bool raw_fallback) : m_z(std::make_unique<Z>()) {
  m_z->raw_fallback = raw_fallback;
  inflateInit2(&m_z->zs, 15 + 32);  // zlib or gzip, told apart by the header
}

Decoder::Decoder(Decoder&& o) noexcept : m_z(std::move(o.m_z)) {}

Decoder::~Decoder() {
  if (m_z) inflateEnd(&m_z->zs);
}

Result<std::optional<Decoder>> Decoder::for_coding(const std::vector<std::string>& codings) {
  std::vector<std::string> real;
  for (const auto& c : codings)
    if (c != "identity") real.push_back(c);
  if (real.empty()) return std::optional<Decoder>();
  if (real.size() == 1 && (real[0] == "gzip" || real[0] == "x-gzip" || real[0] == "deflate"))
    return std::optional<Decoder>(Decoder(real[0] == "deflate"));
  std::string list;
  for (const auto& c : real) list += (list.empty() ? "" : ", ") + c;
  return fail_msg("Content-Encoding " + list);
}

Result<std::string> Decoder::feed(std::string_view in) {
  Z& z = *m_z;
  std::string out;
  char buf[64 * 1024];
  auto* next = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.zs.next_in = next;
  z.zs.avail_in = static_cast<uInt>(in.size());
  while (z.zs.avail_in > 0) {
    if (z.ended) {
      // Another gzip member follows (RFC 1952 allows several).
      inflateReset(&z.zs);
      z.ended = false;
    }
    z.zs.next_out = reinterpret_cast<Bytef*>(buf);
    z.zs.avail_out = sizeof buf;
    int r = inflate(&z.zs, Z_NO_FLUSH);
    std::size_t produced = sizeof buf - z.zs.avail_out;
    if (r == Z_DATA_ERROR && z.raw_fallback && !z.started) {
      // "deflate" sent without its zlib wrapper: start again as raw deflate.
      z.raw_fallback = false;
      inflateEnd(&z.zs);
      z.zs = z_stream{};
      inflateInit2(&z.zs, -15);
      z.zs.next_in = next;
      z.zs.avail_in = static_cast<uInt>(in.size());
      continue;
    }
    if (r != Z_OK && r != Z_STREAM_END && !(r == Z_BUF_ERROR && produced > 0))
      return fail_msg(std::string("corrupt compressed body: ") + (z.zs.msg ? z.zs.msg : "zlib error"));
    out.append(buf, produced);
    if (produced > 0) z.started = true;
    if (r == Z_STREAM_END) z.ended = true;
    if (produced == 0 && r != Z_STREAM_END && z.zs.avail_in > 0 && r == Z_BUF_ERROR)
      return fail_msg("corrupt compressed body");
  }
  // Input used up; drain what zlib still holds.
  for (;;) {
    z.zs.next_out = reinterpret_cast<Bytef*>(buf);
    z.zs.avail_out = sizeof buf;
    int r = inflate(&z.zs, Z_NO_FLUSH);
    std::size_t produced = sizeof buf - z.zs.avail_out;
    out.append(buf, produced);
    if (r == Z_STREAM_END) z.ended = true;
    if (produced < sizeof buf) break;
  }
  return out;
}

}  // namespace zb::net
