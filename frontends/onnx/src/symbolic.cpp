// symbolic.cpp - symbolic input dimensions in Model::run (see symbolic.hpp): the feeds' check and
// how a value computed from a symbolic size taints what is computed from it.
//
// The rules, per operator, for an output computed from a tainted input:
//  - Shape / Size of a tensor with a symbolic dimension: the source of all taint. Shape's elements
//    are exact (element k is the variable of dimension start + k, or a fixed size); Size depends.
//  - Operators that only move elements (Identity, Reshape, Flatten, (Un)Squeeze, Transpose, Slice,
//    Gather, Expand, Tile, Split, Concat) and Cast: each output element is the input element it
//    came from, found by running the operator once more on element numbers in place of the data.
//    So Shape -> Gather -> Unsqueeze -> Concat keeps "this element is exactly N".
//  - A shape argument that the operator re-symbolizes does not taint its output: Reshape's and
//    Expand's shape, ConstantOfShape's input (Node::shape_ints). An exact entry makes that output
//    dimension the variable itself (placed explicitly, so a variable bound to 1 is never mistaken
//    for a fixed 1: Tensor::reshape(shape, dims), Tensor::expand(axis, BoundVariable)); a fixed
//    entry is a fixed size, as it would be for every value; an entry computed otherwise (N * 16)
//    is refused. A fixed size that meets the symbolic one later is a broadcast error, never a
//    silent stretch, since kiln broadcasts a symbolic dimension only against itself or a fixed 1.
//  - Any other operator: every output depends (no element is exact any more), and reading it on
//    the host, or returning it, is the error.
#include "symbolic.hpp"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <string_view>

namespace kiln::onnx::detail {
namespace {

std::string describe(const BoundVariable& v) { return "'" + v.name() + "' (bound to " + std::to_string(v.value()) + ")"; }

std::string describe(int64_t size, const std::optional<BoundVariable>& v) {
  return v ? "the symbolic " + describe(*v) : "a fixed " + std::to_string(size);
}

bool is_fixed(const std::string& dim) { return !dim.empty() && (std::isdigit(static_cast<unsigned char>(dim[0])) || dim[0] == '-'); }

// Operators whose outputs are elements of their inputs, moved; the inputs that are moved (the rest,
// shapes, axes and indices, must be untainted: they are read or used as they are).
bool moves_elements(std::string_view op) {
  static const std::set<std::string_view> ops = {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose",
                                                 "Slice",    "Gather",  "Expand",  "Tile",    "Split",     "Concat"};
  return ops.count(op) > 0;
}
bool is_moved_input(std::string_view op, size_t i) { return op == "Concat" || i == 0; }

// The shape arguments that an operator turns back into symbolic dimensions (Node::shape_ints).
bool is_shape_argument(std::string_view op, size_t i) {
  return (op == "Reshape" && i == 1) || (op == "Expand" && i == 1) || (op == "ConstantOfShape" && i == 0);
}

constexpr int64_t kMaxTraced = 4096;  // a larger moved value is taken as depending as a whole
constexpr int64_t kCodeStride = int64_t{1} << 32;

bool any_tainted(const Taint& t) {
  return t.elems.empty() || std::any_of(t.elems.begin(), t.elems.end(), [](const SymElem& e) { return e.tainted(); });
}

SymElem element_of(const Taint* t, size_t i) {
  if (!t) return {};
  if (t->elems.empty() || i >= t->elems.size()) return {std::nullopt, true};
  return t->elems[i];
}

// The outputs' taints of an operator that moves elements: it runs again with each moved input
// replaced by its element numbers (input k's element i is k * 2^32 + i), and each output element
// says where it came from. nullopt when that cannot be followed (then every output depends).
std::optional<std::vector<Taint>> trace_moves(const ::onnx::NodeProto& p, int64_t opset, const OpDef& op, const RunState& state,
                                              const Taint& first) {
  RunState scratch = state;
  Node n(p, opset, scratch);
  std::vector<size_t> moved;
  std::set<std::string> names;
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    if (!n.has(i) || !is_moved_input(p.op_type(), i)) continue;
    const Tensor& x = n.in(i);
    if (x.numel() > kMaxTraced || !names.insert(p.input(static_cast<int>(i))).second) return std::nullopt;
    for (int a = 0; a < x.ndim(); ++a)
      if (x.symbolic_dim(a)) return std::nullopt;
    std::vector<int64_t> codes(static_cast<size_t>(x.numel()));
    for (size_t e = 0; e < codes.size(); ++e) codes[e] = static_cast<int64_t>(moved.size()) * kCodeStride + static_cast<int64_t>(e);
    scratch.set(p.input(static_cast<int>(i)), Tensor::from_vector<int64_t>(codes, x.shape(), n.device()));
    moved.push_back(i);
  }
  std::vector<Tensor> outs;
  try {
    outs = op.fn(n);
  } catch (const Error&) {
    return std::nullopt;
  }
  std::vector<Taint> result(outs.size());
  for (size_t j = 0; j < outs.size(); ++j) {
    result[j].dim = first.dim;
    result[j].node = n.name();
    if (outs[j].numel() > kMaxTraced) return std::nullopt;
    for (int64_t code : outs[j].cast(dtypes::int64).to_vector<int64_t>()) {
      const auto k = static_cast<size_t>(code / kCodeStride);
      if (code < 0 || k >= moved.size()) return std::nullopt;
      result[j].elems.push_back(element_of(state.taint(p.input(static_cast<int>(moved[k]))), static_cast<size_t>(code % kCodeStride)));
    }
  }
  return result;
}

}  // namespace

void check_feed_dims(const std::vector<ValueInfo>& inputs, const RunState& state, const std::string& model) {
  struct Seen {
    std::string input;
    int64_t size;
    std::optional<BoundVariable> var;
  };
  std::map<std::string, Seen> named;
  for (const auto& in : inputs) {
    const Tensor* t = state.find(in.name);
    if (!t || in.dims.size() != t->shape().size()) continue;  // (run() checked the ranks)
    for (size_t d = 0; d < in.dims.size(); ++d) {
      const std::string& dim = in.dims[d];
      const int64_t size = t->shape()[d];
      const auto var = t->symbolic_dim(static_cast<int>(d));
      if (is_fixed(dim)) {
        if (var)
          throw Error(ErrorCode::invalid_argument, model + ": input '" + in.name + "' declares dimension " + std::to_string(d) +
                                                       " fixed (" + dim + "), the feed's is the symbolic " + describe(*var) +
                                                       " (feed a fixed size there)");
        continue;
      }
      if (dim == "?" || dim.empty()) continue;
      auto [it, first] = named.emplace(dim, Seen{in.name, size, var});
      if (first) continue;
      const Seen& s = it->second;
      const bool same_var = var && s.var ? var->same_variable(*s.var) : !var && !s.var;
      if (size != s.size || !same_var)
        throw Error(ErrorCode::invalid_argument,
                    model + ": inputs '" + s.input + "' and '" + in.name + "' share the dimension '" + dim + "', but '" + s.input +
                        "' has " + describe(s.size, s.var) + " and '" + in.name + "' has " + describe(size, var) +
                        " (feed one size" + (var || s.var ? ", as one variable," : "") + " to every input that names it)");
    }
  }
}

namespace {

// The operators whose implementations keep a symbolic dimension symbolic: they reach its size only
// through Tensor ops that carry the variable (broadcasting, reductions, movement, convolution).
// An implementation that reads shape() to build a tensor of its own - an arange over the axis, a
// count, a fixed-size index - would fix the bound value; at a value above 1 that is a loud
// broadcast error, but bound to 1 it stretches and a Jit replay is silently wrong. So an operator
// not listed here refuses a symbolic input; one is added once its implementation has been read
// for that and a test (tests/onnx/symbolic_test.cpp) replays it captured at 1.
bool keeps_symbolic(const Node& n) {
  static const std::set<std::string_view> ops = [] {
    std::set<std::string_view> s = {
        // shapes and movement (the rules above; Gather below)
        "Shape", "Size", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Expand", "ConstantOfShape", "Identity",
        "Concat", "Slice", "Split", "Dropout",
        // reductions (a symbolic axis reduces over the variable's range; mean divides by it)
        "ReduceSum", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceProd", "ReduceMax",
        "ReduceMin", "Softmax", "LogSoftmax",
        // nn
        "Conv", "ConvTranspose", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "BatchNormalization",
        "InstanceNormalization", "LayerNormalization", "MatMul", "Gemm"};
    std::vector<OpDef> elementwise;  // every elementwise operator: they broadcast through the Tensor API
    elementwise_ops(elementwise);
    for (const auto& d : elementwise) s.insert(d.op);
    return s;
  }();
  const std::string& op = n.op_type();
  if (ops.count(op)) return true;
  if (op == "MaxPool") return !n.wants(1);  // its Indices count positions with a fixed arange over N * C
  if (op == "ReduceMean") return n.in(0).dtype().is_float();  // an integer mean divides by shape()'s count
  if (op == "Gather") {  // negative indices count from shape()[axis] along the gathered axis
    const Tensor& x = n.in(0);
    return x.ndim() == 0 || !x.symbolic_dim(n.axis(n.attr_int("axis", 0), x.ndim()));
  }
  return false;
}

}  // namespace

void check_symbolic_inputs(const Node& n) {
  static const std::set<std::string_view> data_dependent = {"NonZero", "Compress", "Unique", "NonMaxSuppression"};
  if (data_dependent.count(n.op_type())) {
    for (size_t i = 0; i < n.num_inputs(); ++i)
      if (n.has(i)) n.check_untainted(i);
    return;
  }
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    if (!n.has(i)) continue;
    const Tensor& x = n.in(i);
    for (int a = 0; a < x.ndim(); ++a)
      if (auto v = x.symbolic_dim(a); v && !keeps_symbolic(n))
        n.fail("input " + std::to_string(i) + " has the symbolic dimension " + describe(*v) + " (axis " + std::to_string(a) +
                   "), and kiln's " + n.op_type() + " is not known to keep a symbolic dimension symbolic here (it could fix "
                   "the size into the graph, and a kiln::Jit replay with another size would be wrong). Feed fixed sizes, or "
                   "export the model with that dimension static",
               ErrorCode::unimplemented);
  }
}

void propagate_taint(const ::onnx::NodeProto& p, int64_t opset, const OpDef& op, RunState& state, const std::vector<Tensor>& outs) {
  const std::string& type = p.op_type();
  Node n(p, opset, state);
  auto keep = [&](size_t j, Taint t) {
    if (n.wants(j) && j < outs.size() && any_tainted(t)) state.set_taint(p.output(static_cast<int>(j)), std::move(t));
  };
  if (type == "Shape" || type == "Size") {
    const Tensor& x = n.in(0);
    auto [start, end] = type == "Shape" ? shape_range(n, x.ndim()) : std::pair<int64_t, int64_t>{0, x.ndim()};
    Taint t{{}, "", n.name()};
    for (int64_t a = start; a < end; ++a) {
      auto v = x.symbolic_dim(static_cast<int>(a));
      if (v && t.dim.empty()) t.dim = describe(*v);
      t.elems.push_back({v, false});
    }
    if (t.dim.empty()) return;
    if (type == "Size") t.elems = {SymElem{std::nullopt, true}};
    keep(0, std::move(t));
    return;
  }
  const Taint* first = nullptr;
  bool only_moved = true;
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    if (!n.has(i) || is_shape_argument(type, i)) continue;
    const Taint* t = state.taint(p.input(static_cast<int>(i)));
    if (!t) continue;
    if (!first) first = t;
    only_moved = only_moved && is_moved_input(type, i);
  }
  if (!first) return;
  const Taint* data = n.has(0) ? state.taint(p.input(0)) : nullptr;
  // a cast to a type of 32 bits or more keeps a size exactly (bool, 8- and 16-bit types may not)
  if ((type == "Cast" || type == "CastLike") && data && !outs.empty() && outs[0].numel() == n.in(0).numel() &&
      outs[0].dtype().scalar_size() >= 4) {
    Taint t = *data;
    t.node = n.name();
    keep(0, std::move(t));
    return;
  }
  std::optional<std::vector<Taint>> traced;
  if (only_moved && moves_elements(type)) traced = trace_moves(p, opset, op, state, *first);
  for (size_t j = 0; j < n.num_outputs(); ++j) {
    if (traced && j < traced->size()) {
      keep(j, (*traced)[j]);
      continue;
    }
    Taint t{{}, first->dim, n.name()};  // every element depends (listed while small, for messages)
    if (j < outs.size() && outs[j].numel() <= kMaxTraced) t.elems.assign(static_cast<size_t>(outs[j].numel()), {std::nullopt, true});
    keep(j, std::move(t));
  }
}

void check_outputs(const std::vector<ValueInfo>& outputs, const RunState& state, const std::string& model) {
  for (const auto& o : outputs)
    if (const Taint* t = state.taint(o.name))
      throw Error(ErrorCode::unimplemented,
                  model + ": node '" + t->node + "' makes the graph output '" + o.name + "' from the symbolic dimension " + t->dim +
                      ": its values are computed from that size on the host and a kiln::Jit replaying the graph with another "
                      "size would return the old ones. Feed fixed sizes, or export the model with that dimension static");
}

}  // namespace kiln::onnx::detail
