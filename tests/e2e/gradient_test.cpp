// tests/e2e/gradient_test.cpp - every gradient rule on cpu (tests/common/gradient_check.hpp), and
// the tie, accumulation and detach rules and the errors of backward().
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "gradient_check.hpp"
#include "kiln/kiln.hpp"

using namespace kiln;

TEST(Gradient, ElementwiseOpsMatchFiniteDifferences) { kiln::testing::check_elementwise_gradients("cpu:0"); }
TEST(Gradient, ReductionsMovementAndCompositeOpsMatchFiniteDifferences) { kiln::testing::check_composite_gradients("cpu:0"); }

TEST(Gradient, TiesLeavesUsedTwiceAccumulationAndDetach) {
  Tensor x = Tensor::from_vector<float>({1, 3, 3, 2}, {4}, "cpu:0");
  // a max reduction splits the gradient among the tied maxima (tinygrad); elementwise maximum
  // gives each side half (torch)
  EXPECT_EQ(x.max().gradient({x})[0].to_vector<float>(), (std::vector<float>{0, 0.5f, 0.5f, 0}));
  EXPECT_EQ(x.maximum(x).sum().gradient({x})[0].to_vector<float>(), (std::vector<float>{1, 1, 1, 1}));
  // a leaf used twice
  EXPECT_EQ((x * x).sum().gradient({x})[0].to_vector<float>(), (std::vector<float>{2, 6, 6, 4}));
  // backward accumulates across calls, into the leaves that require grad only
  Tensor w = Tensor::from_vector<float>({0.5f, -1, 2, 0.25f}, {4}, "cpu:0").requires_grad_();
  Tensor b = Tensor::from_vector<float>({1, 1, 1, 1}, {4}, "cpu:0");
  EXPECT_TRUE(w.requires_grad());
  EXPECT_FALSE(w.grad());
  (w * x + b).sum().backward();
  EXPECT_EQ(w.grad()->to_vector<float>(), x.to_vector<float>());
  EXPECT_FALSE(b.grad());
  (w * w).sum().backward();
  std::vector<float> want{1 + 1.0f, 3 - 2.0f, 3 + 4.0f, 2 + 0.5f};
  EXPECT_EQ(w.grad()->to_vector<float>(), want);
  // detach stops the gradient
  EXPECT_EQ((w.detach() * w).sum().gradient({w})[0].to_vector<float>(), w.to_vector<float>());
  // an assign not yet realized passes the gradient to the value it writes, not to the old contents
  Tensor buf = Tensor::zeros({4}, dtypes::float32, "cpu:0").contiguous().realize();
  buf.assign(x * 3.0f);
  EXPECT_EQ((buf * buf).sum().gradient({x})[0].to_vector<float>(), (std::vector<float>{18, 54, 54, 36}));
  // a target the loss does not depend on gets zeros
  EXPECT_EQ(x.sum().gradient({w})[0].to_vector<float>(), (std::vector<float>{0, 0, 0, 0}));
}

TEST(Gradient, ErrorsNameTheProblemAndTheFix) {
  Tensor w = Tensor::from_vector<float>({1, 2, 3}, {3}, "cpu:0").requires_grad_();
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message([&] { (w * 2.0f).backward(); }).find("3 elements"), std::string::npos);
  Tensor c = Tensor::from_vector<float>({1, 2}, {2}, "cpu:0");
  EXPECT_NE(message([&] { c.sum().backward(); }).find("requires_grad_()"), std::string::npos);
  Tensor i = Tensor::from_vector<int32_t>({1, 2}, {2}, "cpu:0");
  EXPECT_NE(message([&] { i.requires_grad_(); }).find("int32"), std::string::npos);
  Tensor loss = (w * w).sum();
  loss.realize();
  EXPECT_NE(message([&] { loss.backward(); }).find("already realized"), std::string::npos);
}
