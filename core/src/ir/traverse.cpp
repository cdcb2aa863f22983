// ir/traverse.cpp - toposort and substitute with explicit stacks.
#include "ir/traverse.hpp"

#include <algorithm>
#include <cstdint>

#include "ir/uop_access.hpp"
#include "support/flat_map.hpp"

namespace kiln {

std::vector<const UOpNode*> toposort_nodes(const UOp& root, const std::function<bool(const UOpNode*)>& stop) {
  std::vector<const UOpNode*> out;
  if (!root) return out;
  PtrMap<char> seen(64);
  // (node, next source index to visit); room for a small graph up front (an eager call's graph
  // is a few dozen nodes: growing both vectors one doubling at a time was a dozen allocations)
  std::vector<std::pair<const UOpNode*, uint32_t>> stack;
  stack.reserve(32);
  out.reserve(64);
  stack.push_back({root.node(), 0});
  seen[root.node()] = 1;
  bool descend_root = !(stop && stop(root.node()));
  if (!descend_root) return {root.node()};
  while (!stack.empty()) {
    auto& [n, i] = stack.back();
    if (i < n->nsrc) {
      const UOpNode* c = n->srcs()[i++].node();
      if (seen.emplace(c).second) {
        if (stop && stop(c)) out.push_back(c);
        else stack.push_back({c, 0});
      }
      continue;
    }
    out.push_back(n);
    stack.pop_back();
  }
  return out;
}

std::vector<const UOpNode*> toposort_nodes(const UOp& root) { return toposort_nodes(root, nullptr); }

std::vector<UOp> toposort(const UOp& root) {
  std::vector<UOp> out;
  for (const UOpNode* n : toposort_nodes(root)) out.push_back(UOpAccess::from_node(n));
  return out;
}

UOp substitute(const UOp& root, const std::vector<std::pair<UOp, UOp>>& replacements) {
  // Ids grow with creation and a node's sources are older than it, so a node older than every
  // `from` cannot contain one: the walk stops there (the expander substitutes each lane into
  // loads whose buffers and outer index terms predate the lane's range).
  uint64_t oldest = UINT64_MAX;
  for (const auto& [from, to] : replacements) oldest = std::min(oldest, from.id());
  if (!root || root.id() < oldest) return root;
  PtrMap<UOp> done(replacements.size() * 2 + 16);
  for (const auto& [from, to] : replacements) done[from.node()] = to;
  auto old_or_done = [&](const UOpNode* x) { return x->id < oldest || done.contains(x); };
  for (const UOpNode* n : toposort_nodes(root, old_or_done))
    if (!old_or_done(n)) done[n] = with_rebuilt_srcs(n, done);
  return *done.find(root.node());
}

UOp with_rebuilt_srcs(const UOpNode* n, const PtrMap<UOp>& done) {
  uint32_t first = 0;  // the first source that changes (most nodes a substitute walks keep theirs)
  for (; first < n->nsrc; ++first) {
    const UOp* r = done.find(n->srcs()[first].node());
    if (r && !(*r == n->srcs()[first])) break;
  }
  if (first == n->nsrc) return UOpAccess::from_node(n);
  std::vector<UOp> src;
  src.reserve(n->nsrc);
  for (uint32_t i = 0; i < n->nsrc; ++i) {
    const UOp& s = n->srcs()[i];
    const UOp* r = i < first ? nullptr : done.find(s.node());
    src.push_back(r ? *r : s);
  }
  return UOpAccess::from_node(n).replace_src(src);
}

uint32_t tree_size(const UOp& u) {
  fill_cache(u.node(), kTreeSizeCached, [](const UOpNode* n) {
    uint64_t size = 1;
    for (uint32_t i = 0; i < n->nsrc; ++i) size += n->srcs()[i].node()->tree_size;
    n->tree_size = static_cast<uint32_t>(std::min<uint64_t>(size, kTreeSizeSaturated));
  });
  return u.node()->tree_size;
}

}  // namespace kiln
