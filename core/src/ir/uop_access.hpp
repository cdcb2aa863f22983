// ir/uop_access.hpp - internal access to UOp handles from raw nodes (traversals, caches).
#pragma once
#include <mutex>
#include <span>
#include <vector>

#include "kiln/uop.hpp"

namespace kiln {

struct UOpAccess {
  // A new handle to a node that is alive (held by some other handle).
  static UOp from_node(const UOpNode* n);
};

// An in-process key of a node (op, dtype, tag, arg) whose sources have the keys `src_keys`, one
// per source: equal fields over equal source keys give equal keys, so the key of a graph that is
// not built (the schedule cache keys a graph with its buffers replaced without replacing them, its
// other nodes by UOp::key). Cheaper than UOp::key's fingerprint (mix64 chains, about a quarter of
// the instructions) and, like hash(), not stable across builds: for in-memory tables only.
Key128 process_key(Ops op, DType dtype, int32_t tag, const Arg& arg, std::span<const Key128> src_keys);
inline Key128 process_key(const UOpNode* n, std::span<const Key128> src_keys) {
  return process_key(n->op, n->dtype, n->tag, n->arg, src_keys);
}

// Bits of UOpNode::cache_flags: which lazily computed cache of the node is filled.
enum CacheFlag : uint8_t { kKeyCached = 1, kBoundsCached = 2, kTreeSizeCached = 4 };

inline bool has_cache(const UOpNode* n, uint8_t flag) { return n->cache_flags.load(std::memory_order_acquire) & flag; }

// Threads that fill the same node's cache at once (interned nodes are shared: two kernels built
// in parallel meet in their constants and index math) take turns on one of these locks, so the
// cache is written once and published by the flag (release) to readers that test it (acquire).
std::mutex& cache_fill_lock(const UOpNode* n);

// compute(n) and the flag, unless another thread filled the cache first.
template <typename Compute>
void fill_one(const UOpNode* n, uint8_t flag, Compute& compute) {
  std::lock_guard<std::mutex> lock(cache_fill_lock(n));
  if (has_cache(n, flag)) return;
  compute(n);
  n->cache_flags.fetch_or(flag, std::memory_order_release);
}

// Fills one per-node cache for `root` and everything below it that lacks it: `compute(n)` runs on
// each such node after its sources (so it may read their caches) and stores the value; then the
// flag is set. Iterative, so million-deep graphs are fine; stops at nodes already cached.
template <typename Compute>
void fill_cache(const UOpNode* root, uint8_t flag, Compute compute) {
  if (has_cache(root, flag)) return;
  // usual case, a new node over cached sources: no traversal, no allocation
  bool srcs_cached = true;
  for (uint32_t i = 0; i < root->nsrc && srcs_cached; ++i) srcs_cached = has_cache(root->srcs()[i].node(), flag);
  if (srcs_cached) {
    fill_one(root, flag, compute);
    return;
  }
  std::vector<std::pair<const UOpNode*, bool>> stack{{root, false}};
  while (!stack.empty()) {
    auto [n, expanded] = stack.back();
    stack.pop_back();
    if (has_cache(n, flag)) continue;
    if (!expanded) {
      stack.push_back({n, true});
      for (uint32_t i = 0; i < n->nsrc; ++i)
        if (!has_cache(n->srcs()[i].node(), flag)) stack.push_back({n->srcs()[i].node(), false});
      continue;
    }
    fill_one(n, flag, compute);
  }
}

}  // namespace kiln
