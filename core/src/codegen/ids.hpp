// codegen/ids.hpp - the id ranges of a kernel's loops and registers, each with its owner.
//
// A RANGE's axis id (arg[0]) and a DEFINE_REG's id (its arg) name a loop or a register within one
// kernel. Passes that add them take ids from ranges of their own, so no two passes' ids collide
// and a pass finds its own registers again by range (stage.cpp's is_staged, row_values.cpp's
// row buffers). Every range is listed here; a pass that numbers loops or registers takes one.
#pragma once
#include <cstdint>
#include <limits>

namespace kiln::ids {

// Ids first <= id < end.
struct IdRange {
  int64_t first, end;
  constexpr bool contains(int64_t id) const { return id >= first && id < end; }
};
inline constexpr int64_t kNoEnd = std::numeric_limits<int64_t>::max();

// RANGE axis ids
//   kernel_axes: the kernel's own loops. rangeify numbers them from 0; the optimiser's actions
//                (opt.cpp's next_axis, STAGE's copy loops, BLOCK's block loop) and peel.cpp take
//                the next id above the kernel's largest.
//   fold_axes:   lower_reduce.cpp's fold loops of grouped reductions (after the optimiser).
inline constexpr IdRange kKernelAxes{0, int64_t{1} << 20};
inline constexpr IdRange kFoldAxes{int64_t{1} << 20, kNoEnd};

// DEFINE_REG ids
//   accumulators: lower_reduce.cpp's reduce accumulators, numbered from 0.
//   stage_panels: opt/stage.cpp's panels, first + the staged input's slot (opt.amount).
//   block_partial: opt/block.cpp's float32 partial sums of a narrower output (one per kernel).
//   row_buffers:  row_values.cpp's per-thread row buffers, numbered from first.
inline constexpr IdRange kAccumulatorRegs{0, int64_t{1} << 20};
inline constexpr IdRange kStagePanelRegs{int64_t{1} << 20, (int64_t{1} << 20) + (int64_t{1} << 16)};
inline constexpr IdRange kBlockPartialRegs{kStagePanelRegs.end, kStagePanelRegs.end + 1};
inline constexpr IdRange kRowBufferRegs{int64_t{1} << 21, kNoEnd};

static_assert(kKernelAxes.end <= kFoldAxes.first, "axis id ranges overlap");
static_assert(kAccumulatorRegs.end <= kStagePanelRegs.first && kStagePanelRegs.end <= kBlockPartialRegs.first &&
                  kBlockPartialRegs.end <= kRowBufferRegs.first,
              "register id ranges overlap");

}  // namespace kiln::ids
