// tests/e2e/gradient_test.cpp - every gradient rule on cpu (tests/common/gradient_check.hpp), and
// the tie, accumulation and detach rules and the errors of backward().
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "gradient_check.hpp"
#include "ir/traverse.hpp"
#include "kiln/kiln.hpp"
#include "tensor/tensor_state.hpp"

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

// The largest buffer a schedule writes or reads, in elements.
static int64_t largest_buffer(const std::vector<ExecItem>& items) {
  int64_t most = 0;
  for (const ExecItem& item : items)
    for (const UOp& b : item.buffers) most = std::max(most, b.arg_ints()[1]);
  return most;
}

// A convolution's input gradient is a transposed convolution (tensor/nn.cpp convolve): no buffer
// of every window's product with the weight (KH*KW times the input) is written and folded back.
TEST(Gradient, AConvolutionsInputGradientIsAConvolution) {
  Tensor x = Tensor::rand({2, 4, 12, 12}, dtypes::float32, "cpu:0").realize();
  Tensor w = Tensor::rand({8, 4, 3, 3}, dtypes::float32, "cpu:0").realize();
  Tensor r = Tensor::rand({2, 8, 12, 12}, dtypes::float32, "cpu:0").realize();
  std::vector<Tensor> g = (x.conv2d(w, std::nullopt, 1, 1) * r).sum().gradient({x, w});
  EXPECT_LE(largest_buffer(Tensor::schedule_all(g)), 2 * 8 * 14 * 14);  // at most the padded output gradient
  // strided: the output's gradient spread out by the stride, (2, 8, 14, 14) with its padding
  std::vector<Tensor> s = (x.conv2d(w, std::nullopt, 2, 1) * r.shrink({{0, 2}, {0, 8}, {0, 6}, {0, 6}})).sum().gradient({x, w});
  EXPECT_LE(largest_buffer(Tensor::schedule_all(s)), 2 * 8 * 14 * 14);
}

// The table of composites' gradients holds no graph that is gone: a training loop building a
// convolution every step does not grow it (nor keep the steps' graphs alive).
TEST(Gradient, CompositesOfGoneGraphsAreDropped) {
  Tensor w = Tensor::rand({4, 2, 3, 3}, dtypes::float32, "cpu:0").realize();
  const size_t before = detail::composite_gradients();  // earlier tests' graphs, some still held (caches)
  for (int step = 0; step < 300; ++step) {  // four composites a step: convolution, max pool, two windows
    Tensor x = Tensor::rand({1, 2, 6, 6}, dtypes::float32, "cpu:0") + static_cast<double>(step);
    Tensor y = x.conv2d(w, std::nullopt, 1, 1).max_pool2d(3, 2, 1);
    EXPECT_GT(detail::composite_gradients(), 0u);
  }
  EXPECT_LT(detail::composite_gradients(), before + 300);  // at most twice what was live, not 1200 more
}

// Pooling windows that do not overlap are cut apart (tensor/nn.cpp disjoint_windows): a max pool's
// input gradient picks each element's window, it sums over no tiled copies.
TEST(Gradient, ADisjointPoolsGradientSumsNothing) {
  Tensor x = Tensor::rand({2, 3, 8, 8}, dtypes::float32, "cpu:0").realize();
  Tensor dx = x.max_pool2d(2).sum().gradient({x})[0];
  for (const ExecItem& item : dx.schedule()) {
    if (item.buffers.empty() || item.buffers[0].arg_ints()[1] != x.numel()) continue;  // the max and the tie counts
    for (const UOp& u : toposort(item.ast)) EXPECT_NE(u.op(), Ops::REDUCE) << item.name;
  }
}

// An overlapping max pool's gradient (its own, tensor/conv.cpp max_pool2d) goes, as torch's, to
// each window's first maximum in row-major order (not shared among ties as max's rule would);
// padding is never a maximum.
TEST(Gradient, AnOverlappingMaxPoolGivesEachWindowsGradientToItsFirstMaximum) {
  Tensor x = Tensor::ones({1, 1, 5, 4}, dtypes::float32, "cpu:0").realize();
  std::vector<float> got = x.max_pool2d(3, 2, 1).sum().gradient({x})[0].to_vector<float>();
  std::vector<double> want(20, 0.0);
  for (int oy = 0; oy < 3; ++oy)
    for (int ox = 0; ox < 2; ++ox) want[static_cast<size_t>(std::max(2 * oy - 1, 0) * 4 + std::max(2 * ox - 1, 0))] += 1.0;
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "element " << i;
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
