// tests/e2e/shape_sweep_test.cpp - matmul, conv2d, reductions and softmax over a sweep of sizes
// (issue 15: 1, 2, 3, 7, ..., 257, 999, 1000, 1001) on cpu:0 and opencl:0, each result compared
// with a plain C++ float64 reference.
//
// Sizes that divide nothing, one off a power of two, and 1 are where tiling, vector widths,
// padded tails and thread splits go wrong. To keep the run short, one dimension at a time walks
// the list while the others stay small (17 or 7: above and below a vector width), plus a few full
// squares. The device is the test's parameter; a device that is not usable here (no OpenCL driver)
// skips. The ctest entries (tests/e2e/CMakeLists.txt) run each device in its own process.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "host_array.hpp"
#include "kiln/kiln.hpp"
#include "op_corpus.hpp"

using namespace kiln;
using namespace kiln::testing;

namespace {

constexpr int64_t kSizes[] = {1, 2, 3, 7, 15, 16, 17, 31, 33, 63, 100, 127, 129, 255, 257, 999, 1000, 1001};
constexpr int64_t kSmall = 17;  // the dimensions that do not walk the list

HostArray random(const std::vector<int64_t>& shape, uint64_t seed) { return make_array(shape, dtypes::float32, seed, -1, 1); }

std::string dims(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t d : shape) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

// got[i] must lie within tol * scale[i] + atol of want[i]. `scale` is what the rounding error of
// the computation grows with: for a dot product or a sum, the sum of the terms' magnitudes (a
// missing, doubled or garbage term is a whole term off, far above float32's rounding).
void expect_close(const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& scale,
                  double tol, double atol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < got.size(); i++) {
    double bound = tol * scale[i] + atol;
    if (!(std::fabs(double(got[i]) - want[i]) <= bound) && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements off; the first at flat index " << first
                     << ": got " << got[first] << ", want " << want[first];
}

constexpr double kDotTol = 1e-5;  // x the sum of |terms|: float32 accumulation stays far below

// A[m,k] @ B[k,n] on `device` against float64 loops.
void check_matmul(const std::string& device, int64_t m, int64_t k, int64_t n) {
  HostArray a = random({m, k}, 1000 + m), b = random({k, n}, 2000 + n);
  std::vector<double> want(static_cast<size_t>(m * n), 0.0), scale(want.size(), 0.0);
  for (int64_t i = 0; i < m; i++)
    for (int64_t p = 0; p < k; p++) {
      double av = a.v[i * k + p];
      for (int64_t j = 0; j < n; j++) {
        want[i * n + j] += av * b.v[p * n + j];
        scale[i * n + j] += std::fabs(av * b.v[p * n + j]);
      }
    }
  std::vector<float> got = upload(a, device).matmul(upload(b, device)).to_vector<float>();
  expect_close(got, want, scale, kDotTol, 1e-30, "matmul " + dims({m, k}) + " @ " + dims({k, n}) + " on " + device);
}

// conv2d of x[batch,c,h,w] with o filters kernel x kernel (3x3 unless given) against host_array's loops.
void check_conv2d(const std::string& device, int64_t c, int64_t h, int64_t w, int64_t o, int stride, int pad, int64_t kernel = 3,
                  int64_t batch = 1) {
  HostArray x = random({batch, c, h, w}, 3000 + c * 7 + h + w), f = random({o, c, kernel, kernel}, 4000 + o);
  HostArray want = conv2d(x, f, stride, pad, 1, 1);
  HostArray abs_x = map(x, [](double v) { return std::fabs(v); }, dtypes::float64);
  HostArray abs_f = map(f, [](double v) { return std::fabs(v); }, dtypes::float64);
  HostArray scale = conv2d(abs_x, abs_f, stride, pad, 1, 1);
  std::vector<float> got = upload(x, device).conv2d(upload(f, device), std::nullopt, stride, pad).to_vector<float>();
  expect_close(got, want.v, scale.v, kDotTol, 1e-30,
               "conv2d " + dims(x.shape) + " * " + dims(f.shape) + " stride " + std::to_string(stride) + " pad " +
                   std::to_string(pad) + " on " + device);
}

// relu(conv2d(x, f, bias, 1, 1) + r): a 3x3 convolution whose epilogue reads a bias per channel
// and a residual per output element. On the cpu the register tile holds channels in its vector
// lanes and output columns in its copies, so each lane's columns are one vector store into NCHW
// (codegen/expander.cpp, transposed stores) and the residual one vector load; with BLOCK (many
// input channels) the partial sums are read back the same way.
void check_conv2d_epilogue(const std::string& device, int64_t c, int64_t h, int64_t w, int64_t o) {
  HostArray x = random({1, c, h, w}, 7000 + c + h * 3 + w), f = random({o, c, 3, 3}, 7100 + o);
  HostArray bias = random({o}, 7200 + o), r = random({1, o, h, w}, 7300 + o + w);
  HostArray conv = conv2d(x, f, 1, 1, 1, 1);
  HostArray abs_x = map(x, [](double v) { return std::fabs(v); }, dtypes::float64);
  HostArray abs_f = map(f, [](double v) { return std::fabs(v); }, dtypes::float64);
  HostArray scale = conv2d(abs_x, abs_f, 1, 1, 1, 1);
  std::vector<double> want(conv.v.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const size_t channel = (i / static_cast<size_t>(h * w)) % static_cast<size_t>(o);
    want[i] = std::max(0.0, conv.v[i] + bias.v[channel] + r.v[i]);
    scale.v[i] += std::fabs(bias.v[channel]) + std::fabs(r.v[i]);
  }
  Tensor y = (upload(x, device).conv2d(upload(f, device), upload(bias, device), 1, 1) + upload(r, device)).relu();
  expect_close(y.to_vector<float>(), want, scale.v, kDotTol, 1e-30,
               "relu(conv2d + bias + residual) " + dims(x.shape) + " * " + dims(f.shape) + " on " + device);
}

// sum and max of x over `axis` (0 or 1 of a matrix).
void check_reductions(const std::string& device, int64_t rows, int64_t cols, int axis) {
  HostArray x = random({rows, cols}, 5000 + rows * 3 + cols);
  std::string what = dims(x.shape) + " over axis " + std::to_string(axis) + " on " + device;
  HostArray want_sum = reduce(x, {axis}, false, std::plus<double>(), 0, dtypes::float64);
  HostArray scale = reduce(map(x, [](double v) { return std::fabs(v); }, dtypes::float64), {axis}, false,
                           std::plus<double>(), 0, dtypes::float64);
  HostArray want_max = reduce(x, {axis}, false, [](double a, double b) { return std::max(a, b); }, -INFINITY,
                              dtypes::float64);
  Tensor t = upload(x, device);
  expect_close(t.sum({axis}).to_vector<float>(), want_sum.v, scale.v, kDotTol, 1e-30, "sum " + what);
  std::vector<double> exact(want_max.v.size(), 0.0);
  expect_close(t.max({axis}).to_vector<float>(), want_max.v, exact, 0, 0, "max " + what);
}

// softmax over the last axis of x[rows, cols] (values in [-4, 4]).
void check_softmax(const std::string& device, int64_t rows, int64_t cols) {
  HostArray x = make_array({rows, cols}, dtypes::float32, 6000 + rows * 3 + cols, -4, 4);
  std::vector<double> want(x.v.size());
  for (int64_t r = 0; r < rows; r++) {
    const double* in = &x.v[r * cols];
    double mx = *std::max_element(in, in + cols), s = 0;
    for (int64_t c = 0; c < cols; c++) s += want[r * cols + c] = std::exp(in[c] - mx);
    for (int64_t c = 0; c < cols; c++) want[r * cols + c] /= s;
  }
  std::vector<float> got = upload(x, device).softmax(-1).to_vector<float>();
  expect_close(got, want, want, 1e-5, 1e-7, "softmax " + dims(x.shape) + " over the last axis on " + device);
}

// relu(x + bias + r) written into a map padded by 1 (the next convolution's input, as ResNet's
// epilogues are): rows of n + 2 (5, 6, 9: one masked vector each on AVX-512, short_row_lanes).
void check_padded_epilogue(const std::string& device, int64_t channels, int64_t n) {
  HostArray x = random({channels, n, n}, 7000 + n), r = random({channels, n, n}, 7100 + n), bias = random({channels}, 7200 + n);
  const int64_t p = n + 2;
  std::vector<double> want(size_t(channels * p * p), 0.0);
  for (int64_t c = 0; c < channels; c++)
    for (int64_t y = 0; y < n; y++)
      for (int64_t w = 0; w < n; w++) {
        const int64_t i = (c * n + y) * n + w;
        want[size_t((c * p + y + 1) * p + w + 1)] = std::max(0.0, x.v[i] + bias.v[c] + r.v[i]);
      }
  Tensor b = upload(bias, device).reshape({channels, 1, 1});
  Tensor y = (upload(x, device) + b + upload(r, device)).relu().pad({{0, 0}, {1, 1}, {1, 1}});
  expect_close(y.to_vector<float>(), want, want, 1e-6, 1e-7, "padded epilogue " + dims(x.shape) + " on " + device);
}

class ShapeSweep : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::vector<std::string> usable = devices();
    if (std::find(usable.begin(), usable.end(), GetParam()) == usable.end())
      GTEST_SKIP() << GetParam() << " is not usable here (no driver?)";
  }
};

TEST_P(ShapeSweep, MatmulOneDimensionAtATime) {
  for (int64_t s : kSizes) {
    check_matmul(GetParam(), s, kSmall, kSmall);
    check_matmul(GetParam(), kSmall, s, kSmall);
    check_matmul(GetParam(), kSmall, kSmall, s);
  }
}

TEST_P(ShapeSweep, MatmulSquares) {
  for (int64_t s : {16, 127, 257, 1001}) check_matmul(GetParam(), s, s, s);
  check_matmul(GetParam(), 1000, 999, 1001);  // the extra bench set's odd matmul
}

TEST_P(ShapeSweep, Conv2dOneDimensionAtATime) {
  for (int64_t s : kSizes) {
    check_conv2d(GetParam(), 3, 5, s, 4, 1, 1);        // image width
    check_conv2d(GetParam(), 3, s, 5, 4, 1, 1);        // image height
    check_conv2d(GetParam(), s, 6, 6, 4, 1, 1);        // input channels (the reduce)
    check_conv2d(GetParam(), 3, 6, 6, s, 1, 1);        // filters
  }
  check_conv2d(GetParam(), 33, 31, 31, 17, 1, 1);  // everything odd at once
  check_conv2d(GetParam(), 16, 57, 57, 31, 2, 0);  // strided, no padding
  check_conv2d(GetParam(), 16, 57, 57, 32, 2, 1);  // strided to a prime width (29): channel vectors, columns padded
  for (int64_t w : {56, 57}) check_conv2d(GetParam(), 24, w, w, 32, 2, 0, 1);  // pointwise, strided: channel vectors
  // ... over more positions than channels, batched: the channel panels inside the rows (cpu)
  check_conv2d(GetParam(), 24, 30, 30, 48, 2, 0, 1, 3);
}

// Epilogues of register-tiled convolutions: output widths that split into several vector widths
// (7, 13, 14), many output channels with a bias and a residual, and enough input channels for
// BLOCK (the partial sums stored and read back), each against float64 loops.
TEST_P(ShapeSweep, Conv2dEpiloguesIntoNCHW) {
  check_conv2d_epilogue(GetParam(), 64, 14, 14, 64);
  check_conv2d_epilogue(GetParam(), 256, 7, 7, 96);
  check_conv2d_epilogue(GetParam(), 256, 14, 14, 256);
  check_conv2d_epilogue(GetParam(), 128, 14, 14, 48);
  check_conv2d_epilogue(GetParam(), 19, 11, 13, 40);
  check_conv2d_epilogue(GetParam(), 5, 9, 3, 33);
}

// Strided loads along the vector axis (codegen/expander.cpp: the vector loads covering a stride
// of up to 4 and a pick of their lanes), unmasked, gated by a padded output width (13, 28) and
// with padded inputs; stride 5 stays a gather.
TEST_P(ShapeSweep, StridedConvolutions) {
  for (int stride : {2, 3, 4, 5})
    for (int64_t w : {13, 28, 64})
      for (int pad : {0, 1}) check_conv2d(GetParam(), 4, 7, w * stride + 2 - 2 * pad, 32, stride, pad);
}

TEST_P(ShapeSweep, PaddedEpiloguesWithShortRows) {
  for (int64_t n : {1, 3, 4, 7, 14}) check_padded_epilogue(GetParam(), 37, n);
}

TEST_P(ShapeSweep, ReductionsOverLastAndLeadingAxes) {
  for (int64_t s : kSizes)
    for (int axis : {0, 1}) {
      check_reductions(GetParam(), s, kSmall, axis);  // axis 0: a leading axis of length s; 1: s short rows
      check_reductions(GetParam(), kSmall, s, axis);  // axis 1: a last axis of length s; 0: s columns
    }
  check_reductions(GetParam(), 1001, 1001, 0);
  check_reductions(GetParam(), 1001, 1001, 1);
}

TEST_P(ShapeSweep, SoftmaxOverTheLastAxis) {
  for (int64_t s : kSizes) {
    check_softmax(GetParam(), 7, s);       // row length s
    check_softmax(GetParam(), s, kSmall);  // s rows
  }
  check_softmax(GetParam(), 257, 1001);
}

INSTANTIATE_TEST_SUITE_P(Devices, ShapeSweep, ::testing::Values("cpu:0", "opencl:0"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param.substr(0, info.param.find(':'));
                         });

}  // namespace
