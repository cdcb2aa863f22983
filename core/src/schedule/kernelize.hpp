// schedule/kernelize.hpp - the schedule template: kernels over abstract buffers.
//
// A Template is what the schedule cache stores: kernels whose buffers are references to either
// the program's inputs (the normalised PARAMs, by slot) or buffers the schedule creates (locals),
// plus the memory plan for the locals. Instantiating it for concrete input buffers only creates
// BUFFER nodes and CALLs.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "kiln/uop.hpp"
#include "support/flat_map.hpp"

namespace kiln {

struct BufRef {
  bool local = false;  // false: input slot `index`; true: template-local buffer `index`
  uint32_t index = 0;
  friend bool operator==(const BufRef&, const BufRef&) = default;
};

struct TemplateKernel {
  UOp body;                  // kernel AST (kernel PARAM slot i is bufs[i]) or a COPY node
  std::vector<BufRef> bufs;  // the outputs first (a kernel may store several), then the inputs
  std::string device;
  bool is_copy = false;
  std::vector<int> after;    // kernels (by index) that must run first: RAW, WAR and WAW edges
};

struct LocalBuf {
  std::string device;
  DType dtype;
  int64_t size = 0;   // elements (symbolic sizes use their maximum)
  bool output = false;
  int group = -1;     // memory-plan group: locals in one group share storage
};

// What a cached template keeps for the code that runs it (the runtime's prepared kernels); the
// schedule only holds it (ScheduleContext::new_state makes it).
struct TemplateState {
  virtual ~TemplateState() = default;
};

struct Template {
  std::vector<TemplateKernel> kernels;  // in execution order (after create_schedule)
  std::vector<LocalBuf> locals;
  std::vector<BufRef> outputs;          // per big_sink source
  int n_groups = 0;
  uint64_t planned_bytes = 0, unplanned_bytes = 0;
  // The kernels prepared for running (runtime/prepared.hpp), filled by the first run: every
  // instance of a cached template launches them without resolving anything again.
  std::shared_ptr<TemplateState> state;
};

// Shapes and devices of a normalised tensor graph, computed once per schedule.
struct GraphInfo {
  PtrMap<std::vector<UOp>> shape;  // dims as index UOps (CONST, or DEFINE_VAR for symbolic dims)
  PtrMap<std::string> device;
  PtrMap<int> consumers;
  std::vector<UOp> order;          // toposort
};
GraphInfo analyze(const UOp& sink);

// Rewrites every REDUCE_AXIS of a normalised SINK that combines at least kSplitReduceAt elements
// per output into a tree of partial reductions (CONTIGUOUS stages) in which no accumulator
// combines more than 4096 values, so precision and parallelism do not depend on the reduce's
// length. (Shorter reduces stay one kernel: a matmul's K, a softmax row; nested reduces in one
// kernel stay under it too, see kernelize.cpp.)
constexpr int64_t kSplitReduceAt = 32768;
UOp split_reduce(const UOp& sink);

struct ScheduleContext;

// What the schedule's steps (schedule/passes.cpp) pass along, from a normalised SINK whose inputs
// are PARAM(slot) nodes to the finished template. Each step fills its part.
struct ScheduleState {
  UOp sink;                 // the tensor graph (split_reduce rewrites it)
  size_t n_inputs = 0;      // input slots
  const ScheduleContext* ctx = nullptr;  // what depends on the devices (row fusion)
  GraphInfo g;              // shapes, devices, consumers of `sink` (find_boundaries)
  PtrMap<char> realize;     // the nodes that get a buffer: kernel boundaries (find_boundaries, group)
  std::vector<std::vector<const UOpNode*>> groups;  // the realized nodes of each kernel (group)
  Template t;               // the kernels (rangeify), ordered (create_schedule), planned (memory_planner)
};

// Whether REDUCE_AXIS r (of graph g, realize being the nodes with a buffer) is a contraction: a
// sum of products each of whose factors reads its buffers at least 16 times on average (a
// matmul's n*k*m products read A's n*k elements m times and B's k*m elements n times; a
// convolution's its image and its weights), so it is compute-bound and its kernel's speed is the
// optimizer's register tiling for it - which tiles one reduce per kernel. A kernel holds at most
// one (kernelize.cpp, group.cpp). Reduces that stream a factor once (a row sum, a dot product, a
// vector times a matrix) lose no tiling beside another and stay fused.
bool is_contraction(const GraphInfo& g, const PtrMap<char>& realize, const UOp& r);

// Which nodes of s.sink get their own buffer (the rules at the top of kernelize.cpp).
void find_boundaries(ScheduleState& s);
// Which realized nodes share a kernel (group_kernels).
void group(ScheduleState& s);
// One kernel per group, in dependency order, with the read/write edges between them.
void rangeify(ScheduleState& s);

// Which realized nodes (the keys of `realize`) share a kernel (group.cpp): the groups, each in
// graph order. Drops from `realize` the shared reduces whose consumers all joined their kernel.
std::vector<std::vector<const UOpNode*>> group_kernels(const GraphInfo& g, const UOp& sink, PtrMap<char>& realize);

// Orders the kernels (Kahn's algorithm over `after`, stable by index) and rewrites the indices in
// `after`; a cycle is a kiln::Error naming the kernels involved.
void create_schedule(Template& t);
// Assigns template-local intermediates to shared storage groups when their lifetimes do not
// overlap (outputs and inputs are never shared) and records the bytes before and after.
void memory_planner(Template& t);

// The schedule's pass list (schedule/passes.cpp): split_reduce, find_boundaries, group, rangeify,
// create_schedule, memory_planner, each a traced step (KILN_DEBUG=6 times them, 7 prints the IR
// after each). The template of a normalised SINK; `ctx` answers what depends on the devices.
Template build_template(const UOp& sink, size_t n_inputs, const ScheduleContext& ctx);
// The steps' names, in order (the table's; tests check a trace shows each).
std::vector<const char*> schedule_pass_names();

// One value a kernel stores: tensor node `node`, computed as `value` (node itself, or what a
// CONTIGUOUS/ASSIGN wraps), into buffer `out`.
struct KernelRoot {
  UOp node, value;
  BufRef out;
};
// Builds the AST of one kernel: computes every root into buffer slot i (its position), all in one
// loop nest over the first root's shape (the roots have as many elements; see kernelize.cpp for
// when they share a kernel). A root is computed, never loaded, even where another root reads it.
// `realized` maps the other realized nodes to their buffers; `params` receives the kernel's
// buffer list (the roots' outputs first).
UOp rangeify_kernel(const GraphInfo& g, const std::vector<KernelRoot>& roots, const PtrMap<BufRef>& realized,
                    std::vector<BufRef>& params);

}  // namespace kiln
