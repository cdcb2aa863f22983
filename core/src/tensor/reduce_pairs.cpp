// tensor/reduce_pairs.cpp - what tinygrad and torch have beside kiln's core reductions and casts:
// std_mean / var_mean (both results of one call) and bitcast. (argmin is the struct branch's.)
#include "tensor/tensor_state.hpp"

namespace kiln {

using namespace detail;

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
