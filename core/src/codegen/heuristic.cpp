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

}  // namespace

KernelShape inspect_kernel(const UOp& ast) {
  KernelShape k;
  for (const UOp& u : toposort(ast)) {
    // (a kernel with several outputs stores them all under one END, at one index: schedule/group.cpp)
    if (u.op() == Ops::END && (u.src(0).op() == Ops::STORE || u.src(0).op() == Ops::GROUP))
      for (size_t i = 1; i < u.nsrc(); ++i) k.out.push_back(u.src(i));
    if (u.op() == Ops::STORE) {
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
        // Rows outside columns stream all of B through the caches once per row tile. When B is
        // larger than the L2 but one column panel of it (K x tile width) is small, walk the
        // column panels outside and the row tiles inside: the panel stays in L2.
        int64_t k_len = 1;
        for (const UOp& red : k.reduce) k_len *= std::max<int64_t>(1, const_size(red));
        int64_t panel = k_len * lanes * 2 * k.itemsize, whole = k_len * const_size(contiguous) * k.itemsize;
        auto pos = [&](const UOp& r) { return std::find(k.out.begin(), k.out.end(), r) - k.out.begin(); };
        if (whole > kL2Bytes && panel <= kL2Bytes / 4 && pos(*it) < pos(contiguous))
          swap = {OptOp::SWAP, range_axis(*it), range_axis(contiguous)};
        break;
      }
  } else if (!k.reduce.empty()) {
    // a reduction: vector lanes along a reduce axis the inputs walk contiguously (or not at all)
    UOp red = k.reduce.back();
    // several reduces in turn (schedule/group.cpp): the one computed last consumes the others
    std::vector<UOp> reduces;
    for (const UOp& u : toposort(ast))
      if (u.op() == Ops::REDUCE && u.nsrc() > 1) reduces.push_back(u);
    if (reduces.size() > 1) red = reduces.back().src(reduces.back().nsrc() - 1);
    auto walkable = [&](const UOp& r) {
      bool ok = !k.load_indices.empty();
      for (const UOp& idx : k.load_indices) ok &= has_stride(idx, r, 1) || has_stride(idx, r, 0);
      return ok && lanes > 1 && const_size(r) % lanes == 0;
    };
    // a kernel that reduces one row several times in turn (softmax's max, then the sum of
    // exp(x - max): schedule/group.cpp) gets vector lanes along each of those reduces, else
    // unrolls it (a 4 times shorter chain through its accumulator)
    for (size_t i = 0; i + 1 < reduces.size(); ++i) {
      const UOp& r = reduces[i].src(reduces[i].nsrc() - 1);
      if (r == red || (walkable(r) && plan.add({OptOp::UNROLL, range_axis(r), lanes, true}))) continue;
      if (const_size(r) % 4 == 0 && const_size(r) >= 16) plan.add({OptOp::UNROLL, range_axis(r), 4});
    }
    if (walkable(red)) {
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
  // parallelism: CPU threads over the outermost output axis (GPU workgroups: opt_gpu.cpp)
  int64_t work = 1;
  for (const UOp& r : k.out) work *= std::max<int64_t>(1, const_size(r));
  for (const UOp& r : k.reduce) work *= std::max<int64_t>(1, const_size(r));
  if (cpu && target.threads > 1 && !k.out.empty() && work >= 65536) {
    const UOp& outer = k.out.front();
    int64_t n = remaining(outer, opts);  // what is left of the axis after the upcasts
    if (n >= 2) plan.add({OptOp::THREAD, range_axis(outer), std::min<int64_t>(target.threads, n)});
  }
  if (target.has(KILN_TARGET_HAS_LOCAL)) add_workgroup_opts(k, target, plan);
  if (swap) plan.add(*swap);
  return plan;
}

UOp apply_opts(const UOp& ast, const Target& target, std::vector<Opt>* applied) {
  if (knob(Knob::noopt)) return ast;
  OptPlan plan = hand_coded_optimizations(ast, target);
  if (applied) applied->insert(applied->end(), plan.opts().begin(), plan.opts().end());
  return plan.ast();
}

}  // namespace kiln
