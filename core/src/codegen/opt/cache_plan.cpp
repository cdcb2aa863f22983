// codegen/opt/cache_plan.cpp - how a CPU matmul or convolution walks memory (cache_plan.hpp):
// which of its loops go outside which, which inputs are staged, where K is cut into blocks, from
// the target's L1d and L2 sizes. The measurements behind each rule are with the rule.
#include "codegen/opt/cache_plan.hpp"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <vector>

#include "codegen/target.hpp"
#include "ir/traverse.hpp"

namespace kiln {

// (a load that does not move along any reduce axis — an update's old value, a residual, a bias —
// is read once per output element, after the loop, and says nothing about reuse in it)
bool in_reduction(const KernelShape& k, const UOp& idx) {
  for (const UOp& r : k.reduce)
    if (!has_stride(idx, r, 0)) return true;
  return k.reduce.empty();
}

namespace {

// A common L1d's geometry: 64-byte lines, 8 ways (the size is the target's, Target::l1d).
constexpr int64_t kLine = 64, kWays = 8;

// The L1 sets that rows `bytes` apart fall on, at one column: every (bytes / 64)-th set only
// where the rows are a multiple of 64 bytes apart, every set otherwise.
int64_t sets_of_rows(int64_t bytes, const Target& target) {
  const int64_t sets = std::max<int64_t>(1, static_cast<int64_t>(target.l1d()) / (kLine * kWays));
  return bytes % kLine != 0 ? sets : sets / std::gcd(bytes / kLine, sets);
}

}  // namespace

// Tiles walking all of B's columns walk it down its columns, a cache line from each of its rows, the
// rows a leading dimension apart and so past the prefetcher's reach: BLOCK(K, 16) has them walk 16
// rows at a time, consecutive panels continuing the same rows (measured: 16 > 32 > 64), or near it:
// with no row tile at all (a vector times a matrix: 1 x 4096 @ 4096 x 4096, 0.7x the time), and
// with an epilogue (the last block runs it: 8 x 4096 @ 4096 x 4096 + bias, relu 11.1 -> 3.1 ms).
// Two to eight row tiles, their columns threaded, take block_column_chunks' longer blocks first.
bool block_down_columns(const KernelShape& k, OptPlan& plan, int64_t most_rows) {
  if (k.reduce.size() != 1) return false;
  const int64_t k_len = const_size(k.reduce[0]);
  for (int64_t kc : {16, 12, 20, 24, 10, 32, 8})
    if (kc <= most_rows && k_len > kc && k_len % kc == 0) return plan.add({OptOp::BLOCK, range_axis(k.reduce[0]), kc});
  return false;
}

// With the columns threaded (PlanTail::threads_first) each chunk's block of B serves its row tiles
// from the L2, and every block adds its partial sums into the chunk's output: the longest block
// (at most half of K) whose part of B for a chunk (block rows x the chunk's columns, a thread's
// kChunksPerThread chunks splitting the columns) fits half the L2. Blocks of 16 stored the
// output 256 times over K = 4096: 64 x 4096 @ 4096 x 4096 blocks of 256 0.75x the time of 16, 64 x
// 1024 x 1024 0.8x (docs/optimizer.md, "Matmul"). At least 16 rows a block, else false.
bool block_column_chunks(const KernelShape& k, int64_t n, const Target& target, OptPlan& plan) {
  if (k.reduce.size() != 1 || n <= 0) return false;
  // (one thread: no chunks, the block spans every column)
  const int64_t k_len = const_size(k.reduce[0]), chunks = target.threads > 1 ? target.threads * kChunksPerThread : 1;
  const int64_t chunk_bytes = (n + chunks - 1) / chunks * k.itemsize;
  for (int64_t kc = std::min(k_len / 2, static_cast<int64_t>(target.l2() / 2) / chunk_bytes); kc >= 16; --kc)
    if (k_len % kc == 0) return plan.add({OptOp::BLOCK, range_axis(k.reduce[0]), kc});
  return false;
}

int64_t rows_in_l1_ways(const KernelShape& k, const Target& target) {
  int64_t most = INT64_MAX;
  if (k.reduce.size() != 1) return most;
  for (const UOp& idx : k.load_indices)
    if (int64_t ld = 0; stride_of(idx, k.reduce[0], ld) && std::abs(ld) * k.itemsize >= kLine)
      most = std::min(most, sets_of_rows(std::abs(ld) * k.itemsize, target) * kWays);
  return most;
}

namespace {

// Whether a panel of B read in place (its k_len rows a leading dimension apart, each per_k bytes)
// needs more L1 lines than the sets its rows fall on hold: rows a multiple of 64 bytes apart fall
// on every (stride / 64)-th set only (a common L1d: 64-byte lines, 8 ways), and a power-of-two
// leading dimension folds them onto a few (256 floats, 1 KiB: 4 of 64 sets, 32 lines for a panel
// of 256; 256^3 on Zen 3 in place 0.53 ms, staged 0.26; attention_heads' 768-deep head matmul
// 4.3-4.5 -> 2.5-3.5 ms, train_step's weight gradient 2.7-3.1 -> 1.6-3.1). Only for panels past
// a quarter of the L1 (a short panel is cheap to re-read whatever its sets).
bool aliased_panel(const KernelShape& k, const UOp& rows, int64_t k_len, int64_t per_k, const Target& target) {
  for (const UOp& idx : k.load_indices) {
    int64_t ld = 0;
    if (k.reduce.size() != 1 || !has_stride(idx, rows, 0) || !stride_of(idx, k.reduce[0], ld) || ld == 0) continue;
    const int64_t bytes = std::abs(ld) * k.itemsize;
    if (bytes % kLine != 0) return false;  // the rows walk every set
    const int64_t used = sets_of_rows(bytes, target), lines_per_row = (per_k + kLine - 1) / kLine;
    return k_len * lines_per_row > used * kWays;
  }
  return false;
}

}  // namespace

// How a matmul's register tile (rows x `width` columns) walks B (K x N) when B does not fit the
// L2 (the cache sizes are the target's, Target::l1d/l2). Rows outside columns stream all of B
// through the caches once per row tile:
//  - with few row tiles, each walks B down its columns, a cache line from each row (rows a
//    leading dimension apart): BLOCK(K, 16) had the tiles walk 16 rows at a time, consecutive
//    panels continuing the same rows (M = 8..64, K = N = 4096: 2.8x to 4x); now the columns are
//    threaded and each chunk's block of B serves every row tile from the L2, in the longer
//    blocks of block_column_chunks where there are two tiles or more (else of 16:
//    block_down_columns); where BLOCK does not apply
//    (GPU targets, a K without a divisor near 16), as below;
//  - else the column panels (K x width) go outside and the row tiles inside (the SWAP returned,
//    applied last; stage_reused_panel stages each panel), the panel staying in the L2; a panel
//    larger than a stage buffer or a quarter of the L2 is cut into K-blocks that fit (BLOCK;
//    512 x 8192 x 512: 2.9x).
// A B that fits the L2 is staged the same way when its panels do not fit half the L1, or, past a
// quarter of it, fall on too few of its sets (aliased_panel; together `streams`):
// each row tile then reads its panel from the L2 anyway, and in place the panel's rows, a leading
// dimension apart, fall on a few cache sets and defeat the prefetcher; staged, they are one
// contiguous stream (AVX-512, A/B in one session, medians of 5 to 12 pairs, the time staged over
// in place: kernels 512^3 0.83x, 256^3 0.93x; workloads matmul255 0.81x, matmul500 0.90x,
// attention 0.96x, train_step 0.98x). Only a matmul proper (one reduce axis, several column
// panels): a convolution's input window measured 1.08x slower staged; and only where STAGE
// applies (`can_stage`: CPU targets; a GPU's workgroups walk the panels as they are).
std::optional<Opt> plan_panels(const KernelShape& k, const UOp& rows, const UOp& cols, int64_t width, int64_t row_tiles,
                               const Target& target, OptPlan& plan, bool column_chunks) {
  // the caches a thread works in (the target's, or a common core's): a panel larger than half the
  // L1 is read from the L2 by every row tile whatever its layout
  const int64_t l2 = static_cast<int64_t>(target.l2()), half_l1 = static_cast<int64_t>(target.l1d() / 2);
  const bool can_stage = target.has(KILN_TARGET_HAS_THREADS);
  int64_t k_len = 1;
  for (const UOp& red : k.reduce) k_len *= std::max<int64_t>(1, const_size(red));
  const int64_t per_k = width * k.itemsize, n = const_size(cols);
  auto pos = [&](const UOp& r) { return std::find(k.out.begin(), k.out.end(), r) - k.out.begin(); };
  const bool streams = can_stage && k.reduce.size() == 1 && n >= 2 * width && row_tiles > kFewRowTiles &&
                       (k_len * per_k > half_l1 || (k_len * per_k > half_l1 / 2 && aliased_panel(k, rows, k_len, per_k, target)));
  const bool in_place = k_len * n * k.itemsize <= l2 && !streams;  // B read where it is
  if (in_place || pos(rows) > pos(cols)) return std::nullopt;
  const UOp* red = k.reduce.size() == 1 ? &k.reduce[0] : nullptr;  // BLOCK cuts one reduce
  // (one row tile reuses no block: 8 x 4096 @ 4096 x 4096 in blocks of 256 took 1.4x the time of 16)
  if (row_tiles <= kFewRowTiles && ((column_chunks && row_tiles > 1 && block_column_chunks(k, n, target, plan)) || block_down_columns(k, plan)))
    return std::nullopt;
  // (a panel fits a stage buffer and a quarter of the L2: 512 x 3072 @ 3072 x 768 on Zen 3's 512
  // KiB L2, 192 KiB panels, was read in place, all of B streamed from memory for every row tile:
  // 48 ms; in blocks of 1536, staged, 19-22 ms)
  if (red) k_len = block_panel(k, per_k, target, plan);
  if (k_len * per_k > panel_max(target) || in_place) return std::nullopt;
  return Opt{OptOp::SWAP, range_axis(rows), range_axis(cols)};
}

int64_t panel_max(const Target& target) { return std::min(kMaxStageBytes, static_cast<int64_t>(target.l2()) / 4); }

int64_t block_panel(const KernelShape& k, int64_t per_k, const Target& target, OptPlan& plan) {
  int64_t k_len = 1;
  for (const UOp& red : k.reduce) k_len *= std::max<int64_t>(1, const_size(red));
  if (k.reduce.size() != 1 || k_len * per_k <= panel_max(target)) return k_len;
  int64_t kc = panel_max(target) / per_k;
  while (kc >= 64 && k_len % kc != 0) --kc;
  return kc >= 64 && plan.add({OptOp::BLOCK, range_axis(k.reduce[0]), kc}) ? kc : k_len;
}

// (the image moves along the output columns, the weights do not)
std::optional<ConvInputs> conv_inputs(const UOp& ast, const KernelShape& k, const UOp& cols) {
  ConvInputs c;
  for (const UOp& u : toposort(ast)) {
    if (u.op() != Ops::LOAD || u.src(0).op() != Ops::INDEX || u.src(0).src(0).op() != Ops::PARAM) continue;
    const UOp& idx = u.src(0).src(1);
    if (!in_reduction(k, idx)) continue;
    const bool weights = has_stride(idx, cols, 0);
    if (weights ? c.weights : c.image) return std::nullopt;
    (weights ? c.weights : c.image) = idx;
    (weights ? c.weight_slot : c.image_slot) = u.src(0).src(0).arg_int();
  }
  if (!c.image || !c.weights) return std::nullopt;
  return c;
}

namespace {

// The elements an affine index spans over `ranges` (the other ranges held): one plus each range's
// reach, |stride| x (size - 1). An index that is not affine in one of them counts as unknown (0).
int64_t span_of(const UOp& idx, const std::vector<UOp>& ranges) {
  int64_t n = 1;
  for (const UOp& r : ranges)
    if (int64_t s = 0; !stride_of(idx, r, s) || const_size(r) < 1) return 0;
    else n += std::abs(s) * (const_size(r) - 1);
  return n;
}

}  // namespace

// A convolution tiled over its output channels (`tiles`: the weights move along it, the image does
// not) walks, in its natural order, the whole image (every row and column of every input channel)
// once per channel tile, and the weights of one tile over every row. Where the image does not stay
// in the L2 between tiles and all the weights do, the image rows go outside the channel tiles (the
// SWAP returned, applied last): the few input rows one output row reads are staged (copied
// contiguous, the image slot returned) and stay in the L1 while every channel tile uses them, and
// the weights are read from the L2 once per row instead of the image from the L3 once per tile.
// 8 x 32 x 64 x 64 -> 64, 3x3, AVX2 Zen 3 with a 512 KiB L2 (image plane 557 KiB, weights 74 KiB),
// medians of 30 runs: 12.8-15.9 ms -> 10.2-10.9 swapped -> 9.5-10.0 with the rows staged. Both
// fitting the L2 keep the natural order (not measured better there).
std::optional<RowsOutside> rows_outside_tiles(const UOp& ast, const KernelShape& k, const UOp& tiles, const UOp& cols,
                                              const Target& target) {
  if (k.reduce.size() < 2 || !target.has(KILN_TARGET_HAS_THREADS)) return std::nullopt;
  const std::optional<ConvInputs> conv = conv_inputs(ast, k, cols);
  if (!conv || !has_stride(conv->image, tiles, 0)) return std::nullopt;
  const UOp &image = conv->image, &weights = conv->weights;
  const auto at = std::find(k.out.begin(), k.out.end(), tiles);
  const auto rows = std::find_if(at, k.out.end(), [&](const UOp& r) {
    return !(r == cols) && const_size(r) >= 2 && !has_stride(image, r, 0) && has_stride(weights, r, 0);
  });
  if (rows == k.out.end()) return std::nullopt;
  std::vector<UOp> inside(at + 1, k.out.end()), all = k.out;  // the loops within a channel tile
  inside.insert(inside.end(), k.reduce.begin(), k.reduce.end());
  all.insert(all.end(), k.reduce.begin(), k.reduce.end());
  const int64_t half_l2 = static_cast<int64_t>(target.l2() / 2);
  const int64_t image_bytes = span_of(image, inside) * k.itemsize, weight_bytes = span_of(weights, all) * k.itemsize;
  if (image_bytes <= half_l2 || weight_bytes < 1 || weight_bytes > half_l2) return std::nullopt;
  return RowsOutside{Opt{OptOp::SWAP, range_axis(tiles), range_axis(*rows)}, conv->image_slot};
}

// The matmul's column panels walked outside its row tiles (`swap`, already applied): each panel of
// the input the row tiles reuse (B) is staged, copied once into a contiguous per-thread buffer.
// Read in place, the panel's rows sit one leading dimension apart: at 1024 floats (4 KiB) they
// share a few cache sets and the panel is re-read from L3 (matmul 1024: 2.3x slower than 512).
// Only an input read along the reduce is a panel: a bias added after the sum also stays put along
// the rows, but staging it would leave B in place.
void stage_reused_panel(const Opt& swap, OptPlan& plan) {
  std::vector<int64_t> slots;
  for (const UOp& u : toposort(plan.ast())) {
    if (u.op() != Ops::LOAD || u.src(0).op() != Ops::INDEX || u.src(0).src(0).op() != Ops::PARAM) continue;
    for (const UOp& r : toposort(u.src(0).src(1)))
      if (r.op() == Ops::RANGE && (range_type(r) == AxisType::REDUCE || range_type(r) == AxisType::UNROLL)) {
        slots.push_back(u.src(0).src(0).arg_int());
        break;
      }
  }
  for (int64_t slot : slots)  // the plan keeps the first that applies (A moves along the rows)
    if (plan.add({OptOp::STAGE, swap.axis, slot})) return;
}

// A matmul whose A is read down its columns (A.T @ B, a weight gradient X.T @ dY; A.T @ B.T too,
// through the x @ w.T plan, staged_across): A's elements for one k step of a row tile sit side
// by side, and the next k step's a leading dimension away, in another cache line the prefetcher
// does not fetch (its reach is 2 KiB strides; 1024^3: 2.6x the time of A @ B, both with B
// staged). Such a matmul keeps its row tiles outside its column panels, like an unswapped one,
// and stages both inputs: each thread's chunk of B (K x a few panels) before its row tiles, and
// each row tile's A (tile rows x K, contiguous) before the panels that reuse it. A chunk holds
// two or more whole panels in a stage buffer, eight where the reduce can be cut into blocks for
// that (BLOCK; each A tile staged serves more panels: 1024^3 with blocks of 256 and eight panels
// 12 ms, without blocks and two panels 13-17 ms). A.T @ B against
// the one-stage plan: 1024^3 0.65-0.81x, 2048^3 0.42x, 1024 x 4096 @ 4096 x 1024 0.46x; a copy of
// A.T first and A @ B is ~0.8x of this at 1024^3, a choice for a scheduler one day. Not for an A
// whose k steps are within the prefetcher's reach (512 x 512 over K = 256, rows 2 KiB apart: no
// faster on a 2 MiB L2), unless A does not stay in half the L2 (each column panel re-reads it).
namespace {
constexpr int64_t kPrefetchStride = 2048;  // bytes
constexpr int64_t kMinBlock = 128;         // the shortest reduce block worth its output passes
constexpr int64_t kPanelsPerChunk = 8;     // B panels per thread chunk that one staged A tile serves
}  // namespace
std::optional<OptPlan> stage_both(const UOp& ast, const KernelShape& k, const OptPlan& plan, const Opt& swap, const Target& target) {
  if (k.reduce.size() != 1 || !target.has(KILN_TARGET_HAS_THREADS)) return std::nullopt;
  const UOp rows = find_axis(ast, swap.axis), cols = find_axis(ast, swap.amount), red = k.reduce[0];
  int64_t a = -1, b = -1;
  for (const UOp& u : toposort(ast)) {
    if (u.op() != Ops::LOAD || u.src(0).op() != Ops::INDEX || u.src(0).src(0).op() != Ops::PARAM) continue;
    const UOp& idx = u.src(0).src(1);
    if (has_stride(idx, red, 0)) continue;  // not read in the reduction
    // (an A read down its columns: k steps past the prefetcher's reach, or an A the column panels
    // re-read from beyond the L2: an MLP's weight gradient, 512 x 256 @ 256 x 784, A.T 512 KiB,
    // on a 512 KiB L2: 2.8-3.4 -> 1.8-2.4 ms, train_step 12.3-13.4 -> 9.7-11.1 ms)
    int64_t down = 0;
    if (has_stride(idx, rows, 1) && stride_of(idx, red, down) && std::abs(down) > 1 &&
        (std::abs(down) * k.itemsize > kPrefetchStride || const_size(rows) * const_size(red) * k.itemsize > static_cast<int64_t>(target.l2() / 2)))
      a = u.src(0).src(0).arg_int();
    else if (has_stride(idx, rows, 0)) b = u.src(0).src(0).arg_int();
  }
  if (a < 0 || b < 0 || !cols) return std::nullopt;
  // the plan's register tile again, without a BLOCK it may have (the blocks are chosen here)
  OptPlan alt(ast, target);
  int64_t width = 1;  // a panel's columns: the column axis' upcasts
  for (const Opt& o : plan.opts()) {
    if (o.op == OptOp::BLOCK) continue;
    if (!alt.add(o)) return std::nullopt;
    if (o.axis == swap.amount && o.op == OptOp::UPCAST) width *= o.amount;
  }
  const int64_t panels = remaining(cols, alt.opts()), per_k = width * k.itemsize;
  int64_t k_len = const_size(red);
  if (k_len * per_k * kPanelsPerChunk > kMaxStageBytes) {  // blocks of K for a chunk of 8 panels
    int64_t kc = kMaxStageBytes / (kPanelsPerChunk * per_k);
    while (kc >= kMinBlock && k_len % kc != 0) --kc;
    if (kc >= kMinBlock && alt.add({OptOp::BLOCK, range_axis(red), kc})) k_len = kc;
  }
  // the most panels a chunk can hold, in at least two chunks a thread (a slowed core hands the
  // others its second), and a multiple of the threads, or many, or few enough left over that the
  // threads idle at most an eighth of the time (seven chunks on two threads, 4:3; not five, 3:2)
  const int64_t threads = std::max<int64_t>(1, target.threads);
  for (int64_t per = panels; per >= 2; --per) {
    const int64_t chunks = panels / per;
    const bool even = chunks % threads == 0 || chunks >= kChunksPerThread * threads ||
                      (chunks + threads - 1) / threads * threads * 7 <= chunks * 8;  // (at most an 8th idle: 7 on 2)
    if (panels % per != 0 || per * per_k * k_len > kMaxStageBytes || chunks < 2 * threads || !even) continue;
    if (alt.add({OptOp::THREAD, swap.amount, chunks}) && alt.add({OptOp::STAGE, swap.axis, b}) && alt.add({OptOp::STAGE, swap.amount, a}))
      return alt;
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace kiln
