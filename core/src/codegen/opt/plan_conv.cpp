// codegen/opt/plan_conv.cpp - the channel_conv class: a convolution whose columns waste vector
// lanes (narrow or odd maps, strided gathers) takes its vector lanes along its output channels,
// the columns as the tile's rows, and stages its weights (docs/optimizer.md, "Channel vectors").
#include <algorithm>
#include <cstdlib>

#include "codegen/opt/heuristic.hpp"

namespace kiln {

namespace {

// A channel-vector conv's weight panel is staged in blocks of input channels of at most this many
// bytes where it does not fit a stage buffer whole.
constexpr int64_t kConvPanelBytes = int64_t{128} << 10;
// A pointwise panel's input channels go in blocks of at least this many (a block's loop costs).
constexpr int64_t kMinPointwiseBlock = 64;
// Columns within 1/kWholeVectorShare of whole vectors keep them where vectors are masked.
constexpr int64_t kWholeVectorShare = 32;
// Channel vectors need at least this many lanes (fewer: the columns keep theirs).
constexpr int64_t kMinChannelLanes = 8;
// A tile is one or two vectors of channels by at most kMaxTileColumns columns; its accumulators
// leave the weights' vectors and kSpareRegisters (a broadcast of the image and one more) free.
constexpr int64_t kMaxTileColumns = 8;
constexpr int64_t kSpareRegisters = 2;
// A prime width's columns may pad by at most 1/kColumnPadShare.
constexpr int64_t kColumnPadShare = 8;
// A convolution with at most this many output positions (all but its output channels: 7 x 7 at
// batch 1) feeds each staged vector of weights to so few multiply-adds that its gather costs about
// a third of them (narrow_columns).
constexpr int64_t kFewPositions = 64;

// Columns a channel-vector tile takes (at most `most`): the widest divisor of n, or where that is
// under 3 (a prime width) the width whose padding of n is least.
int64_t tile_width(int64_t n, int64_t most) {
  if (const int64_t w = fit(n, most, false); w >= 3 || n <= most) return w;
  int64_t best = 1, best_padded = n + n / kColumnPadShare + 1;
  for (int64_t w = most; w >= 2; --w)
    if (const int64_t padded = (n + w - 1) / w * w; padded < best_padded) best = w, best_padded = padded;
  return best;
}

// Stages input `slot` at the outermost output loop where its part fits a stage buffer.
bool stage_outermost(const KernelShape& k, OptPlan& plan, int64_t slot) {
  return std::any_of(k.out.begin(), k.out.end(), [&](const UOp& r) { return plan.add({OptOp::STAGE, range_axis(r), slot}); });
}

// A pointwise (1 x 1) convolution over more positions than output channels: its channel panels go
// inside the output rows (each thread stages its share of the weights once; a row of the image
// stays in the L2 while every panel passes over it).
std::optional<OptPlan> panels_inside_rows(const Kernel& c, const OptPlan& tiled, const ChannelConv& v) {
  const KernelShape& k = c.k;
  if (v.taps != 1) return std::nullopt;
  int64_t positions = 1;
  for (const UOp& r : k.out)
    if (!(r == v.channels_out)) positions *= std::max<int64_t>(1, const_size(r));
  if (positions <= const_size(v.channels_out)) return std::nullopt;
  const UOp* rows = nullptr;  // the innermost output axis outside the columns
  for (const UOp& r : k.out)
    if (!(r == v.channels_out) && !(r == k.contiguous) && remaining(r, tiled.opts()) > 1) rows = &r;
  if (!rows || range_axis(*rows) < range_axis(v.channels_out)) return std::nullopt;
  OptPlan plan = tiled;
  add_threads(k, c.target, plan, range_axis(v.channels_out), 1);
  if (!plan.add({OptOp::SWAP, range_axis(v.channels_out), range_axis(*rows)})) return std::nullopt;
  return stage_outermost(k, plan, v.weight_slot) ? std::optional{plan} : std::nullopt;
}

// The tile of `vecs` vectors of channels by `width` columns, its weights staged; nullopt where they
// cannot be.
std::optional<OptPlan> channel_tile(const Kernel& c, const ChannelConv& v, int64_t vecs, int64_t width) {
  const KernelShape& k = c.k;
  const int64_t lanes = c.lanes;
  OptPlan plan(c.ast, c.target);
  if (!plan.add({OptOp::UPCAST, range_axis(v.channels_out), lanes, true}) ||
      (vecs > 1 && !plan.add({OptOp::UPCAST, range_axis(v.channels_out), vecs})) ||
      (const_size(v.cols) % width != 0 && !plan.add({OptOp::PADTO, range_axis(v.cols), width})) ||
      !plan.add({OptOp::UPCAST, range_axis(v.cols), width}))
    return std::nullopt;
  if (std::optional<OptPlan> inner = panels_inside_rows(c, plan, v)) return inner;
  add_threads(k, c.target, plan, range_axis(v.channels_out), kChunksPerThread);
  // (a 16-bit output's BLOCK keeps float32 partial sums in a stack array the size of the output,
  // block.cpp: timed for matrix-vector products and for the weight panels below, not for pointwise
  // convolutions, which stay unblocked)
  const bool narrow = k.stored == Scalar::float16 || k.stored == Scalar::bfloat16;
  // a pointwise panel past half the L1d: its input channels in blocks whose panel fits
  if (const int64_t fits = static_cast<int64_t>(c.target.l1d()) / 2 / (vecs * lanes * k.itemsize);
      !narrow && v.taps == 1 && v.channels_in && const_size(*v.channels_in) > fits)
    for (int64_t cb = fits; cb >= kMinPointwiseBlock; --cb)
      if (const_size(*v.channels_in) % cb == 0 && plan.add({OptOp::BLOCK, range_axis(*v.channels_in), cb})) break;
  // the weights staged at the outermost loop where the panel fits, else in blocks of input channels
  // (16-bit outputs too, where their partial sums fit block.cpp's float32 array: 1 x 512 x 7 x 7 by
  // 3 x 3 in bfloat16 2.1 -> 0.65 ms, in float16 2.2 -> 0.84-1.09; a larger output is refused there
  // and the kernel takes another plan)
  if (stage_outermost(k, plan, v.weight_slot)) return plan;
  if (!v.channels_in) return std::nullopt;
  const int64_t n = const_size(*v.channels_in);
  for (int64_t cb = std::min(n / 2, kConvPanelBytes / (vecs * lanes * v.taps * k.itemsize)); cb >= 1; --cb)
    if (n % cb == 0)
      return plan.add({OptOp::BLOCK, range_axis(*v.channels_in), cb}) && stage_outermost(k, plan, v.weight_slot) ? std::optional{plan}
                                                                                                                 : std::nullopt;
  return std::nullopt;
}

// Narrow columns: a convolution with taps over few output positions (kFewPositions) whose rows are
// at most half a vector wide, on a CPU that starts one full-width multiply-add a cycle (fma_units:
// Zen 4's AVX-512 takes it in two passes of its two 256-bit pipes, so half-width vectors compute as
// fast per lane). Its columns take half-width vectors (7 -> 8 lanes), its image rows and a few output
// channels are upcast whole (the tile's accumulators half the registers) and the weights are
// broadcast in place: no staged copy, whose lane-by-lane gathers cost a channel-vector tile a third
// of its time there. nullopt where it does not apply or the actions do not validate.
std::optional<OptPlan> narrow_columns(const Kernel& c, const ChannelConv& v) {
  const KernelShape& k = c.k;
  if (c.rule != TileRule::wide || c.target.fma_units() != 1 || c.lanes < 2 * kMinChannelLanes || v.taps < 2) return std::nullopt;
  const int64_t half = c.lanes / 2, n = const_size(v.cols);
  const std::optional<ConvInputs> conv = conv_inputs(c.ast, k, v.cols);
  int64_t step = 0;
  if (!conv || !stride_of(conv->image, v.cols, step) || step != 1 || n > half || !cheap_pad(n, half)) return std::nullopt;
  int64_t positions = 1;
  const UOp* rows = nullptr;  // the innermost output axis the image moves along and the weights do not
  for (const UOp& r : k.out) {
    if (r == v.channels_out) continue;
    positions *= std::max<int64_t>(1, const_size(r));
    if (!(r == v.cols) && !has_stride(conv->image, r, 0) && has_stride(conv->weights, r, 0)) rows = &r;
  }
  if (positions > kFewPositions || !rows) return std::nullopt;
  const int64_t accumulators = static_cast<int64_t>(c.target.vector_regs()) / 2;
  const int64_t rows_n = fit(const_size(*rows), std::min(kMaxTileColumns, accumulators), false);
  const int64_t channels_n = fit(const_size(v.channels_out), accumulators / std::max<int64_t>(1, rows_n), false);
  OptPlan plan(c.ast, c.target);
  if ((n % half != 0 && !plan.add({OptOp::PADTO, range_axis(v.cols), half})) || !plan.add({OptOp::UPCAST, range_axis(v.cols), half, true}) ||
      (rows_n > 1 && !plan.add({OptOp::UPCAST, range_axis(*rows), rows_n})) ||
      (channels_n > 1 && !plan.add({OptOp::UPCAST, range_axis(v.channels_out), channels_n})))
    return std::nullopt;
  add_threads(k, c.target, plan, range_axis(v.channels_out), kChunksPerThread);
  return plan;
}

}  // namespace

std::optional<ChannelConv> channel_conv_shape(const Kernel& c) {
  const KernelShape& k = c.k;
  const int64_t lanes = c.lanes;
  if (!c.target.has(KILN_TARGET_HAS_THREADS) || lanes < kMinChannelLanes || k.reduce.empty() || !k.contiguous) return std::nullopt;
  // (a symbolic size, 0 here, leaves the kernel to its own class)
  if (std::any_of(k.reduce.begin(), k.reduce.end(), [](const UOp& r) { return const_size(r) < 1; })) return std::nullopt;
  const UOp& cols = k.contiguous;
  const std::optional<ConvInputs> conv = conv_inputs(c.ast, k, cols);
  if (!conv) return std::nullopt;
  const UOp &image = conv->image, &weights = conv->weights;
  int64_t step = 0;
  if (!stride_of(image, cols, step) || step < 1) return std::nullopt;
  const int64_t n = const_size(cols), two = kTileVectors * lanes;
  if (n < 1 || (step == 1 && n % two == 0)) return std::nullopt;
  // columns within a 32nd of whole vectors keep them, padded where vectors are masked
  if (step == 1 && c.target.has(KILN_TARGET_HAS_MASKED_VECTORS) && ((n + two - 1) / two * two - n) * kWholeVectorShare <= n) return std::nullopt;
  // the output channels: the weights move along them, the image does not
  const auto f = std::find_if(k.out.begin(), k.out.end(), [&](const UOp& r) {
    return !(r == cols) && const_size(r) > 0 && const_size(r) % lanes == 0 && has_stride(image, r, 0) && !has_stride(weights, r, 0);
  });
  if (f == k.out.end()) return std::nullopt;
  // a pointwise convolution (one reduce, as a matmul) only where a row of its image is narrower
  // than a vector and its rows stay apart, or its stride makes column vectors gathers
  const bool image_rows = std::any_of(k.out.begin(), k.out.end(), [&](const UOp& r) {
    return !(r == cols) && !has_stride(image, r, 0) && has_stride(weights, r, 0);
  });
  const bool strided = step >= 2 && step <= kMaxShuffleStride;
  if (k.reduce.size() == 1 && !strided && (n >= lanes || !image_rows)) return std::nullopt;
  ChannelConv v{cols, *f, nullptr, conv->weight_slot, 1};
  int64_t farthest = 0;  // the input channels: the reduce along which the weights move farthest
  for (const UOp& r : k.reduce)
    if (int64_t s = 0; stride_of(weights, r, s) && std::abs(s) > farthest) farthest = std::abs(s), v.channels_in = &r;
  for (const UOp& r : k.reduce)
    if (v.channels_in && !(r == *v.channels_in)) v.taps *= const_size(r);
  return v;
}

// The most accumulators the registers hold beside the weights' vectors and a broadcast, two
// vectors of channels first; the first tile whose weights stage.
std::optional<OptPlan> plan_channel_conv(const Kernel& c) {
  const std::optional<ChannelConv> v = channel_conv_shape(c);
  if (!v) return std::nullopt;
  if (std::optional<OptPlan> narrow = narrow_columns(c, *v)) return narrow;
  // (the target's registers for float32, where the tiles were measured; other dtypes keep the count
  // by their element lanes until measured: docs/optimizer.md, "Known gaps")
  const int64_t regs = lane_bytes(c.target, c.k) == 4 ? c.target.vector_regs() : c.lanes >= 16 ? 32 : 16;
  std::vector<std::pair<int64_t, int64_t>> tiles;  // (vectors, columns)
  for (int64_t vecs : {kTileVectors, int64_t{1}})
    if (const int64_t w = tile_width(const_size(v->cols), std::min(kMaxTileColumns, (regs - vecs - kSpareRegisters) / vecs));
        const_size(v->channels_out) % (vecs * c.lanes) == 0 && w >= 2)
      tiles.emplace_back(vecs, w);
  std::stable_sort(tiles.begin(), tiles.end(), [](const auto& a, const auto& b) { return a.first * a.second > b.first * b.second; });
  for (const auto& [vecs, width] : tiles)
    if (std::optional<OptPlan> plan = channel_tile(c, *v, vecs, width)) return plan;
  return std::nullopt;
}

}  // namespace kiln
