// tensor/realize.cpp - scheduling and running tensors, reading results, assign, device moves.
//
// After a realize, every live lazy tensor whose graph contains a realized node is rewritten to
// read the new buffer instead (the live tensors below), so work is never done twice.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "ir/traverse.hpp"
#include "runtime/buffer.hpp"
#include "runtime/jit.hpp"
#include "runtime/prepared.hpp"
#include "runtime/instantiate.hpp"
#include "support/flat_map.hpp"
#include "support/trace.hpp"
#include "tensor/multi.hpp"
#include "tensor/realize_groups.hpp"
#include "tensor/tensor_state.hpp"

namespace kiln {

using namespace detail;

namespace {

// Every live TensorState, so realize can point lazy graphs at new buffers.
struct LiveTensors {
  std::mutex mu;
  std::vector<std::weak_ptr<TensorState>> all;
  size_t since_cleanup = 0;
};
LiveTensors& live_tensors() {
  static LiveTensors* r = new LiveTensors;
  return *r;
}

// A chain of views that keeps element 0 where it is (RESHAPE, SHRINK of a prefix), as is_view walks.
bool is_prefix_view_op(const UOp& u) {
  return u.op() == Ops::RESHAPE || (u.op() == Ops::SHRINK && u.arg_ints()[0] == 0 && u.arg_ints().size() == 2);
}

// The ASSIGN under such a chain (`u` itself when it is one), or null.
const UOp* assign_under_view(const UOp& u) {
  const UOp* x = &u;
  while (is_prefix_view_op(*x)) x = &x->src(0);
  return x->op() == Ops::ASSIGN ? x : nullptr;
}

// One tensor to realize: its state, the graph read from it, and what the schedule computes for it:
// the graph itself, or, for a view of a pending assign, the assign (the tensor then views the
// assign's target, as a view of a realized buffer does, and no copy is made).
struct Pending {
  std::shared_ptr<TensorState> state;
  UOp uop;
  UOp sched;
};

// The states to realize (lazy) for these tensors (a multi-device tensor's parts: one schedule
// realizes them all), and the distinct graphs to schedule for them.
std::vector<Pending> pending(const std::vector<Tensor>& ts, std::vector<UOp>& roots) {
  std::vector<Pending> out;
  std::vector<Tensor> flat;
  for (const Tensor& t : ts) {
    if (const Multi* m = multi_of(t)) flat.insert(flat.end(), m->parts.begin(), m->parts.end());
    else flat.push_back(t);
  }
  for (const Tensor& t : flat) {
    UOp u = t.state()->uop();
    if (is_view(u)) continue;
    if (std::any_of(out.begin(), out.end(), [&](const Pending& o) { return o.state == t.state(); })) continue;
    const UOp* a = assign_under_view(u);
    UOp sched = a && is_view(a->src(0)) ? *a : u;
    out.push_back({t.state(), u, sched});
    if (std::find(roots.begin(), roots.end(), sched) == roots.end()) roots.push_back(sched);
  }
  return out;
}

// Assigns made as one (the parts of a multi-device tensor, Tensor::assign): each part's value was
// read from every part as it was before the assign, so the parts are written in one schedule. A
// realize that runs one of them (a reader of one part, realized first) runs them all; a group is
// dropped once it ran, or once none of its tensors is alive.
struct AssignGroup {
  std::vector<UOp> assigns;
  std::vector<std::weak_ptr<TensorState>> states;
};
struct AssignGroups {
  std::mutex mu;
  std::vector<AssignGroup> all;
};
AssignGroups& assign_groups() {
  static AssignGroups* g = new AssignGroups;
  return *g;
}

// The live tensors of the groups whose assigns the graphs of `roots` contain.
std::vector<Tensor> assign_siblings(const std::vector<UOp>& roots) {
  AssignGroups& g = assign_groups();
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.all.empty()) return {};
  PtrMap<size_t> group_of;
  for (size_t i = 0; i < g.all.size(); ++i)
    for (const UOp& a : g.all[i].assigns) group_of[a.node()] = i;
  std::vector<char> hit(g.all.size(), 0);
  for (const UOpNode* n : toposort_nodes(UOp::sink(roots)))
    if (const size_t* i = group_of.find(n)) hit[*i] = 1;
  std::vector<Tensor> out;
  for (size_t i = 0; i < g.all.size(); ++i)
    if (hit[i])
      for (const auto& w : g.all[i].states)
        if (auto s = w.lock()) out.push_back(Tensor(std::move(s)));
  return out;
}

// Forgets the groups that ran (their assigns are in `ran`) or whose tensors are gone.
void prune_assign_groups(const std::vector<UOp>& ran) {
  AssignGroups& g = assign_groups();
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.all.empty()) return;
  PtrMap<char> done;
  for (const UOp& a : ran) done[a.node()] = 1;
  std::erase_if(g.all, [&](const AssignGroup& grp) {
    return std::any_of(grp.assigns.begin(), grp.assigns.end(), [&](const UOp& a) { return done.contains(a.node()); }) ||
           std::all_of(grp.states.begin(), grp.states.end(), [](const auto& w) { return w.expired(); });
  });
}

void apply_becomes(const std::vector<std::pair<UOp, UOp>>& becomes) {
  LiveTensors& r = live_tensors();
  std::vector<std::shared_ptr<TensorState>> live;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    auto& all = r.all;
    all.erase(std::remove_if(all.begin(), all.end(), [](const auto& w) { return w.expired(); }), all.end());
    for (const auto& w : all)
      if (auto s = w.lock()) live.push_back(std::move(s));
  }
  PtrMap<char> targets;
  // Ids grow with creation and a node's sources are made before it, so a graph holds no node newer
  // than its root: a node older than every target (a graph built before these tensors were, e.g.
  // an ONNX model's lazy graph while its constants are realized one by one) cannot reach one.
  // Without this cut each realize walked every live graph: quadratic in a model's constants.
  uint64_t oldest = UINT64_MAX;
  for (const auto& [from, to] : becomes) {
    targets[from.node()] = 1;
    oldest = std::min(oldest, from.id());
  }
  for (const auto& s : live) {
    if (s->multi) continue;  // its graph is read from its parts
    UOp u = s->uop();
    if (u.id() < oldest || is_view(u)) continue;
    bool touches = false;
    for (const UOpNode* n : toposort_nodes(u, [&](const UOpNode* x) { return x->id < oldest || targets.contains(x); }))
      touches |= targets.contains(n);
    if (!touches) continue;
    UOp redirected = substitute(u, becomes);
    s->update([&](TensorGraph& g) {
      if (g.uop == u) g.uop = redirected;  // else it was assigned meanwhile; its next realize reads the new buffer
    });
  }
}

void read_into(const Tensor& t, void* dst, uint64_t bytes) {
  UOp u = t.state()->uop();
  runtime::read_buffer(view_buffer(u), dst, bytes);
}

}  // namespace

namespace detail {
bool is_view(const UOp& u) {
  const UOp* x = &u;
  while (x->op() == Ops::RESHAPE || (x->op() == Ops::SHRINK && x->arg_ints()[0] == 0 && x->arg_ints().size() == 2)) x = &x->src(0);
  return x->op() == Ops::BUFFER;
}
const UOp& view_buffer(const UOp& u) {
  const UOp* x = &u;
  while (x->op() != Ops::BUFFER) x = &x->src(0);
  return *x;
}

UOp buffer_view(const UOp& buffer, const Shape& shape) {
  int64_t n = numel_of(shape), size = buffer.arg_ints()[1];
  UOp v = buffer;
  if (n != size) v = UOp::make(Ops::SHRINK, buffer.dtype(), {v}, Arg{std::vector<int64_t>{0, n}});
  if (shape.size() != 1 || n != size) v = UOp::make(Ops::RESHAPE, buffer.dtype(), {v}, Arg{std::vector<int64_t>(shape.begin(), shape.end())});
  return v;
}

std::mutex& realize_mutex() {
  static std::mutex* m = new std::mutex;  // never destroyed: tensors may be realized at exit
  return *m;
}

void register_state(const std::shared_ptr<TensorState>& s) {
  LiveTensors& r = live_tensors();
  std::lock_guard<std::mutex> lock(r.mu);
  r.all.push_back(s);
  if (++r.since_cleanup > 4096) {
    r.all.erase(std::remove_if(r.all.begin(), r.all.end(), [](const auto& w) { return w.expired(); }), r.all.end());
    r.since_cleanup = 0;
  }
}
}  // namespace detail

const UOp& Tensor::uop() const { return s_->uop_ref(); }
const Shape& Tensor::shape() const { return s_->shape; }
DType Tensor::dtype() const { return s_->dtype; }
const std::string& Tensor::device() const { return s_->device; }
int64_t Tensor::numel() const { return numel_of(s_->shape); }

std::vector<ExecItem> Tensor::schedule_all(const std::vector<Tensor>& outputs) {
  std::lock_guard<std::mutex> lock(realize_mutex());
  std::vector<UOp> roots;
  pending(outputs, roots);
  if (roots.empty()) return {};
  if (std::vector<Tensor> siblings = assign_siblings(roots); !siblings.empty()) {  // (as realize_all)
    siblings.insert(siblings.begin(), outputs.begin(), outputs.end());
    roots.clear();
    pending(siblings, roots);
  }
  return linear_to_schedule(create_linear_with_vars(UOp::sink(roots)));
}
std::vector<ExecItem> Tensor::schedule() const { return schedule_all({*this}); }

namespace detail {
void realize_all_with(std::vector<Tensor>& tensors, const ItemRunner* run) {
  trace::Span span("realize", "realize");
  std::lock_guard<std::mutex> lock(realize_mutex());
  std::vector<UOp> roots;
  auto states = pending(tensors, roots);  // under the lock: what another thread realized is a view now
  if (roots.empty()) return;
  if (std::vector<Tensor> siblings = assign_siblings(roots); !siblings.empty()) {  // (see AssignGroups)
    siblings.insert(siblings.begin(), tensors.begin(), tensors.end());
    roots.clear();
    states = pending(siblings, roots);
  }
  LinearResult lr = create_linear_with_vars(UOp::sink(roots));
  std::vector<runtime::PreparedItem> items = lr.prepared->prepare(lr.linear, lr.var_vals);
  runtime::Capture* capture = runtime::Capture::active();
  if (capture) capture->record(items, lr.var_vals);  // a Jit's call 2
  if (run && !capture) {  // a Jit replays kernels only: what `run` does between them would be lost
    // tensors[i]'s buffer when this schedule computes it as one of its outputs (the runner may read
    // it before the states below point at it); views of a realized buffer, with nothing to compute
    std::vector<std::optional<UOp>> out(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (multi_of(tensors[i])) continue;
      const UOp u = tensors[i].state()->uop();
      if (is_view(u)) { out[i] = view_buffer(u); continue; }
      for (const Pending& p : states)
        if (p.state == tensors[i].state() && p.sched == p.uop)
          out[i] = lr.outputs[static_cast<size_t>(std::find(roots.begin(), roots.end(), p.sched) - roots.begin())];
    }
    (*run)(items, out);
  } else {
    runtime::run_items(items);
  }
  // Every assign ran with this schedule: a graph that still reads one (a handle built on it, the
  // assigned tensor itself when a reader was realized first) reads its target from now on, so no
  // later realize runs it again (docs/architecture.md, "Assign").
  std::vector<std::pair<UOp, UOp>> becomes;
  for (const UOp& a : lr.assigns) becomes.push_back({a, a.src(0)});
  for (const Pending& p : states) {
    UOp now;
    if (!(p.sched == p.uop)) {
      now = substitute(p.uop, {{p.sched, p.sched.src(0)}});  // a view of the assign's target
    } else {
      size_t at = static_cast<size_t>(std::find(roots.begin(), roots.end(), p.sched) - roots.begin());
      now = buffer_view(lr.outputs[at], p.state->shape);
    }
    if (p.uop.op() != Ops::ASSIGN) becomes.push_back({p.uop, now});
    p.state->update([&](TensorGraph& g) {
      if (g.uop == p.uop) g = p.sched == p.uop ? TensorGraph{now, {}, g.vars} : TensorGraph{now, g.vars};
    });
  }
  apply_becomes(becomes);
  prune_assign_groups(lr.assigns);
}
}  // namespace detail

void Tensor::realize_all(std::vector<Tensor>& tensors) { detail::realize_all_with(tensors, nullptr); }

Tensor& Tensor::realize() {
  std::vector<Tensor> one{*this};
  realize_all(one);
  return *this;
}

Tensor Tensor::contiguous() const {
  if (multi_of(*this)) return map_parts(*this, [](const Tensor& p) { return p.contiguous(); });
  TensorGraph g = s_->graph();
  if (is_view(g.uop)) return *this;
  return make(UOp::make(Ops::CONTIGUOUS, dtype(), {g.uop}), s_->shape, s_->device, g.vars);
}

namespace detail {
Tensor own_copy(const Tensor& x) {
  Tensor copy = Tensor::empty(x.shape(), x.dtype(), x.device());
  copy.assign(x);
  return copy;
}
}  // namespace detail

Tensor Tensor::clone() const {
  if (multi_of(*this)) return map_parts(*this, [](const Tensor& p) { return p.clone(); });
  Tensor copy = own_copy(*this);
  // a buffer's contents change under a lazy copy (the next replay of the Jit that wrote it, an
  // assign): copy it now
  if (is_view(s_->uop()) && !requires_grad()) copy.realize();
  return copy;
}

Tensor Tensor::to(const std::string& device) const {
  std::string dev = canonical_device(device);
  if (is_placement(dev)) return shard(split_placement(dev));  // a copy on each device
  if (dev == s_->device) return *this;
  if (multi_of(*this)) return gather_to(*this, dev);
  TensorGraph g = s_->graph();
  UOp c = UOp::make(Ops::COPY, dtype(), {g.uop, device_node(dev)});
  return make(c, s_->shape, dev, g.vars);
}

Tensor& Tensor::assign(const Tensor& value) {
  if (const Multi* m = multi_of(*this)) {  // each part takes its piece of the value
    Tensor v = value;
    if (v.shape() != shape()) v = v.expand(shape());
    if (!multi_of(v)) v = v.shard(m->devices, m->axis);
    v = match_layout(v, *this, "assign");
    const Multi& vm = *multi_of(v);
    for (size_t i = 0; i < m->parts.size(); ++i) Tensor(m->parts[i]).assign(vm.parts[i]);
    AssignGroup group;
    for (const Tensor& p : m->parts) {
      group.assigns.push_back(p.state()->uop());
      group.states.push_back(p.state());
    }
    AssignGroups& g = assign_groups();
    std::lock_guard<std::mutex> lock(g.mu);
    g.all.push_back(std::move(group));
    return *this;
  }
  if (!is_view(s_->uop())) realize();
  Tensor v = value;
  if (v.device() != device())
    fail(ErrorCode::invalid_argument, "assign: value is on ", v.device(), ", target on ", device(), "; move it with .to()");
  if (!(v.dtype() == dtype())) v = v.cast(dtype());
  if (v.shape() != shape()) {
    if (v.ndim() > ndim())
      fail(ErrorCode::invalid_argument, "assign: value of shape ", shape_str(v.shape()), " does not fit target ", shape_str(shape()));
    v = v.expand(shape());
  }
  // The arg is the program order of this write: two handles on one buffer (a and a view of it) can
  // both be assigned before one realize, and the scheduler orders their writes by it. (The
  // scheduler replaces it by its rank in the graph, so schedule-cache keys do not grow with it.)
  static std::atomic<int64_t> next_assign{0};
  UOp value_uop = v.state()->uop();
  s_->update([&](TensorGraph& g) { g.uop = UOp::make(Ops::ASSIGN, dtype(), {g.uop, value_uop}, Arg{next_assign.fetch_add(1)}); });
  return *this;
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  DType want = dtype_of<T>();
  Tensor self = *this;  // shares the state: reading a lazy tensor realizes it, so later uses reuse the result
  if (const Multi* m = multi_of(self)) {  // gathered on its first device
    self.realize();
    return gather_to(self, m->devices[0]).to_vector<T>();
  }
  if (!is_view(self.state()->uop())) self.realize();
  Tensor t = want == dtype() ? self : self.cast(want);
  if (!is_view(t.state()->uop())) t = t.contiguous().realize();  // views of a buffer start at its element 0
  int64_t n = t.numel();
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(static_cast<size_t>(n));
    if (n) read_into(t, bytes.data(), static_cast<uint64_t>(n));
    return std::vector<bool>(bytes.begin(), bytes.end());
  } else {
    std::vector<T> out(static_cast<size_t>(n));
    if (n) read_into(t, out.data(), static_cast<uint64_t>(n) * sizeof(T));
    return out;
  }
}

void Tensor::to_bytes(void* dst, uint64_t nbytes) const {
  uint64_t want = static_cast<uint64_t>(numel()) * static_cast<uint64_t>(dtype().itemsize());
  if (nbytes != want)
    fail(ErrorCode::invalid_argument, "to_bytes: the tensor holds ", want, " bytes (shape ", shape_str(shape()), " of ",
         dtype().name(), "), the destination ", nbytes);
  Tensor self = *this;
  if (const Multi* m = multi_of(self)) {
    self.realize();
    return gather_to(self, m->devices[0]).to_bytes(dst, nbytes);
  }
  if (!is_view(self.state()->uop())) self.realize();
  Tensor t = self;
  if (!is_view(t.state()->uop())) t = t.contiguous().realize();
  if (nbytes) read_into(t, dst, nbytes);
}

void* Tensor::host_data() {
  if (multi_of(*this)) return nullptr;
  realize();
  const UOp& u = s_->uop();
  if (!is_view(u)) return nullptr;
  return runtime::host_address_of(view_buffer(u));
}

template <typename T>
T Tensor::item() const {
  if (numel() != 1)
    fail(ErrorCode::invalid_argument, "item: the tensor has ", numel(), " elements (shape ", shape_str(shape()), "), expected 1");
  return to_vector<T>()[0];
}

#define KILN_READ(T) \
  template std::vector<T> Tensor::to_vector<T>() const; \
  template T Tensor::item<T>() const;
KILN_READ(bool)
KILN_READ(int8_t)
KILN_READ(int16_t)
KILN_READ(int32_t)
KILN_READ(int64_t)
KILN_READ(uint8_t)
KILN_READ(uint16_t)
KILN_READ(uint32_t)
KILN_READ(uint64_t)
KILN_READ(float)
KILN_READ(double)
#undef KILN_READ

}  // namespace kiln
