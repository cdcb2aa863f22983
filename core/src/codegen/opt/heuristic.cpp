// codegen/opt/heuristic.cpp - the hand-coded heuristic: which actions a kernel gets on a target.
//
// It reads the kernel as the scheduler made it (KernelShape) and proposes actions in order; each
// goes through OptPlan, which applies it only when it validates against the kernel as the
// previous actions left it (a whole-axis upcast removes its axis, so a later action naming that
// axis is skipped, not thrown). A heuristic can be wrong about speed, never about validity.
#include <algorithm>
#include <cstdlib>
#include <optional>

#include "codegen/opt/cache_plan.hpp"
#include "codegen/opt/opt.hpp"
#include "ir/traverse.hpp"
#include "codegen/target.hpp"
#include "support/env.hpp"
#include "symbolic/symbolic.hpp"

namespace kiln {

namespace {

// A register tile still pays when its vector loads are gathers of a view strided by this much
// (a stride-2 convolution): each gathered vector is reused by every row of the tile.
constexpr int64_t kMaxGatherStride = 2;
// Padding (PADTO) may add at most 1/kPadShare of an axis' iterations (56 -> 64 pads, 40 -> 64
// does not): the masked iterations cost as much as real ones.
constexpr int64_t kPadShare = 4;
// An AVX2 tile's rows are padded from 4 to 6 (avx2_tile_rows) only where that adds less than
// 1/kClampedPadShare of them: 12 accumulators gain 5-8% over 8, more padding eats it (a
// convolution's 64 channels padded to 66 measured no gain).
constexpr int64_t kClampedPadShare = 32;
// ... and only where the reduce takes at least this many steps: a shallow one (train_step's 256 x
// 10 @ 10 x 512) is bound by its stores, and padded measured no faster (0.07-0.10 ms against
// 0.06-0.08).
constexpr int64_t kDeepReduce = 64;
// Kernels with fewer operations than this stay on one thread (a launch across the pool costs more).
constexpr int64_t kThreadWork = 65536;

// Loads whose index moves along r; "contiguous along r" when each moves by exactly one element
// (by at most `max_stride`: a strided view, whose vector loads become gathers of few cache lines).
bool contiguous_loads(const KernelShape& k, const UOp& r, int64_t max_stride = 1) {
  bool any = false;
  for (const UOp& idx : k.load_indices) {
    int64_t s = 0;
    if (has_stride(idx, r, 0)) continue;
    if (!stride_of(idx, r, s) || s < 1 || s > max_stride) return false;
    any = true;
  }
  return any;
}

// Some input does not move along r: it is reused from registers when r is upcast.
bool reused(const KernelShape& k, const UOp& r) {
  for (const UOp& idx : k.load_indices)
    if (has_stride(idx, r, 0)) return true;
  return false;
}

// idx stays put along r within aligned blocks of `block` iterations (r split as outer * block +
// inner; a grouped convolution's input moves only from one group of output channels to the next).
bool still_in_blocks(const UOp& idx, const UOp& r, int64_t block) {
  const int64_t n = const_size(r);
  if (block < 2 || n <= 0 || n % block != 0) return false;
  constexpr int64_t kScratchAxis = int64_t{1} << 40;  // ids no kernel uses
  UOp outer = UOp::range(n / block, kScratchAxis), inner = UOp::range(block, kScratchAxis + 1);
  return has_stride(simplify(substitute(idx, {{r, outer * block + inner}})), inner, 0);
}

// Every load in the reduction that moves along `v` stays put along r (within the blocks of
// `rows` an UPCAST of r makes): upcasting r reuses v's vector loads.
bool reuses_loads_of(const KernelShape& k, const UOp& r, const UOp& v, int64_t rows = 0) {
  for (const UOp& idx : k.load_indices)
    if (in_reduction(k, idx) && !has_stride(idx, v, 0) && !has_stride(idx, r, 0) && !still_in_blocks(idx, r, rows)) return false;
  return true;
}

// Padding n iterations up to a multiple of `amount` is cheap enough.
bool cheap_pad(int64_t n, int64_t amount) { return n > 0 && ((n + amount - 1) / amount * amount - n) * kPadShare <= n; }

// How much of a split of `want` an axis with n iterations left takes: the largest amount up to
// `want` that divides n (a power of two for vector lanes), 1 when none does.
int64_t fit(int64_t n, int64_t want, bool pow2) {
  for (int64_t a = want; a >= 2; a = pow2 ? a / 2 : a - 1)
    if (n > 0 && n % a == 0 && (!pow2 || (a & (a - 1)) == 0)) return a;
  return 1;
}

// How a target takes vectors for a kernel.
struct Vectors {
  int64_t lanes;  // the target's width in the kernel's elements
  bool masked;    // a padded vector stays one masked access (else it is split into gated lanes)
  bool cpu;       // a CPU (threads): narrower vectors (down to 4 lanes) still beat scalars, and a
                  // register tile over a permuted input pays; a GPU's lanes and tiles come out of
                  // its work items, so it takes its full width or none and no extra tile

  int64_t narrowest() const { return cpu ? std::min<int64_t>(lanes, 4) : lanes; }
};

// Vector lanes along r: the target's width when it divides what is left of r, or once r is padded
// to it cheaply (999 -> 1008, 56 -> 64, 7 -> 8), else the widest power of two that divides (down
// to v.narrowest()); 1 when none does.
int64_t vector_lanes(OptPlan& plan, const UOp& r, const Vectors& v) {
  for (int64_t a = v.lanes; v.masked && a >= v.narrowest(); a /= 2)
    if (pad_to(plan, r, a)) break;
  int64_t n = fit(remaining(r, plan.opts()), v.lanes, true);
  return n >= v.narrowest() ? n : 1;
}

// A tile's rows along r: `want` when it divides what is left of r or padding to it is cheap (999
// rows -> 1000), else the largest amount that divides. Proposes nothing (pad_to pads).
int64_t tile_amount(const OptPlan& plan, const UOp& r, int64_t want) {
  const int64_t n = remaining(r, plan.opts());
  return cheap_pad(n, want) ? want : fit(n, want, false);
}

// A matmul tile's rows on an AVX-512 CPU: up to a quarter more than `want` when that divides the
// rows (10 for 8: 20 accumulators, 23 of its 32 registers), else tile_amount's (measured there
// only; 16-register targets keep theirs). An exact tile computes no padded rows (those read A's
// last row again, pad_range), and a taller tile reads B's panel fewer times. A/B on AVX-512,
// interleaved pairs, kernel time: 1000^3 10 rows over 8 0.94x (9 of 10 pairs faster), 500^3 10 over
// 8 padded to 504 0.95x (10 of 12), 999^3 9 over 8 padded to 1000 0.97x (8 of 10), train_step's 10
// x 512 x 256 gradient one tile of 10 over two of 5 0.61x (10 of 10).
int64_t cpu_tile_rows(const OptPlan& plan, const UOp& r, int64_t want) {
  const int64_t n = remaining(r, plan.opts());
  for (int64_t rows = want + want / 4; rows >= want; --rows)
    if (n > 0 && n % rows == 0) return rows;
  return tile_amount(plan, r, want);
}

// A matmul tile's rows on a 16-register CPU (AVX2): 6 (12 accumulators; with B's two vectors and a
// broadcast 15 of the 16 registers) where 6 divides the rows, else 5 where that divides, else 6
// padded where that adds less than a 32nd of the rows, the reduce is deep and every load moving
// along them clamps (pad_range: a padded output row reads the last real row, no gate in the k
// loop), else tile_amount's `want` (4). Eight accumulators keep two FMA ports busy where an FMA
// takes 4 cycles (Skylake, Zen 3) but not 5 (Haswell, Broadwell, Zen 2: at most 80%); ten and
// twelve do. Only a matmul proper (one reduce): a convolution's unrolled taps need more registers.
// llvm-mca on the k-step loop, share of two FMAs a cycle, 4 rows then 6 (1536^3) or 5 (1000^3):
// Haswell and Zen 2 79% -> 99%, Skylake and Alder Lake 99% either way. Timed on an AVX-512 host
// running the AVX2 code (new over old, medians of per-run minimums, 6 alternating pairs): 1536^3
// 0.89x, 500^3 0.91x, 255^3 0.87x (no padded row any more), 1000^3 0.99x; train_step's 10 x 512 x
// 256 gradient one tile of 5 twice: 0.86x by minimums, 1.08x by medians. Padded (Zen 3, kernel 10th
// percentiles of 60 runs, alternating pairs, 6 rows over 4): 512^3 to 516 rows 0.92x (5 of 5),
// 1024^3 to 1026 0.95x (4 of 4). (Gated, the padded rows were branches in the k loop and the
// broadcasts spilled: 1024^3 42 ms against 16.)
// `staged`: the loads that move along the rows will be staged (their gates stay in the copy; the
// caller keeps the plan only if they are: stage_both).
int64_t avx2_tile_rows(const KernelShape& k, const OptPlan& plan, const UOp& r, int64_t want, bool staged) {
  const int64_t n = remaining(r, plan.opts()), six = want + want / 2;
  for (int64_t rows : {six, want + want / 4})
    if (n > 0 && n % rows == 0) return rows;
  const bool clamps = staged || std::all_of(k.load_indices.begin(), k.load_indices.end(), [&](const UOp& idx) {
                        return has_stride(idx, r, 0) || clamps_along(idx, r);
                      });
  const bool deep = !k.reduce.empty() && const_size(k.reduce[0]) >= kDeepReduce;  // else the stores bound it
  if (n > 0 && ((n + six - 1) / six * six - n) * kClampedPadShare < n && clamps && deep) return six;
  return tile_amount(plan, r, want);
}

// Whether an output axis other than `cols` and `besides` can be a register tile's rows: the loads
// along `cols` stay put along it (a convolution's output channels; a depthwise one has none).
bool has_tile_rows(const KernelShape& k, const UOp& cols, const UOp& besides) {
  return std::any_of(k.out.begin(), k.out.end(), [&](const UOp& r) { return !(r == cols) && !(r == besides) && reuses_loads_of(k, r, cols); });
}

// A convolution's second vector on a 16-register CPU (AVX2) whose columns would be padded to take
// two: an output axis along which the input loaded as vectors moves (the image's rows) and every
// other input of the reduction stays put (the weights), upcast by 2 instead. Padded, the last
// column block holds a vector of padding behind branches in the k loop and the broadcasts spill
// (ResNet's 56 and 28 wide maps); AVX-512's 32 registers hold the padded tile, which measured
// faster there. AVX2 code on an AVX-512 host, alternating pairs, new over old: 64 -> 64 channels
// on 56 x 56 0.80x (6 of 6), 64 -> 128 channels, stride 2, on 28 x 28 0.92x (4 of 6).
std::optional<UOp> second_vector_axis(const KernelShape& k, const UOp& cols, int64_t lanes, const OptPlan& plan) {
  if (k.reduce.size() < 2 || remaining(cols, plan.opts()) % (2 * lanes) == 0) return std::nullopt;
  for (const UOp& y : k.out) {
    if (y == cols || remaining(y, plan.opts()) % 2 != 0) continue;
    bool weights_stay = true, image_moves = false;
    for (const UOp& idx : k.load_indices) {
      if (!in_reduction(k, idx)) continue;
      if (has_stride(idx, cols, 0)) weights_stay &= has_stride(idx, y, 0);
      else image_moves |= !has_stride(idx, y, 0);
    }
    // (a depthwise convolution, no output channels to tile, does better with its taps unrolled)
    if (weights_stay && image_moves && has_tile_rows(k, cols, y)) return y;
  }
  return std::nullopt;
}

// A convolution with no output channels to tile (depthwise: its image moves along every output
// axis) whose next output row reads the input rows its own taps read but one (stride 1): with its
// small windows unrolled (unroll_small_windows), an upcast of the output rows by up to `tile` lets
// neighbouring rows share those loads (equal loads of the unrolled taps merge), where a second
// column vector shared nothing: a tile of about 64 outputs, 4 rows of 16 lanes or 8 of 8. New over
// old, alternating pairs, 256 channels of 56 x 56: AVX-512 0.79x, AVX2 code on that host 0.46x;
// 32 x 112 x 112 0.72x, 512 x 14 x 14 0.75x, 8 x 128 x 28 x 28 0.87x. The rows axis, or nothing:
// not for stride 2 (8 x 128 of 56 x 56: 2x slower than its two padded column vectors), a window
// that is not unrolled (5 x 5) or rows that `tile` splits no way (7).
std::optional<UOp> overlapping_rows_axis(const KernelShape& k, const UOp& cols, int64_t tile) {
  const bool unrolled = std::any_of(k.reduce.begin(), k.reduce.end(), [](const UOp& r) { return const_size(r) >= 2 && const_size(r) <= 4; });
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

// Adds op(r, want) with the amount that fits (nothing when none does); true when added.
bool add_fitted(OptPlan& plan, OptOp op, const UOp& r, int64_t want, bool vectorize = false) {
  int64_t a = fit(remaining(r, plan.opts()), want, vectorize);
  return a > 1 && plan.add({op, range_axis(r), a, vectorize});
}

// A reduce over an axis the inputs do not walk contiguously (out[j] = sum_i x[i, j]): the vector
// goes along the contiguous output axis instead, four of them side by side (independent
// accumulators: the loads of one row of x stay in flight together), and the reduce is unrolled a
// little so several rows' loads overlap.
void reduce_across(const KernelShape& k, OptPlan& plan, const Vectors& vectors) {
  const UOp& j = k.contiguous;
  int64_t v = vector_lanes(plan, j, vectors);
  if (v > 1 && plan.add({OptOp::UPCAST, range_axis(j), v, true})) add_fitted(plan, OptOp::UPCAST, j, 4);
  add_fitted(plan, OptOp::UNROLL, k.reduce.back(), 4);
}

// Elementwise: vectors along the contiguous output axis. An input that is read across it (a
// transposed or permuted view) but walks another output axis contiguously gets that axis upcast
// too, so each cache line of it is used whole while it is loaded.
void elementwise(const KernelShape& k, OptPlan& plan, const Vectors& vectors) {
  const UOp& j = k.contiguous;
  int64_t v = vector_lanes(plan, j, vectors);
  if (v > 1) plan.add({OptOp::UPCAST, range_axis(j), v, true});
  for (const UOp& idx : k.load_indices) {
    if (!vectors.cpu) break;
    if (has_stride(idx, j, 1) || has_stride(idx, j, 0)) continue;
    for (const UOp& r : k.out)
      if (!(r == j) && has_stride(idx, r, 1)) {
        add_fitted(plan, OptOp::UPCAST, r, std::min<int64_t>(vectors.lanes, 8));
        return;
      }
  }
}

// Whether the plan has a register tile with rows: an UPCAST (not the vector's) of an axis other
// than the vector's.
bool has_rows(const OptPlan& plan) {
  int64_t vector_axis = -1;
  for (const Opt& o : plan.opts())
    if (o.vectorize) vector_axis = o.axis;
  return std::any_of(plan.opts().begin(), plan.opts().end(),
                     [&](const Opt& o) { return o.op == OptOp::UPCAST && !o.vectorize && o.axis != vector_axis; });
}

// How a CPU's register tile takes its rows: `wide` with 32 vector registers (cpu_tile_rows),
// `fma_latency` with fewer and two FMA pipes to keep busy (avx2_tile_rows), else `plain`.
enum class TileRule { plain, fma_latency, wide };
TileRule tile_rule(const Target& target) {
  if (!target.has(KILN_TARGET_HAS_THREADS)) return TileRule::plain;
  if (target.vector_regs() >= 32) return TileRule::wide;
  return target.fma_units() >= 2 ? TileRule::fma_latency : TileRule::plain;
}

// The target's vector width in the kernel's elements (max_vector_width counts 4-byte lanes).
int64_t lanes_of(const Target& target, const KernelShape& k) {
  return std::max<int64_t>(1, static_cast<int64_t>(target.max_vector_width) * 4 / std::max(1, k.itemsize));
}

// Whether every reduce of the kernel sums over values that do not move along output axis j (a
// row kernel computes them before its loop over j).
bool row_reduces(const UOp& ast, const UOp& j) {
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::REDUCE && u.nsrc() > 1)
      for (const UOp& x : toposort(u.src(0)))
        if (x == j) return false;
  return true;
}

// Small reduce windows (a pooling window, a depthwise filter's taps) are unrolled whole: the loop
// and its counter go, and neighbouring taps' index math folds into constant offsets. Only where
// the copies stay few (at most 4 per window, 16 in all), and not under a register tile with rows:
// there the copies multiply the tile's code (conv2d 3x3: 7.9 -> 10.7+ ms). A tile of vectors alone
// (a depthwise convolution's two vectors) takes them: its body is small.
void unroll_small_windows(const KernelShape& k, OptPlan& plan) {
  if (has_rows(plan)) return;
  int64_t copies = 1;
  for (const UOp& red : k.reduce) {
    int64_t n = const_size(red);
    bool touched = std::any_of(plan.opts().begin(), plan.opts().end(), [&](const Opt& o) { return o.axis == range_axis(red); });
    if (touched || n < 2 || n > 4 || copies * n > 16) continue;
    if (plan.add({OptOp::UNROLL, range_axis(red), n})) copies *= n;
  }
}

// CPU threads over the output axes of a kernel with enough work, outermost first (`first`, an
// axis id, before the others): an axis with fewer chunks left than wanted (batch 1, a small
// leading axis, an axis upcast whole) leaves the rest to the next axes, so a matmul with a few
// rows threads its columns too. THREAD's chunks have a dynamic bound: counts need not divide.
// A register tile's kernel (compute bound) gets up to kChunksPerThread chunks per thread (each at
// least kThreadWork operations): a kernel takes as long as its slowest thread, and the cpu backend
// hands chunks out as threads come free, so a core slowed by a neighbour (a shared host, a busy
// hyperthread sibling, an efficiency core) runs fewer of them and the others take the rest
// (A/B pairs on a 2-vCPU host whose vCPUs ran up to 1.5x apart: matmul1024 0.83x the time,
// matmul512 0.88x, mlp 0.78x, conv2d 0.96x). Memory-bound kernels keep one chunk per thread (the
// memory a slow core waits for is everyone's: elementwise and softmax measured 1.05x slower).
void add_threads(const KernelShape& k, const Target& target, OptPlan& plan, int64_t first, int64_t per_thread) {
  // (saturating: a row kernel's reduces in turn, six of 1024 in softmax's backward, overflowed the
  // product, which then read as too little work to thread)
  int64_t work = 1;
  auto times = [&](const UOp& r) {
    if (__builtin_mul_overflow(work, std::max<int64_t>(1, const_size(r)), &work)) work = INT64_MAX;
  };
  std::for_each(k.out.begin(), k.out.end(), times);
  std::for_each(k.reduce.begin(), k.reduce.end(), times);
  if (work < kThreadWork) return;
  const int64_t threads = target.threads;
  int64_t want = threads < 2 ? threads : std::min(threads * per_thread, std::max(threads, work / kThreadWork));
  std::vector<UOp> order;
  for (const UOp& r : k.out)
    if (range_axis(r) == first) order.insert(order.begin(), r);
    else order.push_back(r);
  for (const UOp& r : order) {
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
    // (a kernel with several outputs stores them all under one END, at one index: schedule/group.cpp)
    if (u.op() == Ops::END && (u.src(0).op() == Ops::STORE || u.src(0).op() == Ops::GROUP))
      for (size_t i = 1; i < u.nsrc(); ++i) k.out.push_back(u.src(i));
    if (u.op() == Ops::STORE && u.src(0).src(0).op() == Ops::PARAM) {  // (not a row buffer: row_values.cpp)
      k.itemsize = k.store_index ? std::max(k.itemsize, u.src(1).dtype().scalar_size()) : u.src(1).dtype().scalar_size();
      k.store_index = u.src(0).src(1);
    }
    if (u.op() == Ops::LOAD) k.load_indices.push_back(u.src(0).src(1));
    if (u.op() == Ops::RANGE && range_type(u) == AxisType::REDUCE) k.reduce.push_back(u);
  }
  for (const UOp& r : k.out)
    if (has_stride(k.store_index, r, 1)) k.contiguous = r;
  return k;
}

bool pad_to(OptPlan& plan, const UOp& r, int64_t amount) {
  const int64_t n = remaining(r, plan.opts());
  if (n <= 0 || amount < 2) return false;
  return n % amount == 0 || (cheap_pad(n, amount) && plan.add({OptOp::PADTO, range_axis(r), amount}));
}

namespace {

// The heuristic's plan. `across`: a matmul whose B is read across its columns (x @ w.T: w's rows
// are the output columns, contiguous along K) tiled as a matmul anyway, its vector loads of B
// gathers until the panel is staged (the caller keeps the plan only if it is). `rows_staged`: an
// AVX2 tile may pad rows whose loads are contiguous (the caller keeps the plan only if it stages
// them, staged_both).
OptPlan plan_kernel(const UOp& ast, const Target& target, bool across, bool rows_staged = false) {
  OptPlan plan(ast, target);
  KernelShape k = inspect_kernel(ast);
  if (!k.store_index) return plan;
  const std::vector<Opt>& opts = plan.opts();
  int64_t lanes = lanes_of(target, k);
  const UOp& contiguous = k.contiguous;
  const Vectors vectors{lanes, target.has(KILN_TARGET_HAS_MASKED_VECTORS), target.has(KILN_TARGET_HAS_THREADS)};
  // A register tile needs registers: 32 vector registers with AVX-512 (16 lanes), else 16.
  int tile_rows = target.vector_regs() >= 32 ? 4 : 2;
  const bool wide_cpu = tile_rule(target) == TileRule::wide;        // cpu_tile_rows
  const bool avx2_cpu = tile_rule(target) == TileRule::fma_latency;  // avx2_tile_rows
  std::optional<Opt> swap, dot_swap;  // applied last: THREAD still splits the outermost axis
  std::optional<RowsOutside> rows_swap;
  // a row kernel (schedule/kernelize.cpp's row fusion: softmax, layernorm): its reduces run over
  // a row before the loop that writes it, and none moves along the output's contiguous axis
  const bool row_kernel = !k.reduce.empty() && contiguous && lanes > 1 && row_reduces(ast, contiguous);
  // (gathered vectors, a strided view's, pay only where tile rows reuse them: a stride-2 depthwise
  // convolution has none, and its scalar plan measured 1.25x (8 x 128 x 56 x 56) to 4x (1 x 96 x
  // 112 x 112) faster than its gathers)
  const bool matmul_like = !row_kernel && !k.reduce.empty() && contiguous && reused(k, contiguous) &&
                           contiguous_loads(k, contiguous, across ? INT64_MAX : kMaxGatherStride) && lanes > 1 &&
                           (across || contiguous_loads(k, contiguous) || has_tile_rows(k, contiguous, contiguous));
  if (row_kernel) {
    // the row's output a vector at a time; each reduce with vector lanes along the row (its loads
    // walk it contiguously) and unrolled by 2 (a shorter chain through its accumulator)
    elementwise(k, plan, vectors);
    for (const UOp& u : toposort(ast)) {
      if (u.op() != Ops::REDUCE || u.nsrc() < 2) continue;
      const UOp& r = u.src(u.nsrc() - 1);
      if (range_type(r) != AxisType::REDUCE) continue;
      bool walks = true;
      for (const UOp& idx : k.load_indices) walks &= has_stride(idx, r, 1) || has_stride(idx, r, 0);
      if (int64_t v = walks ? vector_lanes(plan, r, vectors) : 1; v > 1) plan.add({OptOp::UNROLL, range_axis(r), v, true});
      if (remaining(r, opts) >= 16) add_fitted(plan, OptOp::UNROLL, r, 2);
    }
  }
  // a matmul's columns are padded for two vectors when that is cheap (1000 -> 1024), else for one
  // (a convolution on AVX2 may take its second vector from the image's rows instead)
  const std::optional<UOp> second = matmul_like && avx2_cpu ? second_vector_axis(k, contiguous, lanes, plan) : std::nullopt;
  const int64_t taps_tile = std::max<int64_t>(2, 64 / lanes);  // rows of a depthwise tile: ~64 outputs
  const std::optional<UOp> taps_rows =
      matmul_like && target.has(KILN_TARGET_HAS_THREADS) ? overlapping_rows_axis(k, contiguous, taps_tile) : std::nullopt;
  if (matmul_like && vectors.masked && !second && !taps_rows) pad_to(plan, contiguous, lanes * 2);
  // without masked vectors (OpenCL, HIP) padded columns still take one: B's loads along them clamp
  // to the last column, lane by lane (pad_range), and only the stores are gated; scalar columns
  // left PoCL without its vectors (1001^3: 2.4 s, padded vectors 80-130 ms, 1000^3 34-41 ms)
  if (matmul_like && !vectors.masked && !vectors.cpu) pad_to(plan, contiguous, lanes);
  if (matmul_like && vector_lanes(plan, contiguous, vectors) > 1) {
    // matmul-like (C = A @ B): a register tile. Vector lanes along the contiguous output axis
    // (loads of B are vectors), two vectors, and rows of an output axis along which B's vectors
    // are reused (A's elements broadcast): 2 x 8 vector accumulators with 32 vector registers
    // (AVX-512), 2 x 4 with 16 (6 or 5 where that divides the rows on AVX2, avx2_tile_rows).
    // (Measured on AVX-512: 8 rows beat 4, 6 and 12, and 10 beats 8 where it divides,
    // cpu_tile_rows; two vectors beat one, three and four.) Sizes that do not
    // divide are padded when that is cheap (999 -> 1024 columns, 1001 rows), else take the largest
    // amount that divides.
    // (asked again on purpose: an axis the first call padded for narrower vectors may pad once
    // more for whole ones, each step judged against the size before it. 49 columns -> 56 -> 64
    // with 16 lanes measured 0.54-0.91 ms on an AVX-512 Xeon, 1 x 2048 x 7 x 7 -> 512, against
    // 1.0-1.8 ms for 56 columns of 8 lanes, whose narrower tile also takes another thread plan)
    int64_t vec = vector_lanes(plan, contiguous, vectors);
    plan.add({OptOp::UPCAST, range_axis(contiguous), vec, true});
    if (second) plan.add({OptOp::UPCAST, range_axis(*second), 2});
    else if (!taps_rows && remaining(contiguous, opts) % 2 == 0) plan.add({OptOp::UPCAST, range_axis(contiguous), 2});
    for (auto it = k.out.rbegin(); it != k.out.rend(); ++it)
      if (int64_t rows = wide_cpu                            ? cpu_tile_rows(plan, *it, tile_rows * 2)
                         : avx2_cpu && k.reduce.size() == 1 ? avx2_tile_rows(k, plan, *it, tile_rows * 2, rows_staged)
                                                             : tile_amount(plan, *it, tile_rows * 2);
          !(*it == contiguous) && const_size(*it) >= 8 && reuses_loads_of(k, *it, contiguous, rows) &&
          rows > 1 && pad_to(plan, *it, rows) && plan.add({OptOp::UPCAST, range_axis(*it), rows})) {
        swap = across ? std::optional<Opt>{Opt{OptOp::SWAP, range_axis(*it), range_axis(contiguous)}}
                      : plan_panels(k, *it, contiguous, vec * 2, remaining(*it, opts), target, plan);
        if (!swap && !across) rows_swap = rows_outside_tiles(ast, k, *it, contiguous, target);
        break;
      }
    // no rows to tile (a vector times a matrix, or fewer than 8 rows) and a B larger than the L2
    int64_t b_bytes = const_size(contiguous) * k.itemsize;
    for (const UOp& red : k.reduce) b_bytes *= std::max<int64_t>(1, const_size(red));
    if (!has_rows(plan) && !across && b_bytes > static_cast<int64_t>(target.l2())) block_down_columns(k, plan);
  } else if (!k.reduce.empty() && !row_kernel) {
    UOp red = k.reduce.back();
    // several reduces in turn (schedule/group.cpp): the one computed last consumes the others
    std::vector<UOp> reduces;
    for (const UOp& u : toposort(ast))
      if (u.op() == Ops::REDUCE && u.nsrc() > 1) reduces.push_back(u);
    if (reduces.size() > 1) red = reduces.back().src(reduces.back().nsrc() - 1);
    // vector lanes along a reduce axis the inputs walk contiguously (or not at all; a padded
    // reduce adds its identity for the masked terms)
    auto lanes_along = [&](const UOp& r) {
      bool ok = !k.load_indices.empty() && lanes > 1;
      for (const UOp& idx : k.load_indices) ok &= has_stride(idx, r, 1) || has_stride(idx, r, 0);
      return ok ? vector_lanes(plan, r, vectors) : int64_t{1};
    };
    // a kernel that reduces one row several times in turn (softmax's max, then the sum of
    // exp(x - max)) gets vector lanes along each of those reduces, and unrolls it by 2 (a shorter
    // chain through its accumulator; more would leave the last reduce no unroll under the
    // action table's bound on copies)
    for (size_t i = 0; i + 1 < reduces.size(); ++i) {
      const UOp& r = reduces[i].src(reduces[i].nsrc() - 1);
      if (r == red) continue;
      if (int64_t v = lanes_along(r); v > 1) plan.add({OptOp::UNROLL, range_axis(r), v, true});
      if (remaining(r, opts) >= 16) add_fitted(plan, OptOp::UNROLL, r, 2);
    }
    int64_t vec = lanes_along(red);
    // a kernel summing over several axes, none in turn (a depthwise convolution's weight gradient
    // over batch, rows and columns): when the last cannot take the lanes, the one the loads walk
    // contiguously does (8 x 128 x 28 x 28, 3x3: 9.8 -> 1.9 ms, torch's whole backward 4.7)
    for (auto it = k.reduce.rbegin(); vec == 1 && reduces.size() <= 1 && it != k.reduce.rend(); ++it)
      if (!(*it == red) && const_size(*it) >= 16 && (vec = lanes_along(*it)) > 1) red = *it;
    if (vec > 1) {
      plan.add({OptOp::UNROLL, range_axis(red), vec, true});
      // dot products (C = A @ B.T): a tile of output axes along which an input is reused keeps
      // several vector accumulators busy per loaded vector
      std::vector<UOp> tiles;  // innermost first
      for (auto it = k.out.rbegin(); it != k.out.rend() && tiles.size() < 2; ++it)
        if (int64_t rows = tile_amount(plan, *it, tiles.empty() ? 4 : tile_rows);
            const_size(*it) >= 8 && reused(k, *it) && const_size(red) >= 4 * vec && rows > 1 && pad_to(plan, *it, rows) &&
            plan.add({OptOp::UPCAST, range_axis(*it), rows}))
          tiles.push_back(*it);
      if (tiles.empty() && remaining(red, opts) % 2 == 0 && remaining(red, opts) >= 4) plan.add({OptOp::UNROLL, range_axis(red), 2});
      // the inner axis' input is read again for every outer iteration: when it is larger than the
      // L2 and the outer axis' fits, the two go the other way round (x @ w.T, 64 x 1024 @ (4096 x
      // 1024).T: w, 16 MiB, was read once per row tile; swapped, each column tile re-reads x, 256
      // KiB, from the L2: 0.5x the time), the outer axis threaded (applied last, like a matmul's;
      // CPU targets, where it was measured: a GPU's workgroups share the caches differently)
      if (tiles.size() == 2 && k.reduce.size() == 1 && target.has(KILN_TARGET_HAS_THREADS)) {
        const int64_t l2 = static_cast<int64_t>(target.l2());
        auto bytes = [&](const UOp& r) { return const_size(r) * const_size(red) * k.itemsize; };
        if (bytes(tiles[0]) > l2 && bytes(tiles[1]) <= l2) dot_swap = Opt{OptOp::SWAP, range_axis(tiles[1]), range_axis(tiles[0])};
      }
    } else if (contiguous && contiguous_loads(k, contiguous)) {
      reduce_across(k, plan, vectors);
    } else if (const_size(red) >= 16) {
      add_fitted(plan, OptOp::UNROLL, red, 4);
    }
  } else if (contiguous && lanes > 1) {
    elementwise(k, plan, vectors);
  }
  unroll_small_windows(k, plan);
  // a depthwise convolution's output rows, after its taps are unrolled (overlapping_rows_axis)
  if (taps_rows) add_fitted(plan, OptOp::UPCAST, *taps_rows, taps_tile);
  if (swap)
    if (std::optional<OptPlan> both = stage_both(ast, k, plan, *swap, target)) return *both;
  // a matmul walking column panels outside its row tiles threads the panels: a chunk of rows
  // would stage every panel again (a convolution walking its rows outside, the rows)
  if (target.has(KILN_TARGET_HAS_THREADS))
    add_threads(k, target, plan, swap ? swap->amount : dot_swap ? dot_swap->amount : rows_swap ? rows_swap->swap.amount : -1,
                has_rows(plan) ? kChunksPerThread : 1);
  if (target.has(KILN_TARGET_HAS_LOCAL)) add_workgroup_opts(k, target, plan);
  if (swap && plan.add(*swap)) stage_reused_panel(*swap, plan);
  if (dot_swap) plan.add(*dot_swap);
  if (rows_swap && plan.add(rows_swap->swap)) plan.add({OptOp::STAGE, rows_swap->swap.axis, rows_swap->image_slot});
  return plan;
}

// A convolution whose columns waste vector lanes takes its vector lanes along the output channels
// instead. Column vectors pad ResNet's 56, 28, 14 and 7 wide maps to whole vectors (12.5% of the
// work, and a 7 wide map gets half a vector) and a stride-2 convolution's are gathers (two loads
// and a shuffle each); a vector of output channels wastes nothing and its image elements are
// broadcast. The tile: the most accumulators the registers hold beside the weights' vectors and
// a broadcast, of two vectors of channels or one by up to 8 columns (2 x 8 of 32 registers on
// AVX-512, 2 x 4 or 1 x 7 of 16 on AVX2). The weights, read across the channels (each filter's
// taps are contiguous), are staged (STAGE lays the vector lanes innermost) at the outermost loop
// where the panel fits a stage buffer, else in blocks of the input channels of at most
// kConvPanelBytes (BLOCK: not under a cast), else the tile takes one vector of channels (half the
// panel). Columns that take whole vectors keep them (8 x 32 x 64 x 64 -> 64: 4.8 ms with column
// vectors, 6.6 with channel vectors). AVX-512, alternating pairs, kernel times, old -> new: 64 ->
// 64 channels on 56 x 56 1.57 -> 1.16 ms, 64 -> 128 stride 2 (28 x 28 out) 1.09 -> 0.68, 128 ->
// 128 on 28 x 28 1.66 -> 1.15, 256 -> 256 on 14 x 14 1.74 -> 1.02, 512 -> 512 on 7 x 7 2.7 ->
// 1.7 (with a bias and relu 3.6 -> 1.6), the same at batch 8: 14 x 14 14.2 -> 9.6, 7 x 7 31 -> 8.4;
// pointwise, 2048 -> 512 on 7 x 7 1.06 -> 0.52, 1024 -> 256 on 14 x 14 0.75 -> 0.38 (on 28 x 28,
// wider than a vector, 1.08x slower: those keep their column vectors).
constexpr int64_t kConvPanelBytes = int64_t{128} << 10;  // blocks of 64 channels (73 KiB) beat 32 and 16
// Columns a channel-vector tile takes (at most `most`): the widest divisor of n, or where that is
// under 3 (a prime width: 29 after a stride of 2) the width whose padding of n is least (the
// widest of those), padded by at most an eighth (PADTO; the padded columns' image loads are
// clamped: a channel vector leaves them scalars). 64 -> 128 channels, stride 2, 57 x 57 -> 29 x 29,
// AVX2: 6.1 ms (column vectors) -> 1.2-1.5 (2 x 6 padded to 30; 1.0-1.4 for 28 x 28, whose 4
// columns divide: padding 28 to 30 for 6 was slower, 1.15-1.25).
int64_t tile_width(int64_t n, int64_t most) {
  if (const int64_t w = fit(n, most, false); w >= 3 || n <= most) return w;
  int64_t best = 1, best_padded = n + n / 8 + 1;
  for (int64_t w = most; w >= 2; --w)
    if (const int64_t padded = (n + w - 1) / w * w; padded < best_padded) best = w, best_padded = padded;
  return best;
}
// Stages input `slot` at the outermost output loop where its part fits a stage buffer.
bool stage_outermost(const KernelShape& k, OptPlan& plan, int64_t slot) {
  return std::any_of(k.out.begin(), k.out.end(), [&](const UOp& r) { return plan.add({OptOp::STAGE, range_axis(r), slot}); });
}

// A pointwise (1 x 1) convolution over more output positions than output channels reads more of
// its image than of its weights, and walking its channel panels outermost reads the whole image
// once per panel (from the L3 at best). Its panels go inside the output rows instead: each thread
// takes a share of the channels and stages all of its weights once (STAGE at the outermost loop; a
// share past a stage buffer keeps the usual order), and a row of the image, read once, stays in the
// L2 while every panel passes over it. ResNet's stride-2 shortcut, 256 -> 512 channels, 56 x 56 ->
// 28 x 28, Zen 3 (AVX2, 2 threads), kernel minimum per process, 4 alternating rounds: batch 8
// 29-38 -> 18-19 ms (torch 14-16), batch 1 2.5-3.8 -> 2.1-3.1; 128 -> 256 channels at batch 8
// 6.7-13.5 -> 5.2-6.4; 64 -> 128 on 112 x 112 at batch 4 3.5-7.7 -> 4.0-5.0; 256 -> 512 on 7 x 7
// at batch 64 11.4-13.1 -> 11.2-12.6.
std::optional<OptPlan> panels_inside_rows(const KernelShape& k, const Target& target, const OptPlan& tiled, const UOp& channels_out,
                                          int64_t weight_slot, int64_t taps) {
  if (taps != 1) return std::nullopt;
  int64_t positions = 1;
  for (const UOp& r : k.out)
    if (!(r == channels_out)) positions *= std::max<int64_t>(1, const_size(r));
  if (positions <= const_size(channels_out)) return std::nullopt;
  // the output axis the panels go inside: the innermost one outside the columns
  const UOp* rows = nullptr;
  for (const UOp& r : k.out)
    if (!(r == channels_out) && !(r == k.contiguous) && remaining(r, tiled.opts()) > 1) rows = &r;
  if (!rows || range_axis(*rows) < range_axis(channels_out)) return std::nullopt;
  OptPlan plan = tiled;
  add_threads(k, target, plan, range_axis(channels_out), 1);
  if (!plan.add({OptOp::SWAP, range_axis(channels_out), range_axis(*rows)})) return std::nullopt;
  return stage_outermost(k, plan, weight_slot) ? std::optional{plan} : std::nullopt;
}

constexpr int64_t kMinPointwiseBlock = 64;                 // fewer channels a block: its loop costs more
std::optional<OptPlan> channel_vector_conv(const UOp& ast, const Target& target) {
  KernelShape k = inspect_kernel(ast);
  const int64_t lanes = lanes_of(target, k);
  if (!target.has(KILN_TARGET_HAS_THREADS) || lanes < 8 || k.reduce.empty() || !k.contiguous) return std::nullopt;
  // (a symbolic size, 0 here, leaves the kernel to the general plan)
  if (std::any_of(k.reduce.begin(), k.reduce.end(), [](const UOp& r) { return const_size(r) < 1; })) return std::nullopt;
  const UOp& cols = k.contiguous;
  const std::optional<ConvInputs> conv = conv_inputs(ast, k, cols);
  if (!conv) return std::nullopt;
  const UOp &image = conv->image, &weights = conv->weights;
  const int64_t weight_slot = conv->weight_slot;
  int64_t step = 0;
  if (!stride_of(image, cols, step) || step < 1) return std::nullopt;
  if (const_size(cols) < 1 || (step == 1 && const_size(cols) % (2 * lanes) == 0)) return std::nullopt;
  // columns within a 32nd of whole vectors keep them, padded where vectors are masked (a 1-D
  // convolution over 1022 positions: 8 x 256 channels, 3 taps, 40 -> 28-31 ms, torch 25)
  const int64_t whole = (const_size(cols) + 2 * lanes - 1) / (2 * lanes) * (2 * lanes);
  if (step == 1 && target.has(KILN_TARGET_HAS_MASKED_VECTORS) && (whole - const_size(cols)) * 32 <= const_size(cols)) return std::nullopt;
  // the output channels: the weights move along them, the image does not
  const auto f = std::find_if(k.out.begin(), k.out.end(), [&](const UOp& r) {
    return !(r == cols) && const_size(r) > 0 && const_size(r) % lanes == 0 && has_stride(image, r, 0) && !has_stride(weights, r, 0);
  });
  if (f == k.out.end()) return std::nullopt;
  // a pointwise (1 x 1) convolution reduces over its channels only, as a matmul does: it takes
  // channel vectors where a row of its image is narrower than a vector (an image, unlike a
  // matmul's B, also moves along output rows where the weights stay put), or where its stride
  // (2 to kMaxShuffleStride; a matmul's transposed input moves by whole rows) makes column vectors
  // gathers (ResNet's downsampling shortcut, 256 -> 512 channels, 56 x 56 -> 28 x 28: 5.4 -> 2.5
  // ms on AVX2; 57 -> 29 wide 5.4-7.2 -> 3.9-4.8)
  const bool image_rows = std::any_of(k.out.begin(), k.out.end(), [&](const UOp& r) {
    return !(r == cols) && !has_stride(image, r, 0) && has_stride(weights, r, 0);
  });
  const bool strided = step >= 2 && step <= kMaxShuffleStride;
  if (k.reduce.size() == 1 && !strided && (const_size(cols) >= lanes || !image_rows)) return std::nullopt;
  // blocks of the input channels: the reduce along which the weights move farthest
  const UOp* channels = nullptr;
  int64_t farthest = 0, taps = 1;
  for (const UOp& r : k.reduce)
    if (int64_t s = 0; stride_of(weights, r, s) && std::abs(s) > farthest) farthest = std::abs(s), channels = &r;
  for (const UOp& r : k.reduce)
    if (channels && !(r == *channels)) taps *= const_size(r);
  auto tile = [&](int64_t vecs, int64_t width) -> std::optional<OptPlan> {
    OptPlan plan(ast, target);
    if (!plan.add({OptOp::UPCAST, range_axis(*f), lanes, true}) || (vecs > 1 && !plan.add({OptOp::UPCAST, range_axis(*f), vecs})) ||
        (const_size(cols) % width != 0 && !plan.add({OptOp::PADTO, range_axis(cols), width})) ||
        !plan.add({OptOp::UPCAST, range_axis(cols), width}))
      return std::nullopt;
    if (std::optional<OptPlan> inner = panels_inside_rows(k, target, plan, *f, weight_slot, taps)) return inner;
    add_threads(k, target, plan, range_axis(*f), kChunksPerThread);
    // a pointwise (1 x 1) panel is read again for every output row: past half the L1d its input
    // channels go in blocks whose panel fits (2048 -> 512 channels on 7 x 7, AVX2: a 64 KiB panel
    // in blocks of 256 or 512 channels, 2.1-2.3 -> 1.6-1.8 ms over three alternating rounds; at
    // batch 8 0.78x; 1024 -> 256 on 7 x 7 and 1024 -> 512 on 4 x 4 even; a 3 x 3 kernel's panel
    // measured no gain, 512 -> 512 on 7 x 7)
    if (const int64_t fits = static_cast<int64_t>(target.l1d()) / 2 / (vecs * lanes * k.itemsize);
        taps == 1 && channels && const_size(*channels) > fits)
      for (int64_t cb = fits; cb >= kMinPointwiseBlock; --cb)
        if (const_size(*channels) % cb == 0 && plan.add({OptOp::BLOCK, range_axis(*channels), cb})) break;
    // staged at the outermost loop where the panel fits
    auto stage = [&] { return stage_outermost(k, plan, weight_slot); };
    if (stage()) return plan;
    if (!channels) return std::nullopt;
    for (int64_t cb = std::min(const_size(*channels) / 2, kConvPanelBytes / (vecs * lanes * taps * k.itemsize)); cb >= 1; --cb)
      if (const_size(*channels) % cb == 0) return plan.add({OptOp::BLOCK, range_axis(*channels), cb}) && stage() ? std::optional{plan} : std::nullopt;
    return std::nullopt;
  };
  // the most accumulators the registers hold beside the weights' vectors and a broadcast, two
  // vectors of channels first
  // (the target's registers for float32, where the tiles were measured; other dtypes keep the count
  // by their element lanes until measured: docs/optimizer.md, "Known gaps")
  const int64_t regs = k.itemsize == 4 ? target.vector_regs() : lanes >= 16 ? 32 : 16;
  std::vector<std::pair<int64_t, int64_t>> tiles;  // (vectors, columns)
  for (int64_t v : {int64_t{2}, int64_t{1}})
    if (const int64_t w = tile_width(const_size(cols), std::min<int64_t>(8, (regs - v - 2) / v)); const_size(*f) % (v * lanes) == 0 && w >= 2)
      tiles.emplace_back(v, w);
  std::stable_sort(tiles.begin(), tiles.end(), [](const auto& a, const auto& b) { return a.first * a.second > b.first * b.second; });
  for (const auto& [vecs, width] : tiles)
    if (std::optional<OptPlan> plan = tile(vecs, width)) return plan;
  return std::nullopt;
}

// Whether some load moves contiguously along an output axis other than the contiguous one (A.T's
// rows in A.T @ B).
bool reads_down_columns(const KernelShape& k) {
  return k.reduce.size() == 1 && std::any_of(k.out.begin(), k.out.end(), [&](const UOp& r) {
           return !(r == k.contiguous) && std::any_of(k.load_indices.begin(), k.load_indices.end(),
                                                      [&](const UOp& idx) { return has_stride(idx, r, 1); });
         });
}

// Whether a plan stages both inputs of a matmul around its row tiles (stage_both's plan: two
// stages, no swap).
bool staged_both(const OptPlan& p) {
  const auto count = [&](OptOp op) { return std::count_if(p.opts().begin(), p.opts().end(), [&](const Opt& o) { return o.op == op; }); };
  return count(OptOp::STAGE) == 2 && count(OptOp::SWAP) == 0;
}

// x @ w.T with enough row tiles to pay for staging w (each thread copies all of it once): a dot
// product kernel (lanes along K) folds the lanes of every output and runs its epilogue on
// scalars; staged, it is the matmul kernel (mlp's 256 x 784 -> 512 layer: 0.87 -> 0.69 ms;
// mlp_gelu's 512 x 512 -> 2048 with the gelu epilogue: 20 -> 9 ms for the pair). With an A read
// down its columns too (A.T @ B.T), both inputs staged, the row tiles outside (stage_both; Zen 3,
// best of 15 calls, two rounds: 1024 x 512 over K = 768 18-20 -> 6.6-8.0 ms, the search had found
// 11-12; 1024^3 49 -> 21 ms; 1001 x 513 over 777 11.6 -> 9.5 ms; torch 7.4, 18.7, 8.8).
bool staged_across(const OptPlan& p) {
  int stages = 0;
  bool swapped = false;
  for (const Opt& o : p.opts()) {
    stages += o.op == OptOp::STAGE;
    swapped |= o.op == OptOp::SWAP;
  }
  return stages > 0 && (swapped || stages == 2);
}

}  // namespace

OptPlan hand_coded_optimizations(const UOp& ast, const Target& target) {
  if (std::optional<OptPlan> conv = channel_vector_conv(ast, target)) return *conv;
  if (target.has(KILN_TARGET_HAS_THREADS)) {
    KernelShape k = inspect_kernel(ast);
    int64_t rows = 1, lanes = lanes_of(target, k);
    for (const UOp& r : k.out)
      if (!(r == k.contiguous)) rows *= std::max<int64_t>(1, const_size(r));
    // (with fewer columns than two vectors, a padded tile costs more than the lanes fold: a
    // classifier's 10 outputs)
    if (k.store_index && k.contiguous && !k.reduce.empty() && rows > 8 * kFewRowTiles &&
        const_size(k.contiguous) >= 2 * lanes && !contiguous_loads(k, k.contiguous, kMaxGatherStride)) {
      // on AVX2 an A read down its columns too (A.T @ B.T) pads its rows to 6 where both inputs
      // are staged, as A.T @ B does below (Zen 3, kernel minimum per process, alternating rounds:
      // 1024 x 512 over K = 768 7.6-8.3 -> 6.4-7.0 ms in 5 of 5, torch 6.8-7.2; 1024^3 20.5-22.5 ->
      // 17.5-19.0 in 3 of 3; 1001 x 513 over 777 7.3-13.6 -> 6.7-11.4, medians 7.9 -> 7.7)
      if (tile_rule(target) == TileRule::fma_latency && reads_down_columns(k))
        if (OptPlan p = plan_kernel(ast, target, true, true); staged_both(p)) return p;
      if (OptPlan p = plan_kernel(ast, target, true); staged_across(p)) return p;
    }
  }
  // an A read down its columns (A.T @ B) on AVX2: its loads along the rows are contiguous, so a
  // padded row would gate them; staged with B (stage_both: two stages, no swap), the gates stay in
  // A's copy and the tile takes 6 rows as A @ B does (1024^3: 4 rows 23-26 ms, 6 padded to 1026
  // 18.8-19.9 over three alternating rounds; numpy 15-16)
  if (tile_rule(target) == TileRule::fma_latency && reads_down_columns(inspect_kernel(ast)))
    if (OptPlan p = plan_kernel(ast, target, false, true); staged_both(p)) return p;
  return plan_kernel(ast, target, false);
}

UOp apply_opts(const UOp& ast, const Target& target, std::vector<Opt>* applied) {
  if (knob(Knob::noopt)) return ast;
  OptPlan plan = hand_coded_optimizations(ast, target);
  if (applied) applied->insert(applied->end(), plan.opts().begin(), plan.opts().end());
  return plan.ast();
}

}  // namespace kiln
