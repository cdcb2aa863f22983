// schedule/schedule.hpp - from a tensor graph to an ordered list of kernel and copy calls.
//
// create_linear_with_vars(big_sink) takes a SINK of tensor nodes to realize and returns:
//   linear    LINEAR(CALL(body, buffers...), ...) in an order that respects every read-after-write,
//             write-after-read and write-after-write dependency; body is a kernel AST (a SINK of
//             END(STORE) over RANGEs; several outputs: END(GROUP(STORE...))) or a COPY node; buffers are
//             BUFFER nodes, the outputs first
//   var_vals  the values bound to variables (BIND) in the graph
//   outputs   for each source of big_sink, the BUFFER that holds its value
// Steps: strip variable values, normalise input buffers to PARAMs (so identical programs on other
// buffers share one schedule; a hit only computes that graph's key), look the result up in the
// schedule cache, and on a miss decide kernel boundaries (kernelize), lower each kernel's movement
// ops to index math (rangeify), order kernels (create_schedule) and plan memory (memory_planner).
// Running the result: `prepared`.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln {

namespace runtime {
class PreparedKernels;
}

using VarVals = std::vector<std::pair<std::string, int64_t>>;

struct LinearResult {
  UOp linear;
  VarVals var_vals;
  std::vector<UOp> outputs;
  bool cache_hit = false;
  int kernels = 0;               // CALLs that run kernels (not copies)
  uint64_t planned_bytes = 0;    // intermediate bytes after memory planning
  uint64_t unplanned_bytes = 0;  // ... and without it
  // Every ASSIGN of the graph as it was given: running the schedule writes each one's target, so
  // the caller points every live graph that still reads one at its target instead (an assign
  // runs once, docs/architecture.md "Assign").
  std::vector<UOp> assigns;
  // The template's prepared kernels: prepared->prepare(linear, var_vals) gives the items to run.
  std::shared_ptr<runtime::PreparedKernels> prepared;
};

LinearResult create_linear_with_vars(const UOp& big_sink);
std::vector<ExecItem> linear_to_schedule(const LinearResult& linear);

// Whether a device runs row kernels (schedule/kernelize.cpp's row fusion: softmax or layernorm in
// one pass, a row's reduces before its loop). A CPU does, a row per thread; a GPU spreads a row
// over work items, each of which would redo the row's reduces. The runtime installs the query (it
// knows the devices' targets); without one, nothing is row-fused.
using RowFusionQuery = bool (*)(const std::string& device);
RowFusionQuery set_row_fusion_query(RowFusionQuery query);  // returns the previous one
bool row_fusion(const std::string& device);

// Drops every cached schedule (tests).
void clear_schedule_cache();
size_t schedule_cache_size();

}  // namespace kiln
