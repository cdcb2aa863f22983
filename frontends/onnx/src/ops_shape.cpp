// ops_shape.cpp - ONNX operators: constants, shapes and the movement of whole tensors (Reshape,
// Flatten, Squeeze/Unsqueeze, Transpose, Expand, Tile, Concat, Split, Slice, Pad), Range, EyeLike,
// Trilu. The indexing operators (Gather*, Scatter*, OneHot, NonZero, ...) are in ops_shape_index.cpp.
//
// ONNX gives shapes, axes, pads and the like as int64 inputs (attributes in older opsets); they are
// read on the host (Node::ints) since they decide the shapes of the graph kiln builds.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops.hpp"
#include "tensor_proto.hpp"

namespace kiln::onnx::detail {
namespace {

Tensor int64_tensor(const std::vector<int64_t>& values, const Shape& shape, const Node& n) {
  return Tensor::from_vector<int64_t>(values, shape, n.device());
}

std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// ---- constants ----

std::vector<Tensor> constant(const Node& n) {
  if (n.has_attr("sparse_value"))
    n.fail("a sparse_value constant is not supported (store the constant densely, as 'value')");
  if (n.has_attr("value_string") || n.has_attr("value_strings"))
    n.fail("string constants are not supported (kiln has no string tensors)");
  if (auto t = n.attr_tensor("value")) return {*t};
  if (n.has_attr("value_float"))
    return {Tensor::from_vector<float>({static_cast<float>(n.attr_float("value_float", 0))}, {}, n.device())};
  if (n.has_attr("value_floats")) {
    std::vector<float> v;
    for (double d : n.attr_floats("value_floats")) v.push_back(static_cast<float>(d));
    const auto count = static_cast<int64_t>(v.size());
    return {Tensor::from_vector<float>(v, {count}, n.device())};
  }
  if (n.has_attr("value_int")) return {int64_tensor({n.attr_int("value_int", 0)}, {}, n)};
  if (n.has_attr("value_ints")) {
    auto v = n.attr_ints("value_ints");
    return {int64_tensor(v, {static_cast<int64_t>(v.size())}, n)};
  }
  n.fail("has no value (one of value, value_float(s), value_int(s) is required)", ErrorCode::invalid_argument);
}

// The value (a one-element tensor, float32 0 by default) repeated over the shape the input gives;
// an empty shape gives a 0-d tensor.
// A shape entry that is exactly a feed's symbolic size (Shape -> Gather -> Concat) makes that
// dimension symbolic: built at size 1 and expanded to the variable, so the result follows the
// variable's value on every call (a Jit replay included).
std::vector<Tensor> constant_of_shape(const Node& n) {
  const Node::ShapeInts given = n.shape_ints(0);
  Shape shape = given.values;
  for (int64_t d : shape)
    if (d < 0) n.fail("the shape " + list_str(shape) + " has a negative dimension", ErrorCode::invalid_argument);
  auto value = n.attr_tensor("value");
  if (value && value->numel() != 1)
    n.fail("attribute 'value' must hold one element, it holds " + std::to_string(value->numel()), ErrorCode::invalid_argument);
  const bool symbolic = std::any_of(given.vars.begin(), given.vars.end(), [](const auto& v) { return v.has_value(); });
  if (!symbolic) {
    if (!value) return {Tensor::zeros(shape, dtypes::float32, n.device())};
    return {value->reshape(Shape(shape.size(), 1)).expand(shape).contiguous()};
  }
  for (size_t i = 0; i < shape.size(); ++i)
    if (given.vars[i]) shape[i] = 1;
  Tensor t = value ? value->reshape(Shape(shape.size(), 1)).expand(shape) : Tensor::zeros(shape, dtypes::float32, n.device());
  for (size_t i = 0; i < shape.size(); ++i)
    if (given.vars[i]) t = t.expand(static_cast<int>(i), *given.vars[i]);
  return {t.contiguous()};
}

// ---- shapes ----

// (A symbolic dimension is reported as its bound value: symbolic.cpp marks the result as computed
// from it, so that no operator fixes it into the graph.)
std::vector<Tensor> shape(const Node& n) {
  const Shape& s = n.in(0).shape();
  const auto [start, end] = shape_range(n, static_cast<int64_t>(s.size()));
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(s[i]);
  return {int64_tensor(dims, {static_cast<int64_t>(dims.size())}, n)};
}

std::vector<Tensor> size(const Node& n) { return {int64_tensor({n.in(0).numel()}, {}, n)}; }

// x reshaped to `target` where dims[i] (when set) is the variable that output dimension i must be.
// Without symbolic dimensions this is x.reshape(target). When dims place every symbolic dimension of
// x, they decide (a guess is ambiguous for a variable bound to 1 among other 1s); else reshape's
// own placement, which must agree with those dims that are given.
Tensor symbolic_reshape(const Node& n, const Tensor& x, const Shape& target, const std::vector<std::optional<BoundVariable>>& dims) {
  size_t have = 0, placed = 0;
  for (int a = 0; a < x.ndim(); ++a) have += x.symbolic_dim(a).has_value();
  for (const auto& d : dims) placed += d.has_value();
  if (have == 0 && placed == 0) return x.reshape(target);
  if (have == 0)
    n.fail("the shape " + list_str(target) + " names the symbolic dimension '" +
               std::find_if(dims.begin(), dims.end(), [](const auto& d) { return d.has_value(); })->value().name() +
               "', which the input " + list_str(x.shape()) + " does not have (a fixed-size tensor cannot become symbolic)",
           ErrorCode::unimplemented);
  if (placed == have) return x.reshape(target, dims);
  Tensor y = x.reshape(target);
  for (size_t q = 0; q < dims.size(); ++q) {
    auto got = y.symbolic_dim(static_cast<int>(q));
    if (dims[q] && (!got || !got->same_variable(*dims[q])))
      n.fail("cannot tell where the symbolic dimension '" + dims[q]->name() + "' goes in the shape " + list_str(target) +
                 " (it is named at " + std::to_string(q) + "); feed fixed sizes, or export the model with that dimension static",
             ErrorCode::unimplemented);
  }
  return y;
}

// The target of Reshape: 0 copies the input's dimension (unless allowzero, opset 14: then it is a
// real 0), one -1 takes what is left.
std::vector<Tensor> reshape(const Node& n) {
  const Tensor& x = n.in(0);
  if (n.opset() < 5 && !n.has_attr("shape")) n.fail("attribute 'shape' is required", ErrorCode::invalid_argument);
  Node::ShapeInts shape_in;
  if (n.opset() < 5) shape_in.values = n.attr_ints("shape");
  else shape_in = n.shape_ints(1);
  shape_in.vars.resize(shape_in.values.size());
  const std::vector<int64_t>& given = shape_in.values;
  std::vector<int64_t> target = given;
  // where the output's symbolic dimensions go, as far as the shape says: an entry that is exactly a
  // variable's size, or a 0 that copies a symbolic dimension
  std::vector<std::optional<BoundVariable>> dims = shape_in.vars;
  const bool allowzero = n.attr_int("allowzero", 0) != 0;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t& d = target[i];
    if (d == 0 && !allowzero) {
      if (i >= x.shape().size())
        n.fail("shape " + list_str(given) + " copies dimension " +
                   std::to_string(i) + " (a 0), which the input of rank " + std::to_string(x.ndim()) + " lacks",
               ErrorCode::invalid_argument);
      d = x.shape()[i];
      dims[i] = x.symbolic_dim(static_cast<int>(i));
    }
    if (d == -1) {
      if (infer >= 0) n.fail("shape " + list_str(given) + " has more than one -1", ErrorCode::invalid_argument);
      infer = static_cast<int>(i);
      continue;
    }
    if (d < 0) n.fail("shape " + list_str(given) + " has a negative dimension", ErrorCode::invalid_argument);
    known *= d;
  }
  if (infer >= 0) {
    if (known == 0 || x.numel() % known != 0)
      n.fail("cannot infer the -1 of shape " + list_str(given) + " for " + std::to_string(x.numel()) + " elements",
             ErrorCode::invalid_argument);
    target[infer] = x.numel() / known;
  }
  return {symbolic_reshape(n, x, target, dims)};
}

// (product of the dims before axis, product of the rest); axis in [-r, r].
std::vector<Tensor> flatten(const Node& n) {
  const Tensor& x = n.in(0);
  const int64_t r = x.ndim();
  int64_t axis = n.attr_int("axis", 1);
  if (axis < -r || axis > r)
    n.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r), ErrorCode::invalid_argument);
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? outer : inner) *= x.shape()[i];
  // a symbolic dimension survives as the whole outer (axis 1) or inner (axis r - 1) part; elsewhere
  // it would merge with fixed sizes, which symbolic_reshape refuses
  std::vector<std::optional<BoundVariable>> dims(2);
  if (axis == 1) dims[0] = x.symbolic_dim(0);
  if (axis == r - 1 && r > 0) dims[1] = x.symbolic_dim(static_cast<int>(r - 1));
  return {symbolic_reshape(n, x, {outer, inner}, dims)};
}

// Squeeze/Unsqueeze take their axes as an attribute before opset 13 and as an input from 13.
std::optional<std::vector<int64_t>> axes_of(const Node& n, size_t input) {
  if (n.opset() < 13) {
    if (!n.has_attr("axes")) return std::nullopt;
    return n.attr_ints("axes");
  }
  if (!n.has(input)) return std::nullopt;
  return n.ints(input);
}

std::vector<Tensor> squeeze(const Node& n) {
  const Tensor& x = n.in(0);
  std::vector<bool> drop(x.ndim(), false);
  auto axes = axes_of(n, 1);
  if (axes && !axes->empty()) {
    // (Node::axis lets a 0-d tensor take axis 0, as numpy's reductions do; there is nothing to squeeze)
    if (x.ndim() == 0) n.fail("the input is a scalar (0-d): it has no axis to squeeze", ErrorCode::invalid_argument);
    for (int64_t a : *axes) {
      int i = n.axis(a, x.ndim());
      if (x.shape()[i] != 1)
        n.fail("cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(x.shape()[i]) + " (only size-1 axes)",
               ErrorCode::invalid_argument);
      drop[i] = true;
    }
  } else {
    for (int i = 0; i < x.ndim(); ++i) drop[i] = x.shape()[i] == 1;  // no (or empty) axes: every size-1 axis, as onnxruntime
  }
  Shape out;
  std::vector<std::optional<BoundVariable>> dims;
  for (int i = 0; i < x.ndim(); ++i)
    if (!drop[i]) out.push_back(x.shape()[i]), dims.push_back(x.symbolic_dim(i));
  for (int i = 0; i < x.ndim(); ++i)
    if (drop[i] && x.symbolic_dim(i))  // bound to 1 now, not on every call
      n.fail("cannot squeeze axis " + std::to_string(i) + ": it is the symbolic dimension '" + x.symbolic_dim(i)->name() +
                 "' (bound to 1); feed fixed sizes, or name the axes to squeeze", ErrorCode::invalid_argument);
  return {symbolic_reshape(n, x, out, dims)};
}

// The axes name positions of the output (rank r + count), in any order.
std::vector<Tensor> unsqueeze(const Node& n) {
  const Tensor& x = n.in(0);
  auto axes = axes_of(n, 1);
  if (!axes) n.fail("axes are required", ErrorCode::invalid_argument);
  const int rank = x.ndim() + static_cast<int>(axes->size());
  std::vector<bool> inserted(rank, false);
  for (int64_t a : *axes) {
    int i = n.axis(a, rank);
    if (inserted[i]) n.fail("axis " + std::to_string(a) + " is given twice in " + list_str(*axes), ErrorCode::invalid_argument);
    inserted[i] = true;
  }
  Shape out;
  std::vector<std::optional<BoundVariable>> dims;
  int next = 0;
  for (int i = 0; i < rank; ++i) {
    dims.push_back(inserted[i] ? std::nullopt : x.symbolic_dim(next));
    out.push_back(inserted[i] ? 1 : x.shape()[next++]);
  }
  return {symbolic_reshape(n, x, out, dims)};
}

std::vector<Tensor> transpose(const Node& n) {
  const Tensor& x = n.in(0);
  std::vector<int> order;
  if (n.has_attr("perm")) {
    for (int64_t p : n.attr_ints("perm")) order.push_back(n.axis(p, x.ndim()));
  } else {
    for (int i = x.ndim() - 1; i >= 0; --i) order.push_back(i);  // default: the axes reversed
  }
  return {x.permute(order)};
}

// Bidirectional (numpy) broadcasting: the result has the broadcast of both shapes, so a 1 in
// `shape` keeps the input's dimension.
// A shape entry that is exactly a feed's symbolic size broadcasts as that variable (the rule of
// kiln's broadcasting): a fixed 1 of the input becomes the symbolic dimension, the same variable
// stays, and anything else - a fixed size equal to its value now, another variable - is an error,
// since it would not match on a call with another value.
std::vector<Tensor> expand(const Node& n) {
  const Tensor& x = n.in(0);
  const Node::ShapeInts shape_in = n.shape_ints(1);
  const std::vector<int64_t>& want = shape_in.values;
  const size_t rank = std::max(want.size(), x.shape().size());
  Shape out(rank);
  std::vector<std::optional<BoundVariable>> grow(rank);  // dimensions that become symbolic
  for (size_t i = 0; i < rank; ++i) {
    const bool in_x = i + x.shape().size() >= rank, in_want = i + want.size() >= rank;
    const int xi = static_cast<int>(i + x.shape().size() - rank);
    const int64_t a = in_x ? x.shape()[xi] : 1;
    const int64_t b = in_want ? want[i + want.size() - rank] : 1;
    if (a != b && a != 1 && b != 1)
      n.fail("cannot broadcast the input's dimension " + std::to_string(a) + " to " + std::to_string(b) + " (shape " +
                 list_str(want) + ")", ErrorCode::invalid_argument);
    out[i] = a == 1 ? b : a;
    const auto xv = in_x ? x.symbolic_dim(xi) : std::nullopt;
    const auto bv = in_want ? shape_in.vars[i + want.size() - rank] : std::nullopt;
    if (xv && !bv && in_want && b != 1)
      n.fail("the shape's entry for dimension " + std::to_string(i) + " is a fixed " + std::to_string(b) + ", the input's is the "
                 "symbolic '" + xv->name() + "': they match for this size only; feed fixed sizes, or export the model with "
                 "that dimension static", ErrorCode::unimplemented);
    if (!bv) continue;
    if (xv && xv->same_variable(*bv)) continue;
    if (xv || a != 1)
      n.fail("the shape's entry for dimension " + std::to_string(i) + " is the symbolic '" + bv->name() + "' (" +
                 std::to_string(b) + "), the input's is " + (xv ? "the symbolic '" + xv->name() + "'" : "a fixed " + std::to_string(a)) +
                 ": they match for this size only; feed fixed sizes, or export the model with that dimension static",
             ErrorCode::unimplemented);
    grow[i] = bv;
    out[i] = 1;
  }
  Tensor y = x.expand(out);
  for (size_t i = 0; i < rank; ++i)
    if (grow[i]) y = y.expand(static_cast<int>(i), *grow[i]);
  return {y};
}

// Tile: repeats per axis (opset 6+); opset 1 takes a count and the axis it repeats along.
std::vector<Tensor> tile(const Node& n) {
  const Tensor& x = n.in(0);
  std::vector<int64_t> repeats;
  if (n.opset() < 6) {
    if (x.ndim() == 0) n.fail("the input is a scalar (0-d): it has no axis to tile", ErrorCode::invalid_argument);
    repeats.assign(x.ndim(), 1);
    repeats[n.axis(n.int_scalar(2), x.ndim())] = n.int_scalar(1);
  } else {
    repeats = n.ints(1);
  }
  if (repeats.size() != static_cast<size_t>(x.ndim()))
    n.fail("repeats " + list_str(repeats) + " must have one entry per input dimension (" + std::to_string(x.ndim()) + ")",
           ErrorCode::invalid_argument);
  for (int64_t r : repeats)
    if (r < 0) n.fail("repeats " + list_str(repeats) + " has a negative entry", ErrorCode::invalid_argument);
  return {x.repeat(repeats)};
}

std::vector<Tensor> concat(const Node& n) {
  std::vector<Tensor> parts;
  for (size_t i = 0; i < n.num_inputs(); ++i)
    if (n.has(i)) parts.push_back(n.in(i));
  if (parts.empty()) n.fail("needs at least one input", ErrorCode::invalid_argument);
  if (n.opset() >= 4 && !n.has_attr("axis")) n.fail("attribute 'axis' is required", ErrorCode::invalid_argument);
  const int axis = n.axis(n.attr_int("axis", 1), parts[0].ndim());  // opset 1: axis 1 by default
  for (const Tensor& p : parts)
    if (p.dtype() != parts[0].dtype())
      n.fail("inputs of different types (" + parts[0].dtype().name() + ", " + p.dtype().name() + ")", ErrorCode::invalid_argument);
  return {Tensor::cat(parts, axis)};
}

// Split: the sizes come from the 'split' attribute (opset < 13; opset 1 also as input 1), the
// 'split' input (13+), or else equal parts: one per output (they must divide the axis), or from
// opset 18 num_outputs parts of ceil(size / num_outputs), the last one smaller.
std::vector<Tensor> split(const Node& n) {
  const Tensor& x = n.in(0);
  if (x.ndim() == 0) n.fail("the input is a scalar (0-d): it has no axis to split", ErrorCode::invalid_argument);
  const int axis = n.axis(n.attr_int("axis", 0), x.ndim());
  const int64_t size = x.shape()[axis];
  std::vector<int64_t> sizes;
  if (n.opset() < 13 && n.has_attr("split")) sizes = n.attr_ints("split");
  else if ((n.opset() >= 13 || n.opset() < 2) && n.has(1)) sizes = n.ints(1);
  if (n.has_attr("num_outputs")) {
    if (!sizes.empty()) n.fail("gives both a split and num_outputs", ErrorCode::invalid_argument);
    const int64_t parts = n.attr_int("num_outputs", 0);
    if (parts < 1) n.fail("num_outputs must be positive, got " + std::to_string(parts), ErrorCode::invalid_argument);
    const int64_t each = (size + parts - 1) / parts;
    for (int64_t at = 0, i = 0; i < parts; ++i, at += each) sizes.push_back(std::clamp<int64_t>(size - at, 0, each));
  } else if (sizes.empty()) {
    const auto parts = static_cast<int64_t>(n.num_outputs());
    if (parts < 1 || size % parts != 0)
      n.fail("cannot split axis " + std::to_string(axis) + " of size " + std::to_string(size) + " into " +
                 std::to_string(parts) + " equal parts (give 'split' sizes)", ErrorCode::invalid_argument);
    sizes.assign(parts, size / parts);
  }
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  if (total != size)
    n.fail("split sizes " + list_str(sizes) + " do not add up to the axis size " + std::to_string(size), ErrorCode::invalid_argument);
  return x.split(sizes, axis);
}

// Slice: starts/ends/axes attributes (opset 1), inputs starts/ends/axes/steps (10+). Out-of-range
// starts and ends clamp as in Python slices (INT64_MAX / INT64_MIN mean "to the end").
std::vector<Tensor> slice(const Node& n) {
  const Tensor& x = n.in(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.opset() < 10) {
    starts = n.attr_ints("starts");
    ends = n.attr_ints("ends");
    axes = n.attr_ints("axes");
  } else {
    starts = n.ints(1);
    ends = n.ints(2);
    if (n.has(3)) axes = n.ints(3);
    if (n.has(4)) steps = n.ints(4);
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    n.fail("starts, ends, axes and steps must have the same length", ErrorCode::invalid_argument);
  if (x.ndim() == 0 && !starts.empty())
    n.fail("the input is a scalar (0-d): it has no axis to slice", ErrorCode::invalid_argument);
  std::vector<Tensor::Index> index(x.ndim(), Tensor::Index::slice());
  std::vector<bool> seen(x.ndim(), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    const int a = n.axis(axes[i], x.ndim());
    if (seen[a]) n.fail("axis " + std::to_string(axes[i]) + " is sliced twice", ErrorCode::invalid_argument);
    seen[a] = true;
    if (steps[i] == 0) n.fail("a step of 0", ErrorCode::invalid_argument);
    index[a] = Tensor::Index::slice(starts[i], ends[i], steps[i]);
  }
  return {x.getitem(index)};
}

// Pad's mode 'wrap' (the input as a torus): the negative amounts crop first (as onnxruntime), then
// each axis is tiled often enough to cover its pads (numpy wraps any number of times) and the
// window [size * copies_before - before, + before + size + after) kept.
Tensor wrap_pad(const Node& n, const Tensor& x, const Pads& amounts) {
  Pads keep;
  for (int a = 0; a < x.ndim(); ++a) {
    const int64_t size = x.shape()[a], b = std::max<int64_t>(0, -amounts[a].first), e = std::max<int64_t>(0, -amounts[a].second);
    if (b + e > size) n.fail("pads crop more than axis " + std::to_string(a) + " holds", ErrorCode::invalid_argument);
    keep.push_back({b, size - e});
  }
  Tensor t = x.shrink(keep);
  std::vector<int64_t> copies;
  Pads window;
  for (int a = 0; a < t.ndim(); ++a) {
    const int64_t size = t.shape()[a], b = std::max<int64_t>(0, amounts[a].first), e = std::max<int64_t>(0, amounts[a].second);
    if (size == 0 && b + e > 0) n.fail("cannot wrap around the empty axis " + std::to_string(a), ErrorCode::invalid_argument);
    const int64_t before = size ? (b + size - 1) / size : 0, after = size ? (e + size - 1) / size : 0;
    copies.push_back(before + 1 + after);
    window.push_back({before * size - b, before * size + size + e});
  }
  return t.repeat(copies).shrink(window);
}

// Pad: the amounts are all begins, then all ends: attribute 'paddings' (opset 1; its doc's example
// reads otherwise, its attribute's text and the reference agree on this), 'pads' (2) with 'value';
// from 11 the pads and constant_value are inputs, from 18 an axes input selects the axes
// the pads apply to. Negative pads crop. Modes: constant, reflect, edge, wrap (19).
std::vector<Tensor> pad(const Node& n) {
  const Tensor& x = n.in(0);
  const int r = x.ndim();
  std::vector<int64_t> pads;
  double value = 0;
  if (n.opset() < 11) {
    value = n.attr_float("value", 0);
    pads = n.attr_ints(n.opset() < 2 ? "paddings" : "pads");
  } else {
    pads = n.ints(1);
    if (n.has(2)) {
      const Tensor& v = n.in(2);
      if (v.numel() != 1) n.fail("constant_value must hold one value", ErrorCode::invalid_argument);
      if (v.dtype() != x.dtype())
        n.fail("constant_value is " + v.dtype().name() + ", the data " + x.dtype().name(), ErrorCode::invalid_argument);
      value = n.double_scalar(2);
    }
  }
  std::vector<int64_t> axes;
  if (n.has(3)) {
    for (int64_t a : n.ints(3)) {
      if (r == 0) n.fail("the input is a scalar (0-d): it has no axis to pad", ErrorCode::invalid_argument);
      axes.push_back(n.axis(a, r));
    }
  } else {
    for (int a = 0; a < r; ++a) axes.push_back(a);
  }
  if (pads.size() != 2 * axes.size())
    n.fail("pads " + list_str(pads) + " must have 2 entries per padded axis (" + std::to_string(axes.size()) + " axes)",
           ErrorCode::invalid_argument);
  Pads amounts(r, {0, 0});
  for (size_t i = 0; i < axes.size(); ++i) amounts[axes[i]] = {pads[i], pads[i + axes.size()]};
  const std::string mode = n.attr_string("mode", "constant");
  if (mode == "constant") return {x.pad(amounts, "constant", value)};
  if (mode == "reflect") return {x.pad(amounts, "reflect")};
  if (mode == "edge") return {x.pad(amounts, "replicate")};
  if (mode == "wrap") {
    if (n.opset() < 19) n.fail("mode 'wrap' exists from opset 19", ErrorCode::invalid_argument);
    return {wrap_pad(n, x, amounts)};
  }
  n.fail("mode '" + mode + "' is not supported (constant, reflect, edge, wrap)");
}

// ---- generators ----

// start, start + delta, ... up to limit (excluded), in the inputs' type.
std::vector<Tensor> range(const Node& n) {
  const DType dt = n.in(0).dtype();
  if (n.in(1).dtype() != dt || n.in(2).dtype() != dt)
    n.fail("start, limit and delta must have one type", ErrorCode::invalid_argument);
  if (!dt.is_float() && !dt.is_int()) n.fail("type " + dt.name() + " is not supported (numbers only)");
  const double start = n.double_scalar(0), limit = n.double_scalar(1), delta = n.double_scalar(2);
  if (delta == 0) n.fail("delta must not be 0", ErrorCode::invalid_argument);
  const auto count = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((limit - start) / delta)));
  // computed in int64/float64 and cast: start + i * delta, as the spec's loop
  const DType wide = dt.is_float() ? dtypes::float64 : dtypes::int64;
  Tensor i = Tensor::arange(0, static_cast<double>(count), 1, wide, n.device());
  if (wide == dtypes::int64) return {(i * n.int_scalar(2) + n.int_scalar(0)).cast(dt)};
  return {(i * delta + start).cast(dt)};
}

// Ones on diagonal k of a 2-d tensor shaped like the input, of attribute dtype (default: the input's).
std::vector<Tensor> eye_like(const Node& n) {
  const Tensor& x = n.in(0);
  if (x.ndim() != 2) n.fail("the input must be 2-d, it has shape of rank " + std::to_string(x.ndim()), ErrorCode::invalid_argument);
  DType dt = x.dtype();
  if (n.has_attr("dtype")) {
    const auto code = static_cast<int32_t>(n.attr_int("dtype", 0));
    auto d = dtype_of(code);
    if (!d) n.fail(std::string("dtype ") + onnx_type_name(code) + " is not supported by kiln");
    dt = *d;
  }
  const int64_t rows = x.shape()[0], cols = x.shape()[1], k = n.attr_int("k", 0);
  Tensor i = Tensor::arange(0, static_cast<double>(rows), 1, dtypes::int64, n.device()).reshape({rows, 1});
  Tensor j = Tensor::arange(0, static_cast<double>(cols), 1, dtypes::int64, n.device()).reshape({1, cols});
  return {(j - i).eq(scalar_like(i, k)).cast(dt)};
}

// Trilu: the upper (default) or lower triangle of the last two axes, from diagonal k (input 1).
std::vector<Tensor> trilu(const Node& n) {
  const Tensor& x = n.in(0);
  const int64_t k = n.has(1) ? n.int_scalar(1) : 0;
  return {n.attr_int("upper", 1) ? x.triu(k) : x.tril(k)};
}

}  // namespace

std::pair<int64_t, int64_t> shape_range(const Node& n, int64_t r) {
  auto clamp_axis = [&](int64_t a) { return std::clamp(a < 0 ? a + r : a, int64_t{0}, r); };
  const int64_t start = clamp_axis(n.attr_int("start", 0)), end = clamp_axis(n.attr_int("end", r));
  return {start, std::max(start, end)};
}

void shape_ops(std::vector<OpDef>& out) {
  out.insert(out.end(), {
      {"Constant", 1, {"value", "value_float", "value_floats", "value_int", "value_ints", "value_string", "value_strings",
                       "sparse_value"}, constant},
      {"ConstantOfShape", 9, {"value"}, constant_of_shape},
      {"Shape", 1, {"start", "end"}, shape},
      {"Size", 1, {}, size},
      {"Reshape", 1, {"shape", "allowzero", "consumed_inputs"}, reshape},
      {"Flatten", 1, {"axis"}, flatten},
      {"Squeeze", 1, {"axes"}, squeeze},
      {"Unsqueeze", 1, {"axes"}, unsqueeze},
      {"Transpose", 1, {"perm"}, transpose},
      {"Expand", 8, {}, expand},
      {"Tile", 1, {}, tile},
      {"Concat", 1, {"axis"}, concat},
      {"Split", 1, {"axis", "split", "num_outputs"}, split},
      {"Slice", 1, {"starts", "ends", "axes"}, slice},
      {"Pad", 1, {"mode", "pads", "paddings", "value"}, pad},
      {"Range", 11, {}, range},
      {"EyeLike", 9, {"dtype", "k"}, eye_like},
      {"Trilu", 14, {"upper"}, trilu},
  });
}

}  // namespace kiln::onnx::detail
