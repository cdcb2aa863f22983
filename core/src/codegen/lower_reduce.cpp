// codegen/lower_reduce.cpp - REDUCE becomes a register accumulator.
//
//   acc   = DEFINE_REG (one element of the reduce's dtype, possibly a vector)
//   init  : acc[0] = identity            placed with the output's loops (AFTER the input ranges)
//   update: acc[0] = acc[0] op body      inside the reduce ranges (AFTER init and the ranges)
//   END(update, reduce ranges)           closes the loop
//   value : acc[0]                       read AFTER the END
// REDUCEs over the very same ranges (copies made by the expander) share one END, so their
// updates run in one loop: a register tile. Innermost reduces are lowered first. This part stays
// a walk: which REDUCEs share a loop is a decision over the whole kernel, not a local rewrite.
//
// Grouped reduces (GROUP: some of the REDUCE's ranges became lidx SPECIALs) meet in local memory,
// by two rules (split_grouped_reduce, gate_group_store):
//   partial = REDUCE(body, its loop ranges)   each work item's share, as above
//   local[row * size + lid] = partial; BARRIER    (row: the item's place among the workgroup's
//                                                 other items, LOCAL outputs; 0 without)
//   value = REDUCE(local[row * size + j], j in 0..group size)   every item folds its row's partials
// and the kernel's stores to global memory that do not depend on the group index are gated to
// lid == 0 (every item holds the same value).
#include <algorithm>
#include <cmath>

#include "codegen/ids.hpp"
#include "codegen/passes.hpp"
#include "ir/alu.hpp"
#include "ir/traverse.hpp"
#include "rewrite/graph_rewrite.hpp"
#include "support/check.hpp"

namespace kiln {

using namespace pat;

namespace {

UOp identity(Ops op, DType d) { return const_of(d, reduce_identity(op, d)); }

bool contains_reduce(const UOp& x) {
  for (const UOpNode* n : toposort_nodes(x))
    if (n->op == Ops::REDUCE) return true;
  return false;
}

bool is_group_index(const UOp& r) { return r.op() == Ops::SPECIAL && r.arg_string().rfind("lidx", 0) == 0; }

// What the grouped-reduce rules share: local buffer and fold-loop numbering, and the group
// indices met so far (the stores that ignore them are gated).
struct GroupCtx {
  std::vector<UOp> group_indices;
  int64_t local_id = 0, fold_axis = ids::kFoldAxes.first;  // axis ids of the fold loops (codegen/ids.hpp)
};

// A REDUCE over some group indices: each item's partial goes to local memory, every item folds
// the partials after a barrier.
UOp split_grouped_reduce(const Match& m, GroupCtx& ctx) {
  const UOp& u = m[r0];
  std::vector<UOp> loops, lids;
  for (size_t i = 1; i < u.nsrc(); ++i) (is_group_index(u.src(i)) ? lids : loops).push_back(u.src(i));
  if (lids.empty()) return {};
  std::vector<UOp> partial_src{u.src(0)};
  partial_src.insert(partial_src.end(), loops.begin(), loops.end());
  UOp partial = loops.empty() ? u.src(0) : UOp::make(Ops::REDUCE, u.dtype(), partial_src, u.arg());
  UOp lid = UOp::cindex(0);
  int64_t size = 1;
  for (const UOp& l : lids) {
    KILN_CHECK(l.src(0).is_const(), "a grouped reduce needs a constant group size");
    lid = lid * l.src(0).arg_int() + l;
    size *= l.src(0).arg_int();
    if (std::find(ctx.group_indices.begin(), ctx.group_indices.end(), l) == ctx.group_indices.end()) ctx.group_indices.push_back(l);
  }
  // the workgroup's other items (LOCAL outputs: lidx the reduce does not fold) each keep their own
  // row of partials: without it items of different outputs would fold each other's
  UOp row = UOp::cindex(0);
  int64_t rows = 1;
  for (const UOp& o : toposort(u.src(0)))
    if (is_group_index(o) && std::find(lids.begin(), lids.end(), o) == lids.end()) {
      KILN_CHECK(o.src(0).is_const(), "a workgroup item index needs a constant size");
      row = row * o.src(0).arg_int() + o;
      rows *= o.src(0).arg_int();
    }
  UOp base = rows == 1 ? UOp::cindex(0) : row * size;
  UOp mem = UOp::make(Ops::DEFINE_LOCAL, u.dtype().ptr(size * rows, AddrSpace::local), {}, Arg{ctx.local_id++});
  UOp put = UOp::make(Ops::STORE, dtypes::void_, {UOp::make(Ops::INDEX, mem.dtype(), {mem, rows == 1 ? lid : base + lid}), partial});
  UOp bar = UOp::make(Ops::BARRIER, dtypes::void_, {put});
  UOp j = UOp::make(Ops::RANGE, dtypes::index, {UOp::cindex(size)},
                    Arg{std::vector<int64_t>{ctx.fold_axis++, static_cast<int64_t>(AxisType::REDUCE)}});
  UOp ready = UOp::make(Ops::AFTER, mem.dtype(), {mem, bar});
  UOp part = UOp::make(Ops::LOAD, u.dtype(), {UOp::make(Ops::INDEX, mem.dtype(), {ready, rows == 1 ? j : base + j})});
  return UOp::make(Ops::REDUCE, u.dtype(), {part, j}, Arg{std::vector<int64_t>{u.arg_ints()[0]}});
}

// A store to global memory whose address ignores the group index: every item holds the same
// value, only item 0 writes (gated once: a store already gated is left alone).
UOp gate_group_store(const Match& m, GroupCtx& ctx) {
  const UOp& index = m[r1];
  if (index.src(0).dtype().addrspace() != AddrSpace::global) return {};
  for (const UOpNode* n : toposort_nodes(index.src(1)))
    for (const UOp& g : ctx.group_indices)
      if (n == g.node()) return {};
  UOp first = UOp::cbool(true);
  for (const UOp& g : ctx.group_indices) first = first & g.eq(UOp::cindex(0));
  if (index.nsrc() > 2 && (index.src(2) == first || (index.src(2).op() == Ops::AND && index.src(2).src(1) == first))) return {};
  std::vector<UOp> isrc{index.src(0), index.src(1), index.nsrc() > 2 ? index.src(2) & first : first};
  return m[r0].replace_src({index.replace_src(isrc), m[x]});
}

// Grouped reduces meet in local memory; then the stores that ignore the group are gated (a second
// rewrite: every group index must be known before any store is judged).
UOp lower_groups(const UOp& ast) {
  static const PatternMatcher split{rule(UPat::op(Ops::REDUCE).allow_any_len().named(r0), split_grouped_reduce)};
  static const PatternMatcher gate{
      rule(UPat::op(Ops::STORE, {UPat::op(Ops::INDEX).allow_any_len().named(r1), x}).named(r0), gate_group_store)};
  GroupCtx ctx;
  UOp out = graph_rewrite(ast, split, ctx, "split grouped reduces");
  return ctx.group_indices.empty() ? out : graph_rewrite(out, gate, ctx, "gate group stores");
}

}  // namespace

UOp lower_reduces(const UOp& ast) {
  UOp out = lower_groups(ast);
  int64_t acc_id = ids::kAccumulatorRegs.first;
  for (;;) {
    // innermost reduces, grouped by their ranges (in first-seen order, so output is deterministic)
    std::vector<std::pair<std::vector<UOp>, std::vector<UOp>>> groups;
    for (const UOp& u : toposort(out)) {
      if (u.op() != Ops::REDUCE || contains_reduce(u.src(0))) continue;
      std::vector<UOp> ranges(u.src().begin() + 1, u.src().end());
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == ranges; });
      if (it == groups.end()) groups.push_back({ranges, {u}});
      else it->second.push_back(u);
    }
    if (groups.empty()) return out;
    std::vector<std::pair<UOp, UOp>> repl;
    for (const auto& [ranges, reduces] : groups) {
      // the loops the accumulators live in: every range the bodies use except the reduce's own
      std::vector<UOp> bodies;
      for (const UOp& r : reduces) bodies.push_back(r.src(0));
      // (a loop already closed inside the bodies, as a grouped reduce's partial loop, is not one)
      std::vector<UOp> input, closed;
      std::vector<UOp> body_nodes = toposort(UOp::make(Ops::GROUP, dtypes::void_, bodies));
      for (const UOp& u : body_nodes)
        if (u.op() == Ops::END) closed.insert(closed.end(), u.src().begin() + 1, u.src().end());
      for (const UOp& u : body_nodes)
        if (u.op() == Ops::RANGE && std::find(ranges.begin(), ranges.end(), u) == ranges.end() &&
            std::find(closed.begin(), closed.end(), u) == closed.end())
          input.push_back(u);
      std::vector<UOp> accs, updates;
      for (const UOp& r : reduces) {
        Ops op = static_cast<Ops>(r.arg_ints()[0]);
        UOp acc = UOp::make(Ops::DEFINE_REG, r.dtype().ptr(1, AddrSpace::reg), {}, Arg{acc_id++});
        UOp zero = UOp::cindex(0);
        std::vector<UOp> at_loops{acc};
        at_loops.insert(at_loops.end(), input.begin(), input.end());
        UOp scoped = input.empty() ? acc : UOp::make(Ops::AFTER, acc.dtype(), at_loops);
        UOp init = UOp::make(Ops::STORE, dtypes::void_, {UOp::make(Ops::INDEX, acc.dtype(), {scoped, zero}), identity(op, r.dtype())});
        std::vector<UOp> ready_src{acc, init};
        ready_src.insert(ready_src.end(), ranges.begin(), ranges.end());
        UOp ready = UOp::make(Ops::AFTER, acc.dtype(), ready_src);
        UOp slot = UOp::make(Ops::INDEX, acc.dtype(), {ready, zero});
        UOp cur = UOp::make(Ops::LOAD, r.dtype(), {slot});
        updates.push_back(UOp::make(Ops::STORE, dtypes::void_, {slot, UOp::alu(op, {cur, r.src(0)})}));
        accs.push_back(acc);
      }
      std::vector<UOp> end_src{updates.size() == 1 ? updates[0] : UOp::make(Ops::GROUP, dtypes::void_, updates)};
      end_src.insert(end_src.end(), ranges.begin(), ranges.end());
      UOp end = UOp::make(Ops::END, dtypes::void_, end_src);
      for (size_t i = 0; i < reduces.size(); ++i) {
        UOp done = UOp::make(Ops::AFTER, accs[i].dtype(), {accs[i], end});
        repl.push_back({reduces[i], UOp::make(Ops::LOAD, reduces[i].dtype(), {UOp::make(Ops::INDEX, accs[i].dtype(), {done, UOp::cindex(0)})})});
      }
    }
    out = substitute(out, repl);
  }
}

}  // namespace kiln
