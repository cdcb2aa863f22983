// tests/ops/leaf_view_test.cpp - the gradient of a view of a realized leaf (its element, reshaped
// to 0-d) is not "already realized": the view reads the leaf itself (a regression: a 0-d sum that
// reduces nothing left the loss a view, and gradient() refused it).
#include <gtest/gtest.h>

#include "ops_check.hpp"

using namespace kiln;
using namespace kiln::testing;

TEST(LeafView, AViewOfARealizedLeafHasAGradient) {
  Tensor x = host_tensor({1, 2, 3}, {3}).realize();
  auto f = [](const Tensor& t) { return t.shrink({{0, 1}}).reshape({}); };
  f(x).realize();  // the same view realized before: the next one must still reach x
  EXPECT_EQ(compare(f(x).sum().gradient({x})[0], {3}, {1, 0, 0}), "");
  EXPECT_EQ(compare(x.reshape({1, 3}).shrink({{0, 1}, {2, 3}}).reshape({}).gradient({x})[0], {3}, {0, 0, 1}), "");
  // a tensor that is itself realized still says so
  Tensor y = (x * 2.0f).sum().realize();
  EXPECT_THROW(y.gradient({x}), Error);
}
