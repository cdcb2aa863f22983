// tests/ops/scan_long_test.cpp - cumsum and cumprod of rows longer than the direct n x n scan
// (tensor/scan.cpp cuts them into blocks of 128, recursively): exact against a running sum in
// plain C++ at lengths just past each cut, on any axis, with gradients.
#include <gtest/gtest.h>

#include "ops_check.hpp"

using namespace kiln;
using namespace kiln::testing;

TEST(ScanLong, CumsumOfLongRowsMatchesARunningSum) {
  for (int64_t n : {257, 300, 1000, 16385, 70001}) {
    std::vector<double> x = sample({2, n}, static_cast<uint64_t>(n), -1, 1), want(x.size());
    for (int64_t r = 0; r < 2; ++r) {
      double run = 0;
      for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(r * n + i)] = run += x[static_cast<size_t>(r * n + i)];
    }
    Tensor t = host_tensor(x, {2, n}, dtypes::float64);
    EXPECT_EQ(compare(t.cumsum(1), {2, n}, want, 1e-9, 1e-9), "") << n;
    EXPECT_EQ(compare(t.transpose().contiguous().cumsum(0).transpose(), {2, n}, want, 1e-9, 1e-9), "") << n << " on axis 0";
  }
  // integers stay exact
  std::vector<int32_t> ones(5000, 1);
  std::vector<int32_t> got = Tensor::from_vector<int32_t>(ones, {5000}, kOpsDevice).cumsum(0).to_vector<int32_t>();
  for (int32_t i = 0; i < 5000; ++i) ASSERT_EQ(got[static_cast<size_t>(i)], i + 1);
}

TEST(ScanLong, CumprodOfLongRowsMatchesARunningProduct) {
  const int64_t n = 700;
  std::vector<double> x = sample({n}, 3, 0.99, 1.01), want(x.size());
  double run = 1;
  for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] = run *= x[static_cast<size_t>(i)];
  x[400] = 0;  // a zero ends every later product (no division by block totals)
  for (int64_t i = 400; i < n; ++i) want[static_cast<size_t>(i)] = 0;
  EXPECT_EQ(compare(host_tensor(x, {n}, dtypes::float64).cumprod(0), {n}, want, 1e-9, 1e-12), "");
}

TEST(ScanLong, GradientsOfBlockedScans) {
  std::vector<std::pair<std::vector<double>, Shape>> in{{sample({300}, 5, 0.5, 1.5), {300}}};
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& v) { return v[0].cumsum(0) * v[0]; }, in), "");
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& v) { return v[0].cumprod(0).sum().reshape({1}); }, in, 1e-4, 1e-6), "");
}
