// support/flat_map.hpp - an open-addressing hash map keyed by pointers (memo tables, visited sets).
//
// Hot paths (graph_rewrite, toposort) memoise on node addresses; std::unordered_map allocates per
// entry, this does not. Keys are never null; there is no erase.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

#include "support/hash.hpp"

namespace kiln {

template <typename V>
class PtrMap {
 public:
  PtrMap() = default;
  explicit PtrMap(size_t expected) { reserve(expected); }
  PtrMap(const PtrMap&) = delete;
  PtrMap& operator=(const PtrMap&) = delete;
  PtrMap(PtrMap&& o) noexcept : slots_(std::move(o.slots_)), mask_(o.mask_), count_(o.count_) { o.mask_ = o.count_ = 0; }
  PtrMap& operator=(PtrMap&& o) noexcept {
    slots_ = std::move(o.slots_);
    mask_ = o.mask_;
    count_ = o.count_;
    o.slots_.clear();
    o.mask_ = o.count_ = 0;
    return *this;
  }

  size_t size() const { return count_; }
  void reserve(size_t n) {
    size_t cap = 16;
    while (cap * 3 < n * 4 + 4) cap *= 2;
    if (cap > mask_ + 1 || slots_.empty()) rehash(cap);
  }

  V* find(const void* key) {
    if (slots_.empty()) return nullptr;
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      if (slots_[i].first == key) return &slots_[i].second;
      if (!slots_[i].first) return nullptr;
    }
  }
  const V* find(const void* key) const { return const_cast<PtrMap*>(this)->find(key); }
  bool contains(const void* key) const { return find(key) != nullptr; }

  // Inserts a default V when missing; returns (value, inserted).
  std::pair<V*, bool> emplace(const void* key) {
    if ((count_ + 1) * 4 > (mask_ + 1) * 3 || slots_.empty()) rehash(slots_.empty() ? 16 : (mask_ + 1) * 2);
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      if (slots_[i].first == key) return {&slots_[i].second, false};
      if (!slots_[i].first) {
        slots_[i].first = key;
        ++count_;
        return {&slots_[i].second, true};
      }
    }
  }
  V& operator[](const void* key) { return *emplace(key).first; }

  template <typename F>
  void for_each(F&& f) const {
    for (const auto& s : slots_)
      if (s.first) f(s.first, s.second);
  }

 private:
  size_t slot(const void* key) const { return mix64(reinterpret_cast<uintptr_t>(key)) & mask_; }
  void rehash(size_t cap) {
    std::vector<std::pair<const void*, V>> old = std::move(slots_);
    slots_.clear();
    slots_.resize(cap);
    mask_ = cap - 1;
    count_ = 0;
    for (auto& s : old)
      if (s.first) {
        size_t i = slot(s.first);
        while (slots_[i].first) i = (i + 1) & mask_;
        slots_[i].first = s.first;
        slots_[i].second = std::move(s.second);
        ++count_;
      }
  }
  std::vector<std::pair<const void*, V>> slots_;
  size_t mask_ = 0, count_ = 0;
};

}  // namespace kiln
