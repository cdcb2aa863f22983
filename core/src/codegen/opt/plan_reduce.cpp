// codegen/opt/plan_reduce.cpp - the planners of the kernels that are no register tile: row
// kernels, dot products, reduces over a leading axis, other reduces, and elementwise kernels.
// docs/optimizer.md, "Rows", "Dot", "Reduces" and "Elementwise", says why.
#include <algorithm>
#include <bit>

#include "codegen/opt/heuristic.hpp"
#include "ir/traverse.hpp"

namespace kiln {

namespace {

// A dot tile: the innermost output axis takes this many rows, the next a quarter of the matmul
// tile's accumulators (4 x 2 with 16 registers, 4 x 4 with 32), where the reduce is at least
// kDotDepth vectors long.
constexpr int64_t kDotInnerRows = 4;
constexpr int64_t kDotDepth = 4;
// A reduce over a leading axis: this many vectors side by side (independent accumulators).
constexpr int64_t kAcrossVectors = 4;
// An elementwise input read across the vector's axis: its contiguous axis upcast by up to this many.
constexpr int64_t kAcrossRows = 8;

// Vector lanes along a reduce r the inputs walk contiguously (or not at all; a padded reduce adds
// its identity for the masked terms); 1 where they do not.
int64_t lanes_along(const Kernel& c, OptPlan& plan, const UOp& r) {
  bool ok = !c.k.load_indices.empty() && c.lanes > 1;
  for (const UOp& idx : c.k.load_indices) ok &= has_stride(idx, r, 1) || has_stride(idx, r, 0);
  return ok ? vector_lanes(plan, r, c.vectors) : int64_t{1};
}

// Lanes along reduce r, unrolled by kChainSplit where it is long (a shorter accumulator chain).
void reduce_in_turn(OptPlan& plan, const UOp& r, int64_t vec) {
  if (vec > 1) plan.add({OptOp::UNROLL, range_axis(r), vec, true});
  if (remaining(r, plan.opts()) >= kLongReduce) add_fitted(plan, OptOp::UNROLL, r, kChainSplit);
}

// A matmul-like kernel whose columns take no vector still upcasts its depthwise rows.
PlanTail reduce_tail(const Kernel& c) {
  PlanTail tail;
  tail.taps_rows = depthwise_rows(c, matmul_like(c, false)), tail.taps_tile = depthwise_tile(c);
  return tail;
}

// A contiguous axis too short and odd for vector_lanes (9: padding to 12 or 16 adds more than
// kPadShare allows, and no power of two of at least 4 lanes divides it) left scalar: on a CPU with
// masked vectors a row that fits one vector takes one of the next power of two, and one that fits
// two (9 on AVX2's 8 lanes) is padded to two whole vectors: one or two accesses where the scalar
// loop makes n (ResNet's padded 9 x 9 maps: E_512_9_9 8x faster so; BEAM had found that plan).
int64_t short_row_lanes(OptPlan& plan, const UOp& j, const Vectors& vectors) {
  const int64_t n = remaining(j, plan.opts());
  const bool vectored = std::any_of(plan.opts().begin(), plan.opts().end(),
                                    [&](const Opt& o) { return o.vectorize && o.axis == range_axis(j); });
  if (vectored || !vectors.cpu || !vectors.masked || n < 3 || n > 2 * vectors.lanes) return 1;
  const int64_t one = std::bit_ceil(static_cast<uint64_t>(std::max(n, vectors.narrowest())));
  const int64_t padded = one <= vectors.lanes ? one : 2 * vectors.lanes, lanes = std::min(padded, vectors.lanes);
  if (n % padded != 0 && !plan.add({OptOp::PADTO, range_axis(j), padded})) return 1;
  return lanes;
}

}  // namespace

void elementwise(const KernelShape& k, OptPlan& plan, const Vectors& vectors) {
  const UOp& j = k.contiguous;
  int64_t v = vector_lanes(plan, j, vectors);
  if (v == 1) v = short_row_lanes(plan, j, vectors);
  if (v > 1) plan.add({OptOp::UPCAST, range_axis(j), v, true});
  // an input read across j (a transposed view) that walks another output axis contiguously gets
  // that axis upcast too, so each cache line of it is used whole while it is loaded
  for (const UOp& idx : k.load_indices) {
    if (!vectors.cpu) break;
    if (has_stride(idx, j, 1) || has_stride(idx, j, 0)) continue;
    for (const UOp& r : k.out)
      if (!(r == j) && has_stride(idx, r, 1)) {
        add_fitted(plan, OptOp::UPCAST, r, std::min<int64_t>(vectors.lanes, kAcrossRows));
        return;
      }
  }
}

OptPlan plan_elementwise(const Kernel& c) {
  OptPlan plan(c.ast, c.target);
  if (c.k.contiguous && c.lanes > 1) elementwise(c.k, plan, c.vectors);
  return finish_plan(c, plan, {});
}

// The row's output a vector at a time; each reduce over the row with vector lanes along it where
// its loads walk it contiguously, and unrolled by kChainSplit.
OptPlan plan_row(const Kernel& c) {
  OptPlan plan(c.ast, c.target);
  elementwise(c.k, plan, c.vectors);
  for (const UOp& u : toposort(c.ast)) {
    if (u.op() != Ops::REDUCE || u.nsrc() < 2) continue;
    const UOp& r = u.src(u.nsrc() - 1);
    if (range_type(r) != AxisType::REDUCE) continue;
    bool walks = true;
    for (const UOp& idx : c.k.load_indices) walks &= has_stride(idx, r, 1) || has_stride(idx, r, 0);
    reduce_in_turn(plan, r, walks ? vector_lanes(plan, r, c.vectors) : 1);
  }
  // asked again, as the plans were measured: it may pad what the vector left of the row (1000 / 8
  // -> 128 iterations; docs/optimizer.md, "Known gaps")
  elementwise(c.k, plan, c.vectors);
  return finish_plan(c, plan, {});
}

ReduceLanes reduce_lanes(const Kernel& c, OptPlan& plan) {
  const KernelShape& k = c.k;
  UOp red = k.reduce.back();
  // several reduces in turn (schedule/group.cpp: softmax's max, then its sum): the one computed
  // last consumes the others, which get lanes and an unroll each
  std::vector<UOp> reduces;
  for (const UOp& u : toposort(c.ast))
    if (u.op() == Ops::REDUCE && u.nsrc() > 1) reduces.push_back(u);
  if (reduces.size() > 1) red = reduces.back().src(reduces.back().nsrc() - 1);
  for (size_t i = 0; i + 1 < reduces.size(); ++i) {
    const UOp& r = reduces[i].src(reduces[i].nsrc() - 1);
    if (!(r == red)) reduce_in_turn(plan, r, lanes_along(c, plan, r));
  }
  int64_t vec = lanes_along(c, plan, red);
  // a sum over several axes, none in turn (a depthwise convolution's weight gradient): when the
  // last cannot take the lanes, the one the loads walk contiguously does
  for (auto it = k.reduce.rbegin(); vec == 1 && reduces.size() <= 1 && it != k.reduce.rend(); ++it)
    if (!(*it == red) && const_size(*it) >= kLongReduce && (vec = lanes_along(c, plan, *it)) > 1) red = *it;
  return {red, vec};
}

// Lanes along the reduce and a tile of the output axes along which an input is reused (several
// vector accumulators per loaded vector); where the inner axis' input leaves the L2 and the outer
// one's fits, the two go the other way round (CPU targets).
OptPlan plan_dot(const Kernel& c) {
  OptPlan plan(c.ast, c.target);
  const std::vector<Opt>& opts = plan.opts();
  const KernelShape& k = c.k;
  const auto [red, vec] = reduce_lanes(c, plan);
  PlanTail tail = reduce_tail(c);
  plan.add({OptOp::UNROLL, range_axis(red), vec, true});
  const int64_t outer_rows = static_cast<int64_t>(c.target.vector_regs()) / 2 / kDotInnerRows;
  std::vector<UOp> tiles;  // innermost first
  for (auto it = k.out.rbegin(); it != k.out.rend() && tiles.size() < 2; ++it)
    if (int64_t rows = tile_amount(plan, *it, tiles.empty() ? kDotInnerRows : outer_rows);
        const_size(*it) >= kMinTileAxis && reused(k, *it) && const_size(red) >= kDotDepth * vec && rows > 1 && pad_to(plan, *it, rows) &&
        plan.add({OptOp::UPCAST, range_axis(*it), rows}))
      tiles.push_back(*it);
  if (tiles.empty() && remaining(red, opts) % kChainSplit == 0 && remaining(red, opts) >= 2 * kChainSplit)
    plan.add({OptOp::UNROLL, range_axis(red), kChainSplit});
  if (tiles.size() == 2 && k.reduce.size() == 1 && c.target.has(KILN_TARGET_HAS_THREADS)) {
    const int64_t l2 = static_cast<int64_t>(c.target.l2());
    auto bytes = [&](const UOp& r) { return const_size(r) * const_size(red) * k.itemsize; };
    if (bytes(tiles[0]) > l2 && bytes(tiles[1]) <= l2) tail.dot_swap = Opt{OptOp::SWAP, range_axis(tiles[1]), range_axis(tiles[0])};
  }
  return finish_plan(c, plan, tail);
}

// out[j] = sum_i x[i, j]: the vector goes along the contiguous output axis, kAcrossVectors of them
// side by side (the loads of one row stay in flight together), the reduce unrolled a little.
// A strided window (strided_window) takes column_vectors' lanes and its row of them whole (up to
// kWindowVectors).
OptPlan plan_reduce_across(const Kernel& c) {
  OptPlan plan(c.ast, c.target);
  const UOp& j = c.k.contiguous;
  const bool window = strided_window(c);
  reduce_lanes(c, plan);
  int64_t v = vector_lanes(plan, j, window ? column_vectors(c) : c.vectors);
  if (v > 1 && plan.add({OptOp::UPCAST, range_axis(j), v, true})) add_fitted(plan, OptOp::UPCAST, j, window ? kWindowVectors : kAcrossVectors);
  add_fitted(plan, OptOp::UNROLL, c.k.reduce.back(), kReduceUnroll);
  return finish_plan(c, plan, reduce_tail(c));
}

// Any other reduce: a long one unrolled (independent accumulators).
OptPlan plan_reduce(const Kernel& c) {
  OptPlan plan(c.ast, c.target);
  const ReduceLanes r = reduce_lanes(c, plan);
  if (const_size(r.red) >= kLongReduce) add_fitted(plan, OptOp::UNROLL, r.red, kReduceUnroll);
  return finish_plan(c, plan, reduce_tail(c));
}

}  // namespace kiln
