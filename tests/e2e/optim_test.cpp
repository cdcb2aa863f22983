// tests/e2e/optim_test.cpp - SGD and Adam steps against torch's update formulas computed by hand in
// double, for three steps; a step is one schedule; zero_grad; errors.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.hpp"

using namespace kiln;

namespace {

// loss(w) = sum((w * x - y)^2): dloss/dw = 2 (w x - y) x
const std::vector<double> kX{0.5, -1.0, 2.0, 0.25}, kY{1.0, 0.5, -0.5, 2.0}, kW0{0.3, -0.2, 0.1, 0.4};

std::vector<double> grad_of(const std::vector<double>& w) {
  std::vector<double> g(w.size());
  for (size_t i = 0; i < w.size(); ++i) g[i] = 2 * (w[i] * kX[i] - kY[i]) * kX[i];
  return g;
}

template <typename Opt, typename Ref>
void check_steps(Opt&& make_opt, Ref&& reference, const char* name) {
  SCOPED_TRACE(name);
  Tensor w = Tensor::from_vector<double>(kW0, {4}, "cpu:0").requires_grad_();
  Tensor x = Tensor::from_vector<double>(kX, {4}, "cpu:0"), y = Tensor::from_vector<double>(kY, {4}, "cpu:0");
  auto opt = make_opt(w);
  std::vector<double> want = kW0;
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    ((w * x - y) * (w * x - y)).sum().backward();
    opt.step();
    reference(want, grad_of(want), step + 1);
    std::vector<double> got = w.to_vector<double>();
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12 * (1 + std::fabs(want[i]))) << "step " << step << " i " << i;
  }
}

}  // namespace

TEST(Optim, SgdMatchesTorchForThreeSteps) {
  check_steps([](Tensor& w) { return optim::SGD({w}, 0.1); },
              [](std::vector<double>& w, const std::vector<double>& g, int) {
                for (size_t i = 0; i < w.size(); ++i) w[i] -= 0.1 * g[i];
              }, "plain");
  for (bool nesterov : {false, true}) {
    std::vector<double> buf(4);
    check_steps([&](Tensor& w) { return optim::SGD({w}, 0.05, 0.9, 0.01, nesterov); },
                [&](std::vector<double>& w, const std::vector<double>& grad, int t) {
                  for (size_t i = 0; i < w.size(); ++i) {
                    double g = grad[i] + 0.01 * w[i];
                    buf[i] = t == 1 ? g : 0.9 * buf[i] + g;
                    w[i] -= 0.05 * (nesterov ? g + 0.9 * buf[i] : buf[i]);
                  }
                }, nesterov ? "momentum, weight decay, nesterov" : "momentum, weight decay");
  }
}

// tinygrad's classic momentum: the rate scales the gradient before the buffer. With a rate that
// changes between steps (set_lr) it differs from torch's form, which scales the buffer.
TEST(Optim, ClassicSgdScalesTheGradientBeforeTheBuffer) {
  for (bool classic : {false, true}) {
    SCOPED_TRACE(classic ? "classic" : "torch");
    Tensor w = Tensor::from_vector<double>(kW0, {4}, "cpu:0").requires_grad_();
    Tensor x = Tensor::from_vector<double>(kX, {4}, "cpu:0"), y = Tensor::from_vector<double>(kY, {4}, "cpu:0");
    optim::SGD opt({w}, 0.1, 0.9, 0.01, false, classic);
    std::vector<double> want = kW0, buf(4, 0.0);
    for (int step = 0; step < 3; ++step) {
      const double lr = 0.1 / (step + 1);
      opt.set_lr(lr);
      opt.zero_grad();
      ((w * x - y) * (w * x - y)).sum().backward();
      opt.step();
      std::vector<double> g = grad_of(want);
      for (size_t i = 0; i < 4; ++i) {
        double gi = g[i] + 0.01 * want[i];
        buf[i] = 0.9 * buf[i] + (classic ? lr * gi : gi);
        want[i] -= classic ? buf[i] : lr * buf[i];
      }
      std::vector<double> got = w.to_vector<double>();
      for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 1e-12 * (1 + std::fabs(want[i]))) << "step " << step << " i " << i;
    }
  }
}

TEST(Optim, AdamAndAdamWMatchTorchForThreeSteps) {
  for (double wd : {0.0, 0.1}) {
    std::vector<double> m(4), v(4);
    check_steps([&](Tensor& w) { return optim::Adam({w}, 0.01, 0.9, 0.999, 1e-8, wd); },
                [&](std::vector<double>& w, const std::vector<double>& g, int t) {
                  for (size_t i = 0; i < w.size(); ++i) {
                    w[i] *= 1 - 0.01 * wd;
                    m[i] = 0.9 * m[i] + 0.1 * g[i];
                    v[i] = 0.999 * v[i] + 0.001 * g[i] * g[i];
                    double mh = m[i] / (1 - std::pow(0.9, t)), vh = v[i] / (1 - std::pow(0.999, t));
                    w[i] -= 0.01 * mh / (std::sqrt(vh) + 1e-8);
                  }
                }, wd > 0 ? "AdamW" : "Adam");
  }
}

TEST(Optim, AStepIsOneScheduleAndZeroGradForgets) {
  Tensor w1 = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}, "cpu:0").requires_grad_();
  Tensor w2 = Tensor::from_vector<float>({0.5f, -0.5f}, {2}, "cpu:0").requires_grad_();
  Tensor x = Tensor::from_vector<float>({1, -1, 2, 0.5f}, {2, 2}, "cpu:0");
  optim::Adam opt({w1, w2}, 0.01);
  (x.matmul(w1) + w2).relu().sum().backward();
  std::vector<Tensor> step = opt.step_tensors();
  EXPECT_EQ(step.size(), 10u);  // beta1^t, beta2^t, m, v and the parameter, for each
  size_t stores = 0;
  for (const ExecItem& e : Tensor::schedule_all(step)) stores += e.is_copy ? 0 : 1;
  EXPECT_GE(stores, 1u);
  Tensor::realize_all(step);
  EXPECT_TRUE(w1.grad());
  opt.zero_grad();
  EXPECT_FALSE(w1.grad());
  EXPECT_FALSE(w2.grad());
  std::vector<float> before = w1.to_vector<float>();
  opt.step();  // no gradients: nothing moves
  EXPECT_EQ(w1.to_vector<float>(), before);
  Tensor plain = Tensor::from_vector<float>({1}, {1}, "cpu:0");
  EXPECT_THROW(optim::SGD({plain}), Error);
  EXPECT_THROW(optim::SGD({w1}, 0.1, 0, 0, true), Error);
}

// A training step (forward, backward, optimizer step) under a Jit: captured once, replayed; the
// weights follow the same path as eager steps.
TEST(Optim, ATrainingStepRunsUnderAJit) {
  auto make = [](float scale) {
    std::vector<float> v(12);
    for (size_t i = 0; i < v.size(); ++i) v[i] = scale * static_cast<float>((i * 5) % 7) - 0.3f;
    return v;
  };
  auto batch = [&](int step) { return Tensor::from_vector<float>(make(0.1f * static_cast<float>(step + 1)), {4, 3}, "cpu:0"); };
  Tensor target = Tensor::from_vector<float>({1, 0, 0, 1, 1, 0, 0, 1}, {4, 2}, "cpu:0");
  auto run = [&](bool jitted) {
    Tensor w = Tensor::from_vector<float>({0.1f, -0.2f, 0.3f, 0.05f, 0.2f, -0.1f}, {2, 3}, "cpu:0").requires_grad_();
    optim::SGD opt({w}, 0.1, 0.9);
    auto step = [&](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
      opt.zero_grad();
      Tensor loss = (in[0].linear(w).log_softmax(1) * target).sum() * -0.25;
      loss.backward();
      std::vector<Tensor> out = opt.step_tensors();
      out.push_back(loss);  // the loss is computed in the same schedule as the update
      return out;
    };
    Jit jit(step);
    std::vector<float> losses;
    for (int s = 0; s < 5; ++s) {
      std::vector<Tensor> out = jitted ? jit({batch(s)}) : step({batch(s)}, {});
      if (!jitted) Tensor::realize_all(out);
      losses.push_back(out.back().item<float>());
    }
    EXPECT_EQ(jit.captured(), jitted);
    std::vector<float> w_end = w.to_vector<float>();
    losses.insert(losses.end(), w_end.begin(), w_end.end());
    return losses;
  };
  std::vector<float> eager = run(false), jitted = run(true);
  ASSERT_EQ(eager.size(), jitted.size());
  for (size_t i = 0; i < eager.size(); ++i) EXPECT_NEAR(jitted[i], eager[i], 1e-6f) << i;
  EXPECT_NE(eager[5], 0.1f);  // the weights moved
}

// Regression: two parameters made by one identical lazy expression (zeros(...).contiguous()) were
// realized into one shared buffer, and their updates wrote it twice (a schedule cycle, or one
// parameter silently taking the other's update). The optimizer gives each its own buffer.
TEST(Optim, ParametersFromIdenticalExpressionsAreUpdatedSeparately) {
  Tensor a = Tensor::zeros({3}, dtypes::float32, "cpu:0").contiguous().realize().requires_grad_();
  Tensor b = Tensor::zeros({3}, dtypes::float32, "cpu:0").contiguous().realize().requires_grad_();
  optim::SGD opt({a, b}, 1.0);
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3}, "cpu:0");
  (a * x + b * 2.0f).sum().backward();
  opt.step();
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{-1, -2, -3}));
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{-2, -2, -2}));
}

// Regression: Adam counted steps for the optimizer, so a step in which a parameter had no gradient
// still advanced its bias correction. torch counts per parameter: here w1 skips the first step and
// must then move exactly as a fresh Adam's first step would.
TEST(Optim, AdamCountsStepsPerParameter) {
  Tensor w1 = Tensor::from_vector<double>({0.5, -1.0}, {2}, "cpu:0").requires_grad_();
  Tensor w2 = Tensor::from_vector<double>({2.0, 3.0}, {2}, "cpu:0").requires_grad_();
  optim::Adam opt({w1, w2}, 0.1);
  (w2 * w2).sum().backward();  // only w2 has a gradient
  opt.step();
  opt.zero_grad();
  (w1 * 3.0).sum().backward();
  opt.step();
  // first step for w1: m = 0.1 g, v = 0.001 g^2, corrected m / sqrt(v) = sign(g): w1 - 0.1 (g = 3)
  std::vector<double> got = w1.to_vector<double>();
  EXPECT_NEAR(got[0], 0.5 - 0.1 * 3 / (3 + 1e-8), 1e-12);
  EXPECT_NEAR(got[1], -1.0 - 0.1 * 3 / (3 + 1e-8), 1e-12);
}
