// tensor/jit.cpp - kiln::Jit: counting calls, checking inputs, capturing, replaying (runtime/jit.hpp
// holds the plan itself).
#include "kiln/jit.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "runtime/buffer.hpp"
#include "runtime/jit.hpp"
#include "support/env.hpp"
#include "support/trace.hpp"
#include "tensor/multi.hpp"
#include "tensor/tensor_state.hpp"

namespace kiln {

using namespace detail;

namespace {

const std::string& var_name_of(const UOp& def) { return std::get<NamedInts>(def.arg()).name; }
int64_t vmin_of(const UOp& def) { return std::get<NamedInts>(def.arg()).ints[0]; }
int64_t vmax_of(const UOp& def) { return std::get<NamedInts>(def.arg()).ints[1]; }
const std::string& var_name(const UOp& bind) { return var_name_of(bind.src(0)); }

// An input that is a symbolic view of a buffer - RESHAPEs and SHRINKs down to a BUFFER with a
// variable among its sizes (Tensor::shrink(axis, BoundVariable); Python's buf[:n]) - is kept a
// view when every variable of it is passed in `vars`: the plan reads the buffer, and a replay
// takes any buffer seen the same way, the variables re-bound. Its key names every step with the
// variables' definitions in place of their values, and the buffer's dtype and size (the kernels'
// indexing depends on all of them); "" for any other tensor, which is realized and replayed by
// shape.
std::string symbolic_view_key(const Tensor& t, const std::vector<BoundVariable>& vars) {
  if (multi_of(t)) return {};
  const TensorGraph g = t.state()->graph();
  if (g.vars.empty()) return {};
  for (const UOp& b : g.vars)
    if (b && std::none_of(vars.begin(), vars.end(), [&](const BoundVariable& v) { return v.uop().src(0) == b.src(0); })) return {};
  std::string key;
  for (const UOp* x = &g.uop;; x = &x->src(0)) {
    if (x->op() == Ops::BUFFER) return key + cat("BUFFER(", x->dtype().name(), " ", x->arg_ints()[1], ")");
    if (x->op() != Ops::RESHAPE && x->op() != Ops::SHRINK) return {};
    key += cat(op_name(x->op()), "(");
    for (int64_t a : x->arg_ints()) key += cat(a, " ");
    for (size_t k = 1; k < x->nsrc(); ++k) {  // the BINDs the arg's negative entries refer to
      const UOp& def = x->src(k).src(0);
      key += cat("'", var_name_of(def), "' [", vmin_of(def), ", ", vmax_of(def), "] ");
    }
    key += ") ";
  }
}

// An output that is (a view of) input `in`: the input itself when the shapes agree, else the same
// view of this call's input buffer.
Tensor input_view(const Tensor& in, const Shape& shape) {
  if (in.shape() == shape) return in;
  return make(buffer_view(view_buffer(in.state()->uop()), shape), shape, in.device());
}

// How a list of tensors maps to the single-device tensors the plan sees: a multi-device tensor is
// its parts, in order.
struct Layout {
  size_t count = 1;         // parts (1: a single-device tensor)
  std::optional<int> axis;  // the shard axis of a multi-device tensor
  bool operator==(const Layout&) const = default;
};

std::vector<Tensor> flatten(const std::vector<Tensor>& ts, std::vector<Layout>& layouts) {
  std::vector<Tensor> flat;
  layouts.clear();
  for (const Tensor& t : ts) {
    if (const Multi* m = multi_of(t)) {
      flat.insert(flat.end(), m->parts.begin(), m->parts.end());
      layouts.push_back({m->parts.size(), m->axis});
    } else {
      flat.push_back(t);
      layouts.push_back({});
    }
  }
  return flat;
}

std::vector<Tensor> regroup(std::vector<Tensor> flat, const std::vector<Layout>& layouts) {
  std::vector<Tensor> out;
  size_t at = 0;
  for (const Layout& l : layouts) {
    if (l.count == 1) out.push_back(std::move(flat[at]));
    else out.push_back(make_multi(std::vector<Tensor>(flat.begin() + static_cast<long>(at), flat.begin() + static_cast<long>(at + l.count)), l.axis));
    at += l.count;
  }
  return out;
}

}  // namespace

struct Jit::Impl {
  std::mutex mu;  // one call of this Jit at a time (replay rebinds the plan's slots)
  Fn fn;
  int calls = 0;  // calls before the capture (0, 1), or 2 once captured

  // what the captured call was given
  struct Input {
    Shape shape;
    DType dtype;
    std::string device;
    size_t alias;  // the first input with the same buffer (itself when none)
    std::string view;  // symbolic_view_key: replayed by it instead of the shape when not ""
  };
  std::vector<Input> inputs;  // single-device tensors (a multi-device input's parts)
  std::vector<Layout> in_layouts, out_layouts;
  std::vector<std::string> var_names;
  std::vector<UOp> var_defs;  // their DEFINE_VARs (name and range: buffers are sized by the range)

  // what it returned: (a view of) an input, or a buffer of the plan (or a weight) seen as `shape`,
  // where a dimension d with dim_vars[d] >= 0 takes that variable's value
  struct Output {
    long input = -1;   // (then buffer and view are null: the plan keeps no input alive)
    UOp buffer, view;  // view: of buffer as `shape`, when no dimension is a variable
    Shape shape;
    std::string device;
    std::vector<long> dim_vars;
  };
  std::vector<Output> outputs;
  std::unique_ptr<runtime::Plan> plan;
  std::atomic<size_t> items{0};  // plan->size(), readable while a call runs (captured(), kernel_count())

  // reused by every replay
  std::vector<std::shared_ptr<runtime::Storage>> bound;
  std::vector<int64_t> values;

  std::vector<Tensor> run(const std::vector<Tensor>& ins, const std::vector<BoundVariable>& vars);
  std::vector<Tensor> capture(const std::vector<Tensor>& ins, const std::vector<BoundVariable>& vars);
  std::vector<Tensor> replay(const std::vector<Tensor>& ins, const std::vector<BoundVariable>& vars);
  // user: the inputs as given; ins: flattened (a multi-device input's parts)
  void check(const std::vector<Tensor>& user, const std::vector<Tensor>& ins, const std::vector<BoundVariable>& vars);
};

std::vector<Tensor> Jit::Impl::run(const std::vector<Tensor>& ins, const std::vector<BoundVariable>& vars) {
  std::vector<Tensor> outs = fn(ins, vars);
  Tensor::realize_all(outs);
  return outs;
}

std::vector<Tensor> Jit::Impl::capture(const std::vector<Tensor>& ins, const std::vector<BoundVariable>& vars) {
  trace::Span span("jit", "jit capture");
  std::vector<Tensor> outs;
  std::vector<std::vector<UOp>> out_vars;  // each output's symbolic dimensions (BINDs), before it is realized
  // The inputs as given, before fn runs: an input that is a symbolic view stays unrealized until
  // then, and fn returning it would realize it (into a buffer of its own, which is then an output).
  inputs.clear();
  std::vector<std::shared_ptr<runtime::Storage>> storages;
  std::vector<Tensor> flat_ins = flatten(ins, in_layouts);
  for (size_t i = 0; i < flat_ins.size(); ++i) {
    storages.push_back(runtime::storage_of(view_buffer(flat_ins[i].state()->uop())));
    size_t alias = i;
    for (size_t k = 0; k < i; ++k)
      if (storages[k] == storages[i]) {
        alias = k;
        break;
      }
    inputs.push_back({flat_ins[i].shape(), flat_ins[i].dtype(), flat_ins[i].device(), alias, symbolic_view_key(flat_ins[i], vars)});
  }
  runtime::Capture recorded;
  outs = fn(ins, vars);
  std::vector<Tensor> flat_outs = flatten(outs, out_layouts);
  for (const Tensor& t : flat_outs) {  // an output fn realized itself keeps its variables in realized_vars
    TensorGraph g = t.state()->graph();
    out_vars.push_back(g.vars.empty() ? g.realized_vars : g.vars);
  }
  Tensor::realize_all(outs);
  recorded.stop();
  if (recorded.steps.empty())
    fail(ErrorCode::invalid_argument, "Jit: the function ran no kernel and no copy, so there is nothing to capture (its ",
         outs.size(), " outputs are its inputs or views of them); call it directly instead of through a Jit");

  var_names.clear();
  var_defs.clear();
  for (const BoundVariable& v : vars) {
    var_names.push_back(var_name(v.uop()));
    var_defs.push_back(v.uop().src(0));
  }

  outputs.clear();
  for (size_t o = 0; o < flat_outs.size(); ++o) {
    Output out;
    out.buffer = view_buffer(flat_outs[o].state()->uop());
    out.shape = flat_outs[o].shape();
    out.device = flat_outs[o].device();
    const auto storage = runtime::storage_of(out.buffer);
    for (size_t k = 0; k < flat_ins.size() && out.input < 0; ++k)
      if (storages[k] == storage) out.input = static_cast<long>(k);
    bool symbolic = false;
    for (size_t d = 0; d < out.shape.size(); ++d) {
      long v = -1;
      if (d < out_vars[o].size() && out_vars[o][d])
        for (size_t k = 0; k < var_names.size(); ++k)
          if (var_names[k] == var_name(out_vars[o][d])) v = static_cast<long>(k);
      out.dim_vars.push_back(v);
      symbolic |= v >= 0;
    }
    if (!symbolic) out.view = flat_outs[o].state()->uop();
    if (out.input >= 0) out.buffer = out.view = UOp();
    outputs.push_back(std::move(out));
  }
  plan = std::make_unique<runtime::Plan>(std::move(recorded), storages, var_names);
  bound.assign(flat_ins.size(), nullptr);
  values.assign(vars.size(), 0);
  if (debug_level() >= 1)
    log_line(cat("jit: captured ", plan->size(), " items (", flat_ins.size(), " inputs in ", plan->input_slots(), " slots, ",
                 vars.size(), " variables); intermediates ", plan->planned_bytes(), " bytes (", plan->unplanned_bytes(),
                 " as captured)"));
  return outs;
}

void Jit::Impl::check(const std::vector<Tensor>& user, const std::vector<Tensor>& ins, const std::vector<BoundVariable>& vars) {
  std::vector<Layout> layouts;
  flatten(user, layouts);
  for (size_t i = 0; i < std::min(layouts.size(), in_layouts.size()); ++i)
    if (!(layouts[i] == in_layouts[i]))
      fail(ErrorCode::invalid_argument, "Jit: input ", i, " is on ", user[i].device(), layouts[i].axis ? cat(" sharded on axis ", *layouts[i].axis) : std::string(),
           ", captured ", in_layouts[i].count == 1 ? std::string("on one device") : cat("on ", in_layouts[i].count, " devices"),
           in_layouts[i].axis ? cat(" sharded on axis ", *in_layouts[i].axis) : std::string(), " (reset() to capture again)");
  if (ins.size() != inputs.size())
    fail(ErrorCode::invalid_argument, "Jit: called with ", ins.size(), " inputs, captured with ", inputs.size(),
         "; a Jit replays one signature (reset() to capture again)");
  for (size_t i = 0; i < ins.size(); ++i) {
    const Input& want = inputs[i];
    const Tensor& t = ins[i];
    const std::string view = want.view.empty() ? std::string() : symbolic_view_key(t, vars);
    if (!want.view.empty() && view != want.view)
      fail(ErrorCode::invalid_argument, "Jit: input ", i, " (shape ", shape_str(t.shape()),
           ") is not the symbolic view it was captured as: ", view.empty() ? std::string("not such a view, or its variables are not passed") : view, ", captured as ", want.view,
           "; a replay takes the same view of a buffer of the same size, the variables re-bound (reset() captures again)");
    if (want.view.empty() && t.shape() != want.shape)
      fail(ErrorCode::invalid_argument, "Jit: input ", i, " has shape ", shape_str(t.shape()), ", captured with ",
           shape_str(want.shape), "; a Jit replays one shape (a BoundVariable makes a dimension vary; reset() captures again)");
    if (!(t.dtype() == want.dtype))
      fail(ErrorCode::invalid_argument, "Jit: input ", i, " has dtype ", t.dtype().name(), ", captured with ",
           want.dtype.name(), " (reset() to capture again)");
    if (t.device() != want.device)
      fail(ErrorCode::invalid_argument, "Jit: input ", i, " is on ", t.device(), ", captured on ", want.device,
           " (move it with .to(\"", want.device, "\"), or reset() to capture again)");
  }
  if (vars.size() != var_names.size())
    fail(ErrorCode::invalid_argument, "Jit: called with ", vars.size(), " variables, captured with ", var_names.size());
  for (size_t k = 0; k < vars.size(); ++k) {
    const UOp& def = vars[k].uop().src(0);
    if (def == var_defs[k]) continue;
    auto range = [](const UOp& d) { return cat("'", var_name_of(d), "' in [", vmin_of(d), ", ", vmax_of(d), "]"); };
    fail(ErrorCode::invalid_argument, "Jit: variable ", k, " is ", range(def), ", captured as ", range(var_defs[k]),
         " (buffers are sized for the captured range; reset() to capture again)");
  }
}

std::vector<Tensor> Jit::Impl::replay(const std::vector<Tensor>& user, const std::vector<BoundVariable>& vars) {
  std::vector<Layout> layouts;
  std::vector<Tensor> ins = flatten(user, layouts);
  check(user, ins, vars);
  struct Release {  // this call's inputs are not kept, also when something below throws
    std::vector<std::shared_ptr<runtime::Storage>>& bound;
    ~Release() {
      for (auto& b : bound) b.reset();
    }
  } release{bound};
  for (size_t i = 0; i < ins.size(); ++i) {
    bound[i] = runtime::storage_of(view_buffer(ins[i].state()->uop()));
    size_t alias = i;
    for (size_t k = 0; k < i; ++k)
      if (bound[k] == bound[i]) {
        alias = k;
        break;
      }
    if (alias != inputs[i].alias) {
      size_t other = alias != i ? alias : inputs[i].alias;
      fail(ErrorCode::invalid_argument, "Jit: inputs ", other, " and ", i, " are ", alias != i ? "one buffer" : "two buffers",
           " now but were ", alias != i ? "two buffers" : "one buffer", " when captured; pass the same arrangement (reset() to capture again)");
    }
    bound[i]->ensure_allocated();
  }
  for (size_t k = 0; k < vars.size(); ++k) values[k] = vars[k].value();
  {
    std::lock_guard<std::mutex> lock(realize_mutex());
    plan->replay(bound, values);
  }
  std::vector<Tensor> outs;
  outs.reserve(outputs.size());
  for (const Output& o : outputs) {
    if (o.input < 0 && o.view) {
      outs.push_back(make(o.view, o.shape, o.device));
      continue;
    }
    Shape shape = o.shape;
    for (size_t d = 0; d < shape.size(); ++d)
      if (o.dim_vars[d] >= 0) shape[d] = values[static_cast<size_t>(o.dim_vars[d])];
    outs.push_back(o.input >= 0 ? input_view(ins[static_cast<size_t>(o.input)], shape)
                                : make(buffer_view(o.buffer, shape), shape, o.device));
  }
  return regroup(std::move(outs), out_layouts);
}

Jit::Jit(Fn fn) : impl_(std::make_unique<Impl>()) {
  if (!fn) fail(ErrorCode::invalid_argument, "Jit: the function is empty");
  impl_->fn = std::move(fn);
}
Jit::~Jit() = default;
Jit::Jit(Jit&&) noexcept = default;
Jit& Jit::operator=(Jit&&) noexcept = default;

std::vector<Tensor> Jit::operator()(const std::vector<Tensor>& inputs, const std::vector<BoundVariable>& vars) {
  if (!impl_) fail(ErrorCode::invalid_argument, "Jit: used after it was moved from");
  Impl& j = *impl_;
  // The Jits this thread is inside of: fn calling its own Jit would wait on the lock it holds.
  thread_local std::vector<const Impl*> running;
  if (std::find(running.begin(), running.end(), &j) != running.end())
    fail(ErrorCode::failed_precondition, "Jit: the function called the Jit that is running it (recursion); a Jit's function "
         "must not call its own Jit (call the plain function there instead)");
  std::lock_guard<std::mutex> lock(j.mu);
  running.push_back(&j);
  struct Pop {
    std::vector<const Impl*>& r;
    ~Pop() { r.pop_back(); }
  } pop{running};
  std::vector<Tensor> ins = inputs, fixed;
  for (const Tensor& t : ins)
    if (symbolic_view_key(t, vars).empty()) fixed.push_back(t);  // (copies share the state: realizing one realizes ins')
  Tensor::realize_all(fixed);  // views of a buffer stay; anything else becomes one; symbolic views stay
  // Called inside another Jit's capture: run the function, so that the outer plan records its
  // kernels (a replay would run none through a realize); this call does not count.
  if (runtime::Capture::active()) return j.run(ins, vars);
  if (j.plan) return j.replay(ins, vars);
  if (j.calls == 0) {
    std::vector<Tensor> outs = j.run(ins, vars);
    j.calls = 1;
    return outs;
  }
  try {
    std::vector<Tensor> outs = j.capture(ins, vars);
    j.calls = 2;
    j.items = j.plan->size();
    return outs;
  } catch (...) {
    j.calls = 0;
    j.plan.reset();
    throw;
  }
}

bool Jit::captured() const { return kernel_count() > 0; }  // (a plan has at least one item)
size_t Jit::kernel_count() const { return impl_ ? impl_->items.load() : 0; }
void Jit::reset() {
  if (!impl_) return;
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->calls = 0;
  impl_->items = 0;
  impl_->plan.reset();
  impl_->outputs.clear();
  impl_->inputs.clear();
}

}  // namespace kiln
