// tests/dist/dist_overlap_test.cpp - all_reduce_grads overlapped with the backward pass (part of
// test_dist: -np 2, -np 3, alone). The overlapped path (lazy gradients: buckets all-reduced while
// the backward pass runs) must give the plain path's bits (every gradient realized first, one
// message per dtype), run the same kernels (nothing of the backward pass computed twice), keep the
// ranks' weights identical and follow one rank's loss curve on the whole batch. Its messages are the
// plain path's (buckets chosen from the shapes alone), so ranks on different paths agree.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "kiln/dist.hpp"
#include "kiln/kiln.hpp"
#include "kiln/profile.hpp"

using namespace kiln;

namespace {

std::vector<uint8_t> bytes_of(const Tensor& t) {
  std::vector<uint8_t> b(static_cast<size_t>(t.numel() * t.dtype().itemsize()));
  t.to_bytes(b.data(), b.size());
  return b;
}

// Restores the knobs a test changes.
struct Knobs {
  int64_t bucket = dist::bucket_bytes();
  bool overlap = dist::overlap();
  ~Knobs() {
    dist::set_bucket_bytes(bucket);
    dist::set_overlap(overlap);
  }
};

constexpr int64_t kIn = 16, kHidden = 128, kOut = 5, kRows = 12;  // 19 k float32 gradients: past the header's 16 KiB

// Rank r's share of the batch (the same on every rank: each can build every rank's share).
Tensor share_x(int r) {
  manual_seed(1000 + static_cast<uint64_t>(r));
  return Tensor::randn({kRows, kIn}).realize();
}
Tensor share_y(int r) {
  manual_seed(2000 + static_cast<uint64_t>(r));
  return Tensor::randint({kRows}, 0, kOut).realize();
}

std::vector<Tensor> fresh_params() {
  manual_seed(7);
  std::vector<Tensor> p{Tensor::glorot_uniform({kHidden, kIn}), Tensor::zeros({kHidden}), Tensor::glorot_uniform({kHidden, kHidden}),
                        Tensor::zeros({kHidden}), Tensor::glorot_uniform({kOut, kHidden}), Tensor::zeros({kOut})};
  for (Tensor& t : p) t = t.contiguous().realize().requires_grad_();
  return p;
}

Tensor mlp_loss(const std::vector<Tensor>& p, const Tensor& x, const Tensor& y) {
  Tensor h = x.linear(p[0], p[1]).relu().linear(p[2], p[3]).relu().linear(p[4], p[5]);
  return h.sparse_categorical_crossentropy(y);
}

struct Trained {
  std::vector<float> losses;
  std::vector<std::vector<uint8_t>> weights;
  std::vector<size_t> kernels;  // kernels launched by each step's backward pass and all_reduce_grads
  std::map<std::string, int> kernel_names;
};

// `steps` data-parallel SGD steps on this rank's share; overlapped: all_reduce_grads realizes the
// lazy gradients (and the loss); else every gradient and the loss are realized first.
Trained train(bool overlapped, int steps) {
  dist::set_overlap(overlapped);
  std::vector<Tensor> p = fresh_params();
  optim::SGD opt(p, 0.1);
  Tensor x = share_x(dist::rank()), y = share_y(dist::rank());
  Trained run;
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    Tensor loss = mlp_loss(p, x, y);
    loss.backward();
    {
      Profile prof;
      dist::all_reduce_grads(p, {loss});
      run.kernels.push_back(prof.runs().size());
      for (const KernelRun& k : prof.runs()) ++run.kernel_names[k.name];
    }
    run.losses.push_back(loss.item<float>());
    opt.step();
  }
  for (const Tensor& t : p) run.weights.push_back(bytes_of(t));
  return run;
}

TEST(DistOverlap, EqualsThePlainPathAndOneRankOnTheWholeBatch) {
  Knobs keep;
  dist::set_bucket_bytes(8 << 10);  // several buckets: W3+b3, b2, W2 alone (64 KiB), b1, W1
  Trained plain = train(false, 3);
  Trained over = train(true, 3);
  // the same messages either way (the buckets depend on the shapes only): the same bits, also on 3 ranks
  EXPECT_EQ(over.losses, plain.losses);
  EXPECT_EQ(over.weights, plain.weights) << "the overlapped path changed the bits";
  EXPECT_EQ(over.kernels, plain.kernels) << "the overlapped path runs other kernels (something computed twice?)";
  EXPECT_EQ(over.kernel_names, plain.kernel_names);
  // every rank ends with rank 0's weights, bit for bit
  for (size_t i = 0; i < over.weights.size(); ++i) {
    const std::vector<uint8_t>& mine = over.weights[i];
    Tensor t = Tensor::from_bytes(mine.data(), mine.size(), dtypes::uint8, {static_cast<int64_t>(mine.size())});
    EXPECT_EQ(bytes_of(dist::broadcast(t, 0)), mine) << "parameter " << i << " differs from rank 0's";
  }
  // one rank on the concatenated batch: the mean of the ranks' mean losses' gradients is its gradient
  int ws = dist::world_size();
  std::vector<Tensor> xs, ys;
  for (int r = 0; r < ws; ++r) {
    xs.push_back(share_x(r));
    ys.push_back(share_y(r));
  }
  Tensor x = Tensor::cat(xs, 0).realize(), y = Tensor::cat(ys, 0).realize();
  std::vector<Tensor> p = fresh_params();
  optim::SGD opt(p, 0.1);
  for (int s = 0; s < 3; ++s) {
    opt.zero_grad();
    Tensor loss = mlp_loss(p, x, y);
    loss.backward();
    // the whole batch's loss is the mean of the ranks' losses (equal shares)
    float whole = loss.item<float>();
    opt.step();
    float ranks = dist::all_reduce(Tensor::full({1}, static_cast<double>(over.losses[static_cast<size_t>(s)])), dist::ReduceOp::Mean).item<float>();
    EXPECT_NEAR(ranks, whole, 1e-4 * std::fabs(whole) + 1e-6) << "step " << s;
  }
}

// Bucket boundaries: a gradient larger than a bucket (its own bucket), gradients of three dtypes
// (a bucket holds one), a parameter without a gradient; each gradient's mean is the plain path's.
TEST(DistOverlap, BucketBoundariesAndDtypes) {
  Knobs keep;
  int ws = dist::world_size(), me = dist::rank();
  auto grads = [&](bool overlapped) {
    dist::set_overlap(overlapped);
    dist::set_bucket_bytes(1024);
    Tensor big = Tensor::ones({5000}).contiguous().realize().requires_grad_();                     // 20 KB > a bucket
    Tensor half = Tensor::ones({300}, dtypes::bfloat16).contiguous().realize().requires_grad_();     // 600 B
    Tensor dbl = Tensor::ones({100}, dtypes::float64).contiguous().realize().requires_grad_();       // 800 B
    Tensor small = Tensor::ones({7}).contiguous().realize().requires_grad_();
    Tensor unused = Tensor::ones({3}).contiguous().realize().requires_grad_();
    double k = me + 1;
    Tensor arange = Tensor::arange(0, 5000).cast(dtypes::float32);
    Tensor loss = (big * arange).sum() * k + (half * k).sum().cast(dtypes::float32) + (dbl * (k / 3)).sum().cast(dtypes::float32) +
                  (small * small).sum() * k;
    loss.backward();
    std::vector<Tensor> ps{big, half, unused, dbl, small};
    dist::all_reduce_grads(ps, {loss});
    EXPECT_FALSE(unused.grad().has_value());
    std::vector<std::vector<uint8_t>> out;
    for (const Tensor& p : {big, half, dbl, small}) out.push_back(bytes_of(*p.grad()));
    // against the values: mean over ranks of (r+1) * d
    double mean_k = (ws + 1) / 2.0;
    std::vector<float> b = big.grad()->to_vector<float>();
    for (int64_t i = 0; i < 5000; i += 997) EXPECT_FLOAT_EQ(b[static_cast<size_t>(i)], static_cast<float>(i * mean_k)) << i;
    for (float v : half.grad()->cast(dtypes::float32).to_vector<float>()) EXPECT_NEAR(v, mean_k, 0.02);
    for (double v : dbl.grad()->to_vector<double>()) EXPECT_NEAR(v, mean_k / 3, 1e-12);
    for (float v : small.grad()->to_vector<float>()) EXPECT_FLOAT_EQ(v, static_cast<float>(2 * mean_k));
    return out;
  };
  std::vector<std::vector<uint8_t>> plain = grads(false), over = grads(true);
  EXPECT_EQ(over, plain);
}

// Ranks may take different paths (rank 0 realized its gradients, the others did not): the messages
// are the same, so the result is the all-overlapped one, bit for bit.
TEST(DistOverlap, RanksOnDifferentPathsAgree) {
  Knobs keep;
  dist::set_overlap(true);
  dist::set_bucket_bytes(8 << 10);
  auto run = [&](bool rank0_realizes_first) {
    std::vector<Tensor> p = fresh_params();
    Tensor loss = mlp_loss(p, share_x(dist::rank()), share_y(dist::rank()));
    loss.backward();
    if (rank0_realizes_first && dist::rank() == 0) {
      std::vector<Tensor> all{loss};
      for (const Tensor& t : p) all.push_back(*t.grad());
      Tensor::realize_all(all);
    }
    dist::all_reduce_grads(p, {loss});
    std::vector<std::vector<uint8_t>> out;
    for (const Tensor& t : p) out.push_back(bytes_of(*t.grad()));
    return out;
  };
  EXPECT_EQ(run(true), run(false));
}

// A gradient that is already realized takes the plain path even when others are lazy; the loss
// given as `also` is realized by the call (not computed again afterwards).
TEST(DistOverlap, AlsoIsRealizedWithTheGradients) {
  Knobs keep;
  dist::set_overlap(true);
  std::vector<Tensor> p = fresh_params();
  Tensor loss = mlp_loss(p, share_x(dist::rank()), share_y(dist::rank()));
  loss.backward();
  dist::all_reduce_grads(p, {loss});
  Profile prof;
  float l = loss.item<float>();
  EXPECT_TRUE(std::isfinite(l));
  EXPECT_EQ(prof.runs().size(), 0u) << "the loss was computed again after all_reduce_grads";
}

}  // namespace

namespace {

// A kiln::Jit replays kernels only: a collective inside one would run at the capture and never
// again, so the capturing call throws (on every rank alike, before any exchange) and the world
// still works; the documented split (Jits around the call) is what to do instead.
TEST(DistOverlap, RefusedInsideAJitCapture) {
  kiln::Jit step([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    return std::vector<Tensor>{dist::all_reduce(in[0] * 2.0)};
  });
  Tensor x = Tensor::ones({4}).contiguous().realize();
  EXPECT_EQ(step({x})[0].to_vector<float>(), std::vector<float>(4, 2.0f * static_cast<float>(dist::world_size())));  // call 1: eager
  try {
    step({x});  // call 2: the capture
    ADD_FAILURE() << "a collective inside a Jit capture did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition);
    EXPECT_NE(std::string(e.what()).find("kiln::Jit"), std::string::npos) << e.what();
  }
  dist::barrier();
  EXPECT_EQ(dist::all_reduce(x).to_vector<float>(), std::vector<float>(4, static_cast<float>(dist::world_size())));
}

}  // namespace
