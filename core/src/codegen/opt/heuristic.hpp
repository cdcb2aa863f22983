// codegen/opt/heuristic.hpp - the hand-coded heuristic's parts: the kernel classes, the classifier
// (classify.cpp), one planner per class (plan_tile.cpp, plan_conv.cpp, plan_reduce.cpp) and the
// steps they share (heuristic.cpp). docs/optimizer.md maps the classes, says why each planner
// decides as it does, and holds the measurements behind the numbers.
//
// Each planner proposes actions through an OptPlan, which applies one only when it validates
// against the kernel as the previous actions left it: a heuristic can be wrong about speed, never
// about validity. The machine facts come from the Target (vector width, registers, FMA pipes,
// caches, threads, workgroups); none is guessed from another.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "codegen/opt/cache_plan.hpp"
#include "codegen/opt/opt.hpp"
#include "codegen/target.hpp"

namespace kiln {

// What a kernel is, for planning. Every kernel has one of the first eight classes, whose planner
// always plans; the last three are variants tried before it where they apply (classify_kernel
// lists them first), each declining where its plan does not come out as intended.
enum class KernelClass : uint8_t {
  none,           // stores nothing: no actions
  elementwise,    // no reduce: vectors along the contiguous output axis
  row,            // a row kernel (softmax, layernorm): reduces over a row, then the row written
  matmul,         // C = A @ B or a convolution with output channels: a register tile
  depthwise,      // a convolution with no channels to tile: vectors by overlapping output rows
  dot,            // vector lanes along a reduce the inputs walk (x @ w.T, GEMV, dot): a tile of outputs
  reduce_across,  // a reduce over a leading axis (sum over rows): vectors along the output
  reduce,         // any other reduce: unrolled
  channel_conv,   // a convolution whose columns waste vector lanes: vectors of output channels
  staged_transposed,    // x @ w.T with many rows: a matmul tile, w staged
  staged_down_columns,  // A.T @ B on a 16-register FMA CPU: 6-row tiles, both inputs staged
};
std::string_view kernel_class_name(KernelClass c);

// The kernel's classes on `target`, in the order their planners are tried.
std::vector<KernelClass> classify_kernel(const UOp& ast, const Target& target);

// How a CPU's register tile takes its rows: `wide` with 32 vector registers (wide_tile_rows),
// `fma_latency` with fewer and two FMA pipes to keep busy (fma_tile_rows), else `plain`.
enum class TileRule : uint8_t { plain, fma_latency, wide };
TileRule tile_rule(const Target& target);

// How a target takes vectors for a kernel.
struct Vectors {
  int64_t lanes;  // the target's width in the kernel's elements
  bool masked;    // a padded vector stays one masked access (else it is split into gated lanes)
  bool cpu;       // a CPU (threads): narrower vectors still beat scalars, and a register tile over
                  // a permuted input pays; a GPU's lanes and tiles come out of its work items, so
                  // it takes its full width or none and no extra tile
  int64_t narrowest() const;
};

// One kernel on one target: what every planner reads.
struct Kernel {
  const UOp& ast;
  const Target& target;
  KernelShape k;
  int64_t lanes;  // the target's vector width in the kernel's elements
  Vectors vectors;
  TileRule rule;
  Kernel(const UOp& ast, const Target& target);
};

// ---- named sizes (docs/optimizer.md says why each) ----
// A register tile still pays when its vector loads are gathers of a view strided by this much.
inline constexpr int64_t kMaxGatherStride = 2;
// A bfloat16 convolution's products go in DOT2 pairs over at least this many output positions
// (batch x rows x columns): 8 x 28 x 28 and 8 x 56 x 56 ran 1.4-1.5x faster paired, 1 x 56 x 56,
// 1 x 14 x 14 and 1 x 7 x 7 about 10% slower (docs/performance.md, "bfloat16 convolutions in DOT2 pairs").
inline constexpr int64_t kPairedConvPositions = 4096;
// Padding (PADTO) may add at most 1/kPadShare of an axis' iterations.
inline constexpr int64_t kPadShare = 4;
// A reduce this long or longer gets an unroll beside its lanes (row and dot kernels) or of its
// own (a scalar reduce); a row kernel's reduces are unrolled by kChainSplit (two accumulators).
inline constexpr int64_t kLongReduce = 16;
inline constexpr int64_t kChainSplit = 2;
// Independent accumulators for a reduce without vector lanes along it (loads kept in flight).
inline constexpr int64_t kReduceUnroll = 4;
// A CPU still takes vectors this narrow (fewer lanes: scalars).
inline constexpr int64_t kNarrowestCpuVector = 4;
// Output axes shorter than this are no tile's rows.
inline constexpr int64_t kMinTileAxis = 8;
// A register tile's rows as kFewRowTiles counts tiles (a matmul of 64 rows has 8 tiles of 8).
inline constexpr int64_t kRowsPerTile = 8;
// A matmul tile is this many vectors wide (two beat one, three and four); a channel-vector tile
// tries this many vectors of channels first.
inline constexpr int64_t kTileVectors = 2;
// Reduce windows of at most this many taps are small: unrolled whole (a pooling window, a
// depthwise filter's taps).
inline constexpr int64_t kMaxWindow = 4;

// A strided window whose picks are gated (padding inside the kernel) takes at most this many
// lanes: at 16 (AVX-512) each load's lane gates cost more than the vector saves (docs/optimizer.md,
// "Reduces").
inline constexpr int64_t kMaxGatedPickLanes = 8;
// A strided window's row of output columns is upcast whole up to this many vectors (its gates
// fold per column, its neighbouring taps' loads merge).
inline constexpr int64_t kWindowVectors = 8;

// ---- the kernel's predicates (classify.cpp) ----
// A window read with a stride of 2 to kMaxShuffleStride along the output columns (a stride-2 pool
// or depthwise convolution) on a CPU whose vectors of output columns are a few contiguous loads
// and picks of their lanes (picks_strided_lanes, asked with the lanes column_vectors gives), not
// gathers: a reduce_across kernel (without, each output is a scalar reduce over its window).
bool strided_window(const Kernel& c);
// The vectors the output columns take: the target's, at most kMaxGatedPickLanes where a strided
// load along them is gated.
Vectors column_vectors(const Kernel& c);
// Loads whose index moves along r all move by 1 to `max_stride` elements (some do).
bool contiguous_loads(const KernelShape& k, const UOp& r, int64_t max_stride = 1);
// Bytes per vector lane of k's arithmetic: its stored element's size, or 4 where the target computes
// that 16-bit float in float32.
int lane_bytes(const Target& target, const KernelShape& k);
// Some input does not move along r: it is reused from registers when r is upcast.
bool reused(const KernelShape& k, const UOp& r);
// Every load in the reduction that moves along `v` stays put along r (within blocks of `rows`).
bool reuses_loads_of(const KernelShape& k, const UOp& r, const UOp& v, int64_t rows = 0);
// Whether an output axis other than `cols` and `besides` can be a register tile's rows.
bool has_tile_rows(const KernelShape& k, const UOp& cols, const UOp& besides);
// Whether every reduce sums over values that do not move along output axis j (a row kernel).
bool row_reduces(const UOp& ast, const UOp& j);
// Whether the kernel is matmul-like: a register tile of vectors along its contiguous axis pays.
bool matmul_like(const Kernel& c, bool across);
// Whether some load moves contiguously along an output axis other than the contiguous one.
bool reads_down_columns(const KernelShape& k);

// ---- shared steps (heuristic.cpp) ----
// The largest amount up to `want` that divides n (a power of two for vector lanes); 1 when none.
int64_t fit(int64_t n, int64_t want, bool pow2);
bool cheap_pad(int64_t n, int64_t amount);
// Vector lanes along r (padding r to them where cheap and vectors are masked); 1 when none fit.
int64_t vector_lanes(OptPlan& plan, const UOp& r, const Vectors& v);
// A tile's rows along r: `want` where it divides or pads cheaply, else the largest divisor.
int64_t tile_amount(const OptPlan& plan, const UOp& r, int64_t want);
// Adds op(r, want) with the amount that fits (nothing when none does); true when added.
bool add_fitted(OptPlan& plan, OptOp op, const UOp& r, int64_t want, bool vectorize = false);
// Whether the plan has a register tile with rows.
bool has_rows(const OptPlan& plan);
// CPU threads over the output axes (`first` first), up to `per_thread` chunks a thread.
void add_threads(const KernelShape& k, const Target& target, OptPlan& plan, int64_t first, int64_t per_thread);
// Vectors along the contiguous output axis (and a permuted input's axis upcast too).
void elementwise(const KernelShape& k, OptPlan& plan, const Vectors& vectors);

// What a planner leaves for the steps every plan ends with (finish_plan): the loop orders to
// apply last, and a depthwise convolution's rows to upcast after its taps are unrolled.
struct PlanTail {
  std::optional<Opt> swap, dot_swap;  // applied last: THREAD still splits the outermost axis
  std::optional<RowsOutside> rows_swap;
  std::optional<UOp> taps_rows;
  int64_t taps_tile = 0;
  int64_t threads_first = -1;  // without a swap: the output axis threaded first (-1: the outermost)
};
// The steps every plan ends with: small windows unrolled, the depthwise rows, both inputs staged
// (or threads, workgroups and the loop orders).
OptPlan finish_plan(const Kernel& c, OptPlan plan, const PlanTail& tail);

// ---- the planners, one per class ----
// plan_tile.cpp. `across`: B is read across its columns (x @ w.T), tiled anyway (its vector
// loads gathers until staged); `rows_staged`: an fma_latency tile may pad rows whose loads are
// contiguous (the caller keeps the plan only where both inputs are staged).
struct TileOptions {
  bool across = false, rows_staged = false;
};
// The lanes a matmul-like kernel's register tile takes (proposing its column padding); 1: none.
int64_t tile_lanes(const Kernel& c, OptPlan& plan, const TileOptions& o = {});
// A depthwise convolution's overlapping output rows (nullopt: none, or not matmul-like).
std::optional<UOp> depthwise_rows(const Kernel& c, bool matmul);
int64_t depthwise_tile(const Kernel& c);
OptPlan plan_register_tile(const Kernel& c, const TileOptions& o = {});  // matmul, depthwise
// plan_conv.cpp
struct ChannelConv {
  UOp cols, channels_out;  // the output columns and the output channels the vector goes along
  const UOp* channels_in;  // the reduce along which the weights move farthest (null: none)
  int64_t weight_slot, taps;
};
std::optional<ChannelConv> channel_conv_shape(const Kernel& c);
std::optional<OptPlan> plan_channel_conv(const Kernel& c);
// plan_reduce.cpp
OptPlan plan_row(const Kernel& c);
OptPlan plan_elementwise(const Kernel& c);
// The reduce the vector lanes go along and their count (1: none), proposing the lanes and unrolls
// of the reduces computed before it and red's padding.
struct ReduceLanes {
  UOp red;
  int64_t vec;
};
ReduceLanes reduce_lanes(const Kernel& c, OptPlan& plan);
OptPlan plan_dot(const Kernel& c);
OptPlan plan_reduce_across(const Kernel& c);
OptPlan plan_reduce(const Kernel& c);

}  // namespace kiln
