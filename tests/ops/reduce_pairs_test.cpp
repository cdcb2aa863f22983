// tests/ops/reduce_pairs_test.cpp - std_mean / var_mean against a plain C++ reference and their
// gradient; bitcast's bytes and its size error.
#include <gtest/gtest.h>

#include <cmath>

#include "ops_check.hpp"

using namespace kiln;
using namespace kiln::testing;

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
