// Memory shared with a sandbox child that was cloned before its spec existed
// (exec/sandbox.cpp): the supervisor writes the spec here and the child reads it at the
// same address, since the mapping predates clone() and is MAP_SHARED. A bump allocator
// over one mapping; nothing is freed before the mapping goes.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstring>
#include <new>
#include <string>
#include <vector>

namespace zb::exec {

class SharedArena {
 public:
  // Address space only: pages are allocated as they are written, but the size counts
  // against RLIMIT_AS, so it starts small. The spec is the mount plan plus the command's
  // argv and environment; a larger one gets a larger arena (sandbox.cpp).
  static constexpr std::size_t k_default_capacity = std::size_t{4} << 20;
  static constexpr std::size_t k_max_capacity = std::size_t{1} << 30;

  SharedArena() = default;
  SharedArena(const SharedArena&) = delete;
  SharedArena& operator=(const SharedArena&) = delete;
  ~SharedArena() { unmap(); }

  // false with errno set when the mapping cannot be made.
  bool map(std::size_t capacity = k_default_capacity) {
    void* p = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    m_base = static_cast<char*>(p);
    m_capacity = capacity;
    return true;
  }
  void unmap() {
    if (m_base != nullptr) ::munmap(m_base, m_capacity);
    m_base = nullptr;
  }
  char* base() const { return m_base; }
  std::size_t capacity() const { return m_capacity; }
  bool full() const { return m_full; }

  // n objects of T, value-initialised; nullptr (and full()) when out of room.
  template <typename T>
  T* array(std::size_t n) {
    std::size_t start = (m_used + alignof(T) - 1) / alignof(T) * alignof(T);
    if (start > m_capacity || n > (m_capacity - start) / sizeof(T)) {
      m_full = true;
      return nullptr;
    }
    m_used = start + n * sizeof(T);
    T* out = reinterpret_cast<T*>(m_base + start);
    for (std::size_t i = 0; i < n; ++i) new (static_cast<void*>(out + i)) T{};
    return out;
  }
  // A NUL-terminated copy (bytes after an embedded NUL are kept but unseen by C calls).
  char* str(const std::string& s) {
    char* out = array<char>(s.size() + 1);
    if (out != nullptr) std::memcpy(out, s.c_str(), s.size() + 1);
    return out;
  }
  // A NULL-terminated array of copies, as execve() takes.
  char** strings(const std::vector<std::string>& v) {
    char** out = array<char*>(v.size() + 1);
    if (out == nullptr) return nullptr;
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = str(v[i]);
    return out;
  }

 private:
  char* m_base = nullptr;
  std::size_t m_capacity = 0;
  std::size_t m_used = 0;
  bool m_full = false;
};

}  // namespace zb::exec
