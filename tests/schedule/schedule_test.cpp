// tests/schedule/schedule_test.cpp - kernel boundaries (fusion goldens), ordering, the schedule
// cache, symbolic dimensions and the memory planner.
#include <gtest/gtest.h>

#include <algorithm>

#include "error_check.hpp"
#include "golden.hpp"
#include "ir/print.hpp"
#include "ir/traverse.hpp"
#include "kiln/kiln.hpp"
#include "codegen/target.hpp"
#include "runtime/buffer.hpp"
#include "runtime/program_cache.hpp"
#include "schedule/kernelize.hpp"
#include "runtime/instantiate.hpp"
#include "schedule/schedule.hpp"
#include "support/env.hpp"

using namespace kiln;

namespace {
const char* R = "ref";
Tensor input(const Shape& s) { return Tensor::empty(s, dtypes::float32, R); }
std::vector<ExecItem> kernels_of(const std::vector<ExecItem>& items) {
  std::vector<ExecItem> out;
  for (const ExecItem& e : items)
    if (!e.is_copy) out.push_back(e);
  return out;
}
std::string names(const std::vector<ExecItem>& ks) {
  std::string s;
  for (const auto& k : ks) s += (s.empty() ? "" : " ") + k.name;
  return s;
}
// The BUFFER under a realized tensor's view.
UOp base_buffer(UOp u) {
  while (u.op() != Ops::BUFFER) u = u.src(0);
  return u;
}
// The index of the first kernel that writes `buf` (its output), or reads it without writing it; -1
// if none does.
int first_writer(const std::vector<ExecItem>& ks, const UOp& buf) {
  for (size_t i = 0; i < ks.size(); ++i)
    if (ks[i].buffers[0] == buf) return static_cast<int>(i);
  return -1;
}
int first_reader(const std::vector<ExecItem>& ks, const UOp& buf) {
  for (size_t i = 0; i < ks.size(); ++i)
    if (ks[i].buffers[0] != buf && std::find(ks[i].buffers.begin() + 1, ks[i].buffers.end(), buf) != ks[i].buffers.end())
      return static_cast<int>(i);
  return -1;
}
// Kernel ASTs of a schedule, printed, for the golden files.
std::string asts(const std::vector<ExecItem>& ks) {
  std::string s;
  for (const auto& k : ks) s += "# " + k.name + "\n" + print_graph(k.ast);
  return s;
}
}  // namespace

TEST(Fusion, ElementwiseChainIsOneKernel) {
  auto ks = kernels_of(((input({16, 32}) + 1.0) * 2.0).relu().schedule());
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_GOLDEN("schedule/elementwise", asts(ks));
}

TEST(Fusion, MulSumIsOneKernel) {
  auto ks = kernels_of((input({64}) * input({64})).sum().schedule());
  ASSERT_EQ(ks.size(), 1u) << names(ks);
  EXPECT_GOLDEN("schedule/mul_sum", asts(ks));
}

TEST(Fusion, BroadcastReduceIsTwoKernels) {
  auto ks = kernels_of((input({16, 32}).sum() + input({16, 32})).schedule());
  EXPECT_EQ(ks.size(), 2u) << names(ks);
}

// Two passes over the data: the row max and the sum of exp(x - max) in one kernel (the row is
// still in cache for the second loop), which stores both; then the normalising pass.
TEST(Fusion, SoftmaxIsTwoKernels) {
  auto ks = kernels_of(input({16, 32}).softmax().schedule());
  EXPECT_EQ(names(ks), "r_16_32_32 E_16_32");
  EXPECT_GOLDEN("schedule/softmax", asts(ks));
  EXPECT_EQ(kernels_of(input({16, 32}).log_softmax().schedule()).size(), 2u);
  // the mean, then the variance around it, in one kernel; then the normalising pass
  Tensor x = input({16, 32});
  Tensor dev = x - x.mean({1}, true);
  EXPECT_EQ(kernels_of((dev * (dev * dev).mean({1}, true).rsqrt()).schedule()).size(), 2u);
  // a reduce consumed only by a reduce over the axes it broadcasts along is not stored at all
  auto one = kernels_of((x - x.max({1}, true)).exp().sum({1}).schedule());
  ASSERT_EQ(one.size(), 1u) << names(one);
  EXPECT_EQ(one[0].buffers.size(), 2u) << "one output, one input";
}

// Names are unique within a schedule (two softmaxes have kernels of the same shapes), so a
// backend can build all of a schedule's kernels as one program.
TEST(Fusion, KernelNamesAreUniqueInASchedule) {
  auto ks = kernels_of(Tensor::schedule_all({input({16, 32}).softmax(), input({16, 32}).softmax()}));
  std::vector<std::string> ns;
  for (const ExecItem& k : ks) ns.push_back(k.name);
  std::sort(ns.begin(), ns.end());
  EXPECT_EQ(std::adjacent_find(ns.begin(), ns.end()), ns.end()) << names(ks);
  EXPECT_NE(names(ks).find("r_16_32_32n1"), std::string::npos) << names(ks);
}

TEST(Fusion, MatmulIsOneKernel) {
  auto ks = kernels_of(input({8, 16}).matmul(input({16, 4})).schedule());
  ASSERT_EQ(ks.size(), 1u) << names(ks);
  EXPECT_GOLDEN("schedule/matmul", asts(ks));
}

TEST(Fusion, MovementChainIsOneKernel) {
  Tensor x = input({4, 6});
  auto ks = kernels_of(x.pad({{1, 2}, {0, 3}}).shrink({{0, 6}, {2, 8}}).flip({0}).permute({1, 0}).reshape({36}).schedule());
  ASSERT_EQ(ks.size(), 1u) << names(ks);
  EXPECT_GOLDEN("schedule/movement_chain", asts(ks));
}

TEST(Fusion, PaddedConvRealizesItsPaddedInput) {
  // each padded element is read 9 * 8 = 72 times: the pad gets its own kernel
  auto padded = kernels_of(input({1, 4, 8, 8}).conv2d(input({8, 4, 3, 3}), std::nullopt, 1, 1).schedule());
  ASSERT_EQ(padded.size(), 2u) << names(padded);
  EXPECT_EQ(padded[0].name, "E_4_10_10") << names(padded);
  // without padding, or when the pad is read once, everything fuses
  EXPECT_EQ(kernels_of(input({1, 4, 8, 8}).conv2d(input({8, 4, 3, 3})).schedule()).size(), 1u);
  EXPECT_EQ(kernels_of(input({16, 16}).pad({{1, 1}, {1, 1}}).sum().schedule()).size(), 1u);
}

// A reduce read once per element by another reduce runs inside the other's loop: no buffer, one
// kernel (tinygrad's test_multistage_reduce and test_swizzle_simple took two kernels in kiln).
TEST(Fusion, NestedReduceRunsInsideItsReader) {
  Tensor x = input({32, 32, 32});
  auto one = kernels_of(x.sum({2}).relu().sum({1}).schedule());
  ASSERT_EQ(one.size(), 1u) << names(one);
  EXPECT_EQ(one[0].buffers.size(), 2u) << "one output, one input";
  EXPECT_EQ(kernels_of((x + x).sum({2}).sum({1}).schedule()).size(), 1u);
  // stored when it is read broadcast (each element by many outputs), by two reduces, or when it
  // is a matmul (its tiling wants a kernel of its own)
  Tensor s = x.sum({2});
  EXPECT_EQ(kernels_of((s.reshape({32, 32, 1}) * x).sum({1}).schedule()).size(), 2u);
  EXPECT_EQ(kernels_of((s.sum({1}) + s.max({0})).schedule()).size(), 2u);
  EXPECT_EQ(kernels_of(input({16, 32}).matmul(input({32, 8})).relu().sum({1}).schedule()).size(), 2u);
  // and when the loops nested in one kernel would reach the split's length: one accumulator over
  // 16M values on one thread, where the rows' sums run in parallel
  EXPECT_EQ(kernels_of(input({128, 128}).sum({1}).sum({0}).schedule()).size(), 1u);
  EXPECT_EQ(kernels_of(input({256, 256}).sum({1}).sum({0}).schedule()).size(), 2u);
  EXPECT_EQ(kernels_of(input({4096, 4096}).sum({1}).sum({0}).schedule()).size(), 2u);
  EXPECT_EQ(kernels_of(input({16, 16, 16, 16}).sum({3}).sum({2}).sum({1}).schedule()).size(), 1u);
  EXPECT_EQ(kernels_of(input({16, 16, 16, 16}).sum({3}).sum({2}).sum({1}).sum({0}).schedule()).size(), 2u);
  // and when it reads more than the measured bound (kMaxNestedRead: 2^20 elements)
  EXPECT_EQ(kernels_of(input({128, 64, 128}).sum({2}).relu().sum({1}).schedule()).size(), 1u);
  EXPECT_EQ(kernels_of(input({256, 64, 256}).sum({2}).relu().sum({1}).schedule()).size(), 2u);
}

// Elementwise outputs that read one input at their own element share a kernel, which loads it
// once (tinygrad's test_cache_reduce_multiple_children: 3 kernels in kiln, now 2); an output with
// a matmul keeps its kernel to itself.
TEST(Fusion, ElementwiseOutputsSharingAnInputShareAKernel) {
  Tensor x = input({32}), y = input({4, 4});
  Tensor r0 = x.mean({0}, true), r1 = (x - r0).sum({0}) / 2.0;
  auto ks = kernels_of(Tensor::schedule_all({r0 + y, r1 + y}));
  ASSERT_EQ(ks.size(), 2u) << names(ks);
  EXPECT_EQ(ks[1].buffers.size(), 5u) << "two outputs, y once, r0 and r1";
  Tensor a = input({16, 16});
  EXPECT_EQ(kernels_of(Tensor::schedule_all({a + 1.0, a.exp()})).size(), 1u);
  EXPECT_EQ(kernels_of(Tensor::schedule_all({input({16, 8}).matmul(input({8, 16})) + a, a * 2.0})).size(), 2u);
}

TEST(Fusion, DiamondRecomputesElementwiseAndRealizesTheReduce) {
  Tensor d = (input({16, 32}) * 2.0).exp();
  auto ks = kernels_of((d + d.sum({1}, true)).schedule());
  EXPECT_EQ(ks.size(), 2u) << names(ks);
  // an elementwise-only diamond is one kernel
  Tensor e = input({16, 32}) * 2.0;
  EXPECT_EQ(kernels_of((e.exp() + e.sin()).schedule()).size(), 1u);
}

// A chain with costly math or a reduce's result, read broadcast by a reduce, is computed once: its
// top is realized and runs in the producing reduce's kernel (the bias and activation as the first
// matmul's epilogue), not once per use inside the consumer's loop (512 times per element in a
// 512-wide MLP before). A cheap chain (a scaled input) still fuses into the consumer.
TEST(Fusion, CostlyChainsReadByAReduceAreComputedOnce) {
  auto has_exp = [](const ExecItem& k) {
    for (const UOp& u : toposort(k.ast))
      if (u.op() == Ops::EXP2) return true;
    return false;
  };
  Tensor x = input({16, 32}), w1 = input({64, 32}), b1 = input({64}), w2 = input({8, 64});
  auto mlp = kernels_of(x.linear(w1, b1).gelu().linear(w2).schedule());
  ASSERT_EQ(mlp.size(), 2u) << names(mlp);
  EXPECT_TRUE(has_exp(mlp[0])) << "gelu is the first matmul's epilogue";
  EXPECT_FALSE(has_exp(mlp[1])) << "the second matmul loads the activation";
  // attention's probabilities: softmax's normalising pass is realized before the @ v reduce
  Tensor q = input({2, 16, 8}), k = input({2, 16, 8}), v = input({2, 16, 8});
  auto att = kernels_of((q.matmul(k.transpose(1, 2)) * 0.35).softmax(-1).matmul(v).schedule());
  ASSERT_FALSE(att.empty());
  EXPECT_FALSE(has_exp(att.back())) << names(att);
  // cheap: (x * 2) @ w stays one kernel
  EXPECT_EQ(kernels_of((x * 2.0).matmul(input({32, 8})).schedule()).size(), 1u);
  // a cheap chain over a reduce: relu(x @ w1.T + b1) is the first matmul's epilogue, not work
  // inside the second one's inner loop (the second kernel reads neither b1 nor the raw product)
  auto relu = kernels_of(x.linear(w1, b1).relu().linear(w2).schedule());
  ASSERT_EQ(relu.size(), 2u) << names(relu);
  EXPECT_EQ(relu[0].buffers.size(), 4u) << "h, x, w1, b1";
  EXPECT_EQ(relu[1].buffers.size(), 3u) << "out, h, w2";
  // ... and a variance's mean, read in its own kernel, gets no buffer
  auto var = kernels_of(input({12, 5}).var({1}).schedule());
  ASSERT_EQ(var.size(), 1u) << names(var);
  EXPECT_EQ(var[0].buffers.size(), 2u) << "out and x: no buffer for the mean";
}

// One contraction per kernel (kernelize.hpp's is_contraction): two matmuls over one input combined
// elementwise (a gated FFN, silu(x @ w1) * (x @ w3)) were one kernel with two reduces, which the
// optimizer does not tile (10x slower than two matmuls); now one matmul is stored and the other
// loads it in its epilogue. Whether a matmul's result is shared (silu reads it twice) or not,
// and whether it is an output too. Reduces that stream their inputs once stay in one kernel.
TEST(Fusion, OneContractionPerKernel) {
  Tensor x = input({64, 32}), w1 = input({32, 47}), w3 = input({32, 47});
  auto gated = kernels_of((x.matmul(w1).silu() * x.matmul(w3)).schedule());
  ASSERT_EQ(gated.size(), 2u) << names(gated);
  EXPECT_EQ(gated[0].buffers.size(), 3u) << "one matmul: out, x, a weight";
  EXPECT_EQ(gated[1].buffers.size(), 4u) << "the other, and the first's result in its epilogue: out, x, a weight, h";
  EXPECT_EQ(kernels_of((x.matmul(w1) * x.matmul(w3)).schedule()).size(), 2u) << "neither shared";
  EXPECT_EQ(kernels_of((x.matmul(w1) + x.matmul(w3) + x.matmul(w1 * 2.0)).schedule()).size(), 3u) << "three";
  Tensor h = x.matmul(w1);
  EXPECT_EQ(kernels_of(Tensor::schedule_all({h, h * x.matmul(w3)})).size(), 2u) << "one an output";
  // streaming reduces: a row sum beside a dot product, and two vector-matrix products
  Tensor a = input({64, 32}), b = input({64, 32});
  EXPECT_EQ(kernels_of(((a * b).sum({1}) + a.sum({1})).schedule()).size(), 1u);
  Tensor v = input({1, 32});
  EXPECT_EQ(kernels_of((v.matmul(w1) * v.matmul(w3)).schedule()).size(), 1u);
}

// Row fusion (kernelize.cpp) on a device that runs a row per thread (the query says so here; "ref"
// does not): softmax and layernorm are one kernel, a row's statistics computed before the loop
// that writes it. Rows past the cache bound, a single row (one thread), reduces over a leading axis
// (the loop over the rows would recompute them) and devices that do not run rows keep the
// reduce's own kernel.
TEST(Fusion, RowKernelsComputeARowsReducesBeforeItsLoop) {
  auto count = [](const Tensor& t) { return kernels_of(t.schedule()).size(); };
  auto layernorm = [](const Tensor& x) { return (x - x.mean({-1}, true)) * (x.var({-1}, true, 0) + 1e-5).rsqrt(); };
  clear_schedule_cache();
  EXPECT_EQ(count(input({64, 100}).softmax(-1)), 2u);
  Target cpu;  // threads, no workgroups: runs rows (Target::runs_rows)
  cpu.flags = KILN_TARGET_HAS_THREADS;
  runtime::set_target_override(&cpu);  // every device is scheduled as this one (clears the caches)
  EXPECT_EQ(count(input({64, 100}).softmax(-1)), 1u);
  EXPECT_EQ(count(input({2, 8, 16, 16}).softmax(-1)), 1u);
  EXPECT_EQ(count(layernorm(input({64, 100}))), 1u);
  EXPECT_EQ(count(input({4, 20000}).softmax(-1)), 2u) << "a row of 20000 does not stay in the caches";
  EXPECT_EQ(count(input({1, 1000}).softmax(-1)), 2u) << "one row would run on one thread";
  Tensor y = input({64, 100});
  EXPECT_EQ(count(y - y.max({0}, true)), 2u) << "a column's max would be recomputed for every row";
  runtime::set_target_override(nullptr);
}

// Multi-output kernels (schedule/group.cpp): outputs in one iteration space are stored by one
// kernel, which computes what they share once.
TEST(Fusion, TwoOutputsShareTheirReduce) {
  Tensor s = (input({16, 32}) * 2.0).sum({1});
  auto ks = kernels_of(Tensor::schedule_all({s + 1.0, s * 3.0}));
  ASSERT_EQ(ks.size(), 1u) << "the shared sum once, in the kernel that stores both outputs: " << names(ks);
  EXPECT_EQ(ks[0].buffers.size(), 3u) << "two outputs and the input; the sum needs no buffer";
}

TEST(Fusion, ReduceFeedingTwoReshapedOutputsIsOneKernel) {
  Tensor s = input({16, 32}).sum({1});
  auto ks = kernels_of(Tensor::schedule_all({s.reshape({4, 4}), s.reshape({16, 1})}));
  ASSERT_EQ(ks.size(), 1u) << "no copy kernels after the reduce: " << names(ks);
  EXPECT_EQ(ks[0].name, "r_4_4_32");
  // and the same with the reduce itself among the outputs
  EXPECT_EQ(kernels_of(Tensor::schedule_all({s, s.reshape({4, 4}), s.reshape({2, 8})})).size(), 1u);
}

TEST(Fusion, OutputsDifferingInAnElementwiseTailAreOneKernel) {
  Tensor a = (input({16, 32}) * 2.0).exp();
  EXPECT_EQ(kernels_of(Tensor::schedule_all({a, a.sqrt() + 1.0})).size(), 1u);
  EXPECT_EQ(kernels_of(Tensor::schedule_all({a + 1.0, a * 3.0, a.reshape({512})})).size(), 1u);
  // outputs in other iteration spaces are not merged: a transposed tail reads `a` elsewhere
  EXPECT_EQ(kernels_of(Tensor::schedule_all({a, a.transpose() + 1.0})).size(), 2u);
}

TEST(Fusion, SeveralReductionsFeedingSeveralOutputsAreOneKernel) {
  Tensor x = input({16, 32}), y = input({16, 32});
  Tensor sx = x.sum({1}), my = y.max({1});
  auto ks = kernels_of(Tensor::schedule_all({sx + my, sx * my, (sx - 1.0).exp(), my}));
  ASSERT_EQ(ks.size(), 1u) << names(ks);
  EXPECT_EQ(ks[0].buffers.size(), 6u) << "four outputs, two inputs";
}

// A merge that would make one kernel run both before and after another is not made, and the
// values are still right: w reads z, which reads x transposed; x and w share s.
TEST(Fusion, MergesNeverMakeACycle) {
  std::vector<float> v(16 * 4);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 7) - 3.0f;
  Tensor in = Tensor::from_vector(v, {16, 4}, R);
  Tensor s = in.sum({1});
  Tensor x = s + 1.0;
  Tensor z = x.reshape({4, 4}).permute({1, 0}) + 0.5;
  Tensor w = s * 2.0 + z.reshape({16});
  std::vector<Tensor> outs{x, z, w};
  EXPECT_EQ(kernels_of(Tensor::schedule_all(outs)).size(), 2u);
  Tensor::realize_all(outs);
  std::vector<float> xs = x.to_vector<float>(), zs = z.to_vector<float>(), ws = w.to_vector<float>();
  for (int i = 0; i < 16; ++i) {
    float si = 0;
    for (int j = 0; j < 4; ++j) si += v[i * 4 + j];
    EXPECT_EQ(xs[i], si + 1.0f) << i;
    int r = i / 4, c = i % 4;  // z[r][c] = x[c * 4 + r] + 0.5
    float sc = 0;
    for (int j = 0; j < 4; ++j) sc += v[(c * 4 + r) * 4 + j];
    EXPECT_EQ(zs[i], sc + 1.0f + 0.5f) << i;
    EXPECT_EQ(ws[i], si * 2.0f + zs[i]) << i;
  }
}

// A CONTIGUOUS whose source is itself realized reads that source like any kernel: the grouping
// must see the read. It once walked the source as part of the CONTIGUOUS, so c's read of m was
// invisible: merging m with y (they share m in y's space) made {m, y} wait on z, which waits on c,
// which waits on m ("kernelize: 2 kernels wait on each other"); and with m not an output, m's
// buffer was dropped as if only its own kernel read it, so c recomputed the max.
struct ContiguousOfRealized {
  static std::vector<float> values() {
    std::vector<float> v(16);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 5) % 11) - 4.0f;
    return v;
  }
  std::vector<float> v = values();
  Tensor x = Tensor::from_vector(v, {4, 4}, R);
  Tensor m = x.max({1}, true);
  Tensor c = m.contiguous();
  Tensor z = (c.reshape({1, 4}).expand({4, 4}) + x).sum({1}, true);
  Tensor y = m * 2.0 + z;
  void expect_values() const {
    std::vector<float> mx(4), zs(4);
    for (int i = 0; i < 4; ++i) mx[i] = *std::max_element(&v[i * 4], &v[i * 4] + 4);
    for (int i = 0; i < 4; ++i) {
      float s = 0;
      for (int j = 0; j < 4; ++j) s += mx[j] + v[i * 4 + j];  // z[i] = sum_j (m[j] + x[i][j])
      zs[i] = s;
    }
    std::vector<float> ys = y.to_vector<float>(), zv = z.to_vector<float>(), ms = m.to_vector<float>();
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(ms[i], mx[i]) << i;
      EXPECT_EQ(zv[i], zs[i]) << i;
      EXPECT_EQ(ys[i], mx[i] * 2.0f + zs[i]) << i;
    }
  }
};

TEST(Fusion, ContiguousOfARealizedNodeIsARead) {
  ContiguousOfRealized p;
  std::vector<Tensor> outs{p.y, p.z, p.m};
  Tensor::realize_all(outs);
  p.expect_values();
}

TEST(Fusion, ASharedReduceReadByAContiguousKeepsItsBuffer) {
  ContiguousOfRealized p;  // m is not an output: stored once, read by c and by y
  std::vector<Tensor> outs{p.y, p.z};
  auto ks = kernels_of(Tensor::schedule_all(outs));
  int maxes = 0;
  for (const ExecItem& k : ks) maxes += print_graph(k.ast).find("MAX") != std::string::npos;
  EXPECT_EQ(maxes, 1) << "the row max is computed by one kernel: " << names(ks);
  Tensor::realize_all(outs);
  p.expect_values();
}

// One kernel stores its outputs in one loop nest at one flat index: outputs of different sizes
// in a group (a grouping bug) are an internal error, not a store past the smaller buffer.
TEST(Fusion, GroupedOutputsOfDifferentSizesAreAnInternalError) {
  UOp dev = UOp::make(Ops::DEVICE, dtypes::void_, {}, Arg{std::string(R)});
  UOp p16 = UOp::make(Ops::PARAM, dtypes::float32.ptr(16), {dev}, Arg{int64_t{0}});
  UOp p8 = UOp::make(Ops::PARAM, dtypes::float32.ptr(8), {dev}, Arg{int64_t{1}});
  UOp a = UOp::make(Ops::ADD, dtypes::float32, {p16, p16}), b = UOp::make(Ops::ADD, dtypes::float32, {p8, p8});
  GraphInfo g = analyze(UOp::sink({a, b}));
  std::vector<BufRef> params;
  kiln::testing::expect_error([&] { rangeify_kernel(g, {{a, a, BufRef{true, 0}}, {b, b, BufRef{true, 1}}}, {}, params); },
                        ErrorCode::internal, "grouped output 1 has 8 elements, output 0 has 16");
}

TEST(Fusion, BigReduceIsSplit) {
  auto ks = kernels_of(input({1 << 20}).sum().schedule());
  EXPECT_EQ(ks.size(), 2u) << names(ks);
  EXPECT_EQ(names(ks), "r_256_4096 r_1_256");
}

// A gather's one-hot sum over a long table selects one row: it stays one kernel (the codegen
// folds it into a load, codegen/onehot.cpp). A masked sum of data, where(x == y, z, 0), is a
// real sum and is split like any other.
TEST(Fusion, OneHotSumsStayWholeMaskedSumsSplit) {
  Tensor table = input({40000, 4}), idx = Tensor::empty({3, 4}, dtypes::int32, "ref");
  EXPECT_EQ(kernels_of(table.gather(0, idx).schedule()).size(), 1u);
  // indexing compares (N, V) and expands the comparison over the row: an embedding lookup,
  // table[idx], on a GPT-2-sized vocabulary was split and read the whole table per token
  Tensor vocab = input({50257, 64}), tokens = Tensor::empty({16}, dtypes::int32, "ref");
  EXPECT_EQ(kernels_of(vocab.getitem({Tensor::Index::tensor(tokens)}).schedule()).size(), 1u);
  Tensor x = input({1 << 20}), y = input({1 << 20});
  EXPECT_EQ(kernels_of(Tensor::where(x.eq(y), x, Tensor::zeros({1 << 20}, dtypes::float32, "ref")).sum().schedule()).size(), 2u);
}

// A prime length has no chunk size: it is padded (with the identity, see the op corpus) to 4883
// chunks of 4096, and the 4883 partials are split again, so no accumulator combines more than 4096.
TEST(Fusion, LongPrimeReduceIsATreeOfBoundedChunks) {
  EXPECT_EQ(names(kernels_of(input({20000003}).max().schedule())), "r_4883_4096 r_2_2442 r_1_2");
  // the reduced axes move last: each of the 3 outputs gets its own partials
  EXPECT_EQ(names(kernels_of(input({40009, 3}).sum({0}).schedule())), "r_3_10_4001 r_3_10");
  EXPECT_EQ(names(kernels_of(input({8, 4096}).sum({1}).schedule())), "r_8_4096") << "short reduces stay one kernel";
}

// Chunks end on the reduce's digits where a divisor allows: batch-norm statistics over (32, 56, 56)
// take 32 planes of 3136, not 28 chunks of 3584 (which divided every position by 3136 and ran
// scalar, 5x slower); a reduce over one axis takes its nearest divisor as before.
TEST(Fusion, SplitChunksEndOnTheReducedDigits) {
  EXPECT_EQ(names(kernels_of(input({32, 64, 56, 56}).sum({0, 2, 3}).schedule())), "r_64_32_3136 r_64_32");
  EXPECT_EQ(names(kernels_of(input({100352}).sum().schedule())), "r_28_3584 r_1_28");
}

// A long reduce inside another's source (softmax's max inside its sum of exp) is split as well:
// it used to stay whole inside the other's split (one accumulator over the whole row).
TEST(Fusion, NestedLongReducesAreBothSplit) {
  EXPECT_EQ(names(kernels_of(input({8, 40000}).softmax().schedule())), "r_8_10_4000 r_8_10 r_8_10_4000n1 r_8_10n1 E_8_40000");
}

TEST(Ordering, AssignRunsAfterItsReaders) {
  Tensor a = input({8}).realize();
  UOp buf = base_buffer(a.uop());
  Tensor reader = a + 1.0;
  a.assign(a * 2.0);
  // the assign comes first in the sink, the reader of a's old contents must still run before it
  auto ks = kernels_of(Tensor::schedule_all({a, reader}));
  ASSERT_EQ(ks.size(), 2u) << names(ks);
  int read = first_reader(ks, buf), write = first_writer(ks, buf);
  ASSERT_GE(read, 0) << "no kernel reads a's buffer without writing it: " << names(ks);
  ASSERT_GE(write, 0) << "no kernel writes a's buffer: " << names(ks);
  EXPECT_LT(read, write) << "write after read: (a + 1) reads a's old contents in kernel #" << read << " (" << ks[read].name
                         << "), so it must run before a.assign(a * 2) writes them in kernel #" << write << " (" << ks[write].name
                         << ")";
  EXPECT_NE(ks[read].buffers[0], buf) << "the reader writes a fresh buffer";
}

// Two handles on one buffer (a, and the view v of it), each assigned once, realized in one
// schedule: the buffer must end with the value assigned last.
void expect_assigns_in_program_order(bool later_output_first) {
  {
    SCOPED_TRACE(later_output_first ? "outputs {v, a}" : "outputs {a, v}");
    bool later_first = later_output_first;
    Tensor a = Tensor::zeros({8}, dtypes::float32, R).contiguous().realize();
    UOp buf = base_buffer(a.uop());
    Tensor v = a.reshape({2, 4});
    a.assign(Tensor::full({8}, 1.0, dtypes::float32, R));     // first
    v.assign(Tensor::full({2, 4}, 2.0, dtypes::float32, R));  // second: wins
    std::vector<Tensor> outs = later_first ? std::vector<Tensor>{v, a} : std::vector<Tensor>{a, v};
    auto ks = kernels_of(Tensor::schedule_all(outs));
    std::vector<int> writes;
    for (size_t i = 0; i < ks.size(); ++i)
      if (ks[i].buffers[0] == buf) writes.push_back(static_cast<int>(i));
    ASSERT_EQ(writes.size(), 2u) << "both assigns write a's buffer: " << names(ks);
    Tensor::realize_all(outs);
    EXPECT_EQ(a.to_vector<float>(), std::vector<float>(8, 2.0f))
        << "write after write: a.assign(1) then v.assign(2) on a view of the same buffer must leave 2 (program order)";
  }
}

TEST(Ordering, TwoAssignsToOneBufferKeepProgramOrder) {
  expect_assigns_in_program_order(false);
  expect_assigns_in_program_order(true);  // graph order is now the reverse of program order
}

TEST(Ordering, AssignOrderDoesNotDefeatTheScheduleCache) {
  // the assign's program order is renumbered per graph: the same step twice is one schedule
  clear_schedule_cache();
  Tensor w = Tensor::zeros({8}, dtypes::float32, R).contiguous().realize();
  bool hits[2];
  for (bool& hit : hits) {
    w.assign(w + 1.0);
    hit = create_linear_with_vars(UOp::sink({w.uop()})).cache_hit;
    w.realize();
  }
  EXPECT_FALSE(hits[0]);
  EXPECT_TRUE(hits[1]) << "w.assign(w + 1) on the second step must reuse the first step's schedule";
  EXPECT_EQ(w.to_vector<float>(), std::vector<float>(8, 2.0f));
}

TEST(Cache, SecondIdenticalGraphIsAHit) {
  clear_schedule_cache();
  auto build = [] { return ((input({32, 8}) + 1.0) * input({32, 8})).sum({0}); };
  UOp s1 = UOp::sink({build().uop()});
  LinearResult a = create_linear_with_vars(s1);
  EXPECT_FALSE(a.cache_hit);
  UOp s2 = UOp::sink({build().uop()});  // new buffers, same shapes and ops
  EXPECT_NE(s1, s2);
  LinearResult b = create_linear_with_vars(s2);
  EXPECT_TRUE(b.cache_hit);
  EXPECT_NE(a.outputs[0], b.outputs[0]) << "a hit still gets fresh output buffers";
  set_knob(Knob::scache, 0);
  LinearResult c = create_linear_with_vars(UOp::sink({build().uop()}));
  set_knob(Knob::scache, 1);
  EXPECT_FALSE(c.cache_hit) << "KILN_SCACHE=0 disables the cache";
}

// A hit's key is computed from the graph as it is (its buffers as PARAM slots), without building
// the graph with PARAMs: what differs after that replacement must still miss, a buffer used twice
// included (one slot, not two).
TEST(Cache, GraphsThatDifferAsPARAMsMiss) {
  clear_schedule_cache();
  auto hit = [](const Tensor& t) { return create_linear_with_vars(UOp::sink({t.uop()})).cache_hit; };
  Tensor a = input({16}), b = input({16});
  EXPECT_FALSE(hit(a * b));
  EXPECT_TRUE(hit(input({16}) * input({16}))) << "other buffers, same graph";
  EXPECT_FALSE(hit(a * a)) << "one buffer twice is one PARAM";
  EXPECT_TRUE(hit(b * b));
  EXPECT_FALSE(hit((a + 2.0) * b)) << "another constant";
  EXPECT_FALSE(hit(input({8}) * input({8}))) << "another size";
  EXPECT_TRUE(hit((input({16}) + 2.0) * input({16})));
}

TEST(Symbolic, VariableBatchSharesOneSchedule) {
  clear_schedule_cache();
  Variable batch("batch", 1, 16);
  Tensor data = Tensor::from_vector<float>(std::vector<float>(16 * 4, 1.0f), {16, 4}, R).realize();
  Tensor w = Tensor::from_vector<float>({1, 2, 3, 4}, {4, 1}, R).realize();
  auto run = [&](int64_t b) {
    Tensor x = data.shrink(0, batch.bind(b));
    EXPECT_EQ(x.shape(), (Shape{b, 4}));
    Tensor y = (x.matmul(w) + 1.0).relu();
    UOp sink = UOp::sink({y.uop()});
    LinearResult lr = create_linear_with_vars(sink);
    EXPECT_EQ(lr.var_vals, (VarVals{{"batch", b}}));
    return std::make_pair(lr.cache_hit, y.to_vector<float>());
  };
  auto [hit3, y3] = run(3);
  auto [hit5, y5] = run(5);
  EXPECT_FALSE(hit3);
  EXPECT_TRUE(hit5) << "the same schedule for another bound value";
  EXPECT_EQ(y3, std::vector<float>(3, 11.0f));
  EXPECT_EQ(y5, std::vector<float>(5, 11.0f));
}

TEST(Symbolic, OneVariableTwoValuesIsAnError) {
  Variable n("n", 1, 8);
  Tensor x = Tensor::zeros({8}, dtypes::float32, R).realize();
  Tensor a = x.shrink(0, n.bind(2)).sum(), b = x.shrink(0, n.bind(3)).sum();
  try {
    Tensor::schedule_all({a + b});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("'n'"), std::string::npos) << m;
    EXPECT_NE(m.find("2"), std::string::npos) << m;
    EXPECT_NE(m.find("3"), std::string::npos) << m;
  }
}

TEST(MemoryPlanner, ChainReusesIntermediates) {
  Tensor x = input({1 << 16});
  Tensor y = x;
  for (int i = 0; i < 10; ++i) y = (y + 1.0).contiguous();
  LinearResult lr = create_linear_with_vars(UOp::sink({y.uop()}));
  uint64_t one = (1 << 16) * 4;
  EXPECT_EQ(lr.unplanned_bytes, 9 * one) << "9 intermediates (the 10th is the output)";
  EXPECT_LE(lr.planned_bytes, 2 * one) << "ping-pong between two buffers";
}

TEST(MemoryPlanner, StepByStepRealizePeaksAtThreeBuffers) {
  runtime::clear_allocation_cache();
  uint64_t one = (1 << 20) * 4;
  Tensor x = Tensor::zeros({1 << 20}, dtypes::float32, R).contiguous().realize();
  runtime::reset_peak(R);
  uint64_t base = runtime::memory_stats(R).live_bytes;
  for (int i = 0; i < 10; ++i) x = (x + 1.0).realize();
  uint64_t peak = runtime::memory_stats(R).peak_bytes - base;
  EXPECT_LE(peak, 3 * one) << "each step frees the buffer it no longer needs";
  EXPECT_FLOAT_EQ(x.to_vector<float>()[12345], 10.0f);
}

TEST(Debug, LevelOneReportsScheduling) {
  set_knob(Knob::debug, 1);
  ::testing::internal::CaptureStderr();
  Tensor::schedule_all({(input({4}) * 3.0).sum()});
  std::string err = ::testing::internal::GetCapturedStderr();
  set_knob(Knob::debug, 0);
  EXPECT_NE(err.find("scheduled 1 kernels in"), std::string::npos) << err;
  EXPECT_NE(err.find("cache"), std::string::npos) << err;
}

TEST(Debug, LevelThreePrintsEveryKernelAstOnMissAndHit) {
  clear_schedule_cache();
  auto build = [] { return input({16, 32}).sum() + input({16, 32}); };  // two kernels: the sum, then the add
  for (const char* pass : {"miss", "hit"}) {
    SCOPED_TRACE(pass);
    set_knob(Knob::debug, 3);
    ::testing::internal::CaptureStderr();
    auto ks = kernels_of(build().schedule());
    std::string err = ::testing::internal::GetCapturedStderr();
    set_knob(Knob::debug, 0);
    ASSERT_EQ(ks.size(), 2u) << names(ks);
    EXPECT_NE(err.find(std::string("cache ") + pass), std::string::npos) << "expected a cache " << pass << " in:\n" << err;
    for (size_t i = 0; i < ks.size(); ++i) {
      std::string head = "kernel " + std::to_string(i + 1) + "/2 " + ks[i].name + " AST:\n";
      size_t at = err.find(head);
      ASSERT_NE(at, std::string::npos) << "KILN_DEBUG=3 must print '" << head << "' for kernel " << ks[i].name
                                       << " of the schedule (cache " << pass << "); stderr was:\n" << err;
      EXPECT_EQ(err.compare(at + head.size(), print_graph(ks[i].ast).size(), print_graph(ks[i].ast)), 0)
          << "the AST of " << ks[i].name << " must follow its header; stderr was:\n" << err;
    }
  }
  // below 3, no ASTs
  set_knob(Knob::debug, 2);
  ::testing::internal::CaptureStderr();
  build().schedule();
  std::string err = ::testing::internal::GetCapturedStderr();
  set_knob(Knob::debug, 0);
  EXPECT_EQ(err.find("AST:"), std::string::npos) << "KILN_DEBUG=2 must not print ASTs:\n" << err;
}
