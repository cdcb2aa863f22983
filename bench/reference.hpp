// bench/reference.hpp - the float64 references of the `kiln bench` workloads.
//
// Plain loops over host copies of the inputs, written independently of kiln, in an order that
// streams (i-k-j for matmul) so a reference of a 2048^3 matmul stays a few seconds. Every layout
// is row-major: matrices [rows, cols], images NCHW, filters OIHW.
#pragma once
#include <cstdint>
#include <vector>

namespace kiln::bench::ref {

std::vector<double> widen(const std::vector<float>& v);

// C[n,m] = A[n,k] @ B[k,m].
std::vector<double> matmul(const std::vector<double>& a, const std::vector<double>& b, int64_t n, int64_t k, int64_t m);

// W[rows,cols] -> W^T[cols,rows].
std::vector<double> transposed(const std::vector<float>& w, int64_t rows, int64_t cols);

// y[b,o] = x[b,:] . W[o,:] + bias[o] (nn.Linear; W is [out, in]), optionally through relu.
std::vector<double> linear(const std::vector<double>& x, const std::vector<float>& w, const std::vector<float>& bias,
                           int64_t batch, int64_t in, int64_t out, bool relu);

struct ConvShape {
  int64_t batch, channels, height, width, filters, kernel;
  int64_t stride = 1, pad = 0, groups = 1;
  int64_t out_height() const { return (height + 2 * pad - kernel) / stride + 1; }
  int64_t out_width() const { return (width + 2 * pad - kernel) / stride + 1; }
  double flops() const {  // 2 * outputs * (channels per group) * kernel^2
    return 2.0 * double(batch * filters * out_height() * out_width()) * double(channels / groups * kernel * kernel);
  }
};
// y = conv2d(x, w) without bias; x [batch, channels, h, w], w [filters, channels/groups, k, k].
std::vector<double> conv2d(const std::vector<float>& x, const std::vector<float>& w, const ConvShape& s);

// softmax over the last axis of [rows, cols].
std::vector<double> softmax_rows(const std::vector<double>& x, int64_t rows, int64_t cols);

}  // namespace kiln::bench::ref
