// codegen/peel.cpp - a padded loop runs its partial last iteration apart.
//
// PADTO grows an axis to a multiple of its vector and unroll widths and gates every access along
// it (opt.cpp). After the splits only the last iteration of the loop that is left reaches past
// the end, yet the gate sits on every access of every iteration: each vector load is a masked
// load (on AMD's Zen, microcode at about twice a plain load's cost) and a reduce other than a sum
// selects its identity per element. A row sum 1001 wide ran at 6x a 1000-wide one. So a REDUCE
// (or an END) over a loop r of M iterations whose gates hold on every iteration but the last
// becomes
//   REDUCE(x, r, inner..)  ->  REDUCE(x[r := r'], r', inner..)  op  REDUCE(x[r := M-1], inner'..)
//   END(s, outer.., r, inner..)  ->  END(GROUP(END(s[r := r'], r', inner..), END(s[r := M-1], inner'..)), outer..)
// with r' a new loop of M-1 iterations (none for M = 2: iteration 0 by itself). In the loop's copy
// the gates fold to true (symbolic bounds: r' < M-1) and go (INDEX's true gate rule); the last
// iteration keeps them. Loops that close inside the last iteration's copy get fresh ranges
// (inner'), since a range closes at one END. "Hold on every iteration but the last" is what the
// simplifier proves: the peel is kept only where the loop's copy has fewer gates than the body,
// so a window's edge test (a convolution's padding, which depends on the output position too)
// leaves the loop alone, and a prefetch's gate or an index clamp does not count (a copy of the
// body costs more than they do).
// A PADTO(axis, amount, gated) among the given actions leaves its axis' loops alone: whether the
// peel pays depends on how the backend compiles the shorter loop (LLVM may unroll a register
// tile's loop once its body shrinks and spill the tile: a stride-2 convolution ran 1.3x slower
// peeled, while a batch-4 one ran 1.17x faster), so the search times both.
// Reduce loops are peeled on every target (they stay loops in a GPU's work item, except a grouped
// reduce's, whose parts would each meet in local memory behind a barrier); output loops only
// where they stay loops (no workgroups: a GPU's are launch indices). Runs after the actions (they
// pick the loop that is left) and before the expander (the gates are still scalar comparisons the
// bounds can decide).
#include <algorithm>

#include "codegen/opt/opt.hpp"
#include "codegen/passes.hpp"
#include "codegen/target.hpp"
#include "ir/traverse.hpp"
#include "rewrite/graph_rewrite.hpp"
#include "rewrite/pattern_matcher.hpp"
#include "support/flat_map.hpp"
#include "symbolic/symbolic.hpp"

namespace kiln {

namespace {

using namespace pat;

// The nodes of x that depend on any of `ranges`.
PtrMap<char> dependents(const UOp& x, const std::vector<UOp>& ranges) {
  PtrMap<char> dep;
  for (const UOpNode* n : toposort_nodes(x)) {
    bool d = std::any_of(ranges.begin(), ranges.end(), [&](const UOp& r) { return n == r.node(); });
    for (uint32_t i = 0; i < n->nsrc && !d; ++i) d = dep.contains(n->srcs()[i].node());
    if (d) dep[n] = 1;
  }
  return dep;
}

// Loads and stores gated, and values selected, in x: along range r only, or (a null r) all (not a
// prefetch's gate, a cheap branch, nor an index clamp such as the next row's: not worth a copy of
// the loop body).
int gates(const UOp& x, const UOp& r = {}) {
  const PtrMap<char> dep = r ? dependents(x, {r}) : PtrMap<char>{};
  auto counts = [&](const UOpNode* cond) { return !r || dep.contains(cond); };
  int n = 0;
  for (const UOpNode* u : toposort_nodes(x)) {
    const UOpNode* index = (u->op == Ops::LOAD || u->op == Ops::STORE) ? u->srcs()[0].node() : nullptr;
    if (index && index->op == Ops::INDEX && index->nsrc > 2) n += counts(index->srcs()[2].node());
    if (u->op == Ops::WHERE && u->dtype != dtypes::index) n += counts(u->srcs()[0].node());
  }
  return n;
}

bool expanded(const UOp& r) { return range_type(r) == AxisType::UPCAST || range_type(r) == AxisType::UNROLL; }
// A range that stays a loop in a work item (not expanded, not a launch index).
bool is_loop(const UOp& r) {
  const AxisType t = range_type(r);
  return t == AxisType::LOOP || t == AxisType::REDUCE || t == AxisType::BLOCK;
}

struct PeelCtx {
  bool loops_stay = false;  // output loops stay loops (no launch dimension takes them)
  std::vector<int64_t> gated;  // axes of PADTO(axis, amount, gated): left as they are
  int64_t next_axis = 0;
  // one shorter loop per peeled range, so the copies of a reduce over it (a register tile) keep
  // sharing one loop
  PtrMap<UOp> loops;

  UOp fresh(const UOp& r, const UOp& size) {
    return UOp::make(Ops::RANGE, r.dtype(), {size},
                     Arg{std::vector<int64_t>{next_axis++, static_cast<int64_t>(range_type(r))}});
  }
};

// The loop ranges of u (a REDUCE or an END) that may be peeled.
bool peelable(const UOp& u, const UOp& r, const PeelCtx& ctx) {
  if (const_size(r) < 2) return false;
  if (std::find(ctx.gated.begin(), ctx.gated.end(), range_axis(r)) != ctx.gated.end()) return false;
  if (u.op() == Ops::REDUCE) return range_type(r) == AxisType::REDUCE;
  return ctx.loops_stay && range_type(r) == AxisType::LOOP;
}

// The last iteration's copy of what u (closing r and `inner`) computes: x with r := its last
// value and a fresh range for every loop that closes inside the copy, `inner` renamed alike (a
// range closes at one place). What depends on a renamed range is copied too, so the loops it
// closes are renamed as well, to a fixed point.
UOp last_copy(const UOp& x, const UOp& r, std::vector<UOp>& inner, PeelCtx& ctx) {
  std::vector<UOp> from{r}, to{UOp::cindex(const_size(r) - 1)};
  auto rename = [&](const UOp& q) {
    if (!is_loop(q) || std::find(from.begin(), from.end(), q) != from.end()) return;
    from.push_back(q);
    to.push_back(ctx.fresh(q, q.src(0)));
  };
  for (const UOp& q : inner) rename(q);
  for (size_t seen = 0; seen != from.size();) {
    seen = from.size();
    const PtrMap<char> dep = dependents(x, from);
    for (const UOp& u : toposort(x))
      if ((u.op() == Ops::REDUCE || u.op() == Ops::END) && dep.contains(u.node()))
        for (size_t i = 1; i < u.nsrc(); ++i) rename(u.src(i));
  }
  std::vector<std::pair<UOp, UOp>> fresh;
  for (size_t i = 0; i < from.size(); ++i) fresh.push_back({from[i], to[i]});
  for (UOp& q : inner) q = substitute(q, fresh);
  return simplify(substitute(x, fresh));
}

// Peels u (a REDUCE or an END) at the first of its ranges that qualifies, in the forms the file
// comment shows (an END's ranges run outermost first; a REDUCE or END left without ranges is its
// value).
UOp peel(const Match& m, PeelCtx& ctx) {
  const UOp& u = m[r0];
  for (size_t i = 1; i < u.nsrc(); ++i)
    if (range_type(u.src(i)) == AxisType::GROUP_REDUCE) return {};
  for (size_t i = 1; i < u.nsrc(); ++i) {
    const UOp& r = u.src(i);
    if (!peelable(u, r, ctx)) continue;
    if (gates(u.src(0), r) == 0) continue;
    // the first M-1 iterations: a loop, or iteration 0 by itself
    const int64_t size = const_size(r);
    const UOp* known = ctx.loops.find(r.node());
    const UOp loop = known ? *known : size == 2 ? UOp::cindex(0) : ctx.fresh(r, UOp::cindex(size - 1));
    UOp body = simplify(substitute(u.src(0), {{r, loop}}));
    if (gates(body) >= gates(u.src(0))) continue;  // (an unused fresh axis id is harmless)
    if (!known && size > 2) ctx.loops[r.node()] = loop;
    auto closed = [&](const UOp& x, std::vector<UOp> ranges) {
      if (ranges.empty()) return x;
      ranges.insert(ranges.begin(), x);
      return UOp::make(u.op(), u.dtype(), ranges, u.arg());
    };
    const auto at = static_cast<std::ptrdiff_t>(i);
    if (u.op() == Ops::REDUCE) {
      std::vector<UOp> main(u.src().begin() + 1, u.src().end()), inner = main;
      inner.erase(inner.begin() + at - 1);
      if (size > 2) main[i - 1] = loop;
      else main = inner;
      const UOp last = last_copy(u.src(0), r, inner, ctx);
      return UOp::alu(static_cast<Ops>(u.arg_ints()[0]), {closed(body, main), closed(last, inner)});
    }
    // An UPCAST listed outside r goes inside both parts (the expander copies what its END closes:
    // a copy of the loop over r' would close r' twice), a THREAD inside r stays outside (gpudims
    // drops it from the one END that lists it).
    std::vector<UOp> outer, inner;
    for (size_t j = 1; j < u.nsrc(); ++j)
      if (j != i) (expanded(u.src(j)) || (j > i && is_loop(u.src(j))) ? inner : outer).push_back(u.src(j));
    std::vector<UOp> main = inner;
    if (size > 2) main.insert(main.begin(), loop);
    const UOp last = last_copy(u.src(0), r, inner, ctx);
    return closed(UOp::make(Ops::GROUP, dtypes::void_, {closed(body, main), closed(last, inner)}), outer);
  }
  return {};
}

}  // namespace

bool peel_may_take(AxisType type, const Target& target) {
  return type == AxisType::REDUCE || (type == AxisType::LOOP && !target.has(KILN_TARGET_HAS_LOCAL));
}

UOp peel_partial_iterations(const UOp& ast, const Target& target, const std::vector<Opt>* given) {
  static const PatternMatcher pm{rule(UPat::ops({Ops::REDUCE, Ops::END}).allow_any_len().named(r0), peel)};
  PeelCtx ctx;
  ctx.loops_stay = peel_may_take(AxisType::LOOP, target);
  if (given)
    for (const Opt& o : *given)
      if (o.op == OptOp::PADTO && o.gated) ctx.gated.push_back(o.axis);
  for (const UOp& r : ranges_of(ast)) ctx.next_axis = std::max(ctx.next_axis, range_axis(r) + 1);
  return graph_rewrite(ast, pm, ctx, "peel partial iterations");
}

}  // namespace kiln
