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
//
// traced_step runs one named step of a pass list (codegen/pipeline.cpp), a rule set or a
// hand-written walk alike, and traces it at the same level: a line "step 'NAME': A -> B nodes,
// T ms" after the lines of the rewrites inside it, each of which says "in step 'NAME'". A
// rewrite outside any step says nothing more, so a trace shows what ran outside the pass list.
#pragma once
#include <utility>

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

// The bookkeeping of traced_step: the innermost running step's name (for the rewrites inside it)
// and, when tracing, its line. Not for direct use.
class StepScope {
 public:
  StepScope(const char* name, const UOp& in);
  ~StepScope();
  StepScope(const StepScope&) = delete;
  StepScope& operator=(const StepScope&) = delete;
  void finish(const UOp& out);
  static const char* current();  // the innermost step running on this thread, or nullptr

 private:
  const char* name_;
  const char* outer_;
  bool on_;
  size_t nodes_in_ = 0;
  int64_t start_ns_ = 0;
};

template <typename F>
UOp traced_step(const char* name, const UOp& root, F&& fn) {
  StepScope scope(name, root);
  UOp out = std::forward<F>(fn)(root);
  scope.finish(out);
  return out;
}

// A rewrite chain longer than this (for one node) is treated as a loop.
inline constexpr int kRewriteChainLimit = 4096;

}  // namespace kiln
