// ir/traverse.hpp - iterative graph traversals (no recursion: graphs can be a million deep).
#pragma once
#include <functional>
#include <vector>

#include "kiln/uop.hpp"

namespace kiln {

template <typename V>
class PtrMap;

// Every node reachable from `root`, children before parents. Deterministic: sources are visited
// in order, so the same graph always gives the same order.
std::vector<const UOpNode*> toposort_nodes(const UOp& root);
std::vector<UOp> toposort(const UOp& root);
// The same, but does not descend into nodes for which `stop` returns true (they are included).
std::vector<const UOpNode*> toposort_nodes(const UOp& root, const std::function<bool(const UOpNode*)>& stop);

// The size of the expression tree under `u`: every use of a shared node counts, so it measures
// what rendering the expression would write out. Cached in the node; saturates at
// kTreeSizeSaturated (a DAG with heavy sharing can describe an astronomically large tree).
inline constexpr uint32_t kTreeSizeSaturated = 0xffffffffu;
uint32_t tree_size(const UOp& u);

// Replaces nodes by identity (a map from old to new) and rebuilds everything above them.
UOp substitute(const UOp& root, const std::vector<std::pair<UOp, UOp>>& replacements);

// For bottom-up rebuilds: `n` with each source replaced by its entry in `done` (if any), or `n`
// itself when nothing changed.
UOp with_rebuilt_srcs(const UOpNode* n, const PtrMap<UOp>& done);

}  // namespace kiln
