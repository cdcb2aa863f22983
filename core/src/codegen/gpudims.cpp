// codegen/gpudims.cpp - ranges that map to launch dimensions become SPECIAL indices.
//
// CPU targets (HAS_THREADS): the THREAD ranges become digits of gidx0; each of global[0] work
// items runs one chunk (of each threaded axis). GPU targets (HAS_LOCAL): the innermost output ranges become gidx0..2 (the workgroup
// index) and LOCAL ranges split from them lidx0..2 (the index within the workgroup); GROUP_REDUCE
// ranges (grouped reductions) take the first dimensions as lidx, one workgroup wide (reduces that
// run one after the other share one). Other
// output ranges stay loops inside each work item.
#include <algorithm>

#include "codegen/opt/opt.hpp"
#include "codegen/passes.hpp"
#include "ir/traverse.hpp"
#include "codegen/target.hpp"
#include "support/check.hpp"

namespace kiln {

namespace {

UOp special(const std::string& name, const UOp& extent) {
  return UOp::make(Ops::SPECIAL, dtypes::index, {extent}, Arg{name});
}

// Rebuilds END nodes without the ranges in `gone`.
UOp drop_from_ends(const UOp& ast, const std::vector<std::pair<UOp, UOp>>& subst) {
  std::vector<std::pair<UOp, UOp>> repl;
  for (const UOp& u : toposort(ast)) {
    if (u.op() != Ops::END) continue;
    std::vector<UOp> src{u.src(0)};
    bool changed = false;
    for (size_t i = 1; i < u.nsrc(); ++i) {
      bool gone = false;
      for (const auto& [r, s] : subst) gone |= u.src(i) == r;
      if (gone) changed = true;
      else src.push_back(u.src(i));
    }
    if (changed) repl.push_back({u, src.size() == 1 ? u.src(0) : u.replace_src(src)});
  }
  UOp out = substitute(ast, repl);
  return substitute(out, subst);
}

}  // namespace

UOp add_gpudims(const UOp& ast, const Target& target, LaunchDims& dims) {
  UOp one = UOp::cindex(1);
  for (int d = 0; d < 3; ++d) dims.global[d] = one, dims.local[d] = one;
  std::vector<std::pair<UOp, UOp>> subst;
  if (target.has(KILN_TARGET_HAS_THREADS)) {
    // every THREAD range is one digit of gidx0, the first found the most significant
    std::vector<UOp> threads;
    for (const UOp& r : toposort(ast))
      if (r.op() == Ops::RANGE && range_type(r) == AxisType::THREAD) threads.push_back(r);
    if (threads.empty()) return ast;
    int64_t total = 1;
    for (const UOp& r : threads) total *= r.src(0).arg_int();
    UOp gidx = special("gidx0", UOp::cindex(total));
    int64_t below = 1;
    for (size_t i = threads.size(); i-- > 0;) {
      UOp digit = below == 1 ? gidx : gidx.idiv(below);
      subst.push_back({threads[i], i == 0 ? digit : digit.mod(threads[i].src(0))});
      below *= threads[i].src(0).arg_int();
    }
    dims.global[0] = UOp::cindex(total);
    return drop_from_ends(ast, subst);
  }
  if (!target.has(KILN_TARGET_HAS_LOCAL)) return ast;
  // output ranges in END order, each LOOP range followed by its LOCAL part (if split)
  std::vector<UOp> order;
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::END && (u.src(0).op() == Ops::STORE || u.src(0).op() == Ops::GROUP))
      for (size_t i = 1; i < u.nsrc(); ++i)
        if (range_type(u.src(i)) == AxisType::LOOP || range_type(u.src(i)) == AxisType::LOCAL) order.push_back(u.src(i));
  // grouped reduces take the first dimensions (lidx0, ...), outputs what is left (the rest stay
  // loops); a grouped reduce the same size as an earlier one that no value shares with it (a row
  // kernel's reduces: softmax's max, then its sum) takes that one's index: the same items reduce
  // the row again, one after the other
  int dim = 0;
  std::vector<UOp> grouped, lidx;
  for (const UOp& r : toposort(ast)) {
    if (r.op() != Ops::RANGE || range_type(r) != AxisType::GROUP_REDUCE) continue;
    auto same = std::find_if(grouped.begin(), grouped.end(),
                             [&](const UOp& g) { return g.src(0) == r.src(0) && independent(ast, g, r); });
    if (same != grouped.end()) {
      subst.push_back({r, lidx[static_cast<size_t>(same - grouped.begin())]});
      continue;
    }
    KILN_CHECK(dim < 3, "at most three grouped reduce axes fit the launch dimensions");
    lidx.push_back(special("lidx" + std::to_string(dim), r.src(0)));
    subst.push_back({r, lidx.back()});
    grouped.push_back(r);
    dims.local[dim] = r.src(0);
    ++dim;
  }
  for (size_t i = order.size(); i-- > 0 && dim < 3;) {
    const UOp& r = order[i];
    if (range_type(r) == AxisType::LOCAL) {
      KILN_CHECK(i > 0, "a LOCAL range follows its outer range");
      const UOp& outer = order[--i];
      subst.push_back({r, special("lidx" + std::to_string(dim), r.src(0))});
      subst.push_back({outer, special("gidx" + std::to_string(dim), outer.src(0))});
      dims.local[dim] = r.src(0);
      dims.global[dim] = outer.src(0);
    } else {
      subst.push_back({r, special("gidx" + std::to_string(dim), r.src(0))});
      dims.global[dim] = r.src(0);
    }
    ++dim;
  }
  return subst.empty() ? ast : drop_from_ends(ast, subst);
}

}  // namespace kiln
