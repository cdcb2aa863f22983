// tensor/reduce.cpp - reductions and the functions built from them (mean, var, softmax, argmax).
#include <algorithm>
#include <cmath>

#include "tensor/tensor_state.hpp"

namespace kiln {

using namespace detail;

namespace {

std::vector<int> norm_axes(const std::vector<int>& axes, const Shape& shape, const char* op) {
  std::vector<int> out;
  if (axes.empty()) {
    for (size_t i = 0; i < shape.size(); ++i) out.push_back(static_cast<int>(i));
    return out;
  }
  // a 0-d tensor has the one axis 0 (or -1) in torch and tinygrad: reducing over it reduces nothing
  if (shape.empty()) {
    for (int a : axes)
      if (a != 0 && a != -1) norm_axis(a, shape, op);  // (throws, naming the axis)
    return out;
  }
  for (int a : axes) {
    int n = norm_axis(a, shape, op);
    if (std::find(out.begin(), out.end(), n) != out.end())
      fail(ErrorCode::invalid_argument, op, ": axis ", a, " is given twice in axes ", ints_str(axes), " for a tensor of shape ",
           shape_str(shape), " (each axis may appear once)");
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// REDUCE_AXIS over `axes` (normalised), then drop them unless keepdim.
Tensor reduce(const Tensor& x, Ops op, const std::vector<int>& axes, bool keepdim) {
  if (axes.empty()) return x;
  Tensor r = reduce_axis(x, op, axes);
  const StateView s = st(r);
  const Shape& shape = s.shape;
  const std::vector<UOp>& vars = s.vars;
  if (keepdim) return r;
  Shape out;
  std::vector<UOp> out_vars;
  for (size_t i = 0; i < shape.size(); ++i)
    if (std::find(axes.begin(), axes.end(), static_cast<int>(i)) == axes.end()) {
      out.push_back(shape[i]);
      out_vars.push_back(i < vars.size() ? vars[i] : UOp());
    }
  return shaped(r, Ops::RESHAPE, out, out_vars);
}

// Sums accumulate small integers in 32 bits and half floats in float32 (then cast back).
DType sum_acc_dtype(DType d) {
  if (d.is_bool()) return dtypes::int32;
  if (d.is_int() && d.scalar_size() < 4) return d.is_unsigned() ? dtypes::uint32 : dtypes::int32;
  if (is_half_float(d)) return dtypes::float32;
  return d;
}

// The element count over `axes` as a tensor of dtype d (a symbolic dimension uses its variable).
Tensor count(const Tensor& x, const std::vector<int>& axes, DType d) {
  const StateView s = st(x);
  int64_t concrete = 1;
  Tensor n = const_tensor(1, d, {}, s.device);
  bool symbolic = false;
  for (int a : axes) {
    if (a < static_cast<int>(s.vars.size()) && s.vars[a]) {
      n = n * make(s.vars[a], {}, s.device).cast(d);
      symbolic = true;
    } else {
      concrete *= s.shape[a];
    }
  }
  Tensor c = const_tensor(static_cast<double>(concrete), d, {}, s.device);
  return symbolic ? n * c : c;
}

}  // namespace

Tensor Tensor::sum(const std::vector<int>& axes, bool keepdim) const {
  DType acc = sum_acc_dtype(dtype());
  Tensor x = acc == dtype() ? *this : cast(acc);
  Tensor r = reduce(x, Ops::ADD, norm_axes(axes, shape(), "sum"), keepdim);
  return is_half_float(dtype()) ? r.cast(dtype()) : r;
}

Tensor Tensor::prod(const std::vector<int>& axes, bool keepdim) const {
  DType acc = sum_acc_dtype(dtype());
  Tensor x = acc == dtype() ? *this : cast(acc);
  return reduce(x, Ops::MUL, norm_axes(axes, shape(), "prod"), keepdim);
}

Tensor Tensor::max(const std::vector<int>& axes, bool keepdim) const {
  return reduce(*this, Ops::MAX, norm_axes(axes, shape(), "max"), keepdim);
}

Tensor Tensor::min(const std::vector<int>& axes, bool keepdim) const {
  auto ax = norm_axes(axes, shape(), "min");
  if (dtype().is_float()) return -reduce(-*this, Ops::MAX, ax, keepdim);
  if (dtype().is_bool()) return reduce(logical_not(), Ops::MAX, ax, keepdim).logical_not();
  // ~x is order-reversing and exact for every integer (unlike -x at the minimum value)
  Tensor inv = *this ^ const_like(*this, -1);
  Tensor m = reduce(inv, Ops::MAX, ax, keepdim);
  return m ^ const_like(m, -1);
}

Tensor Tensor::mean(const std::vector<int>& axes, bool keepdim) const {
  auto ax = norm_axes(axes, shape(), "mean");
  DType d = dtype().is_float() ? dtype() : dtypes::default_float;
  Tensor s = sum(axes, keepdim).cast(d);
  return s / count(*this, ax, d);
}

Tensor Tensor::var(const std::vector<int>& axes, bool keepdim, double correction) const {
  auto ax = norm_axes(axes, shape(), "var");
  DType d = dtype().is_float() ? dtype() : dtypes::default_float;
  Tensor x = cast(d);
  Tensor dev = x - x.mean(axes, true);
  Tensor n = count(*this, ax, d);
  Tensor denom = (n - correction).maximum(const_like(n, 0));
  return (dev * dev).sum(axes, keepdim) / denom;
}

Tensor Tensor::std(const std::vector<int>& axes, bool keepdim, double correction) const {
  // sqrt(var), except where var is 0: there the value is the same 0, and the gradient goes to var
  // unscaled instead of through sqrt's infinite slope (inf * 0 = NaN at constant rows; torch masks
  // it to 0, which this gives: var's own gradient is 0 there)
  Tensor v = var(axes, keepdim, correction), zero = v.eq(const_like(v, 0));
  return where(zero, v, where(zero, const_like(v, 1), v).sqrt());  // (sqrt of 1 there: 0 * inf would be NaN again)
}

Tensor Tensor::argmax(int axis, bool keepdim) const {
  int a = norm_axis(axis, shape(), "argmax");
  int64_t n = shape()[a];
  if (n == 0) fail(ErrorCode::invalid_argument, "argmax: dimension ", a, " is empty");
  // the first maximum: among positions equal to the max, take the largest (n - index). A row with
  // a NaN has max NaN, which equals nothing: like numpy, its first NaN is the maximum.
  Tensor is_max = eq(max({a}, true));
  if (dtype().is_float()) is_max = is_max | ne(*this);
  Shape idx_shape(ndim(), 1);
  idx_shape[a] = n;
  Tensor rev = Tensor::arange(static_cast<double>(n), 0, -1, dtypes::int32, device()).reshape(idx_shape);
  Tensor picked = where(is_max, rev, const_like(rev, 0));
  return const_like(picked.max({a}, keepdim), static_cast<double>(n)) - picked.max({a}, keepdim);
}

Tensor Tensor::softmax(int axis) const {
  if (ndim() == 0) return reshape({1}).softmax(axis == 0 || axis == -1 ? 0 : norm_axis(axis, shape(), "softmax")).reshape({});
  if (is_half_float(dtype())) return cast(dtypes::float32).softmax(axis).cast(dtype());
  int a = norm_axis(axis, shape(), "softmax");
  Tensor x = dtype().is_float() ? *this : cast(dtypes::default_float);
  Tensor e = (x - x.max({a}, true)).exp();
  // times 1/sum, not divided by the sum: one reciprocal per row, hoisted out of the normalising
  // loop, instead of a vector division per element (with exp2_poly's cheaper form, that pass
  // went from 1.15 to 0.8 ms at 4096 x 1024, near the copy bandwidth)
  return e * e.sum({a}, true).reciprocal();
}

Tensor Tensor::log_softmax(int axis) const {
  if (ndim() == 0) return reshape({1}).log_softmax(axis == 0 || axis == -1 ? 0 : norm_axis(axis, shape(), "log_softmax")).reshape({});
  if (is_half_float(dtype())) return cast(dtypes::float32).log_softmax(axis).cast(dtype());
  int a = norm_axis(axis, shape(), "log_softmax");
  Tensor x = dtype().is_float() ? *this : cast(dtypes::default_float);
  Tensor shifted = x - x.max({a}, true);
  return shifted - shifted.exp().sum({a}, true).log();
}

}  // namespace kiln
