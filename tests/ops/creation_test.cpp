// tests/ops/creation_test.cpp - linspace, eye and the random creation functions: exact values where
// they are defined, ranges and moments for random ones, and the errors.
#include <gtest/gtest.h>

#include <cmath>

#include "ops_check.hpp"

using namespace kiln;
using namespace kiln::testing;

TEST(Creation, LinspaceIncludesBothEndsAndCastsLikeTinygrad) {
  EXPECT_EQ(compare(Tensor::linspace(5, 10, 3, dtypes::float32, kOpsDevice), {3}, {5, 7.5, 10}), "");
  EXPECT_EQ(compare(Tensor::linspace(5.5, -5.5, 5, dtypes::float32, kOpsDevice), {5}, {5.5, 2.75, 0, -2.75, -5.5}), "");
  EXPECT_EQ(compare(Tensor::linspace(5, 10, 1, dtypes::float32, kOpsDevice), {1}, {5}), "");
  EXPECT_EQ(Tensor::linspace(5, 10, 0, dtypes::float32, kOpsDevice).shape(), (Shape{0}));
  // integer results truncate the float32 steps
  EXPECT_EQ(Tensor::linspace(0, 3, 4, dtypes::int32, kOpsDevice).to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(Tensor::linspace(0, 1, 3, dtypes::int32, kOpsDevice).to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 1}));
  EXPECT_THROW(Tensor::linspace(0, 1, -1), Error);
  EXPECT_THROW(Tensor::linspace(0, 1, 3, dtypes::bool_), Error);
}

TEST(Creation, EyeIsOneOnTheDiagonalOfAnyRectangle) {
  for (auto [n, m] : {std::pair<int64_t, int64_t>{3, 5}, {5, 3}, {1, 1}, {4, 4}}) {
    std::vector<double> want(static_cast<size_t>(n * m), 0);
    for (int64_t i = 0; i < std::min(n, m); ++i) want[static_cast<size_t>(i * m + i)] = 1;
    EXPECT_EQ(compare(Tensor::eye(n, m, dtypes::float32, kOpsDevice), {n, m}, want), "") << n << "x" << m;
  }
  EXPECT_EQ(Tensor::eye(3, std::nullopt, dtypes::int32, kOpsDevice).sum().item<int32_t>(), 3);
  EXPECT_EQ(Tensor::eye(0, std::nullopt, dtypes::float32, kOpsDevice).shape(), (Shape{0, 0}));
  EXPECT_THROW(Tensor::eye(-3, 3), Error);
  EXPECT_THROW(Tensor::eye(3, -3), Error);
}

TEST(Creation, RandomTensorsStayInRangeWithTheRightMoments) {
  manual_seed(7);
  const int64_t n = 20000;
  std::vector<float> u = Tensor::uniform({n}, -3, 5, dtypes::float32, kOpsDevice).to_vector<float>();
  double mean = 0;
  for (float v : u) {
    ASSERT_GE(v, -3.0f);
    ASSERT_LT(v, 5.0f);
    mean += v / n;
  }
  EXPECT_NEAR(mean, 1.0, 0.1);
  std::vector<float> g = Tensor::normal({n}, 3, 2, dtypes::float32, kOpsDevice).to_vector<float>();
  double gm = 0, gv = 0;
  for (float v : g) gm += v / n;
  for (float v : g) gv += (v - gm) * (v - gm) / n;
  EXPECT_NEAR(gm, 3.0, 0.1);
  EXPECT_NEAR(std::sqrt(gv), 2.0, 0.1);
  // every integer of [low, high) shows up, none outside
  std::vector<int32_t> r = Tensor::randint({n}, -3, 4, dtypes::int32, kOpsDevice).to_vector<int32_t>();
  std::vector<int> counts(7, 0);
  for (int32_t v : r) {
    ASSERT_GE(v, -3);
    ASSERT_LT(v, 4);
    ++counts[static_cast<size_t>(v + 3)];
  }
  for (int c : counts) EXPECT_GT(c, n / 7 / 2);
  // a range wider than float32's integers draws float64 bits
  std::vector<int64_t> wide = Tensor::randint({1000}, 0, int64_t{1} << 40, dtypes::int64, kOpsDevice).to_vector<int64_t>();
  int64_t most = 0;
  for (int64_t v : wide) {
    ASSERT_GE(v, 0);
    ASSERT_LT(v, int64_t{1} << 40);
    most = std::max(most, v);
  }
  EXPECT_GT(most, int64_t{1} << 39);
  // the same seed gives the same numbers
  manual_seed(7);
  EXPECT_EQ(Tensor::uniform({n}, -3, 5, dtypes::float32, kOpsDevice).to_vector<float>(), u);
}

TEST(Creation, InitializersUseTorchsBounds) {
  manual_seed(1);
  double bound = std::sqrt(6.0 / (1 + 0.01 * 0.01) / 32);
  Tensor k = Tensor::kaiming_uniform({64, 32}, 0.01, dtypes::float32, kOpsDevice);
  EXPECT_LE(k.abs().max().item<float>(), bound);
  EXPECT_GT(k.abs().max().item<float>(), 0.9 * bound);
  double gb = std::sqrt(6.0 / (4 + 6));
  Tensor gl = Tensor::glorot_uniform({4, 6}, dtypes::float32, kOpsDevice);
  EXPECT_LE(gl.abs().max().item<float>(), gb);
  EXPECT_LE(Tensor::scaled_uniform({4, 4}, dtypes::float32, kOpsDevice).abs().max().item<float>(), 0.25f);
  double sd = std::sqrt(2.0 / (1 + 0.01 * 0.01) / 256);
  std::vector<float> kn = Tensor::kaiming_normal({256, 256}, 0.01, dtypes::float32, kOpsDevice).to_vector<float>();
  double var = 0;
  for (float v : kn) var += v * v / static_cast<double>(kn.size());
  EXPECT_NEAR(std::sqrt(var), sd, 0.05 * sd);
}

TEST(Creation, RandomCreationRejectsBadArguments) {
  EXPECT_THROW(Tensor::uniform({3}, 1, 1), Error);
  EXPECT_THROW(Tensor::uniform({3}, 0, 1, dtypes::int32), Error);
  EXPECT_THROW(Tensor::normal({3}, 0, -1), Error);
  EXPECT_THROW(Tensor::randint({3}, 5, 5), Error);
  EXPECT_THROW(Tensor::randint({3}, 0, 5, dtypes::float32), Error);
  EXPECT_THROW(Tensor::kaiming_uniform({-3, 3}), Error);
  EXPECT_THROW(Tensor::glorot_uniform({}), Error);
}
