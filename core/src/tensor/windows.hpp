// tensor/windows.hpp - sliding windows over a tensor's last dimensions (tensor/nn.cpp), shared by
// the convolutions and pools (nn.cpp's 2-D convolution, conv.cpp's N-d forms). Per-axis vectors
// have one entry per windowed dimension (the last k.size() dimensions of the tensor).
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln::detail {

// (..., I1, I2, ...) -> (..., O1, O2, ..., K1, K2, ...) with element [o, t] = x[o*stride + t*dilation]
// per axis, O = (I - dilation*(K-1) - 1) / stride + 1. Movement ops only, with its own gradient
// (each tap's part put back by place_tap). Throws kiln::Error naming `op` where a window is larger
// than its dimension.
Tensor pool(const Tensor& x, const std::vector<int64_t>& k, const std::vector<int64_t>& stride, const std::vector<int64_t>& dilation,
            const char* op);
// What one tap of sliding windows read, (..., O1, O2, ...) with one value per window, put back
// where it read it in an input of shape `in` (zeros elsewhere). Tap 0 with dilation 1 spreads the
// values `stride` apart (the zeros a transposed convolution's input is dilated with).
Tensor place_tap(const Tensor& part, const Shape& in, const std::vector<int64_t>& tap, const std::vector<int64_t>& stride,
                 const std::vector<int64_t>& dilation);
// Pads (amounts >= 0, with zeros) or cuts (< 0) the last amounts.size() dimensions of x, before and after.
Tensor pad_or_cut(const Tensor& x, const Pads& amounts);

// (a * b).sum(axes), broadcasting as `*` does, for matmul and the convolutions. float16 and
// bfloat16 products are taken in float32, where each is exact, and summed there: one rounding at
// the end, as torch's half matmul and convolution do (rounding each product to the half type first
// rounded twice and cost a conversion per product in the inner loop: a 1024 bfloat16 matmul 4x
// float32's time). Other dtypes multiply in their own type.
Tensor sum_of_products(const Tensor& a, const Tensor& b, const std::vector<int>& axes);

}  // namespace kiln::detail
