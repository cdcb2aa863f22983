// codegen/opt/cache_plan.hpp - how a CPU matmul or convolution walks memory: the heuristic's
// rules that read the target's cache sizes (Target::l1d, Target::l2). heuristic.cpp picks a
// kernel's register tile; these rules then say which of its loops go outside which (SWAP), which
// inputs are copied into per-thread buffers (STAGE) and where a reduce is cut into blocks (BLOCK).
// Each proposes actions through an OptPlan or returns the ones to apply last; none throws on a
// valid kernel.
#pragma once
#include <cstdint>
#include <optional>

#include "codegen/opt/opt.hpp"
#include "codegen/target.hpp"

namespace kiln {

// At most this many THREAD chunks per CPU thread in a compute-bound kernel (add_threads).
inline constexpr int64_t kChunksPerThread = 4;
// At most this many row tiles count as few (a matmul of up to 64 rows with 8-row tiles).
inline constexpr int64_t kFewRowTiles = 8;

// A load inside the reduction: it moves along some reduce axis, so it repeats every reduce step.
bool in_reduction(const KernelShape& k, const UOp& idx);

// A matmul with few row tiles (or none) walks B in blocks of about 16 of its rows (BLOCK on the
// reduce), at most `most_rows`; false when the reduce has no such divisor.
bool block_down_columns(const KernelShape& k, OptPlan& plan, int64_t most_rows = INT64_MAX);
// A matmul with two to eight row tiles, its `n` columns threaded: blocks of K whose part of B for a
// thread chunk fits half the L2 (block_down_columns where none of 16 rows or more divides K).
bool block_column_chunks(const KernelShape& k, int64_t n, const Target& target, OptPlan& plan);
// The most rows of a matrix read down its columns (its loads' stride along the one reduce) whose
// lines at one column the L1 holds together: rows a multiple of 64 bytes apart fall on every
// (stride / 64)-th set only, and past those sets' ways they evict each other's lines, the
// prefetched next ones too (4096 floats apart: one set, 8 rows). INT64_MAX where no load aliases.
int64_t rows_in_l1_ways(const KernelShape& k, const Target& target);

// How a matmul's register tile (`rows` tiled, `width` columns of `cols`) walks B: the SWAP that
// puts the column panels outside the row tiles (apply it last, then stage_reused_panel), or
// nullopt to keep rows outside; may add a BLOCK on the reduce to `plan`. `column_chunks`: two to
// eight row tiles take block_column_chunks' blocks (the caller threads the columns).
std::optional<Opt> plan_panels(const KernelShape& k, const UOp& rows, const UOp& cols, int64_t width, int64_t row_tiles,
                               const Target& target, OptPlan& plan, bool column_chunks = false);

// The most bytes a staged panel takes: a stage buffer, and a quarter of the L2 (the rest holds A's
// rows and the output).
int64_t panel_max(const Target& target);
// Cuts k's one reduce into blocks (BLOCK, a divisor of at least 64 steps) whose panel of `per_k`
// bytes a k step fits panel_max; returns the k steps a panel then takes (all of them where it
// fits, or no block applies).
int64_t block_panel(const KernelShape& k, int64_t per_k, const Target& target, OptPlan& plan);

// After `swap` (plan_panels') is applied: stages the panel of the input the row tiles reuse.
void stage_reused_panel(const Opt& swap, OptPlan& plan);

// A matmul whose A is read down its columns (A.T @ B, A.T @ B.T) or leaves the L2: the plan again
// with its row tiles outside, both inputs staged and threads over chunks of panels; nullopt where
// that does not apply (the caller keeps `plan` and `swap`).
std::optional<OptPlan> stage_both(const UOp& ast, const KernelShape& k, const OptPlan& plan, const Opt& swap, const Target& target);

// A convolution's two inputs read in its reduction: the image moves along the output columns
// `cols`, the weights do not (nullopt unless there is exactly one load of each).
struct ConvInputs {
  UOp image, weights;
  int64_t image_slot = -1, weight_slot = -1;
};
std::optional<ConvInputs> conv_inputs(const UOp& ast, const KernelShape& k, const UOp& cols);

// A convolution tiled over its output channels (`tiles`) whose image leaves the L2 between tiles
// while its weights stay: the SWAP that puts its rows outside the tiles (apply it last) and the
// image's slot, to stage at the tiles' axis after it.
struct RowsOutside {
  Opt swap;
  int64_t image_slot;
};
std::optional<RowsOutside> rows_outside_tiles(const UOp& ast, const KernelShape& k, const UOp& tiles, const UOp& cols,
                                              const Target& target);

}  // namespace kiln
