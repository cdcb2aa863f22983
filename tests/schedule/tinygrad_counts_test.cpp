// tests/schedule/tinygrad_counts_test.cpp - kernel counts of the programs in tinygrad's own
// scheduling tests (test/null/test_schedule.py and test/backend/test_schedule.py, the ones that
// map to kiln's Tensor API), each with tinygrad's count beside kiln's. kiln's count is the ideal
// one for its design: every kernel is either an output, a reduce read in another iteration space
// that is cheaper stored than recomputed, or a padded input read many times (see
// docs/architecture.md, "Kernel boundaries"). A count that goes up is a fusion lost; one that goes
// down must come with a reason in the case's comment. The values the fused kernels compute are
// checked against plain C++ loops in the second half of this file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <numeric>

#include "kiln/kiln.hpp"

using namespace kiln;

namespace {
std::string device_ = "ref";  // where E's inputs live: the programs are built once per device
Tensor E(const Shape& s) { return Tensor::empty(s, dtypes::float32, device_); }
// The schedule's kernels (copies aside), by name.
std::vector<std::string> kernels(const std::vector<Tensor>& outs) {
  std::vector<std::string> names;
  for (const ExecItem& e : Tensor::schedule_all(outs))
    if (!e.is_copy) names.push_back(e.name);
  return names;
}
std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

struct Program {
  const char* name;  // tinygrad's test name, without test_
  int tinygrad;      // check_schedule's count in tinygrad (its TODO count in the comment)
  int kiln;          // kiln's count, asserted (devices without row fusion: "ref", the GPUs)
  int kiln_cpu;      // kiln's count on the cpu, whose row fusion keeps a row's reduces in one kernel (0: as kiln)
  std::function<std::vector<Tensor>()> build;
};

// clang-format off
const std::vector<Program> programs = {
  {"reduce_doesnt_split", 1, 1, 0, [] { Tensor a = E({16, 16}).sum({1}); return std::vector{a.reshape({4, 4}), a.reshape({16, 1, 1})}; }},
  {"multireduce_shrink", 1, 1, 0, [] {
     Tensor a = E({32, 32}).sum({1}).shrink({{0, 16}}), b = E({32, 32}).sum({1}).shrink({{0, 16}});
     return std::vector{a + b + E({16})}; }},
  // tinygrad TODO: 1
  {"reduce_same_size", 3, 1, 0, [] {
     Tensor a = E({4, 4}); Tensor o0 = a.sum() + 2.0, o1 = a.sum() + 4.0;
     return std::vector{o0, o1, o0 * o1}; }},
  // tinygrad TODO: 1
  {"reduce_multiple_paths", 2, 1, 0, [] {
     Tensor a = E({4, 4}); Tensor o0 = a.sum().exp2();
     return std::vector{o0, a.sum() + o0}; }},
  {"multireduce_reduce_multiple_paths", 4, 1, 0, [] {
     Tensor a = E({4, 4}); Tensor o0 = a.sum().exp2(), o1 = a.sum() + o0, b = a + o0 + o1;
     Tensor o2 = b.sum().exp2();
     return std::vector{o0, o1, o2, b.sum() + o2}; }},
  {"reduce_ext_reduce_child", 2, 1, 0, [] {
     Tensor a = E({4, 4}), b = E({4, 4});
     return std::vector{a.sum() + b.sum() + 2.0, a.sum() + b.sum() + 4.0}; }},
  {"reduce_multiple_paths_midreduce", 4, 1, 0, [] {
     Tensor a = E({4, 4}); Tensor r = a.sum(), o0 = r.exp2(), o1 = (a - o0).max();
     return std::vector{r, o0, o1, r + o1}; }},
  {"reduce_multiple_paths_midreduce_fused", 3, 1, 0, [] {
     Tensor a = E({4, 4}), b = E({4, 4}); Tensor o0 = a.sum() + 4.0, o1 = b.max() + o0 * 2.0;
     return std::vector{o0, o1, a.sum() + o1}; }},
  {"reduce_multiple_paths_midexpand", 4, 3, 0, [] {
     Tensor a = E({4, 4}), b = E({4, 4, 4}); Tensor r = a.sum(), o0 = r.exp2(), e = b + o0;
     return std::vector{r, o0, r + e.shrink({{0, 1}, {0, 1}, {0, 1}}).reshape({}), e}; }},
  {"reduce_expand_child_small", 2, 2, 0, [] {
     Tensor a = E({16, 32, 32}), b = E({1, 16});
     return std::vector{a.sum() + 2.0, a.sum() + b}; }},
  {"reduce_expand_child", 2, 3, 0, [] {
     Tensor a = E({32, 32, 32}), b = E({1, 16});
     return std::vector{a.sum() + 2.0, a.sum() + b}; }},
  {"reduce_broadcast_not_recomputed", 2, 2, 0, [] { Tensor a = E({32, 16}); return std::vector{a - a.mean({0}, true)}; }},
  // tinygrad TODO: 1
  {"scaled_dot_product_attention_multireduce_fusion", 4, 4, 3, [] {
     return std::vector{E({32, 8, 16, 8}).scaled_dot_product_attention(E({32, 8, 16, 8}), E({32, 8, 16, 8}))}; }},
  // tinygrad TODO: 1 (a.sum has two children but should still fuse)
  {"ugly_reduceop_pairing", 2, 1, 0, [] {
     Tensor a = E({4, 32}), b = E({4, 32}), c = E({4, 32});
     return std::vector{(c * a.sum({-1}, true)).sum({-1}) + (b * a.sum({-1}, true)).sum({-1})}; }},
  // tinygrad TODO: 1
  {"reduce_expand_reduce_fusion", 2, 1, 0, [] { Tensor a = E({4, 32}); return std::vector{(a + a.sum({-1}, true)).sum({-1})}; }},
  // tinygrad TODO: 2
  {"reduce_expand_reduce_expand_fusion", 3, 2, 1, [] {
     Tensor a = E({4, 32}); return std::vector{a + (a + a.sum({-1}, true)).sum({-1}, true)}; }},
  // tinygrad TODO: 2
  {"branching_reduces_and_expands_fusion", 3, 3, 2, [] {
     Tensor a = E({4, 32}); Tensor o0 = a + a.sum({-1}, true);
     return std::vector{o0, o0.sum({-1})}; }},
  // tinygrad TODO: 1
  {"multireduce_fusion_simple_sequential", 2, 1, 0, [] {
     Tensor x = E({4, 32}), y = E({4, 32}); return std::vector{(y + x.sum({-1}, true)).sum({-1})}; }},
  {"multireduce_fusion_simple_parallel", 1, 1, 0, [] { return std::vector{E({4, 32}).sum({-1}) + E({4, 32}).sum({-1})}; }},
  // tinygrad TODO: 1
  {"multireduce_fusion_sequential", 2, 1, 0, [] { return std::vector{E({4, 32}).std({-1})}; }},
  // tinygrad TODO: 1
  {"multireduce_fusion_parallel", 3, 1, 0, [] { return std::vector{E({4, 32}).std({-1}) + E({4, 32}).std({-1})}; }},
  // tinygrad TODO: 1
  {"multireduce_diffops_sequential", 2, 1, 0, [] { Tensor x = E({4, 32}); return std::vector{(x - x.max({-1}, true)).sum({-1})}; }},
  {"multireduce_fusion_diffops_parallel", 1, 1, 0, [] { return std::vector{E({4, 32}).sum({-1}) + E({4, 32}).max({-1})}; }},
  // tinygrad TODO: 1
  {"multireduce_fusion_sequential_and_parallel", 5, 1, 0, [] {
     Tensor x = E({4, 32}), y = E({4, 32});
     Tensor mu = (x - x.max({-1}, true)).mean({-1}, true) + (y - y.max({-1}, true)).mean({-1}, true);
     return std::vector{((x - mu).square().sum({-1}) / 32.0).sqrt(), ((y - mu).square().sum({-1}) / 32.0).sqrt()}; }},
  {"multimatmul_fusion", 1, 1, 0, [] { return std::vector{E({4, 64}).matmul(E({64, 8})) + E({4, 64}).matmul(E({64, 8}))}; }},
  // tinygrad TODO: 2 (nn.LayerNorm([10, 10]) with weight and bias)
  {"layernorm_onelayer_fusion", 3, 2, 1, [] {
     return std::vector{E({20, 5, 10, 10}).layernorm({-2, -1}) * E({10, 10}) + E({10, 10})}; }},
  // tinygrad TODO: 3
  {"multireduce_simple_chase", 4, 3, 0, [] {
     Tensor a = E({4, 4, 4}); Tensor r = (a + (a.sum({0}, true) + 6.0)).sum({0}) * 2.0;
     return std::vector{r.sum({0}) + 8.0, r.sum({1}) + 12.0}; }},
  {"multireduce_push_permute_chase", 3, 3, 0, [] {
     Tensor a = E({4, 4, 4}); Tensor r = a.sum({2}) + E({4, 4}); Tensor d = r.transpose() * 4.0;
     return std::vector{d, r * (d + a).sum({2})}; }},
  {"multireduce_push_shrink_chase", 1, 1, 0, [] {
     Tensor r = E({16, 16}).sum({1}) + E({16});
     return std::vector{r.shrink({{0, 4}}) * E({4}) + E({16, 16}).sum({1}).shrink({{0, 4}})}; }},
  {"multireduce_midreduce_nochase", 1, 1, 0, [] {
     Tensor a = E({16, 16}); return std::vector{(a.sum({0}) + a.max({0}) + a.max({1}) + a.sum({1})) + 2.0}; }},
  // tinygrad TODO: 1 (pattern in test_transformer)
  {"partial_fuse1", 2, 1, 0, [] {
     Tensor a = E({16, 16}), b = E({16, 16}); return std::vector{a.sum() + 2.0, (a.sum() - b.sum()) * 4.0}; }},
  // tinygrad TODO: 1 (pattern in conv)
  {"partial_fuse2", 2, 1, 0, [] {
     Tensor a = E({16, 16}), b = E({16, 16}); Tensor c = a.sum() + 2.0; return std::vector{c, b.sum() - c}; }},
  // tinygrad TODO: 1 (pattern in adam)
  {"partial_fuse3", 4, 1, 0, [] {
     Tensor a = E({16, 16}), b = E({16, 16}); Tensor c = a.sum() + 2.0, d = a.sum() * 2.0, e = c * d;
     return std::vector{c, d, e, b.sum() - e}; }},
  // tinygrad TODO: 1
  {"partial_fuse4", 4, 1, 0, [] {
     Tensor a = E({16, 16}), b = E({16, 16}); Tensor c = a.sum() + 2.0, d = a.sum() * 2.0, e = c * d;
     return std::vector{c, d, e, (b - d).sum() - e}; }},
  {"late_fusion_simple", 1, 1, 0, [] { return std::vector{E({4, 4}).sum({1}, true) + E({4, 1})}; }},
  {"late_fusion_post_permute", 1, 1, 0, [] { return std::vector{E({4, 6, 4}).sum({1}, true).permute({2, 0, 1}) + E({4, 4, 1})}; }},
  {"late_fusion_post_expand", 2, 2, 0, [] { Tensor a = E({32, 32}); return std::vector{a - a.sum({1})}; }},
  {"cache_two_reduceops", 1, 1, 0, [] { Tensor a = E({10}); return std::vector{a.sum() + a.sum()}; }},
  {"cache_reduce_parent", 2, 1, 0, [] {
     Tensor x = E({32}); Tensor r0 = x.mean({0}, true), r1 = (x - r0).sum({0}) / 2.0;
     return std::vector{r0 + r1}; }},
  {"cache_reduce_multiple_children", 3, 2, 0, [] {
     Tensor x = E({32}), y = E({4, 4}); Tensor r0 = x.mean({0}, true), r1 = (x - r0).sum({0}) / 2.0;
     return std::vector{r0 + y, r1 + y}; }},
  {"reduce_permute_nofuse", 1, 1, 0, [] { return std::vector{E({32, 32, 32}).sum({2}).transpose() + E({32, 32})}; }},
  {"two_elus_sum", 1, 1, 0, [] { return std::vector{E({32, 32}).sum({1}).relu().elu() + E({32, 32}).sum({1}).relu().elu()}; }},
  {"multistage_reduce", 1, 1, 0, [] { return std::vector{E({32, 32, 32}).sum({2}).relu().sum({1})}; }},
  {"multistage_reduce_fork", 2, 2, 0, [] {
     Tensor x = E({32, 32, 32}).sum({2}); Tensor o2 = x + 1.0;
     return std::vector{x.relu().sum({1}) + o2.shrink({{0, 1}, {0, 32}}).reshape({32})}; }},
  {"double_sum_ref", 2, 2, 0, [] {
     Tensor x = E({32, 32, 32}).sum({2}); return std::vector{x + x.shrink({{0, 32}, {4, 5}}).reshape({32})}; }},
  // tinygrad TODO: 1
  {"reduce_shrink_child", 2, 1, 0, [] {
     Tensor a = E({100, 100}), b = E({10});
     return std::vector{a.sum() + b.shrink({{0, 1}}).reshape({}), a.sum() + 2.0}; }},
  {"reduce_multiple_paths_midshrink", 3, 2, 0, [] {
     Tensor r = E({4, 4}).sum({1}); Tensor o0 = r.exp2();
     return std::vector{r, o0, o0.shrink({{0, 1}}).reshape({}) + o0}; }},
  {"reduce_shrink_output", 3, 1, 0, [] {
     Tensor r = E({4, 4}).sum({}, true); Tensor o0 = r.exp2();
     return std::vector{r, o0, o0.shrink({{0, 1}, {0, 1}}).reshape({1}) + E({1})}; }},
  {"argmax", 2, 1, 0, [] { return std::vector{E({4, 32}).argmax(-1)}; }},
  // test/backend/test_schedule.py
  {"swizzle_simple", 1, 1, 0, [] { Tensor a = E({32, 32}); return std::vector{(a + a).sum({1}).sum({0})}; }},
  {"double_swizzle_possible", 1, 1, 0, [] { return std::vector{E({4}).sum({0}) + E({4}).sum({0})}; }},
  // tinygrad TODO: 1
  {"swizzle_reduceop", 2, 2, 0, [] { return std::vector{E({4, 4}).reshape({4, 4, 1}).expand({4, 4, 4}).sum({1}) + E({4, 4, 4})}; }},
  // tinygrad TODO: 1
  {"permute_rewrite", 2, 2, 0, [] {
     return std::vector{(E({4, 4, 16}) * E({4, 1, 16})).sum({0, 2}).reshape({1, 4, 1}).permute({0, 2, 1}) + E({4, 4, 1})}; }},
  {"parallel_reduce_possible", 1, 1, 0, [] { return std::vector{E({4, 2, 2}).sum({1}) + E({4, 2, 2}).sum({1})}; }},
  {"dont_parallelize_different_n", 1, 1, 0, [] { return std::vector{E({4, 2, 2}).sum({1}) + E({4, 3, 2}).sum({1})}; }},
};
// clang-format on

class TinygradCount : public ::testing::TestWithParam<Program> {};
}  // namespace

TEST_P(TinygradCount, KernelCount) {
  const Program& p = GetParam();
  std::vector<std::pair<std::string, int>> runs{{"ref", p.kiln}};
  for (const std::string& d : devices())
    if (d.rfind("cpu", 0) == 0) runs.push_back({d, p.kiln_cpu ? p.kiln_cpu : p.kiln});
  for (const auto& [dev, want] : runs) {
    device_ = dev;
    std::vector<std::string> ks = kernels(p.build());
    if (std::getenv("COUNTS_PRINT")) std::printf("%s on %s: %s\n", p.name, dev.c_str(), joined(ks).c_str());
    EXPECT_EQ(ks.size(), static_cast<size_t>(want)) << p.name << " on " << dev << " (tinygrad: " << p.tinygrad << "): " << joined(ks);
  }
  device_ = "ref";
}

INSTANTIATE_TEST_SUITE_P(Schedule, TinygradCount, ::testing::ValuesIn(programs),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- the values: the fused kernels against plain C++ loops, on the reference executor and on
// every usable device (the cpu's row fusion puts more into one kernel).
namespace {
struct Host {
  Shape shape;
  std::vector<float> v;
  Tensor on(const std::string& dev) const { return Tensor::from_vector<float>(v, shape, dev); }
};
// Values in [-1, 1) that differ along every axis (a fixed sequence: no seed to reproduce).
Host host(const Shape& s) {
  int64_t n = std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>());
  Host h{s, std::vector<float>(static_cast<size_t>(n))};
  for (int64_t i = 0; i < n; ++i) h.v[static_cast<size_t>(i)] = static_cast<float>((i * 7919 % 2003) / 1001.5 - 1.0);
  return h;
}
void expect_near(const std::vector<float>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << what << " at " << i;
}
// The reference executor and every usable device (a GPU's kernels group and nest differently).
std::vector<std::string> value_devices() {
  std::vector<std::string> ds{"ref"};
  for (const std::string& d : devices()) ds.push_back(d);
  return ds;
}
}  // namespace

// (a.sum() + 2, a.sum() + b): the sum of a split reduce, read by an output of its own shape and
// broadcast by another.
TEST(TinygradCountValues, ReduceExpandChild) {
  Host a = host({32, 32, 32}), b = host({1, 16});
  double s = 0;
  for (float x : a.v) s += x;
  std::vector<double> o1;
  for (float x : b.v) o1.push_back(s + x);
  for (const std::string& dev : value_devices()) {
    SCOPED_TRACE(dev);
    Tensor ta = a.on(dev);
    std::vector<Tensor> outs{ta.sum() + 2.0, ta.sum() + b.on(dev)};
    Tensor::realize_all(outs);
    expect_near(outs[0].to_vector<float>(), {s + 2}, "out0");
    expect_near(outs[1].to_vector<float>(), o1, "out1");
  }
}

// x.sum(2).relu().sum(1) and (a + a).sum(1).sum(0): a reduce read once per element by another.
TEST(TinygradCountValues, MultistageReduce) {
  Host x = host({32, 32, 32});
  std::vector<double> want(32);
  double both = 0;
  for (int i = 0; i < 32; ++i)
    for (int j = 0; j < 32; ++j) {
      double s = 0;
      for (int k = 0; k < 32; ++k) s += x.v[static_cast<size_t>((i * 32 + j) * 32 + k)];
      want[static_cast<size_t>(i)] += std::max(s, 0.0);
      both += 2 * s;
    }
  std::vector<double> three(8, -1e30);  // x as (8, 4, 32, 32): the max over j of the sums over k, l
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = 0;
      for (int kl = 0; kl < 1024; ++kl) s += x.v[static_cast<size_t>((i * 4 + j) * 1024 + kl)];
      three[static_cast<size_t>(i)] = std::max(three[static_cast<size_t>(i)], s);
    }
  for (const std::string& dev : value_devices()) {
    SCOPED_TRACE(dev);
    Tensor t = x.on(dev);
    expect_near(t.sum({2}).relu().sum({1}).to_vector<float>(), want, "multistage");
    expect_near(t.reshape({8, 4, 32, 32}).sum({3}).sum({2}).max({1}).to_vector<float>(), three, "three nested");
    expect_near((t + t).reshape({1024, 32}).sum({1}).sum({0}).to_vector<float>(), {both}, "sum of sums");
  }
}

// Rows of (4, 32): a + a.sum(-1, keepdim), its row sums, and that broadcast back and added to a;
// x.std(-1); the sequential-and-parallel program (two maxes, two means, two variances).
TEST(TinygradCountValues, ReduceExpandReduce) {
  Host a = host({4, 32}), y = host({4, 33});
  std::vector<double> o0(4 * 32), o1(4), o2(4 * 32), sd(4);
  for (int i = 0; i < 4; ++i) {
    double s = 0, t = 0;
    for (int j = 0; j < 32; ++j) s += a.v[static_cast<size_t>(i * 32 + j)];
    for (int j = 0; j < 32; ++j) t += o0[static_cast<size_t>(i * 32 + j)] = a.v[static_cast<size_t>(i * 32 + j)] + s;
    o1[static_cast<size_t>(i)] = t;
    for (int j = 0; j < 32; ++j) o2[static_cast<size_t>(i * 32 + j)] = a.v[static_cast<size_t>(i * 32 + j)] + t;
    double m = s / 32, v = 0;
    for (int j = 0; j < 32; ++j) v += (a.v[static_cast<size_t>(i * 32 + j)] - m) * (a.v[static_cast<size_t>(i * 32 + j)] - m);
    sd[static_cast<size_t>(i)] = std::sqrt(v / 31);
  }
  // mu = mean(x - max x) + mean(y - max y) per row; out = sqrt(mean((x - mu)^2)), same for y
  std::vector<double> ox(4), oy(4);
  for (int i = 0; i < 4; ++i) {
    auto row = [&](const Host& h, int n) {
      double mx = -1e30, s = 0;
      for (int j = 0; j < n; ++j) mx = std::max<double>(mx, h.v[static_cast<size_t>(i * n + j)]);
      for (int j = 0; j < n; ++j) s += h.v[static_cast<size_t>(i * n + j)] - mx;
      return s / n;
    };
    double mu = row(a, 32) + row(y, 33);
    auto dev2 = [&](const Host& h, int n) {
      double s = 0;
      for (int j = 0; j < n; ++j) s += (h.v[static_cast<size_t>(i * n + j)] - mu) * (h.v[static_cast<size_t>(i * n + j)] - mu);
      return std::sqrt(s / n);
    };
    ox[static_cast<size_t>(i)] = dev2(a, 32);
    oy[static_cast<size_t>(i)] = dev2(y, 33);
  }
  for (const std::string& dev : value_devices()) {
    SCOPED_TRACE(dev);
    Tensor t = a.on(dev), u = y.on(dev);
    Tensor out0 = t + t.sum({-1}, true);
    std::vector<Tensor> outs{out0, out0.sum({-1}), t + out0.sum({-1}, true), t.std({-1})};
    Tensor mu = (t - t.max({-1}, true)).mean({-1}, true) + (u - u.max({-1}, true)).mean({-1}, true);
    outs.push_back(((t - mu).square().sum({-1}) / 32.0).sqrt());
    outs.push_back(((u - mu).square().sum({-1}) / 33.0).sqrt());
    Tensor::realize_all(outs);
    expect_near(outs[0].to_vector<float>(), o0, "a + a.sum");
    expect_near(outs[1].to_vector<float>(), o1, "(a + a.sum).sum");
    expect_near(outs[2].to_vector<float>(), o2, "a + (a + a.sum).sum");
    expect_near(outs[3].to_vector<float>(), sd, "std");
    expect_near(outs[4].to_vector<float>(), ox, "sequential and parallel, x");
    expect_near(outs[5].to_vector<float>(), oy, "sequential and parallel, y");
  }
}

// (r0 + y, r1 + y): one kernel stores both and loads y once; (x @ w + y, y * 2): two kernels.
TEST(TinygradCountValues, OutputsSharingAnInput) {
  Host x = host({32}), y = host({4, 4}), a = host({8, 12}), w = host({12, 4});
  double r0 = 0, r1 = 0;
  for (float v : x.v) r0 += v / 32.0;
  for (float v : x.v) r1 += (v - r0) / 2.0;
  std::vector<double> o0, o1, mm(16), twice;
  for (float v : y.v) o0.push_back(r0 + v), o1.push_back(r1 + v), twice.push_back(2.0 * v);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = y.v[static_cast<size_t>(i * 4 + j)];
      for (int k = 0; k < 12; ++k) s += double(a.v[static_cast<size_t>(i * 12 + k)]) * w.v[static_cast<size_t>(k * 4 + j)];
      mm[static_cast<size_t>(i * 4 + j)] = s;
    }
  for (const std::string& dev : value_devices()) {
    SCOPED_TRACE(dev);
    Tensor tx = x.on(dev), ty = y.on(dev);
    Tensor t0 = tx.mean({0}, true), t1 = (tx - t0).sum({0}) / 2.0;
    Tensor ta = a.on(dev).shrink({{0, 4}, {0, 12}});
    std::vector<Tensor> outs{t0 + ty, t1 + ty, ta.matmul(w.on(dev)) + ty, ty * 2.0};
    Tensor::realize_all(outs);
    expect_near(outs[0].to_vector<float>(), o0, "r0 + y");
    expect_near(outs[1].to_vector<float>(), o1, "r1 + y");
    expect_near(outs[2].to_vector<float>(), mm, "x @ w + y");
    expect_near(outs[3].to_vector<float>(), twice, "y * 2");
  }
}
