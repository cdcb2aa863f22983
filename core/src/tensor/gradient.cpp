// tensor/gradient.cpp - reverse-mode gradients over the lazy graph.
//
// The backward pass is built from the same Tensor ops as the forward one, so it fuses and
// schedules like any other graph. Given the gradient of a node (ctx.g), a rule gives the gradient
// of each of its sources (none for sources that take no gradient). The elementwise ops' rules sit
// beside their forward forms in tensor/elementwise.cpp (elementwise_gradient); `gradient_rules`
// here is one PatternMatcher with the rules of the other differentiable ops (copies, assignment,
// movement, reductions), each returning the node to say it fired. The ops that pass no gradient
// on purpose (comparisons, bitwise ops, integer division, random bits, rounding, DETACH) are
// ops.def's NotDifferentiable group; any other op without a rule is an error when a backward pass
// reaches it, and tests/tensor/gradient_rules_test.cpp walks every op of ops.def to find one first.
// An assign that has not been realized yet passes the gradient to the value it writes.
//
// At the kinks, torch's conventions (docs/autograd.md lists them): elementwise maximum gives each
// side half the gradient where they are equal; a max reduction splits the gradient evenly among
// the elements equal to the maximum (torch's amax); relu and abs take 0 at 0 (their forms in
// tensor/elementwise.cpp); prod at a zero is the product of the others; pow(0, 0) gives 0 to both.
#include <algorithm>
#include <cmath>
#include <mutex>
#include <span>

#include "ir/shape.hpp"
#include "ir/traverse.hpp"
#include "rewrite/pattern_matcher.hpp"
#include "support/flat_map.hpp"
#include "tensor/multi.hpp"
#include "tensor/tensor_state.hpp"

namespace kiln {

using namespace detail;

namespace {

// The shape and device of a tensor-level node, from its sources (memoised over one backward).
class NodeInfo {
 public:
  // (by value: the memo grows while callers hold results)
  Shape shape(const UOp& u) { return info(u).shape; }
  std::string device(const UOp& u) { return info(u).device; }
  Tensor wrap(const UOp& u) {
    Info i = info(u);
    return make(u, i.shape, i.device);
  }
  // `u` read on `device`: a part an all-reduce reads in place is one node on every device that
  // reads it, so a node's sources are taken where the node is
  Tensor wrap_on(const UOp& u, const std::string& device) {
    Info i = info(u);
    return make(u, i.shape, device.empty() ? i.device : device);
  }

 private:
  struct Info {
    Shape shape;
    std::string device;
  };
  Info info(const UOp& u) {
    if (const Info* i = memo_.find(u.node())) return *i;
    Info out;
    auto ints = [&]() -> const std::vector<int64_t>& { return u.arg_ints(); };
    switch (u.op()) {
      case Ops::BUFFER: out = {{ints()[1]}, u.src(0).arg_string()}; break;
      case Ops::CONST: out = {{}, u.src(0).arg_string()}; break;
      case Ops::IOTA: out = {{u.arg_int()}, u.src(0).arg_string()}; break;
      case Ops::COPY: out = {info(u.src(0)).shape, u.src(1).arg_string()}; break;
      case Ops::RESHAPE: case Ops::EXPAND: case Ops::PERMUTE: case Ops::PAD: case Ops::SHRINK: case Ops::FLIP:
      case Ops::REDUCE_AXIS: {
        Info s = info(u.src(0));
        bool sized = u.op() == Ops::RESHAPE || u.op() == Ops::EXPAND, windowed = u.op() == Ops::PAD || u.op() == Ops::SHRINK;
        if (windowed && u.nsrc() > 1)
          fail(ErrorCode::unimplemented, "gradient: symbolic shapes are not differentiated; bind the variable first");
        if (sized && (u.nsrc() > 1 || std::any_of(ints().begin(), ints().end(), [](int64_t d) { return d < 0; })))
          fail(ErrorCode::unimplemented, "gradient: symbolic shapes are not differentiated (", op_name(u.op()),
               "); bind the variable first");
        out = {shape_of(u.op(), ints(), s.shape), s.device};  // ir/shape.hpp
        break;
      }
      case Ops::BIND: out = {{}, ""}; break;
      case Ops::MSTACK: fail(ErrorCode::unimplemented, "gradient: a multi-device node inside a graph");
      default: {
        // elementwise, CAST, CONTIGUOUS, DETACH, ASSIGN: the shape of the (first tensor) source
        const UOp& s = u.op() == Ops::WHERE ? u.src(1) : u.src(0);
        out = info(s);
      }
    }
    memo_[u.node()] = out;
    return out;
  }
  PtrMap<Info> memo_;
};

struct GradCtx {
  NodeInfo& nodes;
  UOp node;                          // the node whose sources get gradients
  Tensor g;                          // its gradient
  std::vector<std::optional<Tensor>> out;  // per source
  // (a COPY's source is on another device; its rule does not read it)
  Tensor src(size_t i) { return node.op() == Ops::COPY ? nodes.wrap(node.src(i)) : nodes.wrap_on(node.src(i), nodes.device(node)); }
  Tensor self() { return nodes.wrap(node); }
  UOp set(std::vector<std::optional<Tensor>> grads) {
    out = std::move(grads);
    return node;
  }
};

using pat::x;
using pat::y;

Tensor zeros_like(const Tensor& t) { return const_like(t, 0); }

// d prod(in, axes) / d in: the product of the other elements of each element's group, as torch
// computes it: prod / x where the group has no zero, the product of the rest at a group's only zero,
// 0 elsewhere (prod / x would give 0 / 0 = NaN at a zero).
Tensor prod_others(const Tensor& in, const std::vector<int>& axes) {
  Tensor zero = zeros_like(in), is_zero = in.eq(zero);
  Tensor nonzero_prod = Tensor::where(is_zero, const_like(in, 1), in).prod(axes, true).expand(in.shape());
  Tensor zeros = is_zero.cast(in.dtype()).sum(axes, true).expand(in.shape());
  return Tensor::where(zeros.eq(zero), nonzero_prod / in,
                       Tensor::where(zeros.eq(const_like(in, 1)), Tensor::where(is_zero, nonzero_prod, zero), zero));
}

// The axes EXPAND broadcast (size 1 in the source, larger in the result).
std::vector<int> expanded_axes(const Shape& from, const Shape& to) {
  std::vector<int> axes;
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != to[i]) axes.push_back(static_cast<int>(i));
  return axes;
}

std::vector<int> reduced_axes(const UOp& r) {
  std::vector<int> axes;
  for (size_t i = 1; i < r.arg_ints().size(); ++i) axes.push_back(static_cast<int>(r.arg_ints()[i]));
  return axes;
}

Pads pairs(const std::vector<int64_t>& arg) {
  Pads p;
  for (size_t i = 0; i + 1 < arg.size(); i += 2) p.push_back({arg[i], arg[i + 1]});
  return p;
}

const PatternMatcher& gradient_rules() {
  using O = Ops;
  static const PatternMatcher pm{
      rule(UPat::op(O::CONTIGUOUS, {x}), [](const Match&, GradCtx& c) { return c.set({c.g}); }),
      // an assign's value is what it writes: the gradient goes to the value, none to the old contents
      rule(UPat::op(O::ASSIGN, {x, y}), [](const Match&, GradCtx& c) { return c.set({std::nullopt, c.g}); }),
      rule(UPat::op(O::COPY, {x, y}), [](const Match&, GradCtx& c) {
        return c.set({c.g.to(c.nodes.device(c.node.src(0))), std::nullopt});
      }),
      rule(UPat::op(O::RESHAPE, {x}, true), [](const Match&, GradCtx& c) { return c.set({c.g.reshape(c.nodes.shape(c.node.src(0)))}); }),
      rule(UPat::op(O::EXPAND, {x}, true), [](const Match&, GradCtx& c) {
        return c.set({c.g.sum(expanded_axes(c.nodes.shape(c.node.src(0)), c.g.shape()), true)});
      }),
      rule(UPat::op(O::PERMUTE, {x}), [](const Match&, GradCtx& c) {
        const auto& order = c.node.arg_ints();
        std::vector<int> inverse(order.size());
        for (size_t i = 0; i < order.size(); ++i) inverse[static_cast<size_t>(order[i])] = static_cast<int>(i);
        return c.set({c.g.permute(inverse)});
      }),
      rule(UPat::op(O::PAD, {x}, true), [](const Match&, GradCtx& c) {
        Pads p = pairs(c.node.arg_ints());
        Shape from = c.nodes.shape(c.node.src(0));
        for (size_t i = 0; i < p.size(); ++i) p[i] = {p[i].first, p[i].first + from[i]};
        return c.set({c.g.shrink(p)});
      }),
      rule(UPat::op(O::SHRINK, {x}, true), [](const Match&, GradCtx& c) {
        Pads p = pairs(c.node.arg_ints());
        Shape from = c.nodes.shape(c.node.src(0));
        for (size_t i = 0; i < p.size(); ++i) p[i] = {p[i].first, from[i] - p[i].second};
        return c.set({c.g.pad(p)});
      }),
      rule(UPat::op(O::FLIP, {x}), [](const Match&, GradCtx& c) {
        std::vector<int> axes;
        for (size_t i = 0; i < c.node.arg_ints().size(); ++i)
          if (c.node.arg_ints()[i]) axes.push_back(static_cast<int>(i));
        return c.set({c.g.flip(axes)});
      }),
      rule(UPat::op(O::REDUCE_AXIS, {x}), [](const Match&, GradCtx& c) {
        Tensor in = c.src(0);
        Ops op = static_cast<Ops>(c.node.arg_ints()[0]);
        if (op == Ops::ADD) return c.set({c.g.expand(in.shape())});
        if (op == Ops::MUL) return c.set({c.g.expand(in.shape()) * prod_others(in, reduced_axes(c.node))});
        // MAX: the gradient is split evenly among the elements equal to the maximum. Both sides of
        // that comparison are read from one realized copy of the input: recomputed in two kernels
        // (the forward's max, this mask) an input with reduces of its own (a softmax's sum) can
        // round differently, and the maximum then equaled no element: its gradient was lost.
        const std::vector<int> axes = reduced_axes(c.node);
        Tensor held = in.contiguous();
        Tensor hit = held.eq(held.max(axes, true).expand(in.shape())).cast(c.g.dtype());
        return c.set({c.g.expand(in.shape()) * hit / hit.sum(axes, true).expand(in.shape())});
      }),
  };
  return pm;
}

// The ops that take no gradient, on purpose: ops.def's NotDifferentiable group (torch:
// comparisons, bitwise and integer ops, random bits and rounding have none or a zero one). Every
// other op reached by a backward pass needs a rule in gradient_rules: a missing one is an error
// naming the op, never a silent zero.
bool no_gradient(Ops op) { return groups::NotDifferentiable.has(op); }

// The composites with their own gradient (set_gradient), by their output's node. An entry holds
// its node, so the address stays that node's; an entry whose node only it still holds can no
// longer be reached by any graph and is dropped (checked when the table has doubled). A function
// must not hold its own composite's output (the entry would never drop).
struct Composite {
  UOp out;
  std::vector<UOp> inputs;
  CompositeGradient fn;
};
struct Composites {
  std::mutex mu;
  PtrMap<Composite> by_node;
  size_t prune_at = 64;
};
Composites& composites() {
  static Composites* c = new Composites;
  return *c;
}

std::optional<Composite> composite_of(const UOp& u) {
  Composites& c = composites();
  std::lock_guard<std::mutex> lock(c.mu);
  const Composite* e = c.by_node.find(u.node());
  return e ? std::optional<Composite>(*e) : std::nullopt;
}

// Every live tensor marked with requires_grad_ (backward finds the leaves of a graph among them).
struct Leaves {
  std::mutex mu;
  std::vector<std::weak_ptr<TensorState>> all;
};
Leaves& leaves() {
  static Leaves* l = new Leaves;
  return *l;
}

// d(root)/d(targets) with the gradient of root being root_grad; nullopt for a target root does not
// depend on (through ops that pass gradients). A node in `stops` takes its gradient but passes none
// on: the parts of a multi-device tensor are its own leaves, though one part may be a copy of
// another (a replicated tensor made by shard() from one device), so that no part's gradient also
// reaches the part it was copied from (the all-reduce of the parts' gradients would count it twice).
std::vector<std::optional<Tensor>> gradients(const UOp& root, const Tensor& root_grad, const std::vector<UOp>& targets,
                                             const PtrMap<char>& stops) {
  NodeInfo nodes;
  PtrMap<char> is_target, leads;  // leads: the node reaches a target
  for (const UOp& t : targets) is_target[t.node()] = 1;
  std::vector<UOp> order = toposort(root);  // sources first
  for (const UOp& u : order) {
    bool any = is_target.contains(u.node());
    if (!any && u.op() != Ops::DETACH)
      for (const UOp& s : u.src()) any |= leads.contains(s.node());
    if (any) leads[u.node()] = 1;
  }
  std::vector<Tensor> grads{root_grad};  // grads[at[node]]: the gradient reaching a node so far
  PtrMap<size_t> at;
  at[root.node()] = 0;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const UOp& u = *it;
    const size_t* gi = at.find(u.node());
    if (!gi || !leads.contains(u.node()) || stops.contains(u.node())) continue;
    // the rule works where the node is: a node an all-reduce reads in place is one node on every
    // device, so the gradient reaching it (the root's among them) may sit on another one
    Tensor here = grads[*gi];
    if (std::string d = nodes.device(u); !d.empty() && here.device() != d) here = here.to(d);
    GradCtx ctx{nodes, u, here, {}};
    std::optional<Composite> composite = composite_of(u);
    if (composite) {
      for (Tensor& out : composite->fn(ctx.g)) ctx.out.push_back(std::move(out));
    } else if (groups::Elementwise.has(u.op())) {
      if (ElementwiseGradient rule = elementwise_gradient(u.op()))
        ctx.out = rule(GradArgs{ctx.g, [&](size_t i) { return ctx.src(i); }, [&] { return ctx.self(); }});
    } else {
      gradient_rules().rewrite(u, &ctx);
    }
    if (ctx.out.empty()) {
      bool through = std::any_of(u.src().begin(), u.src().end(), [&](const UOp& src) { return leads.contains(src.node()); });
      if (!through || no_gradient(u.op())) continue;  // a leaf (a target), or no gradient on purpose
      fail(ErrorCode::unimplemented, "gradient: the op ", op_name(u.op()), " has no gradient rule (", shape_str(nodes.shape(u)),
           " ", u.dtype().name(), "); detach() its input to treat it as a constant, or add its rule (tensor/elementwise.cpp for an elementwise op, ",
           "else tensor/gradient.cpp)");
    }
    const std::span<const UOp> sources = composite ? std::span<const UOp>(composite->inputs) : u.src();
    for (size_t i = 0; i < ctx.out.size() && i < sources.size(); ++i) {
      const UOp& s = sources[i];
      if (!ctx.out[i] || !leads.contains(s.node())) continue;
      Tensor g = *ctx.out[i];
      // a node of another device (a copy's source, or a part an all-reduce reads in place) takes
      // its gradient on its own device
      if (std::string d = nodes.device(s); !d.empty() && g.device() != d) g = g.to(d);
      if (const size_t* have = at.find(s.node())) {
        grads[*have] = grads[*have] + g;
      } else {
        at[s.node()] = grads.size();
        grads.push_back(g);
      }
    }
  }
  std::vector<std::optional<Tensor>> out;
  for (const UOp& t : targets) {
    const size_t* g = at.find(t.node());
    out.push_back(g ? std::optional<Tensor>(grads[*g]) : std::nullopt);
  }
  return out;
}

void check_differentiable(const Tensor& t, const char* op) {
  if (!t.dtype().is_float())
    fail(ErrorCode::invalid_argument, op, ": a tensor of dtype ", t.dtype().name(),
         " does not take gradients (only float tensors do; cast it first)");
}

// The nodes of a tensor: its graph, or each part's for a multi-device tensor.
std::vector<UOp> nodes_of(const Tensor& t) {
  std::vector<UOp> out;
  if (const Multi* m = multi_of(t))
    for (const Tensor& p : m->parts) out.push_back(p.state()->uop());
  else
    out.push_back(t.state()->uop());
  return out;
}

}  // namespace

void detail::set_gradient(const Tensor& out, const std::vector<Tensor>& inputs, CompositeGradient fn) {
  if (multi_of(out)) return;
  Composite e{out.state()->uop(), {}, std::move(fn)};
  for (const Tensor& t : inputs) {
    if (multi_of(t)) return;
    e.inputs.push_back(t.state()->uop());
  }
  Composites& c = composites();
  std::lock_guard<std::mutex> lock(c.mu);
  // (repeated until nothing drops: a dropped entry's function may hold another's node, as a max
  // pool's holds its windows')
  if (c.by_node.size() >= c.prune_at) {
    for (size_t before = 0; before != c.by_node.size();) {
      before = c.by_node.size();
      PtrMap<Composite> live;
      c.by_node.for_each([&](const void* n, const Composite& v) {
        if (v.out.node()->refs.load(std::memory_order_relaxed) > 1) live[n] = v;
      });
      c.by_node = std::move(live);
    }
    c.prune_at = std::max<size_t>(64, 2 * c.by_node.size());
  }
  const UOpNode* key = e.out.node();
  c.by_node[key] = std::move(e);
}

OpMask detail::gradient_rule_ops() {
  OpMask ops;
  for (const Rule& r : gradient_rules().rules()) ops = ops | r.pat.ops_;
  for (int i = 0; i < kNumOps; ++i)
    if (elementwise_gradient(static_cast<Ops>(i))) ops.add(static_cast<Ops>(i));
  return ops;
}

size_t detail::composite_gradients() {
  std::lock_guard<std::mutex> lock(composites().mu);
  return composites().by_node.size();
}

Tensor& Tensor::requires_grad_(bool on) {
  if (on) check_differentiable(*this, "requires_grad_");
  bool was = s_->requires_grad.exchange(on);
  if (on && !was) {
    std::lock_guard<std::mutex> lock(leaves().mu);
    auto& all = leaves().all;
    all.erase(std::remove_if(all.begin(), all.end(), [](const auto& w) { return w.expired(); }), all.end());
    all.push_back(s_);
  }
  return *this;
}

bool Tensor::requires_grad() const { return s_->requires_grad.load(); }

std::optional<Tensor> Tensor::grad() const {
  std::lock_guard<std::mutex> lock(s_->grad_mu);
  return s_->grad;
}

Tensor Tensor::detach() const {
  if (multi_of(*this)) return map_parts(*this, [](const Tensor& p) { return p.detach(); });
  TensorGraph g = s_->graph();
  return make(UOp::make(Ops::DETACH, dtype(), {g.uop}), s_->shape, s_->device, g.vars);
}

std::vector<Tensor> Tensor::gradient(const std::vector<Tensor>& wrt) const {
  if (numel() != 1)
    fail(ErrorCode::invalid_argument, "gradient: the tensor has ", numel(), " elements (shape ", shape_str(shape()),
         "); differentiate a scalar (e.g. .sum() or .mean())");
  check_differentiable(*this, "gradient");
  // a multi-device scalar is replicated (an all-reduce made it): any part's graph reads every device
  const Tensor root = multi_of(*this) ? multi_of(*this)->parts[0] : *this;
  std::vector<UOp> targets;
  PtrMap<char> stops;  // the parts of multi-device targets (see gradients())
  for (const Tensor& t : wrt) {
    check_differentiable(t, "gradient");
    for (const UOp& u : nodes_of(t)) {
      targets.push_back(u);
      if (multi_of(t)) stops[u.node()] = 1;
    }
  }
  UOp root_uop = root.state()->uop();
  // a realized tensor is a view of its buffer; a view of a target (a leaf's element, reshaped) is not
  auto is_target = [&](const UOp& u) { return std::any_of(targets.begin(), targets.end(), [&](const UOp& t) { return t == u; }); };
  if (is_view(root_uop) && !is_target(root_uop) && !is_target(view_buffer(root_uop)))
    fail(ErrorCode::failed_precondition, "gradient: this tensor was already realized, so the graph that computed it is gone; "
         "take gradients before realizing it (realize the loss and the gradients together)");
  std::vector<std::optional<Tensor>> g = gradients(root_uop, const_like(root, 1.0), targets, stops);
  std::vector<Tensor> out;
  size_t at = 0;
  for (const Tensor& t : wrt) {
    const Multi* m = multi_of(t);
    if (!m) {
      out.push_back(g[at] ? *g[at] : const_like(t, 0.0));
      ++at;
      continue;
    }
    std::vector<Tensor> parts;
    for (const Tensor& p : m->parts) {
      parts.push_back(g[at] ? *g[at] : const_like(p, 0.0));
      ++at;
    }
    // a replicated tensor is one value used on every device: its gradient is the sum of the
    // devices' (an all-reduce), the same on each; a sharded one's parts are its own
    out.push_back(make_multi(m->axis ? std::move(parts) : collective()->all_reduce(Ops::ADD, parts), m->axis));
  }
  return out;
}

Tensor& Tensor::backward() {
  if (!multi_of(*this) && is_view(s_->uop()) && !requires_grad())
    fail(ErrorCode::failed_precondition, "backward: this tensor was already realized, so the graph that computed it is gone; "
         "call backward() before realizing the loss (or realize the loss and the gradients together)");
  std::vector<Tensor> wrt;
  {
    std::lock_guard<std::mutex> lock(leaves().mu);
    for (const auto& w : leaves().all)
      if (auto s = w.lock(); s && s->requires_grad.load()) wrt.push_back(Tensor(s));
  }
  // only the leaves this graph reads
  PtrMap<char> in_graph;
  for (const UOp& root : nodes_of(*this))
    for (const UOp& u : toposort(root)) in_graph[u.node()] = 1;
  std::vector<Tensor> used;
  for (const Tensor& t : wrt) {
    std::vector<UOp> n = nodes_of(t);
    if (std::any_of(n.begin(), n.end(), [&](const UOp& u) { return in_graph.contains(u.node()); })) used.push_back(t);
  }
  if (used.empty())
    fail(ErrorCode::invalid_argument, "backward: no tensor this ", shape_str(shape()),
         " tensor depends on requires grad; mark the parameters with requires_grad_() before building the loss");
  std::vector<Tensor> grads = gradient(used);
  for (size_t i = 0; i < used.size(); ++i) {
    TensorState& s = *used[i].state();
    std::lock_guard<std::mutex> lock(s.grad_mu);
    s.grad = s.grad ? *s.grad + grads[i] : grads[i];  // accumulates across backward calls, as torch does
  }
  return *this;
}

}  // namespace kiln
