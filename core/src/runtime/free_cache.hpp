// runtime/free_cache.hpp - freed allocations kept for reuse, within a byte budget (an LRU).
//
// Realizing a model step by step frees and allocates buffers of the same sizes over and over;
// giving them back to the allocator (the plugin, or the C library) costs system calls and, for
// fresh memory, page faults on first touch. A block is reused only for exactly its size (sizes
// are rounded by the caller). The most recently freed block of a size is reused first (it is the
// warmest in the caches); when keeping a block would exceed the budget, the least recently freed
// blocks are released first. Not thread-safe: the owner locks.
#pragma once
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>

namespace kiln::runtime {

template <typename Handle>
class FreeCache {
 public:
  explicit FreeCache(uint64_t limit_bytes) : limit_(limit_bytes) {}

  // A cached block of exactly `size` bytes, if there is one.
  std::optional<Handle> take(uint64_t size) {
    auto [lo, hi] = by_size_.equal_range(size);
    if (lo == hi) return std::nullopt;
    auto it = std::prev(hi);  // the most recently freed of that size
    Handle h = it->second.handle;
    by_age_.erase(it->second.age);
    by_size_.erase(it);
    bytes_ -= size;
    return h;
  }

  // Keeps `h` (a block of `size` bytes); `release(handle, size)` gives back what does not fit:
  // the least recently freed blocks, or `h` itself when it alone exceeds the budget.
  template <typename Release>
  void put(uint64_t size, Handle h, Release&& release) {
    if (size > limit_) return release(h, size);
    while (bytes_ + size > limit_) {
      auto oldest = by_age_.begin()->second;
      release(oldest->second.handle, oldest->first);
      bytes_ -= oldest->first;
      by_age_.erase(by_age_.begin());
      by_size_.erase(oldest);
    }
    auto it = by_size_.emplace(size, Entry{h, next_age_});
    by_age_.emplace(next_age_++, it);
    bytes_ += size;
  }

  // Releases every block.
  template <typename Release>
  void clear(Release&& release) {
    for (auto& [size, e] : by_size_) release(e.handle, size);
    by_size_.clear();
    by_age_.clear();
    bytes_ = 0;
  }

  uint64_t bytes() const { return bytes_; }
  size_t blocks() const { return by_size_.size(); }

 private:
  struct Entry {
    Handle handle;
    uint64_t age;
  };
  using BySize = std::multimap<uint64_t, Entry>;  // equal sizes stay in freeing order
  uint64_t limit_, bytes_ = 0, next_age_ = 0;
  BySize by_size_;
  std::map<uint64_t, typename BySize::iterator> by_age_;  // oldest first
};

}  // namespace kiln::runtime
