// tensor/norm.cpp - layernorm, batchnorm and dropout (with the process-wide training flag):
// compositions of existing ops, so autograd comes from those ops.
#include <algorithm>
#include <atomic>
#include <cmath>

#include "support/check.hpp"
#include "tensor/tensor_state.hpp"

namespace kiln {

using namespace detail;

namespace {

std::atomic<bool> g_training{false};

// The normalised, sorted axes of `axes` for a tensor of `shape`; an axis given twice is an error.
std::vector<int> unique_axes(const std::vector<int>& axes, const Shape& shape, const char* op) {
  std::vector<int> out;
  for (int a : axes) {
    int n = norm_axis(a, shape, op);
    if (std::find(out.begin(), out.end(), n) != out.end())
      fail(ErrorCode::invalid_argument, op, ": axis ", a, " is given twice in axes ", ints_str(axes), " for a tensor of shape ",
           shape_str(shape));
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Tensor Tensor::layernorm(const std::vector<int>& axes, double eps) const {
  if (axes.empty()) fail(ErrorCode::invalid_argument, "layernorm: needs at least one axis (tensor of shape ", shape_str(shape()), ")");
  std::vector<int> ax = unique_axes(axes, shape(), "layernorm");
  if (is_half_float(dtype())) return cast(dtypes::float32).layernorm(axes, eps).cast(dtype());
  Tensor y = *this - mean(ax, true);
  return y * ((y * y).mean(ax, true) + eps).rsqrt();
}

Tensor Tensor::batchnorm(const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, const Tensor& mean_,
                         const Tensor& invstd, const std::vector<int>& axes) const {
  std::vector<int> ax = unique_axes(axes, shape(), "batchnorm");
  Shape bshape(shape().size(), 1);
  int64_t count = 1;
  for (int a : ax) bshape[static_cast<size_t>(a)] = shape()[static_cast<size_t>(a)], count *= shape()[static_cast<size_t>(a)];
  auto shaped = [&](const Tensor& t, const char* what) {
    if (t.numel() != count)
      fail(ErrorCode::invalid_argument, "batchnorm: ", what, " of shape ", shape_str(t.shape()), " has ", t.numel(),
           " elements, but the normalized axes ", ints_str(axes), " of the input of shape ", shape_str(shape()), " have ", count);
    return t.reshape(bshape);
  };
  Tensor x = *this - shaped(mean_, "mean");
  if (weight) x = x * shaped(*weight, "weight");
  // tinygrad: an invstd with one dimension per normalized axis is laid out like mean; any other
  // rank broadcasts as it is
  x = x * (invstd.ndim() == static_cast<int>(ax.size()) ? shaped(invstd, "invstd") : invstd);
  return bias ? x + shaped(*bias, "bias") : x;
}

bool Tensor::training() { return g_training.load(); }
void Tensor::set_training(bool on) { g_training.store(on); }

Tensor Tensor::dropout(double p) const {
  if (!(p >= 0 && p <= 1)) fail(ErrorCode::invalid_argument, "dropout: p must be in [0, 1], got ", p);
  if (!training() || p == 0) return *this;
  // everything dropped: zeros (NaN and inf too, as torch), through a where so that the gradient
  // is zeros rather than missing
  if (p == 1) return where(const_tensor(0, dtypes::bool_, shape(), device()), *this, const_like(*this, 0.0));
  Tensor keep = rand(shape(), dtypes::float32, device()).ge(const_tensor(p, dtypes::float32, {}, device())).contiguous();
  return where(keep, *this, const_like(*this, 0.0)) / (1.0 - p);
}

}  // namespace kiln
