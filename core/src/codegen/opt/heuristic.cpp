// codegen/opt/heuristic.cpp - the hand-coded heuristic: which actions a kernel gets on a target.
//
// It classifies the kernel (classify.cpp) and runs the planner of each of its classes in turn,
// most specific first, until one plans (heuristic.hpp; docs/optimizer.md maps the classes). This
// file holds the entry and the steps the planners share: vector lanes and tile sizes that fit an
// axis, threads, small windows unrolled, and the steps every plan ends with.
#include <algorithm>
#include <cstdlib>
#include <optional>

#include "codegen/opt/heuristic.hpp"
#include "ir/traverse.hpp"
#include "support/env.hpp"

namespace kiln {

namespace {

// Kernels with fewer operations than this stay on one thread (a launch across the pool costs more).
constexpr int64_t kThreadWork = 65536;
// Small reduce windows (kMaxWindow) are unrolled whole, at most this many copies in all.
constexpr int64_t kMaxWindowCopies = 16;

// Unrolls small reduce windows whole (their loop and counter go, neighbouring taps' index math
// folds), not under a register tile with rows: there the copies multiply the tile's code.
void unroll_small_windows(const KernelShape& k, OptPlan& plan) {
  if (has_rows(plan)) return;
  int64_t copies = 1;
  for (const UOp& red : k.reduce) {
    int64_t n = const_size(red);
    bool touched = std::any_of(plan.opts().begin(), plan.opts().end(), [&](const Opt& o) { return o.axis == range_axis(red); });
    if (touched || n < 2 || n > kMaxWindow || copies * n > kMaxWindowCopies) continue;
    if (plan.add({OptOp::UNROLL, range_axis(red), n})) copies *= n;
  }
}

// Whether a plan stages both inputs of a matmul around its row tiles (stage_both: two stages, no swap).
bool staged_both(const OptPlan& p) {
  const auto count = [&](OptOp op) { return std::count_if(p.opts().begin(), p.opts().end(), [&](const Opt& o) { return o.op == op; }); };
  return count(OptOp::STAGE) == 2 && count(OptOp::SWAP) == 0;
}

// Whether a plan stages w of x @ w.T (a swap and a stage, or both inputs).
bool staged_across(const OptPlan& p) {
  int stages = 0;
  bool swapped = false;
  for (const Opt& o : p.opts()) {
    stages += o.op == OptOp::STAGE;
    swapped |= o.op == OptOp::SWAP;
  }
  return stages > 0 && (swapped || stages == 2);
}

// staged_transposed: the matmul tile over x @ w.T, kept where w is staged; on an fma_latency CPU
// with an A read down its columns too (A.T @ B.T), first with both inputs staged and 6-row tiles.
std::optional<OptPlan> plan_staged_transposed(const Kernel& c) {
  if (c.rule == TileRule::fma_latency && reads_down_columns(c.k))
    if (OptPlan p = plan_register_tile(c, TileOptions{true, true}); staged_both(p)) return p;
  if (OptPlan p = plan_register_tile(c, TileOptions{true, false}); staged_across(p)) return p;
  return std::nullopt;
}

// staged_down_columns: A.T @ B on an fma_latency CPU, kept where both inputs are staged (the gates
// of its padded rows stay in A's copy), so its tile takes 6 rows as A @ B does.
std::optional<OptPlan> plan_staged_down_columns(const Kernel& c) {
  if (OptPlan p = plan_register_tile(c, TileOptions{false, true}); staged_both(p)) return p;
  return std::nullopt;
}

std::optional<OptPlan> plan_class(KernelClass cls, const Kernel& c) {
  switch (cls) {
    case KernelClass::none: return OptPlan(c.ast, c.target);
    case KernelClass::elementwise: return plan_elementwise(c);
    case KernelClass::row: return plan_row(c);
    case KernelClass::matmul:
    case KernelClass::depthwise: return plan_register_tile(c);
    case KernelClass::dot: return plan_dot(c);
    case KernelClass::reduce_across: return plan_reduce_across(c);
    case KernelClass::reduce: return plan_reduce(c);
    case KernelClass::channel_conv: return plan_channel_conv(c);
    case KernelClass::staged_transposed: return plan_staged_transposed(c);
    case KernelClass::staged_down_columns: return plan_staged_down_columns(c);
  }
  return std::nullopt;
}

}  // namespace

bool cheap_pad(int64_t n, int64_t amount) { return n > 0 && ((n + amount - 1) / amount * amount - n) * kPadShare <= n; }

int64_t fit(int64_t n, int64_t want, bool pow2) {
  for (int64_t a = want; a >= 2; a = pow2 ? a / 2 : a - 1)
    if (n > 0 && n % a == 0 && (!pow2 || (a & (a - 1)) == 0)) return a;
  return 1;
}

// The target's width when it divides what is left of r, or once r is padded to it cheaply (999 ->
// 1008, 7 -> 8), else the widest power of two that divides (down to v.narrowest()); 1 when none.
int64_t vector_lanes(OptPlan& plan, const UOp& r, const Vectors& v) {
  for (int64_t a = v.lanes; v.masked && a >= v.narrowest(); a /= 2)
    if (pad_to(plan, r, a)) break;
  int64_t n = fit(remaining(r, plan.opts()), v.lanes, true);
  return n >= v.narrowest() ? n : 1;
}

int64_t tile_amount(const OptPlan& plan, const UOp& r, int64_t want) {
  const int64_t n = remaining(r, plan.opts());
  return cheap_pad(n, want) ? want : fit(n, want, false);
}

bool add_fitted(OptPlan& plan, OptOp op, const UOp& r, int64_t want, bool vectorize) {
  int64_t a = fit(remaining(r, plan.opts()), want, vectorize);
  return a > 1 && plan.add({op, range_axis(r), a, vectorize});
}

// An UPCAST (not the vector's) of an axis other than the vector's.
bool has_rows(const OptPlan& plan) {
  int64_t vector_axis = -1;
  for (const Opt& o : plan.opts())
    if (o.vectorize) vector_axis = o.axis;
  return std::any_of(plan.opts().begin(), plan.opts().end(),
                     [&](const Opt& o) { return o.op == OptOp::UPCAST && !o.vectorize && o.axis != vector_axis; });
}

// An axis with fewer chunks left than wanted leaves the rest to the next axes; THREAD's chunks have
// a dynamic bound (counts need not divide). A compute-bound kernel takes up to `per_thread` chunks
// a thread of at least kThreadWork operations each, so a core slowed by a neighbour runs fewer
// (docs/optimizer.md, "Threads").
void add_threads(const KernelShape& k, const Target& target, OptPlan& plan, int64_t first, int64_t per_thread) {
  int64_t work = 1;  // (saturating: several reduces in turn overflowed the product)
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

KernelShape inspect_kernel(const UOp& ast) {
  KernelShape k;
  for (const UOp& u : toposort(ast)) {
    // (a kernel with several outputs stores them all under one END, at one index: schedule/group.cpp)
    if (u.op() == Ops::END && (u.src(0).op() == Ops::STORE || u.src(0).op() == Ops::GROUP))
      for (size_t i = 1; i < u.nsrc(); ++i) k.out.push_back(u.src(i));
    if (u.op() == Ops::STORE && u.src(0).src(0).op() == Ops::PARAM) {  // (not a row buffer: row_values.cpp)
      const int size = u.src(1).dtype().scalar_size();
      if (!k.store_index || size > k.itemsize) k.stored = u.src(1).dtype().scalar();
      k.itemsize = k.store_index ? std::max(k.itemsize, size) : size;
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

OptPlan finish_plan(const Kernel& c, OptPlan plan, const PlanTail& tail) {
  const KernelShape& k = c.k;
  unroll_small_windows(k, plan);
  // a depthwise convolution's output rows, after its taps are unrolled
  if (tail.taps_rows) add_fitted(plan, OptOp::UPCAST, *tail.taps_rows, tail.taps_tile);
  if (tail.swap)
    if (std::optional<OptPlan> both = stage_both(c.ast, k, plan, *tail.swap, c.target)) return *both;
  // a matmul walking column panels outside its row tiles threads the panels (a convolution
  // walking its rows outside, the rows; a matmul walking B in blocks down its columns, the columns)
  if (c.target.has(KILN_TARGET_HAS_THREADS))
    add_threads(k, c.target, plan,
                tail.swap       ? tail.swap->amount
                : tail.dot_swap ? tail.dot_swap->amount
                : tail.rows_swap ? tail.rows_swap->swap.amount
                                 : tail.threads_first,
                has_rows(plan) ? kChunksPerThread : 1);
  if (c.target.has(KILN_TARGET_HAS_LOCAL)) add_workgroup_opts(k, c.target, plan);
  if (tail.swap && plan.add(*tail.swap)) stage_reused_panel(*tail.swap, plan);
  if (tail.dot_swap) plan.add(*tail.dot_swap);
  if (tail.rows_swap && plan.add(tail.rows_swap->swap)) plan.add({OptOp::STAGE, tail.rows_swap->swap.axis, tail.rows_swap->image_slot});
  return plan;
}

// A bfloat16 matmul on a target with pairwise dot products (DOT2: AVX512-BF16's vdpbf16ps, twice
// float32's multiply-adds per instruction): its reduce unrolled by 2 before the staging, so the
// staged B panel holds each column's K pairs side by side (stage.cpp) and the inner loop becomes
// one DOT2 per accumulator and K pair (codegen/pair_products.cpp). A plan that stages nothing (B
// small enough to stay in cache) stages B in pairs around the first output loop it stays put
// along (a row tile's loop: one copy of B per thread chunk). A convolution pairs its input
// channels the same way where its weights are staged and it has kPairedConvPositions output
// positions. The plan as it was where no panel of pairs results (an odd K, no vector lanes along
// B's columns).
bool stages_pairs(const UOp& ast) {
  for (const UOpNode* n : toposort_nodes(ast))
    if (n->op == Ops::DEFINE_REG && n->dtype.base().scalar() == Scalar::bfloat16) return true;
  return false;
}

namespace {

bool has_stage(const OptPlan& plan) {
  return std::any_of(plan.opts().begin(), plan.opts().end(), [](const Opt& o) { return o.op == OptOp::STAGE; });
}

// The plan with `reduce` unrolled by 2 just before its first STAGE (nullopt where that does not apply).
std::optional<OptPlan> unrolled_before_stage(const Kernel& c, const OptPlan& plan, const UOp& reduce) {
  const std::vector<Opt>& opts = plan.opts();
  const auto stage = std::find_if(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::STAGE; });
  OptPlan paired(c.ast, c.target);
  for (auto it = opts.begin(); it != stage; ++it)
    if (!paired.add(*it)) return std::nullopt;
  if (!paired.add({OptOp::UNROLL, range_axis(reduce), 2})) return std::nullopt;
  for (auto it = stage; it != opts.end(); ++it)
    if (!paired.add(*it)) return std::nullopt;
  return paired;
}

}  // namespace

OptPlan in_pairs(const Kernel& c, OptPlan plan) {
  if (!c.target.supports_op(KILN_LIR_OP_DOT2)) return plan;
  // a convolution (several reduces, its weights staged): the pairs along an even reduce the staged
  // weights move along (its input channels), its image's pair two loads (pair_products.cpp); only
  // over kPairedConvPositions output positions or more, where the costlier fill of the panel in pairs
  // (a gather across output channels, as unpaired) is repaid
  if (c.k.reduce.size() > 1) {
    int64_t positions = 1;
    const std::optional<ChannelConv> conv = channel_conv_shape(c);
    for (const UOp& r : c.k.out)
      if (!conv || !(r == conv->channels_out)) positions *= std::max<int64_t>(1, const_size(r));
    if (!conv || positions < kPairedConvPositions || !has_stage(plan)) return plan;
    for (const UOp& r : c.k.reduce)
      if (const_size(r) % 2 == 0)
        if (std::optional<OptPlan> paired = unrolled_before_stage(c, plan, r); paired && stages_pairs(paired->ast())) return *paired;
    return plan;
  }
  if (c.k.reduce.size() != 1 || !bf16_products(c.ast, c.k.reduce[0])) return plan;
  std::optional<OptPlan> unrolled = unrolled_before_stage(c, plan, c.k.reduce[0]);
  if (!unrolled) return plan;
  OptPlan& paired = *unrolled;
  if (!has_stage(plan))
    for (const UOp& r : c.k.out)
      for (const UOp& u : toposort(c.ast))
        if (u.op() == Ops::PARAM && !stages_pairs(paired.ast()) && paired.add({OptOp::STAGE, range_axis(r), u.arg_int()}) &&
            !stages_pairs(paired.ast()))
          return plan;  // (staged, but not in pairs)
  return stages_pairs(paired.ast()) ? paired : plan;
}

OptPlan hand_coded_optimizations(const UOp& ast, const Target& target) {
  const Kernel c(ast, target);
  for (KernelClass cls : classify_kernel(ast, target))
    if (std::optional<OptPlan> plan = plan_class(cls, c)) return in_pairs(c, *plan);
  return OptPlan(ast, target);  // (unreachable: a kernel's own class always plans)
}

UOp apply_opts(const UOp& ast, const Target& target, std::vector<Opt>* applied) {
  if (knob(Knob::noopt)) return ast;
  OptPlan plan = hand_coded_optimizations(ast, target);
  if (applied) applied->insert(applied->end(), plan.opts().begin(), plan.opts().end());
  return plan.ast();
}

}  // namespace kiln
