// ops_reduce.cpp - ONNX operators: Reduce*, ArgMax/ArgMin, the softmax family, CumSum, TopK.
// (MatMul, Gemm, Einsum, Det and the losses are in ops_reduce_linalg.cpp.)
#include <algorithm>
#include <functional>

#include "ops.hpp"

namespace kiln::onnx::detail {

// (declared in ops.hpp) onnxruntime also computes these ops of half inputs in float.
Tensor widened(const Tensor& x) {
  return x.dtype().is_float() && x.dtype().scalar_size() < 4 ? x.cast(dtypes::float32) : x;
}

namespace {

using Axes = std::vector<int>;


// ---- Reduce* ----
//
// Every Reduce* op is g(R(f(x))) over a list of axes: f and g elementwise, R a sum, product, max
// or min. ONNX's noop_with_empty_axes with no axes reduces nothing, and then each output element is
// the "reduction" of the one input element at its place: g(f(x)) (ReduceSumSquare gives x^2 and
// ReduceL1 |x|, as onnx's reference and onnxruntime do). The result has the input's dtype.

// The axes a Reduce* node reduces over, normalised and sorted; empty: reduce nothing. The axes are
// an attribute before `input_since` and the optional input 1 from it on; absent or empty axes mean
// all axes unless noop_with_empty_axes.
Axes reduce_axes(const Node& n, int64_t input_since) {
  const int rank = n.in(0).ndim();
  std::vector<int64_t> given;
  if (n.opset() >= input_since) {
    // an axes attribute here is a model error; ignoring it would reduce over every axis
    if (n.has_attr("axes"))
      n.fail("axes are input 1 from opset " + std::to_string(input_since) + ", not an attribute",
             ErrorCode::invalid_argument);
    if (n.has(1)) given = n.ints(1);
  } else {
    if (n.has(1)) n.fail("axes are an attribute before opset " + std::to_string(input_since) + ", not an input",
                         ErrorCode::invalid_argument);
    given = n.attr_ints("axes");
  }
  Axes axes;
  if (given.empty()) {
    if (n.attr_int("noop_with_empty_axes", 0) != 0) return {};
    for (int a = 0; a < rank; ++a) axes.push_back(a);
    return axes;
  }
  if (rank == 0) {
    for (int64_t a : given) n.axis(a, rank);  // 0 and -1 only: a 0-d tensor reduces to itself
    return {};
  }
  for (int64_t a : given) {
    int v = n.axis(a, rank);
    if (std::find(axes.begin(), axes.end(), v) != axes.end())
      n.fail("axis " + std::to_string(a) + " appears twice in axes", ErrorCode::invalid_argument);
    axes.push_back(v);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

// R over axes, or nothing when there are none (Tensor's reductions read {} as "all axes").
using Reduction = Tensor (Tensor::*)(const std::vector<int>&, bool) const;
Tensor over(const Tensor& t, Reduction r, const Axes& axes, bool keep) { return axes.empty() ? t : (t.*r)(axes, keep); }

// One Reduce* node: body(x, axes, keepdims) cast back to x's dtype (integer inputs of float
// functions compute in float32 and truncate back, as the reference's astype).
std::vector<Tensor> reduce_node(const Node& n, int64_t axes_input_since,
                                const std::function<Tensor(const Tensor&, const Axes&, bool)>& body) {
  const Tensor& x = n.in(0);
  const Axes axes = reduce_axes(n, axes_input_since);
  const bool keep = n.attr_int("keepdims", 1) != 0;
  return {body(widened(x), axes, keep).cast(x.dtype())};
}

std::vector<Tensor> reduce_sum(const Node& n) {
  return reduce_node(n, 13, [](const Tensor& x, const Axes& a, bool k) { return over(x, &Tensor::sum, a, k); });
}
std::vector<Tensor> reduce_sum_square(const Node& n) {
  return reduce_node(n, 18, [](const Tensor& x, const Axes& a, bool k) { return over(x.square(), &Tensor::sum, a, k); });
}
std::vector<Tensor> reduce_l1(const Node& n) {
  return reduce_node(n, 18, [](const Tensor& x, const Axes& a, bool k) { return over(x.abs(), &Tensor::sum, a, k); });
}
std::vector<Tensor> reduce_l2(const Node& n) {
  return reduce_node(n, 18, [](const Tensor& x, const Axes& a, bool k) { return over(x.square(), &Tensor::sum, a, k).sqrt(); });
}
std::vector<Tensor> reduce_log_sum(const Node& n) {
  // an empty sum is 0, and log(0) = -inf: ONNX's identity for an empty ReduceLogSum
  return reduce_node(n, 18, [](const Tensor& x, const Axes& a, bool k) { return over(x, &Tensor::sum, a, k).log(); });
}
std::vector<Tensor> reduce_log_sum_exp(const Node& n) {
  // Tensor::logsumexp shifts by the max (no overflow) and gives -inf over nothing
  return reduce_node(n, 18, [](const Tensor& x, const Axes& a, bool k) { return over(x, &Tensor::logsumexp, a, k); });
}
std::vector<Tensor> reduce_prod(const Node& n) {
  return reduce_node(n, 18, [](const Tensor& x, const Axes& a, bool k) { return over(x, &Tensor::prod, a, k); });
}
std::vector<Tensor> reduce_max(const Node& n) {
  // over nothing: the dtype's lowest value (-inf for floats), ONNX's identity
  return reduce_node(n, 18, [](const Tensor& x, const Axes& a, bool k) { return over(x, &Tensor::max, a, k); });
}
std::vector<Tensor> reduce_min(const Node& n) {
  return reduce_node(n, 18, [](const Tensor& x, const Axes& a, bool k) { return over(x, &Tensor::min, a, k); });
}
std::vector<Tensor> reduce_mean(const Node& n) {
  return reduce_node(n, 18, [](const Tensor& x, const Axes& a, bool k) {
    if (a.empty() || x.dtype().is_float()) return over(x, &Tensor::mean, a, k);
    // integers: the sum divided and truncated toward zero in the integer type, as numpy's
    // mean(dtype=int) (exact, where a float32 mean would round large values)
    int64_t count = 1;
    for (int i : a) count *= x.shape()[static_cast<size_t>(i)];
    Tensor s = x.sum(a, k);
    return s.idiv(scalar_like(s, count));
  });
}

// ---- ArgMax, ArgMin ----

// The position of the first (or, with select_last_index, the last) extreme along `axis`, int64.
std::vector<Tensor> arg_extreme(const Node& n, bool largest) {
  const Tensor& x = n.in(0);
  const int axis = n.axis(n.attr_int("axis", 0), x.ndim());
  const bool keep = n.attr_int("keepdims", 1) != 0;
  if (x.ndim() > 0 && x.shape()[static_cast<size_t>(axis)] == 0)
    n.fail("axis " + std::to_string(axis) + " is empty: there is no extreme to point at", ErrorCode::invalid_argument);
  auto first = [&](const Tensor& t) { return largest ? t.argmax(axis, keep) : t.argmin(axis, keep); };
  if (n.attr_int("select_last_index", 0) == 0) return {first(x).cast(dtypes::int64)};
  // the last extreme is the first one of the reversed axis, counted from the end
  const int64_t size = x.ndim() == 0 ? 1 : x.shape()[static_cast<size_t>(axis)];
  Tensor r = first(x.ndim() == 0 ? x : x.flip({axis})).cast(dtypes::int64);
  return {scalar_like(r, size - 1) - r};
}

std::vector<Tensor> argmax(const Node& n) { return arg_extreme(n, true); }
std::vector<Tensor> argmin(const Node& n) { return arg_extreme(n, false); }

// ---- Softmax, LogSoftmax, Hardmax ----

// Applies f(x, axis) the way the softmax family's opset defines the axis: from opset 13 along the
// one axis (default -1); before, over the input coerced to 2-D at `axis` (default 1), i.e. jointly
// over all the axes from `axis` on.
std::vector<Tensor> softmax_like(const Node& n, const std::function<Tensor(const Tensor&, int)>& f) {
  const Tensor& x = n.in(0);
  const Tensor w = widened(x);
  if (n.opset() >= 13) return {f(w, n.axis(n.attr_int("axis", -1), x.ndim())).cast(x.dtype())};
  const int axis = n.axis(n.attr_int("axis", 1), x.ndim());
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < x.ndim(); ++i) (i < axis ? outer : inner) *= x.shape()[static_cast<size_t>(i)];
  return {f(w.reshape({outer, inner}), 1).reshape(x.shape()).cast(x.dtype())};
}

std::vector<Tensor> softmax(const Node& n) {
  return softmax_like(n, [](const Tensor& x, int a) { return x.softmax(a); });
}
std::vector<Tensor> log_softmax(const Node& n) {
  return softmax_like(n, [](const Tensor& x, int a) { return x.log_softmax(a); });
}
std::vector<Tensor> hardmax(const Node& n) {
  // 1 at the first maximum along the axis, 0 elsewhere, in the input's dtype
  return softmax_like(n, [](const Tensor& x, int a) {
    if (x.numel() == 0 || x.ndim() == 0) return x.numel() == 0 ? x : Tensor::full({}, 1, x.dtype(), x.device());
    Shape at(static_cast<size_t>(x.ndim()), 1);
    at[static_cast<size_t>(a)] = x.shape()[static_cast<size_t>(a)];
    Tensor pos = Tensor::arange(0, static_cast<double>(at[static_cast<size_t>(a)]), 1, dtypes::int32, x.device()).reshape(at);
    return pos.eq(x.argmax(a, true)).cast(x.dtype());
  });
}

// ---- CumSum, TopK ----

std::vector<Tensor> cumsum(const Node& n) {
  const Tensor& x = n.in(0);
  if (x.ndim() == 0) n.fail("the input must have at least one dimension", ErrorCode::invalid_argument);
  const int axis = n.axis(n.int_scalar(1), x.ndim());
  const bool reverse = n.attr_int("reverse", 0) != 0;
  Tensor t = reverse ? x.flip({axis}) : x;
  if (n.attr_int("exclusive", 0) != 0) {
    // exclusive: each position sums the ones before it, i.e. the inclusive sum of the input
    // shifted one place along the axis (a 0 first), which adds exactly what the reference adds
    const int64_t len = t.shape()[static_cast<size_t>(axis)];
    Pads pad(static_cast<size_t>(t.ndim()), {0, 0}), keep;
    pad[static_cast<size_t>(axis)] = {1, 0};
    for (int i = 0; i < t.ndim(); ++i) keep.push_back({0, i == axis ? len : t.shape()[static_cast<size_t>(i)]});
    t = t.pad(pad).shrink(keep);
  }
  Tensor r = t.cumsum(axis);
  return {(reverse ? r.flip({axis}) : r).cast(x.dtype())};
}

std::vector<Tensor> topk(const Node& n) {
  const Tensor& x = n.in(0);
  if (x.ndim() == 0) n.fail("the input must have at least one dimension", ErrorCode::invalid_argument);
  const int axis = n.axis(n.attr_int("axis", -1), x.ndim());
  int64_t k = 0;
  if (n.opset() >= 10) {
    k = n.int_scalar(1);
  } else {
    if (!n.has_attr("k")) n.fail("attribute 'k' is required before opset 10", ErrorCode::invalid_argument);
    k = n.attr_int("k", 0);
  }
  const int64_t size = x.shape()[static_cast<size_t>(axis)];
  if (k < 0 || k > size)
    n.fail("k = " + std::to_string(k) + " is out of range for axis " + std::to_string(axis) + " of size " +
               std::to_string(size),
           ErrorCode::invalid_argument);
  // sorted = 0 leaves the order unspecified, so the sorted order is one valid answer; ties put
  // the lower index first, as ONNX asks
  auto [values, indices] = x.topk(k, axis, n.attr_int("largest", 1) != 0, true);
  return {values, indices.cast(dtypes::int64)};
}

}  // namespace

void reduce_ops(std::vector<OpDef>& out) {
  const std::vector<std::string_view> reduce_attrs{"axes", "keepdims", "noop_with_empty_axes"};
  const std::vector<std::string_view> arg_attrs{"axis", "keepdims", "select_last_index"};
  out.insert(out.end(), {
      {"ReduceSum", 1, reduce_attrs, reduce_sum},
      {"ReduceSumSquare", 1, reduce_attrs, reduce_sum_square},
      {"ReduceL1", 1, reduce_attrs, reduce_l1},
      {"ReduceL2", 1, reduce_attrs, reduce_l2},
      {"ReduceLogSum", 1, reduce_attrs, reduce_log_sum},
      {"ReduceLogSumExp", 1, reduce_attrs, reduce_log_sum_exp},
      {"ReduceProd", 1, reduce_attrs, reduce_prod},
      {"ReduceMax", 1, reduce_attrs, reduce_max},
      {"ReduceMin", 1, reduce_attrs, reduce_min},
      {"ReduceMean", 1, reduce_attrs, reduce_mean},
      {"ArgMax", 1, arg_attrs, argmax},
      {"ArgMin", 1, arg_attrs, argmin},
      {"Softmax", 1, {"axis"}, softmax},
      {"LogSoftmax", 1, {"axis"}, log_softmax},
      {"Hardmax", 1, {"axis"}, hardmax},
      {"CumSum", 11, {"exclusive", "reverse"}, cumsum},
      {"TopK", 1, {"axis", "k", "largest", "sorted"}, topk},
  });
}

}  // namespace kiln::onnx::detail
