// codegen/devectorize.cpp - vector values wider than the target's vectors become lanes.
//
// A vector op of k lanes over a target with narrower vectors becomes k scalar ops on GEPs of its
// sources, gathered back with VECTORIZE; contiguous vector loads and stores become k scalar
// loads and stores at consecutive indices, and so do masked ones (a gate per lane) on targets
// without masked vector accesses. Symbolic cleanup then folds GEP(VECTORIZE) to the
// lane itself, so nothing vector-shaped remains.
#include "codegen/passes.hpp"
#include "ir/traverse.hpp"
#include "ir/uop_access.hpp"
#include "codegen/target.hpp"
#include "rewrite/graph_rewrite.hpp"
#include "symbolic/symbolic.hpp"

namespace kiln {

namespace {

using namespace pat;

UOp gep(const UOp& v, int64_t j) {
  if (v.dtype().count() == 1 && !v.dtype().is_ptr()) return v;
  return UOp::make(Ops::GEP, v.dtype().scalar_type(), {v}, Arg{std::vector<int64_t>{j}});
}

struct Width {
  int max;
  bool masked;  // the target has masked vector loads and stores (one gate per lane)
};

// A vector access with one gate per lane (a PADTO'd or padded view along the vector axis).
bool lane_gated(const UOp& index) { return index.op() == Ops::INDEX && index.nsrc() > 2 && index.src(2).dtype().count() > 1; }
// Whether a vector access of k lanes through `index` stays one access on this target.
bool fits(const Width& w, int k, const UOp& index) { return k <= w.max && (w.masked || !lane_gated(index)); }

UOp split_alu(const Match& m, Width& w) {
  const UOp& x = m[r0];
  int k = x.dtype().count();
  if (k <= w.max || x.dtype().is_ptr()) return {};
  std::vector<UOp> lanes;
  for (int j = 0; j < k; ++j) {
    std::vector<UOp> src;
    for (const UOp& s : x.src()) src.push_back(gep(s, j));
    lanes.push_back(UOp::make(x.op(), x.dtype().scalar_type(), src, x.arg()));
  }
  return UOp::make(Ops::VECTORIZE, x.dtype(), lanes);
}

UOp lane_index(const UOp& index, int64_t j) {
  DType p = index.dtype();
  std::vector<UOp> src{index.src(0), index.src(1) + j};
  if (index.nsrc() > 2) src.push_back(gep(index.src(2), j));
  return UOp::make(Ops::INDEX, p.base().scalar_type().ptr(p.ptr_size(), p.addrspace()), src);
}

UOp split_load(const Match& m, Width& w) {
  const UOp& x = m[r0];
  int k = x.dtype().count();
  if (fits(w, k, x.src(0))) return {};
  std::vector<UOp> lanes;
  for (int j = 0; j < k; ++j) lanes.push_back(UOp::make(Ops::LOAD, x.dtype().scalar_type(), {lane_index(x.src(0), j)}));
  return UOp::make(Ops::VECTORIZE, x.dtype(), lanes);
}

UOp split_store(const Match& m, Width& w) {
  const UOp& x = m[r0];
  int k = x.src(0).dtype().count();
  if (fits(w, k, x.src(0))) return {};
  std::vector<UOp> stores;
  for (int j = 0; j < k; ++j) {
    std::vector<UOp> src{lane_index(x.src(0), j), gep(x.src(1), j)};
    stores.push_back(UOp::make(Ops::STORE, dtypes::void_, src));
  }
  return UOp::make(Ops::GROUP, dtypes::void_, stores);
}

UOp split_reduce(const Match& m, Width& w) {
  const UOp& x = m[r0];
  int k = x.dtype().count();
  if (k <= w.max) return {};
  std::vector<UOp> lanes;
  for (int j = 0; j < k; ++j) {
    std::vector<UOp> src{gep(x.src(0), j)};
    for (size_t i = 1; i < x.nsrc(); ++i) src.push_back(x.src(i));
    lanes.push_back(UOp::make(Ops::REDUCE, x.dtype().scalar_type(), src, x.arg()));
  }
  return UOp::make(Ops::VECTORIZE, x.dtype(), lanes);
}

// A GEP of several lanes wider than the target's vectors: one GEP per lane.
UOp split_gep(const Match& m, Width& w) {
  const UOp& g = m[r0];
  if (g.dtype().count() <= w.max) return {};
  std::vector<UOp> lanes;
  for (int64_t j : g.arg_ints()) lanes.push_back(gep(g.src(0), j));
  return UOp::make(Ops::VECTORIZE, g.dtype(), lanes);
}

// GEP of a VECTORIZE is its lanes; GEP of a splat constant is the constant; GEP of a GEP picks
// from the inner one's lanes (a lane of a halved vector in a tree fold).
UOp fold_gep(const Match& m) {
  const UOp& g = m[r0];
  const UOp& v = g.src(0);
  const auto& js = g.arg_ints();
  if (v.op() == Ops::CONST) return UOp::make(Ops::CONST, g.dtype(), {}, v.arg());
  if (v.op() == Ops::GEP) {
    std::vector<int64_t> lanes;
    for (int64_t j : js) lanes.push_back(v.arg_ints()[static_cast<size_t>(j)]);
    return UOp::make(Ops::GEP, g.dtype(), {v.src(0)}, Arg{std::move(lanes)});
  }
  if (js.size() == 1) return v.src(static_cast<size_t>(js[0]));
  std::vector<UOp> lanes;
  for (int64_t j : js) lanes.push_back(v.src(static_cast<size_t>(j)));
  return UOp::make(Ops::VECTORIZE, g.dtype(), lanes);
}

}  // namespace

const PatternMatcher& pm_vector_cleanup() {
  static const PatternMatcher pm{rule(UPat::op(Ops::GEP, {UPat::ops({Ops::VECTORIZE, Ops::CONST, Ops::GEP}, {}, true)}).named(r0), fold_gep)};
  return pm;
}

UOp devectorize(const UOp& ast, const Target& target) {
  Width w{static_cast<int>(std::max<uint32_t>(1, target.max_vector_width)), target.has(KILN_TARGET_HAS_MASKED_VECTORS)};
  bool any = false;
  for (const UOpNode* n : toposort_nodes(ast))
    any |= (!n->dtype.is_ptr() && n->dtype.count() > w.max) || (!w.masked && lane_gated(UOpAccess::from_node(n)));
  if (!any) return ast;
  static const PatternMatcher pm{
      rule(UPat::ops(groups::Elementwise).allow_any_len().named(r0), split_alu),
      rule(UPat::op(Ops::LOAD, {x}).named(r0), split_load),
      rule(UPat::op(Ops::STORE, {x, y}).named(r0), split_store),
      rule(UPat::op(Ops::REDUCE).allow_any_len().named(r0), split_reduce),
      rule(UPat::op(Ops::GEP).named(r0), split_gep),
  };
  return graph_rewrite(ast, pm + pm_vector_cleanup() + symbolic(), w, "devectorize");
}

}  // namespace kiln
