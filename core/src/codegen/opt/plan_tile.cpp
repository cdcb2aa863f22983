// codegen/opt/plan_tile.cpp - the register tile: the planner of matmul and depthwise kernels (and,
// staged, of the staged_* classes), and the rules for its rows on each kind of vector unit.
// docs/optimizer.md, "Matmul" and "Depthwise", says why and holds the measurements.
#include <algorithm>

#include "codegen/opt/heuristic.hpp"

namespace kiln {

namespace {

// An fma_latency tile pads its rows to 6 only where that adds less than 1/kClampedPadShare of them
// (more padding eats the gain) and the reduce takes at least kDeepReduce steps (a shallow one is
// bound by its stores).
constexpr int64_t kClampedPadShare = 32;
constexpr int64_t kDeepReduce = 64;
// A depthwise tile holds about this many outputs (4 rows of 16 lanes, 8 of 8).
constexpr int64_t kDepthwiseTileOutputs = 64;

// A tile's accumulators are half the vector registers (the rest hold the reused vectors, the
// broadcasts and the addresses): a matmul tile's rows (8 with 32 registers, 4 with 16).
int64_t matmul_rows(const Target& t) { return static_cast<int64_t>(t.vector_regs()) / 2 / kTileVectors; }

// Rows with 32 registers: up to a quarter more than `want` where that divides the rows (an exact
// tile computes no padded rows, a taller one reads B's panel fewer times), else tile_amount's;
// where that is under half of `want` (few rows of a prime count: 17, 19), the rows split evenly
// into as few tiles as take them, padded (17: two tiles of 9; as one row a tile each, every
// multiply-add loaded its own B vector, 2-4x slower than 16 rows: docs/optimizer.md, "Matmul").
int64_t wide_tile_rows(const OptPlan& plan, const UOp& r, int64_t want) {
  const int64_t n = remaining(r, plan.opts()), most = want + want / 4;
  for (int64_t rows = most; rows >= want; --rows)
    if (n > 0 && n % rows == 0) return rows;
  const int64_t fitted = tile_amount(plan, r, want);
  if (n <= 0 || fitted * 2 >= want) return fitted;
  const int64_t tiles = (n + most - 1) / most, even = (n + tiles - 1) / tiles;
  return even * 2 >= want && cheap_pad(n, even) ? even : fitted;
}

// Rows with 16 registers and two FMA pipes: 6 (12 accumulators, enough to cover the FMA latency;
// with B's two vectors and a broadcast 15 registers) where 6 divides, else 5 where that divides,
// else 6 padded where that is cheap, the reduce deep and every load along the rows clamps (no gate
// in the k loop; `staged`: the caller stages them), else tile_amount's `want`. A matmul proper only.
int64_t fma_tile_rows(const KernelShape& k, const OptPlan& plan, const UOp& r, int64_t want, bool staged) {
  const int64_t n = remaining(r, plan.opts()), six = want + want / 2;
  for (int64_t rows : {six, want + want / 4})
    if (n > 0 && n % rows == 0) return rows;
  const bool clamps = staged || std::all_of(k.load_indices.begin(), k.load_indices.end(), [&](const UOp& idx) {
                        return has_stride(idx, r, 0) || clamps_along(idx, r);
                      });
  const bool deep = !k.reduce.empty() && const_size(k.reduce[0]) >= kDeepReduce;
  if (n > 0 && ((n + six - 1) / six * six - n) * kClampedPadShare < n && clamps && deep) return six;
  return tile_amount(plan, r, want);
}

// A convolution's second vector where its columns would pad for two (fma_latency: 16 registers
// hold no padded tile): an output axis along which the image moves and the weights stay (the
// image's rows), upcast by 2 instead.
std::optional<UOp> second_vector_axis(const KernelShape& k, const UOp& cols, int64_t lanes, const OptPlan& plan) {
  if (k.reduce.size() < 2 || remaining(cols, plan.opts()) % (kTileVectors * lanes) == 0) return std::nullopt;
  for (const UOp& y : k.out) {
    if (y == cols || remaining(y, plan.opts()) % kTileVectors != 0) continue;
    bool weights_stay = true, image_moves = false;
    for (const UOp& idx : k.load_indices) {
      if (!in_reduction(k, idx)) continue;
      if (has_stride(idx, cols, 0)) weights_stay &= has_stride(idx, y, 0);
      else image_moves |= !has_stride(idx, y, 0);
    }
    if (weights_stay && image_moves && has_tile_rows(k, cols, y)) return y;  // (not depthwise)
  }
  return std::nullopt;
}

// A depthwise convolution's output rows whose loads overlap the next row's (stride 1) with its
// small windows unrolled: upcast by up to `tile` they share loads. Nothing for a stride of 2, a
// window too large to unroll, or rows `tile` splits no way.
std::optional<UOp> overlapping_rows_axis(const KernelShape& k, const UOp& cols, int64_t tile) {
  const bool unrolled = std::any_of(k.reduce.begin(), k.reduce.end(), [](const UOp& r) { return const_size(r) >= 2 && const_size(r) <= kMaxWindow; });
  if (k.reduce.size() < 2 || !unrolled) return std::nullopt;
  if (has_tile_rows(k, cols, cols)) return std::nullopt;
  for (const UOp& y : k.out) {
    if (y == cols || fit(const_size(y), tile, false) < 2) continue;
    for (const UOp& idx : k.load_indices) {
      int64_t along_y = 0, along_tap = 0;
      if (!in_reduction(k, idx) || !stride_of(idx, y, along_y) || along_y <= 0) continue;
      for (const UOp& tap : k.reduce)
        if (stride_of(idx, tap, along_tap) && along_tap == along_y && const_size(tap) > 1) return y;
    }
  }
  return std::nullopt;
}

std::optional<UOp> second_vector(const Kernel& c, bool matmul, const OptPlan& plan) {
  return matmul && c.rule == TileRule::fma_latency ? second_vector_axis(c.k, c.k.contiguous, c.lanes, plan) : std::nullopt;
}

}  // namespace

int64_t depthwise_tile(const Kernel& c) { return std::max<int64_t>(2, kDepthwiseTileOutputs / c.lanes); }

std::optional<UOp> depthwise_rows(const Kernel& c, bool matmul) {
  return matmul && c.target.has(KILN_TARGET_HAS_THREADS) ? overlapping_rows_axis(c.k, c.k.contiguous, depthwise_tile(c)) : std::nullopt;
}

int64_t tile_lanes(const Kernel& c, OptPlan& plan, const TileOptions& o) {
  const UOp& j = c.k.contiguous;
  const bool matmul = matmul_like(c, o.across);
  // columns padded for two vectors where that is cheap and vectors are masked (unless a second
  // vector or the depthwise rows come from elsewhere); without masked vectors a GPU's for one
  if (matmul && c.vectors.masked && !second_vector(c, matmul, plan) && !depthwise_rows(c, matmul)) pad_to(plan, j, c.lanes * kTileVectors);
  if (matmul && !c.vectors.masked && !c.vectors.cpu) pad_to(plan, j, c.lanes);
  return matmul ? vector_lanes(plan, j, c.vectors) : 1;
}

OptPlan plan_register_tile(const Kernel& c, const TileOptions& o) {
  const KernelShape& k = c.k;
  const UOp& j = k.contiguous;
  OptPlan plan(c.ast, c.target);
  const std::vector<Opt>& opts = plan.opts();
  const bool matmul = matmul_like(c, o.across);
  const std::optional<UOp> second = second_vector(c, matmul, plan);
  PlanTail tail;
  tail.taps_rows = depthwise_rows(c, matmul), tail.taps_tile = depthwise_tile(c);
  // (no vector: only a staged variant's kernel, whose plan, staging nothing, is then declined)
  if (tile_lanes(c, plan, o) <= 1) return finish_plan(c, plan, tail);
  // asked again on purpose: an axis padded for narrower vectors may pad once more for whole ones
  const int64_t vec = vector_lanes(plan, j, c.vectors);
  plan.add({OptOp::UPCAST, range_axis(j), vec, true});
  if (second) plan.add({OptOp::UPCAST, range_axis(*second), kTileVectors});
  else if (!tail.taps_rows && remaining(j, opts) % kTileVectors == 0) plan.add({OptOp::UPCAST, range_axis(j), kTileVectors});
  // rows: the innermost output axis along which B's vectors are reused (A's elements broadcast)
  const int64_t want = matmul_rows(c.target);
  // few row tiles over a blocked B: their columns threaded, in longer blocks (below). Measured on
  // 32 registers (AVX-512) only: AVX2 code there, 16 rows in 4-row tiles, ran 1.15x slower so
  // (5 of 5 pairs; columns threaded in blocks of 16, 1.1x), so the others keep their rows threaded
  const bool column_chunks = c.rule == TileRule::wide;
  for (auto it = k.out.rbegin(); it != k.out.rend(); ++it) {
    const int64_t rows = c.rule == TileRule::wide                              ? wide_tile_rows(plan, *it, want)
                         : c.rule == TileRule::fma_latency && k.reduce.size() == 1 ? fma_tile_rows(k, plan, *it, want, o.rows_staged)
                                                                                   : tile_amount(plan, *it, want);
    if (!(*it == j) && const_size(*it) >= kMinTileAxis && reuses_loads_of(k, *it, j, rows) && rows > 1 && pad_to(plan, *it, rows) &&
        plan.add({OptOp::UPCAST, range_axis(*it), rows})) {
      // (across: w's panel is staged whatever its size, so a long reduce is cut into blocks whose
      // panels fit a stage buffer; unblocked, 384 KiB panels of 128 x 3072 @ (768 x 3072).T could
      // not stage and the kernel fell back to dot products: docs/optimizer.md, "Staged variants")
      if (o.across) block_panel(k, vec * kTileVectors * k.itemsize, c.target, plan);
      tail.swap = o.across ? std::optional<Opt>{Opt{OptOp::SWAP, range_axis(*it), range_axis(j)}}
                           : plan_panels(k, *it, j, vec * kTileVectors, remaining(*it, opts), c.target, plan, column_chunks);
      if (!tail.swap && !o.across) tail.rows_swap = rows_outside_tiles(c.ast, k, *it, j, c.target);
      break;
    }
  }
  // no rows to tile (a vector times a matrix, or too few rows) and a B larger than the L2
  int64_t b_bytes = const_size(j) * k.itemsize;
  for (const UOp& red : k.reduce) b_bytes *= std::max<int64_t>(1, const_size(red));
  // (its loads of B alone in the k loop: blocks of rows that alias in the L1 stop at its ways; a
  // tile with rows, its B lines reused by each row, measured even: docs/optimizer.md, "Matmul")
  if (!has_rows(plan) && !o.across && b_bytes > static_cast<int64_t>(c.target.l2()))
    block_down_columns(k, plan, rows_in_l1_ways(k, c.target));
  // B walked in blocks with the rows outside its columns (BLOCK's loop outermost in each thread's
  // chunk): a chunk of columns keeps its block of B (the block's rows x the chunk's columns) in
  // cache for every row of A, where a chunk of rows reads all of the block, so the threads split
  // the columns and read B once between them, not once each (64 x 4096 @ 4096 x 4096:
  // docs/optimizer.md, "Matmul")
  const bool blocked = std::any_of(opts.begin(), opts.end(), [](const Opt& op) { return op.op == OptOp::BLOCK; });
  if (column_chunks && blocked && !tail.swap && !tail.rows_swap && k.contiguous) tail.threads_first = range_axis(j);
  return finish_plan(c, plan, tail);
}

}  // namespace kiln
