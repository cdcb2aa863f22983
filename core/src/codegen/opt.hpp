// codegen/opt.hpp - optimisation actions on a kernel AST's ranges, and the heuristic that picks them.
//
// An action splits one range (by axis id) into an outer part that keeps the axis and an inner
// part of `amount`:
//   UPCAST  inner output part is expanded: lanes of a vector (vectorize) or copies in registers
//   UNROLL  the same for a reduce range (several accumulators or a vector accumulator)
//   LOCAL   inner part becomes the workgroup's local index (targets with local memory)
//   THREAD  the range is cut into `amount` chunks run by the CPU's threads (a dynamic inner
//           bound handles sizes that do not divide)
//   GROUP   the inner part of a reduce axis is spread over the workgroup (targets with local
//           memory): each work item reduces a strided share, the partials meet in local memory
//   SWAP    exchanges the loop order of two output axes (`amount` is the other axis' id):
//           which operand stays in cache across the inner loop
// Actions are applied in order; KILN_NOOPT=1 applies none.
#pragma once
#include <string>
#include <vector>

#include "kiln/uop.hpp"

namespace kiln {

struct Target;

enum class OptOp : uint8_t { UPCAST, UNROLL, LOCAL, THREAD, SWAP, GROUP };

struct Opt {
  OptOp op;
  int64_t axis;    // RANGE axis id
  int64_t amount;
  bool vectorize = false;  // UPCAST/UNROLL: lanes of one vector (at most one per kernel)
  std::string str() const;
};

// Applies one action; throws kiln::Error(invalid_argument) when it does not fit the range.
UOp apply_opt(const UOp& ast, const Opt& opt);
// The hand-coded heuristic for `target`.
std::vector<Opt> hand_coded_optimizations(const UOp& ast, const Target& target);
// Heuristic opts applied in order (none with KILN_NOOPT); the chosen opts are appended to `applied`.
UOp apply_opts(const UOp& ast, const Target& target, std::vector<Opt>* applied = nullptr);

// What the heuristics look at: a kernel's ranges and memory accesses.
struct KernelShape {
  std::vector<UOp> out;      // output (LOOP) ranges in END order
  std::vector<UOp> reduce;   // REDUCE ranges
  UOp store_index;           // null when the kernel stores nothing
  UOp contiguous;            // the output range the store walks with stride 1 (null if none)
  std::vector<UOp> load_indices;
  int itemsize = 4;          // bytes per stored element
};
KernelShape inspect_kernel(const UOp& ast);
int64_t const_size(const UOp& r);  // 0 when symbolic
bool has_stride(const UOp& idx, const UOp& r, int64_t want);

// Workgroup actions (LOCAL, ...) for targets with local memory, appended after the register
// ones (opt_gpu.cpp).
void add_workgroup_opts(const KernelShape& k, const Target& target, std::vector<Opt>& opts);

// Constant stride of `idx` along range `r` (idx(r+1) - idx(r), checked linear), if it has one.
bool stride_of(const UOp& idx, const UOp& r, int64_t& stride);
int64_t range_axis(const UOp& r);
AxisType range_type(const UOp& r);
bool range_vectorized(const UOp& r);

}  // namespace kiln
