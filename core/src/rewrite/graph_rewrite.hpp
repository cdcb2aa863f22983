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
// traced_step runs one named step of a pass list (the scheduler's, schedule/passes.cpp, and
// codegen's, codegen/pipeline.cpp), a rule set or a hand-written walk alike, and traces it at the
// same level: a line "step 'NAME': A -> B nodes, T ms" after the lines of the rewrites inside it,
// each of which says "in step 'NAME'". KILN_DEBUG>=7 also prints the IR after every step, and
// KILN_TRACE records each step as an event (support/trace.hpp). A rewrite outside any step says
// nothing more, so a trace shows what ran outside the pass list.
#pragma once
#include <concepts>
#include <string>
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

// The bookkeeping of traced_step, for steps over UOps and over other IRs (the scheduler's
// template): the innermost running step's name (for the rewrites inside it), its line at
// KILN_DEBUG>=6, its IR at >=7, its trace event.
class StepScope {
 public:
  StepScope(const char* name, const UOp& in);  // a step over a UOp graph
  // A step over another IR: `size()` says how big its input is ("812 nodes"); called at KILN_DEBUG>=6 only.
  template <typename Size>
    requires std::invocable<Size>
  StepScope(const char* name, Size&& size) : StepScope(name) {
    if (logged_) size_in_ = std::forward<Size>(size)();
  }
  ~StepScope();
  StepScope(const StepScope&) = delete;
  StepScope& operator=(const StepScope&) = delete;
  void finish(const UOp& out);
  // `size` and `dump` (the whole IR, for KILN_DEBUG>=7) are called only when asked for.
  template <typename Size, typename Dump>
  void finish(Size&& size, Dump&& dump) {
    if (logged_) report(std::forward<Size>(size)(), debug_ir() ? std::forward<Dump>(dump)() : std::string());
  }
  static const char* current();  // the innermost step running on this thread, or nullptr

 private:
  explicit StepScope(const char* name);
  static bool debug_ir();
  void report(const std::string& size_out, const std::string& ir);
  const char* name_;
  const char* outer_;
  bool logged_, traced_;
  std::string size_in_;
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
