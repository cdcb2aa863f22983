// codegen/opt/classify.cpp - what a kernel is, for the heuristic: its classes (KernelClass) and
// the predicates on its loads they are made of (docs/optimizer.md, "Kernel classes").
#include <algorithm>

#include "codegen/lir.hpp"
#include "codegen/opt/heuristic.hpp"
#include "ir/traverse.hpp"
#include "symbolic/symbolic.hpp"

namespace kiln {

std::string_view kernel_class_name(KernelClass c) {
  switch (c) {
    case KernelClass::none: return "none";
    case KernelClass::elementwise: return "elementwise";
    case KernelClass::row: return "row";
    case KernelClass::matmul: return "matmul";
    case KernelClass::depthwise: return "depthwise";
    case KernelClass::dot: return "dot";
    case KernelClass::reduce_across: return "reduce_across";
    case KernelClass::reduce: return "reduce";
    case KernelClass::channel_conv: return "channel_conv";
    case KernelClass::staged_transposed: return "staged_transposed";
    case KernelClass::staged_down_columns: return "staged_down_columns";
  }
  return "?";
}

TileRule tile_rule(const Target& target) {
  if (!target.has(KILN_TARGET_HAS_THREADS)) return TileRule::plain;
  if (target.vector_regs() >= 32) return TileRule::wide;
  return target.fma_units() >= 2 ? TileRule::fma_latency : TileRule::plain;
}

int64_t Vectors::narrowest() const { return cpu ? std::min<int64_t>(lanes, kNarrowestCpuVector) : lanes; }

// The target's vector width in the kernel's elements (max_vector_width counts 4-byte lanes). A
// 16-bit float the target does not compute in is computed in float32, so its lanes are float32's:
// 32 bfloat16 lanes on AVX-512 made a matmul's register tile twice the registers (5x slower).
static int64_t lanes_of(const Target& target, const KernelShape& k) {
  return std::max<int64_t>(1, static_cast<int64_t>(target.max_vector_width) * 4 / std::max(1, lane_bytes(target, k)));
}

int lane_bytes(const Target& target, const KernelShape& k) {
  const bool widened = (k.stored == Scalar::float16 || k.stored == Scalar::bfloat16) && !target.supports_dtype(lir_dtype(k.stored));
  return widened ? 4 : k.itemsize;
}

Kernel::Kernel(const UOp& ast, const Target& target)
    : ast(ast),
      target(target),
      k(inspect_kernel(ast)),
      lanes(lanes_of(target, k)),
      vectors{lanes, target.has(KILN_TARGET_HAS_MASKED_VECTORS), target.has(KILN_TARGET_HAS_THREADS)},
      rule(tile_rule(target)) {}

bool contiguous_loads(const KernelShape& k, const UOp& r, int64_t max_stride) {
  bool any = false;
  for (const UOp& idx : k.load_indices) {
    int64_t s = 0;
    if (has_stride(idx, r, 0)) continue;
    if (!stride_of(idx, r, s) || s < 1 || s > max_stride) return false;
    any = true;
  }
  return any;
}

bool reused(const KernelShape& k, const UOp& r) {
  return std::any_of(k.load_indices.begin(), k.load_indices.end(), [&](const UOp& idx) { return has_stride(idx, r, 0); });
}

// idx stays put along r within aligned blocks of `block` iterations (r split as outer * block +
// inner; a grouped convolution's input moves only from one group of output channels to the next).
static bool still_in_blocks(const UOp& idx, const UOp& r, int64_t block) {
  const int64_t n = const_size(r);
  if (block < 2 || n <= 0 || n % block != 0) return false;
  constexpr int64_t kScratchAxis = int64_t{1} << 40;  // ids no kernel uses
  UOp outer = UOp::range(n / block, kScratchAxis), inner = UOp::range(block, kScratchAxis + 1);
  return has_stride(simplify(substitute(idx, {{r, outer * block + inner}})), inner, 0);
}

bool reuses_loads_of(const KernelShape& k, const UOp& r, const UOp& v, int64_t rows) {
  for (const UOp& idx : k.load_indices)
    if (in_reduction(k, idx) && !has_stride(idx, v, 0) && !has_stride(idx, r, 0) && !still_in_blocks(idx, r, rows)) return false;
  return true;
}

bool has_tile_rows(const KernelShape& k, const UOp& cols, const UOp& besides) {
  return std::any_of(k.out.begin(), k.out.end(), [&](const UOp& r) { return !(r == cols) && !(r == besides) && reuses_loads_of(k, r, cols); });
}

bool row_reduces(const UOp& ast, const UOp& j) {
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::REDUCE && u.nsrc() > 1)
      for (const UOp& x : toposort(u.src(0)))
        if (x == j) return false;
  return true;
}

static bool is_row_kernel(const Kernel& c) {
  return !c.k.reduce.empty() && c.k.contiguous && c.lanes > 1 && row_reduces(c.ast, c.k.contiguous);
}

// A reduce whose inputs are reused along the contiguous axis and read along it contiguously (or,
// `across`, at any stride; else gathers of kMaxGatherStride only where tile rows reuse them: a
// strided depthwise convolution has none, docs/optimizer.md "Matmul").
bool matmul_like(const Kernel& c, bool across) {
  const KernelShape& k = c.k;
  const UOp& j = k.contiguous;
  return !is_row_kernel(c) && !k.reduce.empty() && j && reused(k, j) && contiguous_loads(k, j, across ? INT64_MAX : kMaxGatherStride) &&
         c.lanes > 1 && (across || contiguous_loads(k, j) || has_tile_rows(k, j, j));
}

bool reads_down_columns(const KernelShape& k) {
  return k.reduce.size() == 1 && std::any_of(k.out.begin(), k.out.end(), [&](const UOp& r) {
           return !(r == k.contiguous) && std::any_of(k.load_indices.begin(), k.load_indices.end(),
                                                      [&](const UOp& idx) { return has_stride(idx, r, 1); });
         });
}

// x @ w.T with enough row tiles to pay for staging w (each thread copies all of it): w's loads
// move across the output columns (not contiguously), and there are at least two vectors of them
// (a classifier's 10 outputs keep the dot product: docs/optimizer.md, "Staged variants").
static bool staged_transposed(const Kernel& c) {
  const KernelShape& k = c.k;
  if (!c.target.has(KILN_TARGET_HAS_THREADS) || !k.store_index || !k.contiguous || k.reduce.empty()) return false;
  int64_t rows = 1;
  for (const UOp& r : k.out)
    if (!(r == k.contiguous)) rows *= std::max<int64_t>(1, const_size(r));
  return rows > kRowsPerTile * kFewRowTiles && const_size(k.contiguous) >= 2 * c.lanes && !contiguous_loads(k, k.contiguous, kMaxGatherStride);
}

// Whether some load moves along the output columns by 2 to kMaxShuffleStride elements and is
// gated (a window padded inside the kernel): its picks' lanes are gated too.
static bool gated_strided_loads(const Kernel& c) {
  const UOp& j = c.k.contiguous;
  for (const UOp& u : toposort(c.ast)) {
    if (u.op() != Ops::LOAD || u.src(0).op() != Ops::INDEX || u.src(0).nsrc() < 3) continue;
    int64_t s = 0;
    if (stride_of(u.src(0).src(1), j, s) && s >= 2 && s <= kMaxShuffleStride) return true;
  }
  return false;
}

Vectors column_vectors(const Kernel& c) {
  Vectors v = c.vectors;
  if (c.k.contiguous && gated_strided_loads(c)) v.lanes = std::min(v.lanes, kMaxGatedPickLanes);
  return v;
}

bool strided_window(const Kernel& c) {
  const KernelShape& k = c.k;
  const UOp& j = k.contiguous;
  if (!c.vectors.cpu || !j || contiguous_loads(k, j) || !contiguous_loads(k, j, kMaxShuffleStride)) return false;
  OptPlan scratch(c.ast, c.target);
  const int64_t lanes = vector_lanes(scratch, j, column_vectors(c));
  return std::all_of(k.load_indices.begin(), k.load_indices.end(), [&](const UOp& idx) {
    int64_t s = 0;
    return has_stride(idx, j, 0) || (stride_of(idx, j, s) && (s == 1 || picks_strided_lanes(s, lanes)));
  });
}

// The class every kernel has: the one whose planner always plans. The matmul and reduce classes
// ask a scratch plan whether the lanes fit (their padding validates against the kernel).
static KernelClass own_class(const Kernel& c) {
  if (!c.k.store_index) return KernelClass::none;
  if (is_row_kernel(c)) return KernelClass::row;
  if (matmul_like(c, false)) {
    OptPlan scratch(c.ast, c.target);
    if (tile_lanes(c, scratch) > 1) return depthwise_rows(c, true) ? KernelClass::depthwise : KernelClass::matmul;
  }
  if (c.k.reduce.empty()) return KernelClass::elementwise;
  OptPlan scratch(c.ast, c.target);
  if (reduce_lanes(c, scratch).vec > 1) return KernelClass::dot;
  if (c.k.contiguous && (contiguous_loads(c.k, c.k.contiguous) || strided_window(c))) return KernelClass::reduce_across;
  return KernelClass::reduce;
}

std::vector<KernelClass> classify_kernel(const UOp& ast, const Target& target) {
  const Kernel c(ast, target);
  std::vector<KernelClass> classes;
  if (channel_conv_shape(c)) classes.push_back(KernelClass::channel_conv);
  if (staged_transposed(c)) classes.push_back(KernelClass::staged_transposed);
  if (c.rule == TileRule::fma_latency && reads_down_columns(c.k)) classes.push_back(KernelClass::staged_down_columns);
  classes.push_back(own_class(c));
  return classes;
}

}  // namespace kiln
