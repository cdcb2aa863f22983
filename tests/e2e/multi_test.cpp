// tests/e2e/multi_test.cpp - sharded and replicated tensors over the cpu backend's devices (ctest
// runs it with 2 and with 4 one-thread devices): every op is compared with the same op on one
// device, and the all-reduce algorithms with a plain sum.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kiln/kiln.hpp"
#include "runtime/lanes.hpp"
#include "runtime/instantiate.hpp"
#include "schedule/schedule.hpp"
#include "support/env.hpp"
#include "tensor/multi.hpp"

using namespace kiln;

namespace {

class Multi : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const std::string& d : kiln::devices())
      if (d.rfind("cpu:", 0) == 0) devs.push_back(d);
    if (devs.size() < 2) GTEST_SKIP() << "needs [backends.cpu.options] devices = 2 or more (ctest: test_e2e_cpu_devices, test_e2e_multi_4)";
  }
  void check_mlp(int64_t batch);
  std::vector<std::string> devs;
};

std::vector<float> ramp(int64_t n, float scale = 0.25f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = scale * static_cast<float>((i * 7) % 23) - 2.0f;
  return v;
}

Tensor host(const Shape& s, float scale = 0.25f) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return Tensor::from_vector<float>(ramp(n, scale), s, "cpu:0");
}

// f throws kiln::Error whose message holds every one of `parts`.
template <typename F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning " << parts[0];
  } catch (const Error& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << "'" << p << "' not in: " << e.what();
  }
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, float tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << what << " at " << i;
}

}  // namespace

TEST_F(Multi, ShardAndGatherRoundTripOnEveryAxisIncludingUnevenSizes) {
  Shape shape{6, 5, 7};  // 5 and 7 split unevenly over 2 and 4 devices
  Tensor x = host(shape);
  std::vector<float> want = x.to_vector<float>();
  for (std::optional<int> axis : {std::optional<int>{}, std::optional<int>{0}, std::optional<int>{1}, std::optional<int>{2}, std::optional<int>{-1}}) {
    Tensor s = x.shard(devs, axis);
    EXPECT_EQ(s.placement(), devs);
    EXPECT_EQ(s.shard_axis(), axis ? std::optional<int>((*axis + 3) % 3) : std::nullopt);
    EXPECT_EQ(s.shape(), shape);
    EXPECT_EQ(s.to_vector<float>(), want);
    EXPECT_EQ(s.to(devs.back()).to_vector<float>(), want);
    EXPECT_EQ(s.to(devs.back()).device(), devs.back());
  }
  // parts follow torch.tensor_split: the first n % devices parts take one more row
  Tensor by_cols = x.shard(devs, 1);
  const detail::Multi* m = detail::multi_of(by_cols);
  std::vector<int64_t> sizes;
  for (const Tensor& p : m->parts) sizes.push_back(p.shape()[1]);
  EXPECT_EQ(sizes, detail::split_sizes(5, devs.size()));
  EXPECT_EQ(sizes[0], devs.size() == 2 ? 3 : 2);
  // one device is a plain move; a placement string replicates
  EXPECT_EQ(x.shard({devs[1]}, 0).device(), devs[1]);
  EXPECT_FALSE(x.shard({devs[1]}, 0).shard_axis());
  Tensor r = x.to(detail::join_placement(devs));
  EXPECT_EQ(r.placement(), devs);
  EXPECT_FALSE(r.shard_axis());
  Tensor r2 = x.shard(devs, 0).to(detail::join_placement(devs));  // a sharded tensor replicated
  EXPECT_FALSE(r2.shard_axis());
  EXPECT_EQ(r2.to_vector<float>(), want);
}

TEST_F(Multi, ElementwiseMixesShardedReplicatedAndScalarOperands) {
  Tensor a = host({8, 6}), b = host({8, 6}, 0.5f), row = host({6}, 0.125f);
  std::vector<float> want = ((a * b + row) * 3.0f - a.exp()).to_vector<float>();
  Tensor as = a.shard(devs, 0), bs = b.shard(devs, 0), rr = row.shard(devs);
  for (const Tensor& other : {bs, b.shard(devs)}) {  // sharded alike, and replicated
    Tensor y = (as * other + rr) * 3.0f - as.exp();
    EXPECT_EQ(y.shard_axis(), std::optional<int>(0));
    EXPECT_EQ(y.placement(), devs);
    expect_near(y.to_vector<float>(), want, 1e-6f, "sharded op " + other.device());
  }
  // replicated with replicated stays replicated; comparisons and casts work per part
  Tensor lt = a.shard(devs).lt(b.shard(devs));
  EXPECT_FALSE(lt.shard_axis());
  EXPECT_EQ(lt.to_vector<bool>(), a.lt(b).to_vector<bool>());
  EXPECT_EQ(as.cast(dtypes::int32).to_vector<int32_t>(), a.cast(dtypes::int32).to_vector<int32_t>());
}

TEST_F(Multi, MovementKeepsTheShardAxisOrThrows) {
  Tensor x = host({4, 6, 8});
  Tensor s = x.shard(devs, 1);
  auto same = [&](const Tensor& got, const Tensor& want, std::optional<int> axis, const char* what) {
    EXPECT_EQ(got.shard_axis(), axis) << what;
    EXPECT_EQ(got.shape(), want.shape()) << what;
    EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>()) << what;
  };
  same(s.permute({2, 0, 1}), x.permute({2, 0, 1}), 2, "permute");
  same(s.reshape({4, 48}), x.reshape({4, 48}), 1, "merge the shard axis with the ones after it");
  same(s.reshape({2, 2, 6, 8}), x.reshape({2, 2, 6, 8}), 2, "split an axis before it");
  same(s.unsqueeze(0), x.unsqueeze(0), 2, "unsqueeze");
  same(s.reshape({4, 6, 1, 8}).expand({4, 6, 3, 8}), x.reshape({4, 6, 1, 8}).expand({4, 6, 3, 8}), 1, "expand");
  same(s.pad({{0, 0}, {1, 2}, {0, 0}}), x.pad({{0, 0}, {1, 2}, {0, 0}}), 1, "pad on the shard axis");
  same(s.pad({{1, 0}, {0, 0}, {0, 3}}, 2.5), x.pad({{1, 0}, {0, 0}, {0, 3}}, 2.5), 1, "pad elsewhere, non-zero");
  same(s.shrink({{1, 3}, {0, 6}, {2, 7}}), x.shrink({{1, 3}, {0, 6}, {2, 7}}), 1, "shrink elsewhere");
  same(s.flip({1}), x.flip({1}), 1, "flip the shard axis");
  EXPECT_EQ(s.flip({1}).placement().front(), devs.back());
  same(s.flip({0, 2}), x.flip({0, 2}), 1, "flip others");
  // a shrink that keeps only the first device's rows leaves a tensor on that device
  Tensor first = s.shrink({{0, 4}, {0, 1}, {0, 8}});
  EXPECT_EQ(first.device(), devs[0]);
  EXPECT_EQ(first.to_vector<float>(), x.shrink({{0, 4}, {0, 1}, {0, 8}}).to_vector<float>());
  expect_error([&] { (void)s.reshape({24, 8}); }, {"reshape", "(4, 6, 8)", "(24, 8)", "axis 1", ".shard("});
  expect_error([&] { (void)s.reshape({8, 3, 8}); }, {"reshape", "would move elements between the parts"});
}

TEST_F(Multi, ReductionsOverTheShardAxisAllReduceAndOthersStaySharded) {
  Tensor x = host({6, 10});
  for (int axis : {0, 1}) {
    Tensor s = x.shard(devs, axis);
    for (int over : {0, 1}) {
      std::string what = "shard " + std::to_string(axis) + " reduce " + std::to_string(over);
      Tensor sum = s.sum({over}), mx = s.max({over}), mn = s.min({over}, true), mean = s.mean({over}), prod = s.prod({over});
      if (over == axis) {
        EXPECT_FALSE(sum.shard_axis()) << what;
        EXPECT_EQ(sum.placement(), devs) << what;
      } else {
        EXPECT_EQ(sum.shard_axis(), std::optional<int>(axis > over ? axis - 1 : axis)) << what;
        EXPECT_EQ(mn.shard_axis(), std::optional<int>(axis)) << what;  // keepdim
      }
      expect_near(sum.to_vector<float>(), x.sum({over}).to_vector<float>(), 1e-5f, what + " sum");
      EXPECT_EQ(mx.to_vector<float>(), x.max({over}).to_vector<float>()) << what;
      EXPECT_EQ(mn.to_vector<float>(), x.min({over}, true).to_vector<float>()) << what;
      expect_near(mean.to_vector<float>(), x.mean({over}).to_vector<float>(), 1e-5f, what + " mean");
      expect_near(prod.to_vector<float>(), x.prod({over}).to_vector<float>(), 1e-4f, what + " prod");
      expect_near(s.var({over}).to_vector<float>(), x.var({over}).to_vector<float>(), 1e-4f, what + " var");
    }
    expect_near({s.sum().item<float>()}, {x.sum().item<float>()}, 1e-5f, "sum of all");
    // every device holds the same bits of an all-reduced result
    Tensor r = s.sum({axis});
    std::vector<float> first = r.to(devs[0]).to_vector<float>();
    for (const std::string& d : devs) EXPECT_EQ(detail::gather_to(r, d).to_vector<float>(), first) << d;
  }
  Tensor i = Tensor::from_vector<int32_t>({3, -1, 4, 1, -5, 9, 2, 6}, {8}, "cpu:0");
  EXPECT_EQ(i.shard(devs, 0).sum().item<int32_t>(), 19);
  EXPECT_EQ(i.shard(devs, 0).max().item<int32_t>(), 9);
  EXPECT_EQ(i.shard(devs, 0).argmax(0).item<int32_t>(), 5);
}

TEST_F(Multi, MatmulDataParallelTensorParallelAndRowParallel) {
  Tensor x = host({8, 12}), w = host({12, 10}, 0.125f);
  std::vector<float> want = x.matmul(w).to_vector<float>();
  struct Mode {
    const char* name;
    Tensor a, b;
    std::optional<int> axis;
  };
  for (const Mode& m : {Mode{"data parallel", x.shard(devs, 0), w.shard(devs), 0},
                        Mode{"tensor parallel (column)", x.shard(devs), w.shard(devs, 1), 1},
                        Mode{"row parallel (all-reduce)", x.shard(devs, 1), w.shard(devs, 0), std::nullopt}}) {
    Tensor y = m.a.matmul(m.b);
    EXPECT_EQ(y.shard_axis(), m.axis) << m.name;
    expect_near(y.to_vector<float>(), want, 1e-5f, m.name);
  }
  // x on its batch axis, w on its output axis: one is resharded (it threw before, issue 43)
  expect_near(x.shard(devs, 0).matmul(w.shard(devs, 1)).to_vector<float>(), want, 1e-5f, "batch x output");
}

TEST_F(Multi, SoftmaxConvCatStackAndAssign) {
  Tensor x = host({4, 9});
  for (int axis : {0, 1}) {
    expect_near(x.shard(devs, axis).softmax(1).to_vector<float>(), x.softmax(1).to_vector<float>(), 1e-6f, "softmax");
    expect_near(x.shard(devs, axis).log_softmax(0).to_vector<float>(), x.log_softmax(0).to_vector<float>(), 1e-5f, "log_softmax");
  }
  // conv2d over a batch-sharded input with replicated weights
  Tensor img = host({4, 3, 9, 9}), k = host({5, 3, 3, 3}, 0.0625f), bias = host({5});
  Tensor y = img.shard(devs, 0).conv2d(k.shard(devs), bias.shard(devs), 2, 1);
  EXPECT_EQ(y.shard_axis(), std::optional<int>(0));
  expect_near(y.to_vector<float>(), img.conv2d(k, bias, 2, 1).to_vector<float>(), 1e-5f, "conv2d");
  // cat and stack along a non-shard axis
  Tensor a = host({4, 3}), b = host({4, 5}, 0.5f);
  Tensor c = Tensor::cat({a.shard(devs, 0), b.shard(devs, 0)}, 1);
  EXPECT_EQ(c.shard_axis(), std::optional<int>(0));
  EXPECT_EQ(c.to_vector<float>(), Tensor::cat({a, b}, 1).to_vector<float>());
  Tensor along = Tensor::cat({a.shard(devs, 0), host({6, 3}, 0.5f).shard(devs, 0)}, 0);  // along the shard axis
  EXPECT_EQ(along.shard_axis(), std::optional<int>(0));
  EXPECT_EQ(along.placement(), devs);
  EXPECT_EQ(along.to_vector<float>(), Tensor::cat({a, host({6, 3}, 0.5f)}, 0).to_vector<float>());
  Tensor st = Tensor::stack({a.shard(devs, 0), a.shard(devs, 0) * 2.0f}, 2);
  EXPECT_EQ(st.to_vector<float>(), Tensor::stack({a, a * 2.0f}, 2).to_vector<float>());
  // assign into a sharded tensor: from a sharded value, a replicated one and a single-device one
  Tensor w = host({6, 4}).shard(devs, 0).contiguous().realize();
  w.assign(w * 2.0f);
  EXPECT_EQ(w.to_vector<float>(), (host({6, 4}) * 2.0f).to_vector<float>());
  w.assign(host({6, 4}, 0.5f).shard(devs));
  EXPECT_EQ(w.to_vector<float>(), host({6, 4}, 0.5f).to_vector<float>());
  w.assign(host({6, 4}, 1.0f));
  w.realize();
  EXPECT_EQ(w.shard_axis(), std::optional<int>(0));
  EXPECT_EQ(w.to_vector<float>(), host({6, 4}, 1.0f).to_vector<float>());
}

TEST_F(Multi, ADataParallelMlpForwardEqualsOneDevice) {
  for (int64_t batch : {16, 10})  // 10 rows split unevenly over 4 devices (3, 3, 2, 2)
    check_mlp(batch);
}

void Multi::check_mlp(int64_t batch) {
  Tensor x = host({batch, 20}), w1 = host({32, 20}, 0.05f), b1 = host({32}), w2 = host({4, 32}, 0.03f), b2 = host({4});
  auto mlp = [](const Tensor& in, const Tensor& a, const Tensor& ab, const Tensor& b, const Tensor& bb) {
    return in.linear(a, ab).relu().linear(b, bb).log_softmax(1);
  };
  std::vector<float> want = mlp(x, w1, b1, w2, b2).to_vector<float>();
  Tensor y = mlp(x.shard(devs, 0), w1.shard(devs), b1.shard(devs), w2.shard(devs), b2.shard(devs));
  EXPECT_EQ(y.shard_axis(), std::optional<int>(0));
  expect_near(y.to_vector<float>(), want, 1e-5f, "mlp, batch " + std::to_string(batch));
  // the loss over the whole batch: a reduction over the shard axis
  expect_near({y.mean().item<float>()}, {mlp(x, w1, b1, w2, b2).mean().item<float>()}, 1e-5f, "loss");
}

TEST_F(Multi, AllReduceNaiveAndRingGiveTheSumOnEveryDevice) {
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{1000000}}) {
    std::vector<Tensor> parts;
    std::vector<float> want(static_cast<size_t>(n), 0.0f), want_max(static_cast<size_t>(n), -100.0f);
    for (size_t d = 0; d < devs.size(); ++d) {
      std::vector<float> v(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>((i * (d + 3)) % 11) - 5;  // exact in float
      for (size_t i = 0; i < v.size(); ++i) want[i] += v[i], want_max[i] = std::max(want_max[i], v[i]);
      parts.push_back(Tensor::from_vector<float>(v, {n}, devs[d]));
    }
    for (auto* algo : {&detail::all_reduce_naive, &detail::all_reduce_ring, &detail::all_reduce_peer}) {
      std::vector<Tensor> out = algo(Ops::ADD, parts);
      ASSERT_EQ(out.size(), devs.size());
      for (size_t d = 0; d < devs.size(); ++d) {
        EXPECT_EQ(out[d].device(), devs[d]);
        EXPECT_EQ(out[d].to_vector<float>(), want) << "n " << n << " device " << d << (algo == &detail::all_reduce_ring ? " ring" : algo == &detail::all_reduce_peer ? " peer" : " naive");
      }
    }
    EXPECT_EQ(detail::all_reduce_ring(Ops::MAX, parts).back().to_vector<float>(), want_max);
    EXPECT_EQ(detail::all_reduce_peer(Ops::MAX, parts).front().to_vector<float>(), want_max);
  }
}

TEST_F(Multi, TheBuiltInCollectiveFollowsKilnRingAndCanBeReplaced) {
  struct Counting final : detail::Collective {
    mutable int calls = 0;
    std::string name() const override { return "counting"; }
    std::vector<Tensor> all_reduce(Ops op, const std::vector<Tensor>& parts) const override {
      ++calls;
      return detail::all_reduce_naive(op, parts);
    }
  };
  auto c = std::make_shared<Counting>();
  detail::set_collective(c);
  Tensor x = host({8, 3});
  float got = x.shard(devs, 0).sum().item<float>();
  detail::set_collective(nullptr);
  EXPECT_EQ(c->calls, 1);
  EXPECT_NEAR(got, x.sum().item<float>(), 1e-5f);
  EXPECT_EQ(detail::collective()->name(), "builtin");
  EXPECT_TRUE(detail::peer_readable(detail::multi_of(x.shard(devs, 0))->parts));  // the cpu devices share host memory
  for (int64_t ring : {0, 1}) {
    set_knob(Knob::ring, ring);
    EXPECT_NEAR(x.shard(devs, 0).sum().item<float>(), x.sum().item<float>(), 1e-5f) << "KILN_RING=" << ring;
  }
  set_knob(Knob::ring, -1);
}

TEST_F(Multi, PlacementErrorsNameTheTensorsAndTheFix) {
  Tensor x = host({4, 6});
  expect_error([&] { (void)x.shard({devs[0], "cpu:99"}, 0); }, {"cpu:99"});
  expect_error([&] { (void)x.shard({devs[0], devs[0]}, 0); }, {"shard", devs[0], "twice"});
  expect_error([&] { (void)Tensor::zeros({2}, dtypes::float32, devs[1] + "," + devs[1]); }, {"placement", devs[1], "twice"});
  expect_error([&] { (void)x.shard(devs, 2); }, {"shard", "axis 2", "out of range"});
  expect_error([&] { (void)x.shard({}, 0); }, {"shard", "no devices"});
  expect_error([&] { (void)host({1, 6}).shard(devs, 0); }, {"shard", "1 rows", "fewer than"});
  // a tensor on one device meets a sharded one: it is copied to the devices (issue 43)
  EXPECT_EQ((x.shard(devs, 0) + x).to_vector<float>(), (x + x).to_vector<float>());
  // rows of one part are a tensor on that device, and it combines with a sharded tensor
  Tensor first = x.shard(devs, 0).shrink({{0, 1}, {0, 6}});
  EXPECT_EQ(first.placement(), std::vector<std::string>{devs[0]});
  EXPECT_EQ((first * x.shard(devs, 0)).sum().item<float>(), (x.shrink({{0, 1}, {0, 6}}) * x).sum().item<float>());
  // laid out differently (another axis, another order of the devices): one is resharded (issue 43)
  EXPECT_EQ((x.shard(devs, 0) + x.shard(devs, 1)).to_vector<float>(), (x + x).to_vector<float>());
  std::vector<std::string> reversed(devs.rbegin(), devs.rend());
  EXPECT_EQ((x.shard(devs, 0) * x.shard(reversed, 0)).to_vector<float>(), (x * x).to_vector<float>());
  EXPECT_EQ((x.shard(devs, 0) + x.shard(devs, 1).shard(devs, 0)).to_vector<float>(), (x + x).to_vector<float>());
}

TEST_F(Multi, DevicesRunAtOnceAndWaitOnlyForWhatTheyRead) {
  Tensor x = host({64, 32}).shard(devs, 0).contiguous().realize(), w = host({16, 32}, 0.0625f).shard(devs).contiguous().realize();
  Tensor y = x.linear(w).relu().sum();  // a kernel per device, then the all-reduce's copies and adds
  const detail::Multi& m = *detail::multi_of(y);
  std::vector<UOp> outs;
  for (const Tensor& p : m.parts) outs.push_back(p.state()->uop());
  LinearResult lr = create_linear_with_vars(UOp::sink(outs));
  std::vector<runtime::PreparedItem> items = lr.prepared->prepare(lr.linear, lr.var_vals);
  runtime::LanePlan plan = runtime::plan_lanes(items);
  EXPECT_EQ(plan.lanes, devs.size());
  size_t free_items = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    for (uint32_t j : plan.waits[i]) {
      EXPECT_LT(j, i);
      EXPECT_NE(plan.lane[j], plan.lane[i]);
      bool shares = false;  // an item waits only for one that touched one of its buffers
      for (const auto& a : items[i].storages)
        for (const auto& b : items[j].storages) shares |= a == b;
      EXPECT_TRUE(shares) << "item " << i << " waits for " << j;
    }
    free_items += plan.waits[i].empty();
  }
  EXPECT_GE(free_items, devs.size());  // each device's first kernel starts at once
  EXPECT_NEAR(y.item<float>(), host({64, 32}).linear(host({16, 32}, 0.0625f)).relu().sum().item<float>(), 1e-3f);
}

TEST_F(Multi, AJitCapturesAndReplaysADataParallelStep) {
  Tensor w = host({8, 12}, 0.0625f).shard(devs).contiguous().realize();
  int runs = 0;
  Jit step([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    ++runs;
    Tensor h = in[0].linear(w).relu();
    return std::vector<Tensor>{h, h.sum()};
  });
  for (int call = 0; call < 4; ++call) {
    Tensor x = host({16, 12}, 0.125f * static_cast<float>(call + 1));
    std::vector<Tensor> out = step({x.shard(devs, 0)});
    EXPECT_EQ(out[0].shard_axis(), std::optional<int>(0)) << call;
    EXPECT_EQ(out[0].placement(), devs);
    EXPECT_FALSE(out[1].shard_axis());
    Tensor want = x.linear(host({8, 12}, 0.0625f)).relu();
    expect_near(out[0].to_vector<float>(), want.to_vector<float>(), 1e-5f, "call " + std::to_string(call));
    expect_near({out[1].item<float>()}, {want.sum().item<float>()}, 1e-5f, "sum, call " + std::to_string(call));
  }
  EXPECT_EQ(runs, 2);
  EXPECT_TRUE(step.captured());
  // another layout is refused, naming both
  expect_error([&] { (void)step({host({16, 12}).shard(devs)}); }, {"Jit: input 0", "captured", "sharded on axis 0"});
}

// Data-parallel training: the batch sharded, the weights replicated; backward all-reduces each
// weight's gradient into a replicated one equal to the single-device gradient, and an SGD step
// keeps the replicas equal to the single-device weights.
TEST_F(Multi, DataParallelGradientsAllReduceIntoReplicatedGradients) {
  Tensor x = host({12, 6}), y = host({12, 3}, 0.125f);
  auto loss_of = [](const Tensor& in, const Tensor& target, const Tensor& w1, const Tensor& w2) {
    Tensor out = in.linear(w1).relu().linear(w2);
    return ((out - target) * (out - target)).mean();
  };
  Tensor w1 = host({8, 6}, 0.05f).requires_grad_(), w2 = host({3, 8}, 0.0625f).requires_grad_();
  std::vector<Tensor> want = loss_of(x, y, w1, w2).gradient({w1, w2});
  Tensor d1 = host({8, 6}, 0.05f).shard(devs).contiguous().realize().requires_grad_();
  Tensor d2 = host({3, 8}, 0.0625f).shard(devs).contiguous().realize().requires_grad_();
  Tensor xs = x.shard(devs, 0), ys = y.shard(devs, 0);
  std::vector<Tensor> got = loss_of(xs, ys, d1, d2).gradient({d1, d2});
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(got[k].placement(), devs);
    EXPECT_FALSE(got[k].shard_axis());
    expect_near(got[k].to_vector<float>(), want[k].to_vector<float>(), 1e-5f, "gradient " + std::to_string(k));
  }
  // backward + SGD on the replicated weights, and on one device
  optim::SGD one({w1, w2}, 0.5), many({d1, d2}, 0.5);
  loss_of(x, y, w1, w2).backward();
  one.step();
  loss_of(xs, ys, d1, d2).backward();
  many.step();
  expect_near(d1.to_vector<float>(), w1.to_vector<float>(), 1e-5f, "w1 after a step");
  expect_near(d2.to_vector<float>(), w2.to_vector<float>(), 1e-5f, "w2 after a step");
  for (const std::string& d : devs)  // every replica holds the same bits
    EXPECT_EQ(detail::gather_to(d1, d).to_vector<float>(), detail::gather_to(d1, devs[0]).to_vector<float>()) << d;
}

// Issue 43, finding 6: gradients through max, min, var, std and softmax over the shard axis threw
// "operands are on different devices" (the forward values were right). Each equals the gradient on
// one device, even splits and uneven ones.
TEST_F(Multi, GradientsThroughReductionsOverTheShardAxisEqualOneDevice) {
  using Fn = std::function<Tensor(const Tensor&)>;
  const std::vector<std::pair<const char*, Fn>> fns{
      {"max", [](const Tensor& t) { return t.max({0}); }},
      {"min", [](const Tensor& t) { return t.min({0}); }},
      {"max all", [](const Tensor& t) { return t.max(); }},
      {"var", [](const Tensor& t) { return t.var({0}); }},
      {"std", [](const Tensor& t) { return t.std({0}); }},
      {"mean", [](const Tensor& t) { return t.mean({0}); }},
      {"softmax", [](const Tensor& t) { return t.softmax(0) * t; }},
      {"log_softmax", [](const Tensor& t) { return t.log_softmax(0) * t; }},
      {"prod", [](const Tensor& t) { return (t * 0.5).prod({0}); }},
  };
  for (int64_t rows : {int64_t(4) * static_cast<int64_t>(devs.size()), int64_t(7)}) {
    for (const auto& [name, f] : fns) {
      SCOPED_TRACE(std::string(name) + ", " + std::to_string(rows) + " rows");
      Tensor x = host({rows, 3}, 0.3f);
      Tensor one = x.contiguous().realize().requires_grad_();
      std::vector<float> want = (f(one) * f(one)).sum().gradient({one})[0].to_vector<float>();
      Tensor sharded = x.shard(devs, 0).contiguous().realize().requires_grad_();
      Tensor g = (f(sharded) * f(sharded)).sum().gradient({sharded})[0];
      EXPECT_EQ(g.shard_axis(), std::optional<int>(0));
      expect_near(g.to_vector<float>(), want, 1e-4f, name);
    }
  }
}

// Finding 7: x sharded on its batch axis times w sharded on its output axis threw "operands are laid
// out differently"; one is resharded now (the result equals one device's).
TEST_F(Multi, DifferentlyShardedOperandsAreResharded) {
  Tensor x = host({6, 4}), w = host({4, 5}, 0.125f);
  std::vector<float> want = x.matmul(w).to_vector<float>();
  Tensor xs = x.shard(devs, 0), ws = w.shard(devs, 1);
  expect_near(xs.matmul(ws).to_vector<float>(), want, 1e-5f, "matmul");
  Tensor a = host({6, 6}), b = host({6, 6}, 0.5f);
  std::vector<float> sum = (a + b * a).to_vector<float>();
  Tensor as = a.shard(devs, 0), bs = b.shard(devs, 1);
  expect_near((as + bs * as).to_vector<float>(), sum, 1e-5f, "elementwise");
}

// Issue 43, finding 1 on several devices: a pending assign of a sharded tensor runs once, whether
// its own tensor or a reader is realized first.
TEST_F(Multi, AShardedAssignRunsOnceWhenAReaderIsRealizedFirst) {
  for (std::optional<int> axis : {std::optional<int>(0), std::optional<int>()}) {
    Tensor a = Tensor::zeros({static_cast<int64_t>(2 * devs.size()), 3}, dtypes::float32, "cpu:0").shard(devs, axis).contiguous().realize();
    a.assign(a + 1.0);
    std::vector<float> ones(static_cast<size_t>(a.numel()), 1.0f);
    EXPECT_EQ((a * 1.0).to_vector<float>(), ones);
    EXPECT_EQ(a.to_vector<float>(), ones);
    a.assign(a * 3.0);
    Tensor v = a.reshape({-1});
    EXPECT_EQ(v.to_vector<float>(), std::vector<float>(ones.size(), 3.0f));
    EXPECT_EQ(a.to_vector<float>(), std::vector<float>(ones.size(), 3.0f));
  }
}
