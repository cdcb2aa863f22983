// schedule/schedule.hpp - from a tensor graph to an ordered list of kernel and copy calls.
//
// schedule_graph(big_sink, ctx) takes a SINK of tensor nodes to realize and returns the graph's
// schedule template (schedule/kernelize.hpp: kernels over the graph's input slots and over
// buffers the schedule creates, with their memory plan) and what instantiating it needs:
//   tmpl      kernels in an order that respects every read-after-write, write-after-read and
//             write-after-write dependency; a kernel's body is a kernel AST (a SINK of END(STORE)
//             over RANGEs; several outputs: END(GROUP(STORE...))) or a COPY node
//   var_vals  the values bound to variables (BIND) in the graph, and its lifted scalars
//   inputs    the graph's input BUFFERs, by slot
// Steps: strip variable values, normalise input buffers to PARAMs (so identical programs on other
// buffers share one schedule; a hit only computes that graph's key), look the result up in the
// schedule cache, and on a miss decide kernel boundaries (kernelize), lower each kernel's movement
// ops to index math (rangeify), order kernels (create_schedule) and plan memory (memory_planner).
// Instantiating a template (buffers and storage for its locals) and running it is the runtime's
// (runtime/instantiate.hpp's create_linear_with_vars).
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln {

struct Template;
struct TemplateState;

using VarVals = std::vector<std::pair<std::string, int64_t>>;

// What the scheduler asks of the devices it schedules for. The runtime answers (it knows the
// devices' targets, which the schedule layer does not see).
struct ScheduleContext {
  virtual ~ScheduleContext() = default;
  // Whether `device` runs row kernels (kernelize.cpp's row fusion: softmax or layernorm in one
  // pass, a row's reduces before its loop): codegen's Target::runs_rows of the device's target.
  virtual bool row_fusion(const std::string& device) const = 0;
  // What a new template keeps for the runtime (Template::state), made once per template.
  virtual std::shared_ptr<TemplateState> new_state() const = 0;
};

struct ScheduledGraph {
  std::shared_ptr<const Template> tmpl;
  VarVals var_vals;
  std::vector<UOp> inputs;  // the input BUFFERs, by slot
  // Every ASSIGN of the graph as it was given: running the schedule writes each one's target, so
  // the caller points every live graph that still reads one at its target instead (an assign
  // runs once, docs/architecture.md "Assign").
  std::vector<UOp> assigns;
  bool cache_hit = false;
};

ScheduledGraph schedule_graph(const UOp& big_sink, const ScheduleContext& ctx);

// Drops every cached schedule (tests).
void clear_schedule_cache();
size_t schedule_cache_size();

}  // namespace kiln
