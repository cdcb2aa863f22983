// tests/codegen/matmul_block_test.cpp - plans that thread a matmul's columns and walk B in
// blocks (BLOCK): which kernels they apply to, what they lower to, and that the kernels compute the
// reference on cpu:0 (simulated caps, so no test depends on this host).
#include <gtest/gtest.h>

#include "matmul_plan_util.hpp"

using namespace kiln;
using namespace kiln::matmul_plan;

TEST(Threads, FewRowsThreadTheColumns) {
  auto threads_of = [](const std::vector<Opt>& opts) {
    std::vector<std::string> out;
    for (const Opt& o : opts)
      if (o.op == OptOp::THREAD) out.push_back(o.str());
    return out;
  };
  // 16 lanes: 8 rows are one whole-axis upcast, so axis 0 is gone; the columns take all 8 chunks
  ProgramSpec eight = to_program(kernel_of(ref({8, 512}).matmul(ref({512, 1024}))), kiln::testing::simulated_cpu(16, 2));
  EXPECT_EQ(threads_of(eight.opts), std::vector<std::string>{"THREAD(1, 8)"});
  // 64 threads: B (2 MiB) walked in blocks down its columns, so the 32 column tiles first, then
  // the 4 row tiles (fewer than the 8 chunks left)
  ProgramSpec wide = to_program(kernel_of(ref({32, 512}).matmul(ref({512, 1024}))), kiln::testing::simulated_cpu(16, 64));
  EXPECT_EQ(threads_of(wide.opts), (std::vector<std::string>{"THREAD(1, 32)", "THREAD(0, 4)"}));
  EXPECT_EQ(wide.dims.global[0].arg_int(), 128) << "one launch index over both";
  // enough rows, B in place: the rows
  ProgramSpec tall = to_program(kernel_of(ref({256, 64}).matmul(ref({64, 256}))), kiln::testing::simulated_cpu(16, 2));
  EXPECT_EQ(threads_of(tall.opts), std::vector<std::string>{"THREAD(0, 8)"});
  // column panels outside the row tiles (staged): the panels
  ProgramSpec staged = to_program(kernel_of(ref({256, 512}).matmul(ref({512, 256}))), kiln::testing::simulated_cpu(16, 2));
  EXPECT_TRUE(has_stage(staged.opts));
  EXPECT_EQ(threads_of(staged.opts), std::vector<std::string>{"THREAD(1, 8)"});
  // fewer chunks where there is less work (at least 65536 operations each), and one thread none
  ProgramSpec small = to_program(kernel_of(ref({64, 64}).matmul(ref({64, 64}))), kiln::testing::simulated_cpu(16, 2));
  EXPECT_EQ(threads_of(small.opts), std::vector<std::string>{"THREAD(0, 4)"});
  EXPECT_TRUE(threads_of(to_program(kernel_of(ref({256, 64}).matmul(ref({64, 256}))), kiln::testing::simulated_cpu(16, 1)).opts).empty());
  // a memory-bound kernel: one chunk per thread
  ProgramSpec add = to_program(kernel_of(ref({1024, 1024}) + 1.0), kiln::testing::simulated_cpu(16, 2));
  EXPECT_EQ(threads_of(add.opts), std::vector<std::string>{"THREAD(0, 2)"});
}

// Few row tiles over a B larger than the L2 walk B in blocks down its columns (BLOCK, outermost
// in each thread's chunk): with 32 registers the threads split the columns, so each chunk's block
// of B serves every row tile from the cache and B is read once in all. Split by rows, every chunk
// read all of B (64 x 4096 @ 4096 x 4096: 8 row tiles, 8 times; docs/optimizer.md, "Matmul").
TEST(Threads, BlocksDownTheColumnsThreadTheColumns) {
  const Target cpu = kiln::testing::simulated_cpu(16, 2);
  auto plan = [&](int64_t m, int64_t k, int64_t n) { return to_program(kernel_of(ref({m, k}).matmul(ref({k, n}))), cpu).opts; };
  auto threaded = [](const std::vector<Opt>& opts, int64_t axis) {
    return std::any_of(opts.begin(), opts.end(), [&](const Opt& o) { return o.op == OptOp::THREAD && o.axis == axis; });
  };
  auto blocked = [](const std::vector<Opt>& opts) {
    return std::any_of(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::BLOCK; });
  };
  for (int64_t m : {16, 17, 64}) {  // 2 row tiles of 8, 2 of 9 (padded), 8 of 8
    const std::vector<Opt> opts = plan(m, 4096, 4096);
    EXPECT_TRUE(blocked(opts)) << m << ": " << opts_text(opts);
    EXPECT_TRUE(threaded(opts, 1) && !threaded(opts, 0)) << m << ": " << opts_text(opts);
  }
  // blocks whose part of B for a chunk (8 chunks of 512 columns) fits half the 1 MiB L2: 256 rows
  EXPECT_NE(opts_text(plan(64, 4096, 4096)).find("BLOCK(2, 256)"), std::string::npos) << opts_text(plan(64, 4096, 4096));
  // one thread: no chunks, a block spans all 4096 columns (32 rows: 512 KiB)
  const std::vector<Opt> one = to_program(kernel_of(ref({64, 4096}).matmul(ref({4096, 4096}))), kiln::testing::simulated_cpu(16, 1)).opts;
  EXPECT_NE(opts_text(one).find("BLOCK(2, 32)"), std::string::npos) << opts_text(one);
  // 16 registers (AVX2's 8 lanes: 4-row tiles) keep blocks of 16 and their rows threaded first
  const std::vector<Opt> avx2 = to_program(kernel_of(ref({16, 4096}).matmul(ref({4096, 4096}))), kiln::testing::simulated_cpu(8, 2)).opts;
  EXPECT_NE(opts_text(avx2).find("BLOCK(2, 16) THREAD(0, 4)"), std::string::npos) << opts_text(avx2);
  // 17 rows (prime, 8 would pad 7): two tiles of 9, padded to 18, not one row a tile
  const std::vector<Opt> odd = plan(17, 4096, 4096);
  EXPECT_NE(opts_text(odd).find("PADTO(0, 9) UPCAST(0, 9)"), std::string::npos) << opts_text(odd);
  // many row tiles: the column panels go outside the rows (staged) and are threaded, as before
  EXPECT_TRUE(has_stage(plan(256, 4096, 4096)));
  // B in the L2: no blocks, the rows threaded as before
  const std::vector<Opt> fits = plan(64, 256, 256);
  EXPECT_FALSE(blocked(fits)) << opts_text(fits);
  EXPECT_TRUE(threaded(fits, 0)) << opts_text(fits);
  // odd rows and columns, B (4 MiB) past the L2; x @ w.T beside them (the dot tile, unchanged)
  expect_matmul(17, 2048, 520, cpu);
  expect_matmul(24, 1024, 1040, cpu);
  expect_matmul(65, 1024, 1024, cpu);
  expect_matmul(17, 1024, 1040, cpu, false, true);
  expect_matmul(11, 64, 256, cpu);  // two tiles of 6, B in the L2
}

TEST(Threads, SeveralThreadedAxesComputeTheReference) {
  const Target cpu = kiln::testing::simulated_cpu(8, 8);
  expect_matmul(8, 64, 1024, cpu);  // the heuristic's: rows upcast whole, columns threaded
  // chunks that do not divide on both axes: 7 rows in 3, 9 columns in 4 (3 x 3 chunks, 2 empty)
  const std::vector<Opt> both{{OptOp::THREAD, 0, 3}, {OptOp::THREAD, 1, 4}};
  expect_reference([](const auto& in) { return in({7, 5}).matmul(in({5, 9})); }, cpu, &both);
  const std::vector<Opt> staged{{OptOp::UPCAST, 1, 8, true}, {OptOp::THREAD, 0, 2}, {OptOp::THREAD, 1, 2}, {OptOp::SWAP, 0, 1}, stage_b};
  expect_reference([](const auto& in) { return in({6, 21}).matmul(in({21, 32})); }, cpu, &staged);
}

// opt_problem says why a BLOCK does not apply, for each of its rules.
TEST(Block, RulesSayWhyItDoesNotApply) {
  const Target cpu = kiln::testing::simulated_cpu(8, 2);
  UOp k = kernel_of(ref({16, 64}).matmul(ref({64, 48})));
  const Opt block{OptOp::BLOCK, 2, 16};
  EXPECT_EQ(problem(k, block, cpu), "");
  EXPECT_NE(problem(k, {OptOp::BLOCK, 2, 24}, cpu).find("not divisible by 24"), std::string::npos);
  EXPECT_NE(problem(k, {OptOp::BLOCK, 2, 64}, cpu).find("whole axis"), std::string::npos);
  EXPECT_NE(problem(k, {OptOp::BLOCK, 0, 2}, cpu).find("reduce axes"), std::string::npos);
  auto reduce_axis = [](const UOp& e) {
    int64_t red = -1;
    for (const UOp& u : toposort(e))
      if (u.op() == Ops::RANGE && range_type(u) == AxisType::REDUCE) red = range_axis(u);
    return red;
  };
  // a max is no sum; a float32 sum cast narrower keeps its partial sums in a float32 stack array the
  // size of the output (rounding them in the output would change the answer): only where that fits
  // kMaxStageBytes (512 x 256 floats do not), and only for float32 sums (float64's cast to float32
  // would need a float64 array)
  for (const Tensor& t : {ref({16, 64}).max({1}), ref({512, 64}).matmul(ref({64, 256})).cast(dtypes::float16),
                          Tensor::empty({16, 64}, dtypes::float64, "ref").matmul(Tensor::empty({64, 48}, dtypes::float64, "ref")).cast(dtypes::float32)}) {
    UOp e = kernel_of(t);
    EXPECT_NE(problem(e, {OptOp::BLOCK, reduce_axis(e), 2}, cpu), "");
  }
  for (DType d : {dtypes::float16, dtypes::bfloat16}) {
    UOp e = kernel_of(ref({16, 64}).matmul(ref({64, 48})).cast(d));
    EXPECT_EQ(problem(e, {OptOp::BLOCK, reduce_axis(e), 2}, cpu), "") << d.name();
  }
  // an epilogue (an activation, a mean's scale) runs in the last block
  for (const Tensor& t : {ref({16, 64}).matmul(ref({64, 48})).relu(), ref({16, 64}).mean({1})}) {
    UOp e = kernel_of(t);
    EXPECT_EQ(problem(e, {OptOp::BLOCK, reduce_axis(e), 2}, cpu), "");
  }
  EXPECT_EQ(problem(kernel_of(ref({16, 64}).sum({1})), {OptOp::BLOCK, 1, 16}, cpu), "") << "a plain sum blocks";
  EXPECT_NE(problem(k, block, gpu_caps(256, 64, 256, 48 << 10, 4)).find("no CPU threads"), std::string::npos);
  UOp blocked = apply_opt(k, block, &cpu);
  EXPECT_NE(problem(blocked, {OptOp::BLOCK, 2, 2}, cpu).find("one per kernel"), std::string::npos);
  // the block loop is no output or reduce axis: nothing splits it
  int64_t kb = -1;
  for (const UOp& u : toposort(blocked))
    if (u.op() == Ops::RANGE && range_type(u) == AxisType::BLOCK) kb = range_axis(u);
  ASSERT_GE(kb, 0);
  EXPECT_NE(problem(blocked, {OptOp::UNROLL, kb, 2}, cpu).find("is BLOCK"), std::string::npos);
  EXPECT_NE(problem(blocked, {OptOp::UPCAST, kb, 2}, cpu).find("is BLOCK"), std::string::npos);
  EXPECT_EQ(problem(blocked, {OptOp::UNROLL, 2, 4}, cpu), "") << "the inner reduce keeps the axis";
}

// The lowered kernel: the block loop is the outermost, each block loads the output (gated off in
// the first block) and stores it once per output element.
TEST(Block, LowersToABlockLoopOutsideTheOutputLoops) {
  const Target cpu = kiln::testing::simulated_cpu(8, 1);
  UOp ast = kernel_of(ref({32, 64}).matmul(ref({64, 64})));
  const std::vector<Opt> opts{{OptOp::UPCAST, 1, 8, true}, {OptOp::UPCAST, 0, 4}, {OptOp::BLOCK, 2, 16}};
  ProgramSpec p = to_program(ast, cpu, &opts);
  std::vector<UOp> lin = do_linearize(p.sink);
  ASSERT_FALSE(lin.empty());
  size_t first_range = lin.size(), out_loads = 0;
  for (size_t i = 0; i < lin.size(); ++i) {
    const UOp& u = lin[i];
    if (u.op() == Ops::RANGE && first_range == lin.size()) {
      first_range = i;
      EXPECT_EQ(range_type(u), AxisType::BLOCK) << "the block loop opens first";
      EXPECT_EQ(u.src(0).arg_int(), 4) << "64 / 16 blocks";
    }
    if (u.op() == Ops::LOAD && u.src(0).op() == Ops::INDEX && u.src(0).src(0).op() == Ops::PARAM && u.src(0).src(0).arg_int() == kOut) {
      ++out_loads;
      EXPECT_EQ(u.src(0).nsrc(), 3u) << "gated: the first block adds to nothing";
    }
  }
  EXPECT_EQ(out_loads, 4u) << "one vector load of the output per row of the 4-row tile";
}

// BLOCK as the heuristic uses it (few rows; a panel too large to stage) and as given, on odd
// sizes and with epilogues, computes the reference.
TEST(Block, BlockedKernelsComputeTheReference) {
  const Target cpu = kiln::testing::simulated_cpu(8, 2);
  // few rows, B larger than the L2: blocks of 16 (16 registers: Threads.BlocksDownTheColumns...)
  ProgramSpec few = to_program(kernel_of(ref({8, 512}).matmul(ref({512, 1024}))), cpu);
  EXPECT_NE(std::find_if(few.opts.begin(), few.opts.end(), [](const Opt& o) { return o.str() == "BLOCK(2, 16)"; }), few.opts.end());
  expect_matmul(8, 512, 1024, cpu);
  // a panel of 8192 x 16 floats (512 KiB) is more than a stage buffer: blocks of 4096 (256 KiB),
  // whose part of B (1 MiB) fits the L2
  ProgramSpec deep = to_program(kernel_of(ref({64, 8192}).matmul(ref({8192, 64}))), cpu);
  std::string plan;
  for (const Opt& o : deep.opts) plan += o.str() + " ";
  EXPECT_NE(plan.find("BLOCK(2, 4096)"), std::string::npos) << plan;
  expect_matmul(64, 8192, 64, cpu);
  // given: blocks of a reduce whose size divides nothing else, with threads, a sum
  const std::vector<Opt> odd{{OptOp::UPCAST, 1, 8, true}, {OptOp::BLOCK, 2, 7}, {OptOp::THREAD, 0, 2}, {OptOp::UNROLL, 2, 7}};
  expect_reference([](const auto& in) { return in({13, 35}).matmul(in({35, 16})); }, cpu, &odd);
  const std::vector<Opt> sum{{OptOp::BLOCK, 1, 5}};
  expect_reference([](const auto& in) { return in({3, 45}).sum({1}); }, cpu, &sum);
  // epilogues, applied once to the whole sum in the last block: a bias and a gelu (which reads
  // the sum several times), a mean, and a convolution's bias and relu in blocks of its channels
  expect_reference([](const auto& in) { return in({13, 35}).linear(in({16, 35}), in({16})).gelu(); }, cpu, &odd);
  expect_reference([](const auto& in) { return in({3, 45}).mean({1}) - 0.25; }, cpu, &sum);
  const std::vector<Opt> conv{{OptOp::UPCAST, 0, 8, true}, {OptOp::BLOCK, 3, 4}, {OptOp::STAGE, 1, 2}};  // axes: f, y, x, c
  expect_reference([](const auto& in) { return in({1, 12, 5, 7}).conv2d(in({16, 12, 3, 3}), in({16})).relu(); }, cpu, &conv);
  // a sum stored narrower: the blocks' float32 partial sums in a stack array, one rounding at the end
  expect_reference_reducing([](const auto& in) { return in({13, 35}).matmul(in({35, 16})).cast(dtypes::bfloat16); }, cpu, odd);
  expect_reference_reducing([](const auto& in) { return in({13, 35}).linear(in({16, 35}), in({16})).relu().cast(dtypes::float16); }, cpu, odd);
}

// A blocked kernel's first block must not read what its output buffer held before: memory the
// planner reuses, or a realized tensor assigned to, holds old values. The output here starts as
// NaN (any NaN read would survive the sums).
TEST(Block, TheFirstBlockIgnoresWhatTheOutputHeld) {
  const Target cpu = kiln::testing::simulated_cpu(8, 2);
  const std::vector<Opt> opts{{OptOp::UPCAST, 1, 8, true}, {OptOp::BLOCK, 2, 7}};
  std::mt19937_64 rng(11);
  Tensor a = random_input(rng, {13, 35}, "cpu:0"), b = random_input(rng, {35, 16}, "cpu:0");
  const std::vector<float> av = a.to_vector<float>(), bv = b.to_vector<float>();
  Tensor c = Tensor::from_vector(std::vector<float>(13 * 16, std::nanf("")), {13, 16}, "cpu:0");
  c.realize();
  runtime::set_target_override(&cpu);
  runtime::set_opts_override(every_kernel(&opts));
  std::vector<float> first;
  std::string error;
  try {
    first = c.assign(a.matmul(b)).to_vector<float>();
  } catch (const std::exception& e) {
    error = e.what();
  }
  runtime::set_opts_override({});
  runtime::set_target_override(nullptr);
  ASSERT_EQ(error, "");
  for (int64_t i = 0; i < 13; ++i)
    for (int64_t j = 0; j < 16; ++j) {
      double want = 0;
      for (int64_t k = 0; k < 35; ++k) want += static_cast<double>(av[i * 35 + k]) * bv[k * 16 + j];
      ASSERT_NEAR(first[i * 16 + j], want, 1e-4) << i << "," << j;
    }
}

// Stores into a buffer larger than the caches bypass them (non-temporal), except into a buffer
// the kernel also reads: a blocked sum reloads its output once per block.
TEST(Block, StoresIntoAnOutputItReadsStayInTheCaches) {
  const Target cpu = kiln::testing::simulated_cpu(16, 2);  // whole 64-byte lines per store
  UOp ast = kernel_of(ref({32, 64}).matmul(ref({64, 64})));
  cpu::LlvmRenderOptions tiny;
  tiny.streaming_store_bytes = 1;  // every buffer counts as larger than the caches
  const std::vector<Opt> plain{{OptOp::UPCAST, 1, 16, true}}, blocked{{OptOp::UPCAST, 1, 16, true}, {OptOp::BLOCK, 2, 16}};
  EXPECT_NE(cpu::render_llvm_ir(to_program(ast, cpu, &plain).lir.view(), tiny).find("!nontemporal"), std::string::npos);
  EXPECT_EQ(cpu::render_llvm_ir(to_program(ast, cpu, &blocked).lir.view(), tiny).find("!nontemporal"), std::string::npos);
}
