// schedule/passes.cpp - THE scheduler's pass list: a normalised tensor graph becomes a template of
// kernels over abstract buffers (kernelize.hpp).
//
// kPasses is the table of contents, in order, by name. build_template runs each through a
// StepScope, as codegen/pipeline.cpp runs its passes: KILN_DEBUG=6 prints each step's size before
// and after and its time, KILN_DEBUG=7 the IR after it (the graph, then the kernel boundaries, the
// groups, the kernels, their order, the memory plan), and KILN_TRACE records each as an event.
#include <string>

#include "ir/print.hpp"
#include "ir/traverse.hpp"
#include "rewrite/graph_rewrite.hpp"
#include "schedule/kernelize.hpp"
#include "support/check.hpp"

namespace kiln {

namespace {

struct SchedulePass {
  const char* name;
  void (*run)(ScheduleState&);
  std::string (*size)(const ScheduleState&);  // what the step's line says of its output
  std::string (*dump)(const ScheduleState&);  // its output, for KILN_DEBUG=7
};

// ---- the sizes and the text forms of the state after each step ----

std::string nodes(const ScheduleState& s) { return cat(toposort_nodes(s.sink).size(), " nodes"); }
std::string graph(const ScheduleState& s) { return print_graph(s.sink); }

// print_graph's numbering of the nodes of the sink (%0, %1, ...)
PtrMap<int> numbering(const UOp& sink) {
  PtrMap<int> num;
  int next = 0;
  for (const UOpNode* n : toposort_nodes(sink)) num[n] = next++;
  return num;
}

std::string realized(const ScheduleState& s) { return cat(nodes(s), ", ", s.realize.size(), " realized"); }
std::string boundaries(const ScheduleState& s) {
  PtrMap<int> num = numbering(s.sink);
  std::string out = print_graph(s.sink) + "realized:";
  for (const UOpNode* n : toposort_nodes(s.sink))
    if (s.realize.contains(n)) out += cat(" %", *num.find(n));
  return out + "\n";
}

std::string group_count(const ScheduleState& s) { return cat(s.groups.size(), " kernels"); }
std::string groups(const ScheduleState& s) {
  PtrMap<int> num = numbering(s.sink);
  std::string out;
  for (size_t i = 0; i < s.groups.size(); ++i) {
    out += cat("kernel ", i, ":");
    for (const UOpNode* m : s.groups[i]) out += cat(" %", *num.find(m));
    out += "\n";
  }
  return out;
}

std::string buf_name(BufRef b) { return cat(b.local ? "L" : "in", b.index); }

std::string kernel_count(const ScheduleState& s) { return cat(s.t.kernels.size(), " kernels"); }
std::string kernels(const ScheduleState& s) {
  std::string out;
  for (size_t i = 0; i < s.t.kernels.size(); ++i) {
    const TemplateKernel& k = s.t.kernels[i];
    const UOp& b = k.body;
    const bool named = b.op() == Ops::SINK && std::holds_alternative<std::string>(b.arg());
    out += cat("kernel ", i, " ", named ? b.arg_string() : std::string(op_name(b.op())), " on ", k.device, ": bufs");
    for (BufRef r : k.bufs) out += " " + buf_name(r);
    if (!k.after.empty()) {
      out += ", after";
      for (int j : k.after) out += cat(" ", j);
    }
    out += "\n" + print_graph(b);
  }
  return out;
}

std::string plan_size(const ScheduleState& s) {
  return cat(s.t.locals.size(), " buffers in ", s.t.n_groups, " storages, ", s.t.unplanned_bytes, " -> ",
             s.t.planned_bytes, " bytes of intermediates");
}
std::string plan(const ScheduleState& s) {
  std::string out;
  for (size_t i = 0; i < s.t.locals.size(); ++i) {
    const LocalBuf& l = s.t.locals[i];
    out += cat("L", i, " ", l.dtype.name(), "[", l.size, "] on ", l.device, ": storage ", l.group, l.output ? " (output)" : "", "\n");
  }
  out += "outputs:";
  for (BufRef b : s.t.outputs) out += " " + buf_name(b);
  return out + "\n";
}

constexpr SchedulePass kPasses[] = {
    // a reduce over very many elements becomes a tree of bounded partial reduces
    {"split_reduce", [](ScheduleState& s) { s.sink = split_reduce(s.sink); }, nodes, graph},
    // which nodes get a buffer (the rules at the top of kernelize.cpp)
    {"find_boundaries", find_boundaries, realized, boundaries},
    // which realized nodes share a kernel (multi-output kernels, epilogues)
    {"group", group, group_count, groups},
    // one kernel AST per group over abstract buffers, with the edges between kernels
    {"rangeify", rangeify, kernel_count, kernels},
    // the kernels in an order that respects every edge
    {"create_schedule", [](ScheduleState& s) { create_schedule(s.t); }, kernel_count, kernels},
    // intermediates whose lifetimes do not overlap share storage
    {"memory_planner", [](ScheduleState& s) { memory_planner(s.t); }, plan_size, plan},
};

}  // namespace

Template build_template(const UOp& sink, size_t n_inputs, const ScheduleContext& ctx) {
  ScheduleState s;
  s.sink = sink;
  s.n_inputs = n_inputs;
  s.ctx = &ctx;
  const SchedulePass* previous = nullptr;
  for (const SchedulePass& pass : kPasses) {
    StepScope scope(pass.name, [&] { return previous ? previous->size(s) : nodes(s); });
    pass.run(s);
    scope.finish([&] { return pass.size(s); }, [&] { return pass.dump(s); });
    previous = &pass;
  }
  return std::move(s.t);
}

std::vector<const char*> schedule_pass_names() {
  std::vector<const char*> names;
  for (const SchedulePass& p : kPasses) names.push_back(p.name);
  return names;
}

}  // namespace kiln
