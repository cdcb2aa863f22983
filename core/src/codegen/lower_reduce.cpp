// codegen/lower_reduce.cpp - REDUCE becomes a register accumulator.
//
//   acc   = DEFINE_REG (one element of the reduce's dtype, possibly a vector)
//   init  : acc[0] = identity            placed with the output's loops (AFTER the input ranges)
//   update: acc[0] = acc[0] op body      inside the reduce ranges (AFTER init and the ranges)
//   END(update, reduce ranges)           closes the loop
//   value : acc[0]                       read AFTER the END
// REDUCEs over the very same ranges (copies made by the expander) share one END, so their
// updates run in one loop: a register tile. Innermost reduces are lowered first.
#include <algorithm>
#include <cmath>

#include "codegen/passes.hpp"
#include "ir/traverse.hpp"
#include "support/check.hpp"

namespace kiln {

namespace {

UOp identity(Ops op, DType d) {
  if (op == Ops::ADD) return UOp::cvalue(d, 0);
  if (op == Ops::MUL) return UOp::cvalue(d, 1);
  if (d.is_float()) return UOp::cvalue(d, -INFINITY);
  if (d.is_bool()) return UOp::make(Ops::CONST, d, {}, Arg{false});
  return UOp::make(Ops::CONST, d, {}, Arg{d.imin()});
}

bool contains_reduce(const UOp& x) {
  for (const UOpNode* n : toposort_nodes(x))
    if (n->op == Ops::REDUCE) return true;
  return false;
}

}  // namespace

UOp lower_reduces(const UOp& ast) {
  UOp out = ast;
  int64_t acc_id = 0;
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
      std::vector<UOp> input;
      for (const UOp& u : toposort(UOp::make(Ops::GROUP, dtypes::void_, bodies)))
        if (u.op() == Ops::RANGE && std::find(ranges.begin(), ranges.end(), u) == ranges.end()) input.push_back(u);
      std::vector<UOp> accs, updates;
      for (const UOp& r : reduces) {
        Ops op = static_cast<Ops>(r.arg_ints()[0]);
        UOp acc = UOp::make(Ops::DEFINE_REG, r.dtype().ptr(1, AddrSpace::reg), {}, Arg{acc_id++});
        UOp zero = UOp::cint(dtypes::index, 0);
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
        repl.push_back({reduces[i], UOp::make(Ops::LOAD, reduces[i].dtype(), {UOp::make(Ops::INDEX, accs[i].dtype(), {done, UOp::cint(dtypes::index, 0)})})});
      }
    }
    out = substitute(out, repl);
  }
}

}  // namespace kiln
