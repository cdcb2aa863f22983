// codegen/heuristic.cpp - the hand-coded heuristic: which actions a kernel gets on a target.
//
// It reads the kernel as the scheduler made it (KernelShape) and proposes actions in order; each
// goes through OptPlan, which applies it only when it validates against the kernel as the
// previous actions left it (a whole-axis upcast removes its axis, so a later action naming that
// axis is skipped, not thrown). A heuristic can be wrong about speed, never about validity.
#include <algorithm>
#include <optional>

#include "codegen/opt.hpp"
#include "ir/traverse.hpp"
#include "codegen/target.hpp"
#include "support/env.hpp"

namespace kiln {

namespace {

// A typical per-core L2 (the target does not report cache sizes yet).
constexpr int64_t kL2Bytes = int64_t{1} << 20;

// At most this many row tiles count as few (a matmul of up to 64 rows with 8-row tiles).
constexpr int64_t kFewRowTiles = 8;

// How a matmul's register tile (rows x `width` columns) walks B (K x N) when B does not fit the
// L2. Rows outside columns stream all of B through the caches once per row tile:
//  - with few row tiles, each walks B down its columns, a cache line from each row (rows a
//    leading dimension apart): BLOCK(K, 16) has the tiles walk 16 rows at a time, consecutive
//    panels continuing the same rows (M = 8..64, K = N = 4096: 2.8x to 4x); where BLOCK does
//    not apply (GPU targets, a K without a divisor near 16), as below;
//  - else the column panels (K x width) go outside and the row tiles inside (the SWAP returned,
//    applied last; stage_reused_panel stages each panel), the panel staying in the L2; a panel
//    larger than a stage buffer is cut into K-blocks that fit (BLOCK; 512 x 8192 x 512: 2.9x).
std::optional<Opt> plan_panels(const KernelShape& k, const UOp& rows, const UOp& cols, int64_t width, int64_t row_tiles,
                               OptPlan& plan) {
  int64_t k_len = 1;
  for (const UOp& red : k.reduce) k_len *= std::max<int64_t>(1, const_size(red));
  const int64_t per_k = width * k.itemsize, n = const_size(cols);
  auto pos = [&](const UOp& r) { return std::find(k.out.begin(), k.out.end(), r) - k.out.begin(); };
  if (k_len * n * k.itemsize <= kL2Bytes || pos(rows) > pos(cols)) return std::nullopt;
  const UOp* red = k.reduce.size() == 1 ? &k.reduce[0] : nullptr;  // BLOCK cuts one reduce
  if (row_tiles <= kFewRowTiles && red) {  // blocks of 16 rows of B (measured: 16 > 32 > 64), or near it
    for (int64_t kc : {16, 12, 20, 24, 10, 32, 8})
      if (k_len > kc && k_len % kc == 0) {
        if (plan.add({OptOp::BLOCK, range_axis(*red), kc})) return std::nullopt;
        break;
      }
  }
  if (red && k_len * per_k > kMaxStageBytes) {
    int64_t kc = kMaxStageBytes / per_k;
    while (kc >= 64 && k_len % kc != 0) --kc;
    if (kc >= 64 && plan.add({OptOp::BLOCK, range_axis(*red), kc})) k_len = kc;
  }
  if (k_len * per_k > kL2Bytes / 4 || k_len * n * k.itemsize <= kL2Bytes) return std::nullopt;
  return Opt{OptOp::SWAP, range_axis(rows), range_axis(cols)};
}

// The matmul's column panels walked outside its row tiles (`swap`, already applied): each panel of
// the input the row tiles reuse (B) is staged, copied once into a contiguous per-thread buffer.
// Read in place, the panel's rows sit one leading dimension apart: at 1024 floats (4 KiB) they
// share a few cache sets and the panel is re-read from L3 (matmul 1024: 2.3x slower than 512).
void stage_reused_panel(const UOp& ast, const Opt& swap, OptPlan& plan) {
  std::vector<int64_t> slots;
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::PARAM) slots.push_back(u.arg_int());
  for (int64_t slot : slots)  // the plan keeps the first that applies (A moves along the rows)
    if (plan.add({OptOp::STAGE, swap.axis, slot})) return;
}

// CPU threads over the output axes, outermost first: an axis with fewer chunks left than threads
// (after its upcasts; none when upcast whole) leaves the rest of the threads to the next axes, so
// a matmul with a few rows threads its columns too.
void add_threads(const KernelShape& k, const Target& target, OptPlan& plan) {
  int64_t want = target.threads;
  for (const UOp& r : k.out) {
    int64_t n = remaining(r, plan.opts());
    if (want < 2) return;
    if (n < 2) continue;
    int64_t t = std::min(want, n);
    if (plan.add({OptOp::THREAD, range_axis(r), t})) want = (want + t - 1) / t;
  }
}

}  // namespace

KernelShape inspect_kernel(const UOp& ast) {
  KernelShape k;
  for (const UOp& u : toposort(ast)) {
    if (u.op() == Ops::END && u.src(0).op() == Ops::STORE)
      for (size_t i = 1; i < u.nsrc(); ++i) k.out.push_back(u.src(i));
    if (u.op() == Ops::STORE) {
      k.store_index = u.src(0).src(1);
      k.itemsize = u.src(1).dtype().scalar_size();
    }
    if (u.op() == Ops::LOAD) k.load_indices.push_back(u.src(0).src(1));
    if (u.op() == Ops::RANGE && range_type(u) == AxisType::REDUCE) k.reduce.push_back(u);
  }
  for (const UOp& r : k.out)
    if (has_stride(k.store_index, r, 1)) k.contiguous = r;
  return k;
}

OptPlan hand_coded_optimizations(const UOp& ast, const Target& target) {
  OptPlan plan(ast, target);
  KernelShape k = inspect_kernel(ast);
  if (!k.store_index) return plan;
  const std::vector<Opt>& opts = plan.opts();
  int64_t lanes = std::max<int64_t>(1, static_cast<int64_t>(target.max_vector_width) * 4 / std::max(1, k.itemsize));
  bool cpu = target.has(KILN_TARGET_HAS_THREADS);
  const UOp& contiguous = k.contiguous;
  // Loads whose index moves along r; "contiguous along r" when each moves by exactly one element.
  auto contiguous_loads = [&](const UOp& r) {
    bool any = false;
    for (const UOp& idx : k.load_indices) {
      if (has_stride(idx, r, 0)) continue;
      if (!has_stride(idx, r, 1)) return false;
      any = true;
    }
    return any;
  };
  // Some input does not move along r: it is reused from registers when r is upcast.
  auto reused = [&](const UOp& r) {
    for (const UOp& idx : k.load_indices)
      if (has_stride(idx, r, 0)) return true;
    return false;
  };
  // Every load that moves along `v` stays put along r: upcasting r reuses v's vector loads.
  auto reuses_loads_of = [&](const UOp& r, const UOp& v) {
    for (const UOp& idx : k.load_indices)
      if (!has_stride(idx, v, 0) && !has_stride(idx, r, 0)) return false;
    return true;
  };
  // A register tile needs registers: 32 vector registers with AVX-512 (16 lanes), else 16.
  int tile_rows = target.max_vector_width >= 16 ? 4 : 2;
  int64_t vec = 0;
  std::optional<Opt> swap;  // applied last: THREAD still splits the outermost axis
  bool register_tile = false;
  if (!k.reduce.empty() && contiguous && reused(contiguous) && contiguous_loads(contiguous) && lanes > 1 &&
      const_size(contiguous) % lanes == 0) {
    // matmul-like (C = A @ B): a register tile. Vector lanes along the contiguous output axis
    // (loads of B are vectors), two vectors, and rows of an output axis along which B's vectors
    // are reused (A's elements broadcast): 2 x 8 vector accumulators with 32 vector registers
    // (AVX-512), 2 x 4 with 16. (Measured on AVX-512: 8 rows beat 4, 6 and 12; two vectors
    // beat one, three and four.)
    plan.add({OptOp::UPCAST, range_axis(contiguous), lanes, true});
    vec = lanes;
    register_tile = true;
    if ((const_size(contiguous) / lanes) % 2 == 0) plan.add({OptOp::UPCAST, range_axis(contiguous), 2});
    for (auto it = k.out.rbegin(); it != k.out.rend(); ++it)
      if (!(*it == contiguous) && const_size(*it) % 4 == 0 && const_size(*it) >= 8 && reuses_loads_of(*it, contiguous)) {
        int64_t rows = tile_rows * 2 <= const_size(*it) && const_size(*it) % (tile_rows * 2) == 0 ? tile_rows * 2 : 4;
        plan.add({OptOp::UPCAST, range_axis(*it), rows});
        swap = plan_panels(k, *it, contiguous, lanes * 2, const_size(*it) / rows, plan);
        break;
      }
  } else if (!k.reduce.empty()) {
    // a reduction: vector lanes along a reduce axis the inputs walk contiguously (or not at all)
    UOp red = k.reduce.back();
    bool walkable = !k.load_indices.empty();
    for (const UOp& idx : k.load_indices) walkable &= has_stride(idx, red, 1) || has_stride(idx, red, 0);
    if (walkable && lanes > 1 && const_size(red) % lanes == 0) {
      plan.add({OptOp::UNROLL, range_axis(red), lanes, true});
      vec = lanes;
      // dot products (C = A @ B.T): a tile of output axes along which an input is reused keeps
      // several vector accumulators busy per loaded vector
      int tiled = 0;
      for (auto it = k.out.rbegin(); it != k.out.rend() && tiled < 2; ++it)
        if (const_size(*it) % 4 == 0 && const_size(*it) >= 8 && reused(*it) && const_size(red) >= 4 * lanes) {
          plan.add({OptOp::UPCAST, range_axis(*it), tiled == 0 ? 4 : tile_rows});
          ++tiled;
        }
      if (!tiled && (const_size(red) / lanes) % 2 == 0 && const_size(red) / lanes >= 4)
        plan.add({OptOp::UNROLL, range_axis(red), 2});
    } else if (const_size(red) % 4 == 0 && const_size(red) >= 16) {
      plan.add({OptOp::UNROLL, range_axis(red), 4});
    }
  } else if (contiguous && lanes > 1 && const_size(contiguous) % lanes == 0) {
    plan.add({OptOp::UPCAST, range_axis(contiguous), lanes, true});
    vec = lanes;
  }
  (void)vec;
  // Small reduce windows (a pooling window, a depthwise filter's taps) are unrolled whole: the
  // loop and its counter go, and neighbouring taps' index math folds into constant offsets. Only
  // where the copies stay few (at most 4 per window, 16 over all such windows), and not under a
  // register tile: there the copies multiply the tile's code (conv2d 3x3: 7.9 -> 10.7+ ms).
  int64_t copies = register_tile ? 17 : 1;
  for (const UOp& red : k.reduce) {
    int64_t n = const_size(red);
    bool touched = std::any_of(opts.begin(), opts.end(), [&](const Opt& o) { return o.axis == range_axis(red); });
    if (touched || n < 2 || n > 4 || copies * n > 16) continue;
    plan.add({OptOp::UNROLL, range_axis(red), n});
    copies *= n;
  }
  // parallelism: CPU threads over the output axes (GPU workgroups: opt_gpu.cpp)
  int64_t work = 1;
  for (const UOp& r : k.out) work *= std::max<int64_t>(1, const_size(r));
  for (const UOp& r : k.reduce) work *= std::max<int64_t>(1, const_size(r));
  if (cpu && target.threads > 1 && work >= 65536) add_threads(k, target, plan);
  if (target.has(KILN_TARGET_HAS_LOCAL)) add_workgroup_opts(k, target, plan);
  if (swap && plan.add(*swap)) stage_reused_panel(ast, *swap, plan);
  return plan;
}

UOp apply_opts(const UOp& ast, const Target& target, std::vector<Opt>* applied) {
  if (knob(Knob::noopt)) return ast;
  OptPlan plan = hand_coded_optimizations(ast, target);
  if (applied) applied->insert(applied->end(), plan.opts().begin(), plan.opts().end());
  return plan.ast();
}

}  // namespace kiln
