// rewrite/graph_rewrite.hpp - the rewrite driver.
//
// graph_rewrite rewrites bottom-up: a node is rewritten after its sources, and every node a rule
// produces is itself rewritten, so the result is a fixed point of the matcher. Results are
// memoised per node. A rule chain that never settles (A -> B -> A ...) stops with a kiln::Error
// naming the pass and the rules that kept firing.
//
// graph_rewrite_topdown rewrites a node (to a fixed point) before visiting its sources, then
// rebuilds it over the rewritten sources; use it for passes that push information downwards.
//
// Every call is named; KILN_DEBUG>=6 prints, per call, the nodes visited, the rewrites, the time
// and the hit count of every rule that fired (by source location).
#pragma once
#include "rewrite/pattern_matcher.hpp"

namespace kiln {

UOp graph_rewrite(const UOp& root, const PatternMatcher& pm, void* ctx = nullptr, const char* name = "rewrite");
UOp graph_rewrite_topdown(const UOp& root, const PatternMatcher& pm, void* ctx = nullptr, const char* name = "rewrite");

template <typename Ctx>
UOp graph_rewrite(const UOp& root, const PatternMatcher& pm, Ctx& ctx, const char* name) {
  return graph_rewrite(root, pm, static_cast<void*>(&ctx), name);
}
template <typename Ctx>
UOp graph_rewrite_topdown(const UOp& root, const PatternMatcher& pm, Ctx& ctx, const char* name) {
  return graph_rewrite_topdown(root, pm, static_cast<void*>(&ctx), name);
}

// A rewrite chain longer than this (for one node) is treated as a loop.
inline constexpr int kRewriteChainLimit = 4096;

}  // namespace kiln
