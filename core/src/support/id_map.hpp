// support/id_map.hpp - a map keyed by node ids, stored in pages of consecutive ids.
//
// Node ids are handed out in creation order and never reused, and graphs are mostly built (and
// traversed) in that order, so consecutive lookups land in the same page: far fewer cache misses
// than hashing node addresses. Values are default-constructed on first access; `present` tells
// whether a slot was ever written through operator[].
//
// A page is 8 KiB and zeroed when made, and a small graph's ids are scattered across the process's
// history (an index expression of 20 nodes can touch 10 pages): so the first kSmall entries live
// in a small inline table and move to pages when it fills. The move is the one way in which
// operator[] invalidates what find and operator[] returned before it: copy a value out before
// writing another key (graph_rewrite does).
#pragma once
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "support/hash.hpp"

namespace kiln {

template <typename V>
class IdMap {
  static constexpr int kPageBits = 10;
  static constexpr uint64_t kPageSize = uint64_t{1} << kPageBits;
  struct Page {
    V values[kPageSize];
    uint64_t present[kPageSize / 64] = {};
  };
  static constexpr size_t kRecent = 8;
  struct Recent {
    uint64_t no = ~uint64_t{0};
    Page* page = nullptr;
  };

 public:
  V* find(uint64_t id) {
    if (small_on_) return small_find(id);
    Page* p = page(id >> kPageBits, false);
    if (!p) return nullptr;
    uint64_t i = id & (kPageSize - 1);
    return (p->present[i >> 6] >> (i & 63)) & 1 ? &p->values[i] : nullptr;
  }
  bool contains(uint64_t id) { return find(id) != nullptr; }
  V& operator[](uint64_t id) {
    if (small_on_) {
      if (V* v = small_find(id)) return *v;
      if (count_ < kSmall) return small_insert(id);
      to_pages();
    }
    return paged(id);
  }
  size_t size() const { return count_; }

 private:
  // Up to kSmall entries in a table of 2 * kSmall slots (open addressing, ids are never 0).
  static constexpr size_t kSmall = 32, kSmallSlots = 2 * kSmall;
  static size_t small_home(uint64_t id) { return (id * 0x9e3779b97f4a7c15ULL) >> 58; }  // top 6 bits
  static_assert(kSmallSlots == 64, "small_home takes log2(kSmallSlots) bits");
  V* small_find(uint64_t id) {
    for (size_t i = small_home(id);; i = (i + 1) & (kSmallSlots - 1)) {
      if (small_ids_[i] == id) return &small_values_[i];
      if (small_ids_[i] == 0) return nullptr;
    }
  }
  V& small_insert(uint64_t id) {
    size_t i = small_home(id);
    while (small_ids_[i] != 0) i = (i + 1) & (kSmallSlots - 1);
    small_ids_[i] = id;
    ++count_;
    return small_values_[i];
  }
  void to_pages() {
    small_on_ = false;
    for (size_t i = 0; i < kSmallSlots; ++i)
      if (small_ids_[i] != 0) {
        --count_;  // (paged counts it again)
        paged(small_ids_[i]) = std::move(small_values_[i]);
        small_values_[i] = V();
      }
  }
  V& paged(uint64_t id) {
    Page* p = page(id >> kPageBits, true);
    uint64_t i = id & (kPageSize - 1);
    if (!((p->present[i >> 6] >> (i & 63)) & 1)) ++count_;
    p->present[i >> 6] |= uint64_t{1} << (i & 63);
    return p->values[i];
  }
  // Open-addressing table from page number to page, behind a small direct-mapped cache of recent
  // pages: a rewrite alternates between old nodes (low ids) and the nodes it creates (high ids),
  // so a single "last page" would thrash.
  Page* page(uint64_t no, bool create) {
    Recent& r = recent_[no & (kRecent - 1)];
    if (r.no == no && r.page) [[likely]] return r.page;
    return page_slow(no, create, r);
  }
  // Out of line, so the hit path above inlines into every lookup without the spills of this one.
  [[gnu::noinline]] Page* page_slow(uint64_t no, bool create, Recent& r) {
    if (!slots_.empty()) {
      for (size_t i = mix64(no) & mask_;; i = (i + 1) & mask_) {
        if (!slots_[i].page) break;
        if (slots_[i].no == no) return (r = {no, slots_[i].page}).page;
      }
    }
    if (!create) return nullptr;
    if ((pages_.size() + 1) * 2 > slots_.size()) grow();
    pages_.push_back(std::make_unique<Page>());
    Page* p = pages_.back().get();
    insert(no, p);
    return (r = {no, p}).page;
  }
  void insert(uint64_t no, Page* p) {
    size_t i = mix64(no) & mask_;
    while (slots_[i].page) i = (i + 1) & mask_;
    slots_[i] = {no, p};
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 16 : old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& s : old)
      if (s.page) insert(s.no, s.page);
  }
  struct Slot {
    uint64_t no = 0;
    Page* page = nullptr;
  };
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  std::vector<std::unique_ptr<Page>> pages_;
  Recent recent_[kRecent];
  size_t count_ = 0;
  bool small_on_ = true;
  uint64_t small_ids_[kSmallSlots] = {};
  V small_values_[kSmallSlots]{};  // (value-initialized, as a page's values are)
};

}  // namespace kiln
