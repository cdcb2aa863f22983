// runtime/instantiate.cpp - instantiating a schedule template: the locals' buffers and storages,
// the calls, the template's prepared kernels; the runtime's answers to the scheduler.
#include "runtime/instantiate.hpp"

#include "runtime/buffer.hpp"
#include "runtime/prepared.hpp"
#include "runtime/program_cache.hpp"
#include "schedule/kernelize.hpp"
#include "support/check.hpp"

namespace kiln {

namespace {

struct RuntimeContext final : ScheduleContext {
  bool row_fusion(const std::string& device) const override { return runtime::runs_rows(device); }
  std::shared_ptr<TemplateState> new_state() const override { return std::make_shared<runtime::PreparedKernels>(); }
};

}  // namespace

LinearResult create_linear_with_vars(const UOp& big_sink) {
  static const RuntimeContext context;
  ScheduledGraph sg = schedule_graph(big_sink, context);
  const Template& tmpl = *sg.tmpl;
  LinearResult out;
  out.var_vals = std::move(sg.var_vals);
  out.assigns = std::move(sg.assigns);
  out.cache_hit = sg.cache_hit;
  const std::vector<UOp>& inputs = sg.inputs;
  // fresh buffers for the locals, one storage per memory group
  std::vector<UOp> locals;
  std::vector<std::shared_ptr<runtime::Storage>> groups(tmpl.n_groups);
  for (const LocalBuf& l : tmpl.locals) {
    UOp b = runtime::new_buffer(l.device, l.dtype, l.size);
    auto& g = groups[l.group];
    uint64_t bytes = static_cast<uint64_t>(l.size) * l.dtype.itemsize();
    if (!g) g = std::make_shared<runtime::Storage>(l.device, bytes);
    else g->reserve(bytes);
    runtime::bind_storage(b, g);
    locals.push_back(b);
  }
  auto resolve = [&](BufRef r) { return r.local ? locals[r.index] : inputs[r.index]; };
  std::vector<UOp> calls;
  for (const TemplateKernel& k : tmpl.kernels) {
    std::vector<UOp> src{k.body};
    for (BufRef b : k.bufs) src.push_back(resolve(b));
    calls.push_back(UOp::make(Ops::CALL, dtypes::void_, src));
    out.kernels += !k.is_copy;
  }
  out.linear = UOp::make(Ops::LINEAR, dtypes::void_, calls);
  for (BufRef b : tmpl.outputs) out.outputs.push_back(resolve(b));
  out.prepared = std::static_pointer_cast<runtime::PreparedKernels>(tmpl.state);
  out.planned_bytes = tmpl.planned_bytes;
  out.unplanned_bytes = tmpl.unplanned_bytes;
  return out;
}

std::vector<ExecItem> linear_to_schedule(const LinearResult& lr) {
  std::vector<ExecItem> items;
  for (const UOp& call : lr.linear.src()) {
    ExecItem e;
    const UOp& body = call.src(0);
    e.is_copy = body.op() == Ops::COPY;
    e.ast = body;
    for (size_t i = 1; i < call.nsrc(); ++i) e.buffers.push_back(call.src(i));
    e.device = runtime::buffer_device(e.buffers[0]);
    e.name = e.is_copy ? cat("copy ", runtime::buffer_bytes(e.buffers[0]), " bytes ", runtime::buffer_device(e.buffers[1]), " -> ",
                             e.device)
                       : body.arg_string();
    e.var_vals = lr.var_vals;
    items.push_back(std::move(e));
  }
  return items;
}

}  // namespace kiln
