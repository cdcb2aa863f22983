// support/lru_map.hpp - a map that keeps its most recently used entries, up to a count.
//
// The in-memory caches (schedules, kernels, compiled binaries) are keyed by the program's
// structure, so a loop whose graphs differ every iteration (a new scalar baked into each) would
// grow them without bound. Each keeps its entries in an LruMap: a lookup makes an entry the most
// recently used; an insertion past the capacity drops the least recently used ones. Values are
// usually shared pointers, so a dropped entry stays alive while someone still holds it. Not
// thread-safe: the owner locks.
#pragma once
#include <cstddef>
#include <functional>
#include <iterator>
#include <list>
#include <unordered_map>
#include <utility>

namespace kiln {

template <typename K, typename V, typename Hash = std::hash<K>>
class LruMap {
 public:
  // The entry for `key` (now the most recently used), or nullptr.
  V* find(const K& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    items_.splice(items_.begin(), items_, it->second);
    return &it->second->second;
  }

  // Inserts or replaces the entry for `key` as the most recently used, then drops the least
  // recently used entries beyond `capacity` (0 = unbounded).
  void put(const K& key, V value, size_t capacity) {
    if (V* v = find(key)) {
      *v = std::move(value);
    } else {
      items_.emplace_front(key, std::move(value));
      index_.emplace(key, items_.begin());
    }
    while (capacity && items_.size() > capacity) {
      index_.erase(items_.back().first);
      items_.pop_back();
    }
  }

  bool contains(const K& key) const { return index_.count(key) != 0; }
  void erase(const K& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return;
    items_.erase(it->second);
    index_.erase(it);
  }
  void clear() {
    index_.clear();
    items_.clear();
  }
  size_t size() const { return items_.size(); }

 private:
  std::list<std::pair<K, V>> items_;  // most recently used first
  std::unordered_map<K, typename std::list<std::pair<K, V>>::iterator, Hash> index_;
};

}  // namespace kiln
