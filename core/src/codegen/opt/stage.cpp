// codegen/opt/stage.cpp - STAGE: an input's panel copied into a per-thread buffer before a loop opens.
//
// STAGE(axis, slot): the load of input `slot` (a PARAM) does not move along output axis `axis`:
// each iteration of `axis` reads the same panel again (in a matmul walking column panels outside
// and row tiles inside, B's K x tile-width panel). Before `axis` opens, a copy loop writes that
// panel, for the current iteration of the loops outside `axis`, into a contiguous buffer on the
// running thread's stack (DEFINE_REG: the CPU analogue of a GPU's shared memory), and the kernel
// reads the buffer instead:
//   panel = DEFINE_REG                                  (load dtype x size of the staged ranges;
//                                                        float32 for a half load only widened)
//   copy  = END(STORE(panel[at(c)], LOAD(B[idx(c)])), c...)   c: fresh loops, one per staged range
//                                                       (the lanes' a vector range of the copy's own)
//   read  = LOAD(AFTER(panel, copy)[at(r)])             the linearizer orders the copy first
// The staged ranges are those the load's index uses that are not loops outside `axis` (reduce
// ranges, upcasts, loops inside `axis`). The buffer lays them out with the vector lanes innermost
// and the others by decreasing stride: vector loads stay contiguous (even when the input's own
// layout is not, as a transposed B), and the panel's rows, 4 KiB apart in a 1024-wide B and so on
// a few cache sets (L1 holds 12 of them, L2 a few hundred), become consecutive.
#include <algorithm>
#include <cstdlib>

#include "codegen/ids.hpp"
#include "codegen/opt/opt.hpp"
#include "codegen/target.hpp"
#include "ir/traverse.hpp"
#include "ir/uop_access.hpp"
#include "support/check.hpp"

namespace kiln {

namespace {

// A panel's register id: its range's first (codegen/ids.hpp) plus the staged input's slot.
constexpr int64_t kStageRegId = ids::kStagePanelRegs.first;

struct Staging {
  UOp load;                   // the LOAD being staged
  UOp value;                  // what the panel holds: the load, or its widening to float32 (below)
  std::vector<UOp> layout;    // the staged ranges, outermost (largest pitch) first
  int64_t elems = 1;
  UOp pair;                   // staged in pairs: the unrolled K pair, innermost (pair_range)
};

// A bfloat16 value read as a product's float32 operand: MUL(CAST f32 (x), CAST f32 (y)), x and y
// bfloat16 loads.
bool bf16_operand(const UOp& cast) {
  return cast.op() == Ops::CAST && cast.dtype() == dtypes::float32 && cast.src(0).op() == Ops::LOAD &&
         cast.src(0).dtype() == dtypes::bfloat16;
}
bool bf16_product(const UOp& u) { return u.op() == Ops::MUL && bf16_operand(u.src(0)) && bf16_operand(u.src(1)); }
bool summed_product(const UOp& u) {
  return u.op() == Ops::REDUCE && static_cast<Ops>(u.arg_ints()[0]) == Ops::ADD && bf16_product(u.src(0));
}

bool uses(const UOp& x, const UOp& r) {
  for (const UOpNode* n : toposort_nodes(x))
    if (n == r.node()) return true;
  return false;
}

// A float16/bfloat16 load read only through its cast to float32 (a half matmul's products,
// tensor/nn.cpp sum_of_products) is staged widened: the panel holds float32, so the kernel's inner
// loop reads it as a float32 input's (one broadcast load), not converting every element again for
// every tile it is reused in (a bfloat16 matmul's A: a load, a shift and a broadcast per use).
UOp widened(const UOp& ast, const UOp& load) {
  const Scalar s = load.dtype().scalar();
  if (s != Scalar::float16 && s != Scalar::bfloat16) return load;
  UOp cast;
  for (const UOp& u : toposort(ast))
    for (const UOp& src : u.src()) {
      if (src != load) continue;
      if (u.op() != Ops::CAST || !(u.dtype() == dtypes::float32)) return load;  // read as itself too
      cast = u;
    }
  return cast ? cast : load;
}

// Staged in pairs: a bfloat16 load read only as a product's operand, the product summed, over an
// unrolled pair of K (the UNROLL by 2 in_pairs adds) and vector lanes of the width DOT2 takes (8
// or 16): the panel keeps bfloat16 and lays each lane's K pair side by side ([.., lanes, pair]), so
// one 2n-element vector of it is what DOT2 multiplies by an A pair (pair_products.cpp).
UOp pair_range(const UOp& ast, const Staging& s, const UOp& lanes, const Target* target) {
  if (!target || !target->supports_op(KILN_LIR_OP_DOT2) || !lanes || (const_size(lanes) != 8 && const_size(lanes) != 16)) return {};
  if (!(s.load.dtype() == dtypes::bfloat16) || s.value == s.load) return {};
  bool summed = false;
  for (const UOp& u : toposort(ast))
    if (summed_product(u))
      summed |= u.src(0).src(0) == s.value || u.src(0).src(1) == s.value;
  if (!summed) return {};
  for (const UOp& r : s.layout)
    if (range_type(r) == AxisType::UNROLL && const_size(r) == 2) {
      int64_t stride = 0;
      if (stride_of(without_clamps(s.load.src(0).src(1)), r, stride) && stride != 0) return r;
    }
  return {};
}

std::string find_staging(const UOp& ast, const UOp& axis, const Opt& opt, Staging& s, const Target* target) {
  // the loops outside `axis`: those its END lists before it, except the expanded ones (copies in
  // registers, not loops: the buffer holds every copy's part)
  std::vector<UOp> outer;
  UOp body;
  for (const UOp& u : toposort(ast)) {
    if (u.op() != Ops::END) continue;
    auto it = std::find(u.src().begin() + 1, u.src().end(), axis);
    if (it == u.src().end()) continue;
    if (body) return cat("axis ", opt.axis, " closes more than one loop nest");
    body = u.src(0);
    for (auto o = u.src().begin() + 1; o != u.src().end(); ++o)
      if ((o < it && range_type(*o) != AxisType::UPCAST && range_type(*o) != AxisType::UNROLL) || range_type(*o) == AxisType::THREAD)
        outer.push_back(*o);
  }
  if (!body) return cat("axis ", opt.axis, " is not a loop of the kernel's stores");
  std::vector<UOp> loads;
  for (const UOp& u : toposort(ast)) {
    if (const auto* id = std::get_if<int64_t>(&u.arg()); u.op() == Ops::DEFINE_REG && id && *id == kStageRegId + opt.amount)
      return cat("input ", opt.amount, " is staged already");
    bool ours = (u.op() == Ops::LOAD || u.op() == Ops::STORE) && u.src(0).op() == Ops::INDEX &&
                u.src(0).src(0).op() == Ops::PARAM && u.src(0).src(0).arg_int() == opt.amount;
    if (ours && u.op() == Ops::STORE) return cat("the kernel writes input ", opt.amount);
    if (ours) loads.push_back(u);
  }
  if (loads.empty()) return cat("the kernel loads no input ", opt.amount);
  if (loads.size() > 1) return cat("input ", opt.amount, " is loaded at ", loads.size(), " places (STAGE copies one)");
  s.load = loads[0];
  if (!uses(body, s.load)) return cat("input ", opt.amount, " is not read inside axis ", opt.axis);
  const UOp& index = s.load.src(0);
  if (uses(index, axis)) return cat("input ", opt.amount, " moves along axis ", opt.axis, " (STAGE copies what it reuses)");
  std::vector<std::pair<int64_t, UOp>> by_stride;
  UOp lanes;
  for (const UOp& r : toposort(index)) {
    if (r.op() != Ops::RANGE || std::find(outer.begin(), outer.end(), r) != outer.end()) continue;
    if (!r.src(0).is_const()) return cat("axis ", range_axis(r), " has a symbolic size");
    int64_t stride;
    if (!stride_of(without_clamps(index.src(1)), r, stride))
      return cat("the index of input ", opt.amount, " is not linear in axis ", range_axis(r));
    s.elems *= const_size(r);
    if (range_vectorized(r)) lanes = r;
    else by_stride.push_back({stride, r});
  }
  if (by_stride.empty() && !lanes) return cat("input ", opt.amount, " does not move inside axis ", opt.axis, ": nothing to stage");
  s.value = widened(ast, s.load);
  std::stable_sort(by_stride.begin(), by_stride.end(), [](const auto& a, const auto& b) { return std::abs(a.first) > std::abs(b.first); });
  for (const auto& [stride, r] : by_stride) s.layout.push_back(r);
  if (lanes) s.layout.push_back(lanes);
  if ((s.pair = pair_range(ast, s, lanes, target))) {
    s.value = s.load;
    std::erase(s.layout, s.pair);
    s.layout.push_back(s.pair);
  }
  int64_t bytes = s.elems * s.value.dtype().itemsize();
  if (bytes > kMaxStageBytes)
    return cat("the staged panel takes ", bytes, " bytes (at most ", kMaxStageBytes, ": it lives on the thread's stack)");
  return {};
}

}  // namespace

bool is_staged(const UOp& ast) {
  for (const UOpNode* n : toposort_nodes(ast))
    if (const auto* id = std::get_if<int64_t>(&n->arg); n->op == Ops::DEFINE_REG && id && ids::kStagePanelRegs.contains(*id)) return true;
  return false;
}

bool bf16_products(const UOp& ast, const UOp& reduce) {
  for (const UOpNode* n : toposort_nodes(ast)) {
    const UOp u = UOpAccess::from_node(n);
    if (!summed_product(u)) continue;
    for (const UOp& cast : u.src(0).src()) {
      int64_t stride = 0;
      if (stride_of(without_clamps(cast.src(0).src(0).src(1)), reduce, stride) && stride == 1) return true;
    }
  }
  return false;
}

std::string stage_problem(const UOp& ast, const UOp& r, const Opt& opt, const Target* target) {
  Staging s;
  return find_staging(ast, r, opt, s, target);
}

UOp stage_operand(const UOp& ast, const UOp& r, const Opt& opt, int64_t first_axis, const Target* target) {
  Staging s;
  std::string why = find_staging(ast, r, opt, s, target);
  KILN_CHECK(why.empty(), "stage_operand: ", why);
  UOp panel = UOp::make(Ops::DEFINE_REG, s.value.dtype().ptr(s.elems, AddrSpace::reg), {}, Arg{kStageRegId + opt.amount});
  std::vector<std::pair<UOp, UOp>> to_copy;
  std::vector<UOp> copy_loops;
  UOp at_r = UOp::cindex(0), at_c = UOp::cindex(0);
  for (const UOp& x : s.layout) {
    // loops, but the lanes: the copy moves whole vectors (its own vector range)
    std::vector<int64_t> arg{first_axis++, static_cast<int64_t>(AxisType::LOOP)};
    if (range_vectorized(x)) arg = {arg[0], static_cast<int64_t>(AxisType::UPCAST), 1};
    // a K pair's two copies: each lane's pair stored side by side, one interleaving vector store
    // (expander.cpp), not a loop of lane-by-lane stores
    if (x == s.pair) arg = {arg[0], static_cast<int64_t>(AxisType::UPCAST)};
    UOp c = UOp::make(Ops::RANGE, dtypes::index, {x.src(0)}, Arg{arg});
    to_copy.push_back({x, c});
    copy_loops.push_back(c);
    at_r = at_r * const_size(x) + x;
    at_c = at_c * const_size(x) + c;
  }
  UOp put = UOp::make(Ops::STORE, dtypes::void_, {UOp::make(Ops::INDEX, panel.dtype(), {panel, at_c}), substitute(s.value, to_copy)});
  std::vector<UOp> end_src{put};
  end_src.insert(end_src.end(), copy_loops.begin(), copy_loops.end());
  UOp ready = UOp::make(Ops::AFTER, panel.dtype(), {panel, UOp::make(Ops::END, dtypes::void_, end_src)});
  UOp read = UOp::make(Ops::LOAD, s.value.dtype(), {UOp::make(Ops::INDEX, panel.dtype(), {ready, at_r})});
  return substitute(ast, {{s.value, read}});
}

}  // namespace kiln
