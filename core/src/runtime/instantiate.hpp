// runtime/instantiate.hpp - a tensor graph's schedule, instantiated for running.
//
// create_linear_with_vars(big_sink) schedules the graph (schedule/schedule.hpp's schedule_graph:
// the cached template or a new one) and instantiates the template: fresh BUFFERs for its locals
// (one storage per memory-plan group) and one CALL per kernel over concrete buffers. It returns:
//   linear    LINEAR(CALL(body, buffers...), ...) in an order that respects every read-after-write,
//             write-after-read and write-after-write dependency; body is a kernel AST (a SINK of
//             END(STORE) over RANGEs; several outputs: END(GROUP(STORE...))) or a COPY node; buffers are
//             BUFFER nodes, the outputs first
//   var_vals  the values bound to variables (BIND) in the graph
//   outputs   for each source of big_sink, the BUFFER that holds its value
// The runtime answers the scheduler's questions about devices (ScheduleContext: row fusion from
// the device's target) and gives each template its prepared kernels. Running the result:
// `prepared->prepare(linear, var_vals)` (runtime/prepared.hpp).
#pragma once
#include <memory>
#include <vector>

#include "kiln/tensor.hpp"
#include "schedule/schedule.hpp"

namespace kiln {

namespace runtime {
class PreparedKernels;
}

struct LinearResult {
  UOp linear;
  VarVals var_vals;
  std::vector<UOp> outputs;
  bool cache_hit = false;
  int kernels = 0;               // CALLs that run kernels (not copies)
  uint64_t planned_bytes = 0;    // intermediate bytes after memory planning
  uint64_t unplanned_bytes = 0;  // ... and without it
  // Every ASSIGN of the graph as it was given (ScheduledGraph::assigns).
  std::vector<UOp> assigns;
  // The template's prepared kernels: prepared->prepare(linear, var_vals) gives the items to run.
  std::shared_ptr<runtime::PreparedKernels> prepared;
};

LinearResult create_linear_with_vars(const UOp& big_sink);
std::vector<ExecItem> linear_to_schedule(const LinearResult& linear);

}  // namespace kiln
