// tests/ops/reduce_pairs_test.cpp - argmin (first minimum, NaN as the minimum, every dtype kind),
// std_mean / var_mean against a plain C++ reference, their gradients, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops_check.hpp"

using namespace kiln;
using namespace kiln::testing;

TEST(ReducePairs, ArgminTakesTheFirstMinimum) {
  Tensor x = host_tensor({3, 1, 2, 1, 5, 0, 0, 7}, {2, 4});
  EXPECT_EQ(compare(x.argmin(1), {2}, {1, 1}), "");
  EXPECT_EQ(compare(x.argmin(-2, true), {1, 4}, {0, 1, 1, 0}), "");
  EXPECT_EQ(compare(x.reshape({8}).argmin(0), {}, {5}), "");
  double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(compare(host_tensor({2, nan, -1, nan}, {4}).argmin(0), {}, {1}), "");
  // integers at their extremes (-x would overflow), unsigned, bool
  EXPECT_EQ(compare(host_tensor({5, -2147483648.0, 2147483647.0}, {3}, dtypes::int32).argmin(0), {}, {1}), "");
  EXPECT_EQ(compare(host_tensor({7, 255, 0, 3}, {4}, dtypes::uint8).argmin(0), {}, {2}), "");
  EXPECT_EQ(compare(host_tensor({1, 1, 0, 0}, {4}, dtypes::bool_).argmin(0), {}, {2}), "");
}

TEST(ReducePairs, StdMeanAndVarMean) {
  Shape s{3, 4};
  std::vector<double> v = sample(s, 7);
  Tensor x = host_tensor(v, s);
  std::vector<double> mean(3), var(3), var0(3);
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 4; ++c) mean[r] += v[r * 4 + c] / 4;
    for (int c = 0; c < 4; ++c) var[r] += (v[r * 4 + c] - mean[r]) * (v[r * 4 + c] - mean[r]);
    var0[r] = var[r] / 4;
    var[r] /= 3;
  }
  auto [sd, m] = x.std_mean({1});
  std::vector<double> sdv;
  for (double q : var) sdv.push_back(std::sqrt(q));
  EXPECT_EQ(compare(sd, {3}, sdv), "");
  EXPECT_EQ(compare(m, {3}, mean), "");
  auto [va, m2] = x.var_mean({-1}, true, 0);
  EXPECT_EQ(compare(va, {3, 1}, var0), "");
  EXPECT_EQ(compare(m2, {3, 1}, mean), "");
  std::vector<std::pair<std::vector<double>, Shape>> in{{v, s}};
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& t) { auto [a, b] = t[0].std_mean({0}); return a * b; }, in), "");
}

TEST(ReducePairs, Errors) {
  Tensor x = Tensor::ones({2, 0}, dtypes::float32, kOpsDevice);
  try {
    x.argmin(1);
    ADD_FAILURE() << "argmin of an empty axis did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("argmin: dimension 1 of (2, 0) is empty"), std::string::npos) << e.what();
  }
  try {
    x.argmin(2);
    ADD_FAILURE() << "argmin of axis 2 did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::out_of_range);
    EXPECT_NE(std::string(e.what()).find("argmin"), std::string::npos) << e.what();
  }
}

TEST(ReducePairs, BitcastReinterpretsTheBytes) {
  Tensor f = host_tensor({1.0, -2.0, 0.0}, {3});
  std::vector<int32_t> bits = f.bitcast(dtypes::int32).to_vector<int32_t>();
  EXPECT_EQ(bits, (std::vector<int32_t>{0x3f800000, static_cast<int32_t>(0xc0000000u), 0}));
  EXPECT_EQ(compare(f.bitcast(dtypes::uint32).bitcast(dtypes::float32), {3}, {1.0, -2.0, 0.0}), "");
  try {
    f.bitcast(dtypes::int16);
    ADD_FAILURE() << "bitcast to a smaller dtype did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bitcast: float32 (4 bytes) -> int16 (2 bytes)"), std::string::npos) << e.what();
  }
}
