// tests/ops/check_test.cpp - the helpers of ops_check.hpp fail when they should (a checker that
// cannot fail would make every op test in this folder vacuous).
#include <gtest/gtest.h>

#include "ops_check.hpp"

using namespace kiln;
using namespace kiln::testing;

TEST(OpsCheck, CompareNamesTheShapeOrTheElementOff) {
  Tensor t = host_tensor({1, 2, 3}, {3});
  EXPECT_EQ(compare(t, {3}, {1, 2, 3}), "");
  EXPECT_NE(compare(t, {3}, {1, 2, 3.1}).find("element 2"), std::string::npos);
  EXPECT_NE(compare(t, {1, 3}, {1, 2, 3}).find("shape"), std::string::npos);
}

TEST(OpsCheck, GradientCheckCatchesAWrongGradient) {
  std::vector<std::pair<std::vector<double>, Shape>> in{{sample({5}, 1), {5}}};
  EXPECT_EQ(check_gradient([](const std::vector<Tensor>& x) { return x[0] * x[0]; }, in), "");
  // detach hides one factor from autograd: the gradient is half of the true one
  EXPECT_NE(check_gradient([](const std::vector<Tensor>& x) { return x[0] * x[0].detach(); }, in), "");
}
