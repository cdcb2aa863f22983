// rewrite/graph_rewrite.cpp - iterative bottom-up and top-down drivers with memoisation.
//
// The memo table maps node ids (never reused, so a node freed during the pass cannot alias a new
// one) to results, in pages of consecutive ids for locality.
#include "rewrite/graph_rewrite.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>

#include "ir/print.hpp"
#include "ir/traverse.hpp"
#include "ir/uop_access.hpp"
#include "support/check.hpp"
#include "support/env.hpp"
#include "support/id_map.hpp"
#include "support/trace.hpp"

namespace kiln {

namespace {

using Memo = IdMap<UOp>;

// Per-call statistics; only collected when KILN_DEBUG >= 6.
class Trace {
 public:
  Trace(const PatternMatcher& pm, const char* name) : pm_(pm), name_(name), on_(debug_level() >= 6) {
    if (on_) start_ = std::chrono::steady_clock::now();
  }
  void visit() { ++visited_; }
  void hit(int rule) {
    ++rewrites_;
    recent_[recent_n_++ % kRecent] = rule;
    if (on_) ++hits_[rule];
  }
  // The rules that fired last, for the loop error.
  std::string recent_rules() const {
    std::map<int, int> count;
    for (uint64_t i = 0; i < std::min<uint64_t>(recent_n_, kRecent); ++i) ++count[recent_[i]];
    std::string s;
    for (auto [r, c] : count) s += cat("\n  ", pm_.rule_at(r).where(), " (", c, " of the last ", std::min<uint64_t>(recent_n_, kRecent), " rewrites)");
    return s;
  }
  ~Trace() {
    if (!on_) return;
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
    const char* step = StepScope::current();
    std::string out = cat("graph_rewrite '", name_, "'", step ? cat(" in step '", step, "'") : std::string{}, ": ", visited_, " nodes, ", rewrites_, " rewrites, ", ms, " ms");
    std::vector<std::pair<int, int>> rows(hits_.begin(), hits_.end());
    std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.second > b.second; });
    for (auto [r, c] : rows) out += cat("\n  ", c, "\t", pm_.rule_at(r).where());
    log_line(out);
  }

 private:
  static constexpr int kRecent = 64;
  const PatternMatcher& pm_;
  const char* name_;
  bool on_;
  std::chrono::steady_clock::time_point start_;
  uint64_t visited_ = 0, rewrites_ = 0, recent_n_ = 0;
  int recent_[kRecent] = {};
  std::map<int, int> hits_;
};

[[noreturn]] void loop_error(const char* name, const Trace& trace) {
  fail(ErrorCode::internal, "graph_rewrite '", name, "': rewrite did not reach a fixed point after ", kRewriteChainLimit,
       " chained rewrites (a rule cycle?); rules that kept firing:", trace.recent_rules());
}

// Rebuilds `n` over memoised sources; returns n itself when no source changed.
UOp rebuild(const UOp& n, Memo& memo) {
  std::span<const UOp> src = n.src();
  size_t i = 0;
  for (; i < src.size(); ++i)
    if (!(*memo.find(src[i].id()) == src[i])) break;
  if (i == src.size()) return n;
  // most nodes have a few sources: keep them on the stack (this runs for every changed node)
  constexpr size_t kInline = 8;
  UOp inline_buf[kInline];
  std::vector<UOp> heap;
  std::span<UOp> fresh = src.size() <= kInline ? std::span<UOp>(inline_buf, src.size())
                                               : std::span<UOp>(heap = std::vector<UOp>(src.size()));
  std::copy(src.begin(), src.begin() + i, fresh.begin());
  for (; i < src.size(); ++i) fresh[i] = *memo.find(src[i].id());
  return n.replace_src(fresh);
}

// Every source of `u` is memoised to itself: rewriting `u` needs nothing below it first.
bool sources_final(const UOp& u, Memo& memo) {
  for (const UOp& s : u.src()) {
    const UOp* m = memo.find(s.id());
    if (!m || !(*m == s)) return false;
  }
  return true;
}

thread_local const char* t_step = nullptr;

}  // namespace

StepScope::StepScope(const char* name)
    : name_(name), outer_(t_step), logged_(debug_level() >= 6), traced_(trace::on()) {
  t_step = name_;
  if (logged_ || traced_) start_ns_ = trace::now_ns();
}

StepScope::StepScope(const char* name, const UOp& in) : StepScope(name) {
  if (logged_) size_in_ = std::to_string(toposort_nodes(in).size());
}

StepScope::~StepScope() {
  t_step = outer_;
  if (traced_) trace::event("step", name_, start_ns_, trace::now_ns());
}

bool StepScope::debug_ir() { return debug_level() >= 7; }

void StepScope::finish(const UOp& out) {
  if (logged_) report(cat(toposort_nodes(out).size(), " nodes"), debug_ir() ? print_graph(out) : std::string());
}

void StepScope::report(const std::string& size_out, const std::string& ir) {
  double ms = static_cast<double>(trace::now_ns() - start_ns_) / 1e6;
  log_line(cat("step '", name_, "': ", size_in_, " -> ", size_out, ", ", ms, " ms"));
  if (!ir.empty()) log_line(cat("IR after step '", name_, "':\n", ir));
}

const char* StepScope::current() { return t_step; }

UOp graph_rewrite(const UOp& root, const PatternMatcher& pm, void* ctx, const char* name) {
  Trace trace(pm, name);
  Memo memo;
  // A frame points at a handle that outlives it: the root, a source slot inside a node whose own
  // frame is deeper in the stack, or a rewrite result parked in `links`. So the walk itself does
  // no reference counting. Stages: 0 push sources; 1 sources done, rewrite; 2 the rewrite result
  // links.back() is finished, take its result.
  struct Frame {
    const UOp* n;
    uint8_t stage;
  };
  std::vector<Frame> stack;
  std::deque<UOp> links;  // one per stage-2 frame, innermost last; a deque keeps addresses stable
  stack.push_back({&root, 0});
  while (!stack.empty()) {
    const Frame f = stack.back();
    stack.pop_back();
    const UOp& n = *f.n;
    const uint64_t key = n.id();
    if (f.stage == 0) {
      if (memo.contains(key)) continue;
      trace.visit();
      stack.push_back({f.n, 1});
      std::span<const UOp> src = n.src();
      // the sources are usually cold: start all their loads before reading the first id
      for (const UOp& s : src) __builtin_prefetch(&s.node()->id);
      for (size_t i = src.size(); i-- > 0;)
        if (!memo.contains(src[i].id())) stack.push_back({&src[i], 0});
    } else if (f.stage == 1) {
      if (memo.contains(key)) continue;
      UOp next = rebuild(n, memo);
      if (next == n) {
        int fired = -1;
        next = pm.rewrite(n, ctx, &fired);
        if (!next) {
          memo[key] = n;
          continue;
        }
        trace.hit(fired);
      }
      // Usually the result is built from nodes already rewritten: then it is rewritten here, in a
      // loop, instead of going through the stack (which would only find its sources done).
      UOp result;
      std::vector<UOp> passed;  // intermediate results, memoised to the final one
      for (int steps = 0;; ++steps) {
        if (const UOp* done = memo.find(next.id())) {
          result = *done;
          break;
        }
        if (!sources_final(next, memo)) break;
        trace.visit();
        int fired = -1;
        UOp after = pm.rewrite(next, ctx, &fired);
        if (!after) {
          result = next;
          break;
        }
        trace.hit(fired);
        if (steps >= kRewriteChainLimit) loop_error(name, trace);
        passed.push_back(std::move(next));
        next = std::move(after);
      }
      if (result) {
        for (const UOp& p : passed) memo[p.id()] = result;
        memo[next.id()] = result;
        memo[key] = std::move(result);
        continue;
      }
      if (links.size() >= static_cast<size_t>(kRewriteChainLimit)) loop_error(name, trace);
      links.push_back(std::move(next));
      stack.push_back({f.n, 2});
      stack.push_back({&links.back(), 0});
    } else {
      UOp done = *memo.find(links.back().id());  // (copied first: writing a key may move the memo's entries)
      memo[key] = std::move(done);
      links.pop_back();
    }
  }
  return *memo.find(root.id());
}

UOp graph_rewrite_topdown(const UOp& root, const PatternMatcher& pm, void* ctx, const char* name) {
  Trace trace(pm, name);
  Memo memo;
  struct Frame {
    UOp n;     // the original node (memo key)
    UOp cur;   // after rewriting n to a fixed point
    bool expanded;
  };
  std::vector<Frame> stack;
  stack.push_back({root, {}, false});
  while (!stack.empty()) {
    Frame f = std::move(stack.back());
    stack.pop_back();
    if (!f.expanded && memo.contains(f.n.id())) continue;
    if (!f.expanded) {
      trace.visit();
      UOp cur = f.n;
      for (int steps = 0;; ++steps) {
        int fired = -1;
        UOp next = pm.rewrite(cur, ctx, &fired);
        if (!next) break;
        trace.hit(fired);
        if (steps >= kRewriteChainLimit) loop_error(name, trace);
        cur = std::move(next);
      }
      stack.push_back({f.n, cur, true});
      std::span<const UOp> src = cur.src();
      for (size_t i = src.size(); i-- > 0;)
        if (!memo.contains(src[i].id())) stack.push_back({src[i], {}, false});
      continue;
    }
    memo[f.n.id()] = rebuild(f.cur, memo);
  }
  return *memo.find(root.id());
}

}  // namespace kiln
