// tensor/reduce_pairs.cpp - what tinygrad and torch have beside kiln's core reductions and casts:
// argmin (from argmax of an order-reversing map), std_mean / var_mean (both results of one call),
// and bitcast.
#include "tensor/tensor_state.hpp"

namespace kiln {

using namespace detail;

Tensor Tensor::argmin(int axis, bool keepdim) const {
  int a = norm_axis(axis, shape(), "argmin");
  if (shape()[a] == 0) fail(ErrorCode::invalid_argument, "argmin: dimension ", a, " of ", shape_str(shape()), " is empty");
  // the first minimum is the first maximum of a map that reverses the order: -x for floats (a NaN
  // stays NaN, which argmax takes as the maximum, so numpy's "NaN is the minimum" holds), ~x for
  // integers (exact where -x would overflow at the minimum), not x for bools
  Tensor inv = dtype().is_bool() ? logical_not() : dtype().is_float() ? -*this : (*this ^ scalar_like(*this, -1));
  return inv.argmax(a, keepdim);
}

std::pair<Tensor, Tensor> Tensor::std_mean(const std::vector<int>& axes, bool keepdim, double correction) const {
  return {this->std(axes, keepdim, correction), mean(axes, keepdim)};
}

std::pair<Tensor, Tensor> Tensor::var_mean(const std::vector<int>& axes, bool keepdim, double correction) const {
  return {var(axes, keepdim, correction), mean(axes, keepdim)};
}

Tensor Tensor::bitcast(DType d) const {
  if (d.is_ptr() || d.count() != 1 || d.is_void() || d.scalar() == Scalar::index)
    fail(ErrorCode::invalid_argument, "bitcast: ", d.name(), " is not a tensor element type");
  if (d.is_bool() || dtype().is_bool())
    fail(ErrorCode::invalid_argument, "bitcast: ", dtype().name(), " -> ", d.name(), ": bool has no bit pattern to reinterpret (use cast)");
  if (d.itemsize() != dtype().itemsize())
    fail(ErrorCode::invalid_argument, "bitcast: ", dtype().name(), " (", dtype().itemsize(), " bytes) -> ", d.name(), " (", d.itemsize(),
         " bytes): the sizes must be equal");
  if (d == dtype()) return *this;
  return alu(Ops::BITCAST, {detach()}, d);
}

}  // namespace kiln
