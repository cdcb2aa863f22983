// examples/train_mlp.cpp - trains a small classifier end to end: a generated three-arm spiral
// (2-D points, three classes; the same points on every machine, no download), an MLP
// 2-64-64-3 with Adam, every training step (forward, backward, update) replayed by a kiln::Jit.
// Prints the loss curve and the accuracy on held-out points; exits 1 below 90%. With --eager the
// steps run without the Jit and print the same losses.
//
//   build/examples/train_mlp [--eager] [device]      (expected: held-out accuracy about 97-99%)
#include <kiln/kiln.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

#include "spiral.hpp"

using namespace spiral;  // the data, the model's start and their sizes (spiral.hpp)

namespace {
constexpr int kSteps = 400;
}  // namespace

int main(int argc, char** argv) {
  using kiln::Tensor;
  // train_mlp [--eager] [device]: --eager runs each step directly instead of through the Jit (the
  // losses are the same, bit for bit: a test compares the two runs)
  bool eager = false;
  std::string dev;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--eager") eager = true;
    else dev = argv[i];
  }
  Data train, test;
  generate(train, test);
  int64_t n = static_cast<int64_t>(train.y.size()), m = static_cast<int64_t>(test.y.size());
  kiln::manual_seed(7);
  std::vector<Tensor> params = init_params(dev);
  for (Tensor& p : params) p.realize().requires_grad_();
  auto model = [&](const Tensor& x) {
    Tensor h = x.linear(params[0], params[1]).relu();
    h = h.linear(params[2], params[3]).relu();
    return h.linear(params[4], params[5]);
  };
  kiln::optim::Adam opt(params, 0.01);
  // one step: inputs (x, one-hot y) of a batch; outputs the loss, realized with the update
  auto train_step = [&](const std::vector<Tensor>& in, const std::vector<kiln::BoundVariable>&) {
    opt.zero_grad();
    Tensor loss = -(model(in[0]).log_softmax(1) * in[1]).sum() / static_cast<double>(kBatch);
    loss.backward();
    std::vector<Tensor> out = opt.step_tensors();
    out.insert(out.begin(), loss);
    return out;
  };
  kiln::Jit step(train_step);

  Tensor all_x = Tensor::from_vector<float>(train.x, {n, 2}, dev);
  Tensor all_y = Tensor::from_vector<int32_t>(train.y, {n}, dev);
  Tensor onehot = all_y.reshape({n, 1}).eq(Tensor::arange(0, kClasses, 1, kiln::dtypes::int32, dev).reshape({1, kClasses}))
                      .cast(kiln::dtypes::float32)
                      .realize();
  all_x.realize();
  Lcg order{3};
  std::printf("training a 2-%lld-%lld-%lld MLP on %lld spiral points (Adam, batch %lld)\n", static_cast<long long>(kHidden),
              static_cast<long long>(kHidden), static_cast<long long>(kClasses), static_cast<long long>(n), static_cast<long long>(kBatch));
  for (int s = 0; s < kSteps; ++s) {
    int64_t start = static_cast<int64_t>(order.uniform() * static_cast<double>(n - kBatch));
    Tensor xb = all_x.shrink({{start, start + kBatch}, {0, 2}}).contiguous();
    Tensor yb = onehot.shrink({{start, start + kBatch}, {0, kClasses}}).contiguous();
    std::vector<Tensor> out = eager ? train_step({xb, yb}, {}) : step({xb, yb});
    if (eager) Tensor::realize_all(out);
    if (s % 50 == 0 || s == kSteps - 1) std::printf("step %4d  loss %.9g\n", s, out[0].item<float>());
  }
  Tensor pred = model(Tensor::from_vector<float>(test.x, {m, 2}, dev)).argmax(1);
  std::vector<int32_t> p = pred.to_vector<int32_t>();
  int64_t right = 0;
  for (int64_t i = 0; i < m; ++i) right += p[static_cast<size_t>(i)] == test.y[static_cast<size_t>(i)];
  double acc = static_cast<double>(right) / static_cast<double>(m);
  std::printf("held-out accuracy: %.1f%% (%lld of %lld)", 100 * acc, static_cast<long long>(right), static_cast<long long>(m));
  if (eager) std::printf("; eager steps (no Jit)\n");
  else std::printf("; the step ran %zu kernels and copies per call\n", step.kernel_count());
  if (acc < 0.9) {
    std::printf("FAILED: expected at least 90%%\n");
    return 1;
  }
}
