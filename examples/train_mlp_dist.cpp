// examples/train_mlp_dist.cpp - train_mlp.cpp's spiral classifier trained data-parallel with
// kiln::dist: every rank holds the whole model, takes its share of each batch, and the ranks
// average their gradients (dist::all_reduce_grads) before every rank's Adam takes the same step.
// The result is the 1-rank training on the whole batch (the test compares the loss curves), and
// every rank ends with the same weights, bit for bit (checked at the end against rank 0's).
//
//   mpirun -np 2 build/examples/train_mlp_dist [--steps N] [device]
//   build/examples/train_mlp_dist                       (one rank: train_mlp --eager's curve)
//
// Each rank's loss is its rows' summed cross-entropy times world_size / batch, so the mean of the
// ranks' gradients is the gradient of the whole batch's mean loss even when the batch does not
// split evenly (128 rows over 3 ranks: 43, 43, 42). The steps run eagerly: a kiln::Jit cannot
// capture the MPI call between the backward pass and the update (docs/dist.md).
#include <kiln/dist.hpp>
#include <kiln/kiln.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "spiral.hpp"

using namespace spiral;  // the data, the model's start and their sizes (spiral.hpp)

int main(int argc, char** argv) {
  using kiln::Tensor;
  namespace dist = kiln::dist;
  int steps = 400;
  std::string dev;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc) steps = std::stoi(argv[++i]);
    else dev = a;
  }
  dist::init();
  const int ws = dist::world_size(), me = dist::rank();
  // this rank's rows of each batch: torch.tensor_split's shares (the first 128 % ws get one more)
  int64_t lo = 0;
  for (int r = 0; r < me; ++r) lo += kBatch / ws + (r < kBatch % ws ? 1 : 0);
  const int64_t rows = kBatch / ws + (me < kBatch % ws ? 1 : 0);

  Data train, test;
  generate(train, test);
  int64_t n = static_cast<int64_t>(train.y.size()), m = static_cast<int64_t>(test.y.size());
  kiln::manual_seed(7);  // every rank draws the same start; a broadcast makes sure of it below
  std::vector<Tensor> params = init_params(dev);
  for (Tensor& p : params) {
    p = dist::broadcast(p, 0).contiguous();
    p.realize().requires_grad_();
  }
  auto model = [&](const Tensor& x) {
    Tensor h = x.linear(params[0], params[1]).relu();
    h = h.linear(params[2], params[3]).relu();
    return h.linear(params[4], params[5]);
  };
  kiln::optim::Adam opt(params, 0.01);

  Tensor all_x = Tensor::from_vector<float>(train.x, {n, 2}, dev).realize();
  Tensor all_y = Tensor::from_vector<int32_t>(train.y, {n}, dev);
  Tensor onehot = all_y.reshape({n, 1}).eq(Tensor::arange(0, kClasses, 1, kiln::dtypes::int32, dev).reshape({1, kClasses}))
                      .cast(kiln::dtypes::float32)
                      .realize();
  Lcg order{3};  // the same batch windows on every rank
  if (me == 0)
    std::printf("training a 2-%lld-%lld-%lld MLP on %lld spiral points data-parallel over %d rank(s) (Adam, batch %lld)\n",
                static_cast<long long>(kHidden), static_cast<long long>(kHidden), static_cast<long long>(kClasses), static_cast<long long>(n),
                ws, static_cast<long long>(kBatch));
  for (int s = 0; s < steps; ++s) {
    int64_t start = static_cast<int64_t>(order.uniform() * static_cast<double>(n - kBatch)) + lo;
    Tensor xb = all_x.shrink({{start, start + rows}, {0, 2}}).contiguous();
    Tensor yb = onehot.shrink({{start, start + rows}, {0, kClasses}}).contiguous();
    opt.zero_grad();
    Tensor summed = -(model(xb).log_softmax(1) * yb).sum();
    Tensor loss = summed * (static_cast<double>(ws) / kBatch);  // mean over ranks of this = the batch's gradient
    loss.backward();
    // realizes the gradients and the loss in one schedule and averages the gradients over the ranks
    // (a large model's transfers overlap the backward pass: docs/dist.md)
    dist::all_reduce_grads(params, {summed});
    std::vector<Tensor> updated = opt.step_tensors();
    Tensor::realize_all(updated);
    if (s % 50 == 0 || s == steps - 1) {
      float whole = dist::all_reduce(summed, dist::ReduceOp::Sum).item<float>() / static_cast<float>(kBatch);
      if (me == 0) std::printf("step %4d  loss %.9g\n", s, whole);
    }
  }
  // every rank's weights are rank 0's, bit for bit
  int differs = 0;
  for (const Tensor& p : params) {
    std::vector<float> mine = p.to_vector<float>(), first = dist::broadcast(p, 0).to_vector<float>();
    differs |= std::memcmp(mine.data(), first.data(), mine.size() * sizeof(float)) != 0;
  }
  differs = dist::all_reduce(Tensor::full({1}, differs, kiln::dtypes::int32), dist::ReduceOp::Max).item<int32_t>();
  Tensor pred = model(Tensor::from_vector<float>(test.x, {m, 2}, dev)).argmax(1);
  std::vector<int32_t> p = pred.to_vector<int32_t>();
  int64_t right = 0;
  for (int64_t i = 0; i < m; ++i) right += p[static_cast<size_t>(i)] == test.y[static_cast<size_t>(i)];
  double acc = static_cast<double>(right) / static_cast<double>(m);
  if (me == 0) {
    std::printf("held-out accuracy: %.1f%% (%lld of %lld)\n", 100 * acc, static_cast<long long>(right), static_cast<long long>(m));
    std::printf(differs ? "FAILED: the ranks' weights differ\n" : "weights: bit-identical on all %d rank(s)\n", ws);
  }
  bool ok = !differs && (steps < 400 || acc >= 0.9);
  if (me == 0 && !ok && !differs) std::printf("FAILED: expected at least 90%%\n");
  dist::finalize();
  return ok ? 0 : 1;
}
