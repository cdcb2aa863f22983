// tests/codegen/matmul_plan_test.cpp - plans for large and lopsided matmuls: STAGE (which kernels
// it applies to, what it lowers to) and register tiles, and that such kernels compute the
// reference on cpu:0 (simulated caps, so no test depends on this host). Threads and BLOCK:
// matmul_block_test.cpp.
#include <gtest/gtest.h>

#include "matmul_plan_util.hpp"

using namespace kiln;
using namespace kiln::matmul_plan;

// opt_problem says why a STAGE does not apply, for each of its rules.
TEST(Stage, RulesSayWhyItDoesNotApply) {
  const Target cpu = kiln::testing::simulated_cpu(8, 2);
  UOp k = kernel_of(ref({16, 64}).matmul(ref({64, 48})));
  EXPECT_EQ(problem(k, stage_b, cpu), "") << "B is reused by every row";
  EXPECT_NE(problem(k, {OptOp::STAGE, 0, kA}, cpu).find("moves along axis 0"), std::string::npos);
  EXPECT_NE(problem(k, {OptOp::STAGE, 1, kB}, cpu).find("moves along axis 1"), std::string::npos);
  EXPECT_NE(problem(k, {OptOp::STAGE, 2, kB}, cpu).find("output (loop) axes"), std::string::npos) << "axis 2 is the reduce";
  EXPECT_NE(problem(k, {OptOp::STAGE, 0, 7}, cpu).find("loads no input 7"), std::string::npos);
  EXPECT_NE(problem(k, {OptOp::STAGE, 0, kOut}, cpu).find("writes input 0"), std::string::npos);
  EXPECT_NE(problem(k, {OptOp::STAGE, 9, kB}, cpu).find("no axis 9"), std::string::npos);
  // the panel lives on the thread's stack: 4096 x 64 floats (1 MiB) is too much
  UOp tall = kernel_of(ref({16, 4096}).matmul(ref({4096, 64})));
  EXPECT_NE(problem(tall, stage_b, cpu).find("bytes"), std::string::npos);
  // a B that moves only along the rows' loop has nothing inside it to stage
  UOp outer = kernel_of(ref({16, 1}) * ref({1, 48}));
  EXPECT_NE(problem(outer, {OptOp::STAGE, 1, kA}, cpu).find("nothing to stage"), std::string::npos);
  // targets without CPU threads (OpenCL, HIP) have no per-thread stack buffer: refused
  EXPECT_NE(problem(k, stage_b, gpu_caps(256, 64, 256, 48 << 10, 4)).find("no CPU threads"), std::string::npos);
  // STAGE actions come last (a later split could cut a copy loop); another input may be staged
  // after one (A.T @ B stages both), the same input not twice (the kernel reads the buffer now)
  UOp staged = apply_opt(k, stage_b, &cpu);
  EXPECT_NE(problem(staged, {OptOp::UPCAST, 1, 8, true}, cpu).find("STAGE actions come last"), std::string::npos);
  EXPECT_NE(problem(staged, stage_b, cpu).find("input 2 is staged already"), std::string::npos);
  EXPECT_EQ(problem(staged, {OptOp::STAGE, 1, kA}, cpu), "") << "A does not move along the columns";
  // a given list names the failing action
  try {
    apply_opts(k, std::vector<Opt>{{OptOp::STAGE, 0, kA}}, cpu);
    ADD_FAILURE() << "STAGE(0, 1) applied";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("opt #1 STAGE(0, 1)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_opt("STAGE(0, 2)").str(), stage_b.str());
}

// The lowered kernel: a per-thread buffer of the panel (K x tile columns), filled by a loop that
// runs before the row loop opens, read with vector loads.
TEST(Stage, LowersToACopyLoopBeforeTheRowLoop) {
  const Target cpu = kiln::testing::simulated_cpu(8, 2);
  const int64_t m = 32, k = 64, n = 64;
  UOp ast = kernel_of(ref({m, k}).matmul(ref({k, n})));
  const std::vector<Opt> opts{{OptOp::UPCAST, 1, 8, true}, {OptOp::UPCAST, 1, 2}, {OptOp::UPCAST, 0, 4},
                              {OptOp::SWAP, 0, 1}, stage_b};
  ProgramSpec p = to_program(ast, cpu, &opts);
  std::vector<UOp> lin = do_linearize(p.sink);
  UOp panel;
  for (const UOp& u : lin)
    if (u.op() == Ops::DEFINE_REG && u.dtype().ptr_size() > 1) panel = u;
  ASSERT_TRUE(panel) << "a buffer for the panel";
  EXPECT_EQ(panel.dtype().ptr_size(), k * 16) << "K rows of two 8-lane vectors";
  auto reads_panel = [&](const UOp& u) {
    if (u.src(0).op() != Ops::INDEX) return false;
    UOp base = u.src(0).src(0);
    while (base.op() == Ops::AFTER) base = base.src(0);
    return base == panel;
  };
  size_t first_put = lin.size(), first_read = lin.size(), row_loop = lin.size();
  int depth = 0, put_depth = -1;
  for (size_t i = 0; i < lin.size(); ++i) {
    const UOp& u = lin[i];
    if (u.op() == Ops::RANGE) ++depth;
    if (u.op() == Ops::END && u.nsrc() == 1) --depth;
    if (u.op() == Ops::STORE && reads_panel(u) && first_put == lin.size()) {
      first_put = i, put_depth = depth;
      EXPECT_EQ(u.src(1).dtype().count(), 8) << "the copy moves vectors";
    }
    if (u.op() == Ops::LOAD && reads_panel(u) && first_read == lin.size()) {
      first_read = i;
      EXPECT_EQ(u.dtype().count(), 8) << "the kernel reads the panel as vectors";
    }
    // the row loop: 32 rows / 4 upcast = 8 iterations, opened after the copy
    if (u.op() == Ops::RANGE && u.src(0).is_const() && u.src(0).arg_int() == m / 4 && row_loop == lin.size() && i > first_put)
      row_loop = i;
  }
  ASSERT_LT(first_put, lin.size()) << "the copy writes the panel";
  EXPECT_LT(first_put, row_loop) << "the copy runs before the row loop opens";
  EXPECT_LT(row_loop, first_read) << "the compute reads the panel inside the row loop";
  EXPECT_EQ(put_depth, 3) << "the column-panel loop, then the copy's loops (K, 2 vectors)";
  size_t reads_of_b = 0;
  for (const UOp& u : lin)
    if (u.op() == Ops::INDEX && u.src(0).op() == Ops::PARAM && u.src(0).arg_int() == kB) ++reads_of_b;
  EXPECT_EQ(reads_of_b, 1u) << "B is read only by the copy";
}

// The heuristic stages B where it walks column panels outside (B larger than the L2, a panel
// small), and the staged kernel computes the reference, odd sizes included. (Rows that 5 or 6
// divide take tiles that tall here, and 8 or fewer tiles are few: BLOCK instead, Block.*.)
TEST(Stage, HeuristicStagesLargeMatmulsAndTheyComputeTheReference) {
  const Target cpu = kiln::testing::simulated_cpu(8, 2);
  for (auto [m, k, n] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{36, 257, 1040}, {44, 2000, 528}, {64, 300, 1032}}) {
    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n));
    EXPECT_TRUE(has_stage(to_program(kernel_of(ref({m, k}).matmul(ref({k, n}))), cpu).opts));
    expect_matmul(m, k, n, cpu);
  }
  for (const Target& small : {cpu, kiln::testing::simulated_cpu(16, 2)})
    EXPECT_FALSE(has_stage(to_program(kernel_of(ref({64, 200}).matmul(ref({200, 120}))), small).opts)) << "B fits the L2";
  // GPU targets never stage (their heuristic walks the same panels)
  EXPECT_FALSE(has_stage(to_program(kernel_of(ref({64, 257}).matmul(ref({257, 1040}))), gpu_caps(256, 64, 256, 48 << 10, 4)).opts));
}

// A B that fits the L2 is staged when its column panels do not fit half an L1 (or fold onto a few
// of its sets: 256 wide) and enough row tiles read each: in place, every row tile would stream a
// panel whose rows are a leading dimension apart from the L2. Not staged: a panel that fits, a
// single column panel, few row tiles, a convolution (several reduce axes).
TEST(Stage, PanelsThatStreamFromTheL2AreStagedEvenWhenBFitsIt) {
  for (const Target& cpu : {kiln::testing::simulated_cpu(8, 2), kiln::testing::simulated_cpu(16, 2)}) {
    auto staged = [&](int64_t m, int64_t k, int64_t n) {
      return has_stage(to_program(kernel_of(ref({m, k}).matmul(ref({k, n}))), cpu).opts);
    };
    EXPECT_TRUE(staged(512, 512, 512));
    EXPECT_TRUE(staged(384, 384, 384));
    EXPECT_TRUE(staged(256, 256, 256)) << "256 rows of 2 x 8 lanes, 16 KiB, half an L1, 1 KiB apart: on 4 of its 64 sets";
    EXPECT_EQ(staged(240, 240, 240), cpu.max_vector_width >= 16) << "240 rows of 2 x 8 lanes, 960 bytes apart: every 4th set, 128 lines";
    EXPECT_TRUE(staged(264, 300, 520)) << "sizes that divide nothing";
    EXPECT_FALSE(staged(512, 64, 512)) << "a panel of 64 rows fits the L1";
    EXPECT_FALSE(staged(512, 512, 16)) << "one column panel: B is its own panel";
    EXPECT_FALSE(staged(32, 512, 512)) << "few row tiles";
    Tensor conv = ref({8, 32, 64, 64}).conv2d(ref({64, 32, 3, 3}), std::nullopt, 1, 1);
    EXPECT_FALSE(has_stage(to_program(kernel_of(conv), cpu).opts)) << "a convolution's window";
  }
  expect_matmul(264, 300, 520, kiln::testing::simulated_cpu(16, 2));
  // a GPU target cannot stage: its B in the L2 is walked as it is (no SWAP either)
  const std::vector<Opt> gpu = to_program(kernel_of(ref({512, 512}).matmul(ref({512, 512}))), gpu_caps(256, 64, 256, 48 << 10, 4)).opts;
  EXPECT_TRUE(std::none_of(gpu.begin(), gpu.end(), [](const Opt& o) { return o.op == OptOp::SWAP || o.op == OptOp::STAGE; }));
}

// Given STAGE actions on kernels the heuristic would not stage: sizes that divide nothing, a
// transposed B (the buffer puts the lanes innermost), batched matmuls, a convolution's weights.
// The L1 and L2 sizes come from the target: the same matmul is staged on a core with a 32 KiB L1
// (its 60 KiB panels stream from the L2) or a 256 KiB L2 (B does not fit), and read in place on
// one with a 128 KiB L1 and a 4 MiB L2. A target that reports none plans for 32 KiB and 1 MiB.
TEST(Stage, TheCacheSizesAreTheTargets) {
  auto cpu_with = [](uint64_t l1d, uint64_t l2) {
    Target t = kiln::testing::simulated_cpu(16, 2);
    t.l1d_bytes = l1d, t.l2_bytes = l2;
    return t;
  };
  auto staged = [&](const Target& cpu) {  // (480: rows 1920 bytes apart fall on half the sets)
    return has_stage(to_program(kernel_of(ref({480, 480}).matmul(ref({480, 480}))), cpu).opts);
  };
  EXPECT_TRUE(staged(cpu_with(0, 0)));
  EXPECT_TRUE(staged(cpu_with(32 << 10, 4 << 20))) << "panels of 60 KiB, half an L1 of 16 KiB";
  EXPECT_TRUE(staged(cpu_with(128 << 10, 256 << 10))) << "B (900 KiB) does not fit the L2";
  EXPECT_FALSE(staged(cpu_with(128 << 10, 4 << 20))) << "B fits the L2 and a panel half the L1";
  Target unknown = cpu_with(0, 0), common = cpu_with(32 << 10, 1 << 20);
  for (int64_t n : {256, 384, 520, 1024})
    EXPECT_EQ(opts_text(to_program(kernel_of(ref({n, n}).matmul(ref({n, n}))), unknown).opts),
              opts_text(to_program(kernel_of(ref({n, n}).matmul(ref({n, n}))), common).opts)) << n;
}

// A panel (K x the tile's columns) larger than a quarter of the L2 is cut into K-blocks that fit
// it before it is staged: on a 512 KiB L2, 512 x 3072 @ 3072 x 768 (192 KiB panels) is staged in
// blocks of 1536, where it streamed all of B from memory for every row tile; a 2 MiB L2 stages
// the whole panel. The blocked kernel computes the product (a 64 KiB L2: blocks of 256).
TEST(Stage, PanelsLargerThanAQuarterOfTheL2AreStagedInBlocks) {
  auto plan = [](int64_t m, int64_t k, int64_t n, const Target& t) { return opts_text(to_program(kernel_of(ref({m, k}).matmul(ref({k, n}))), t).opts); };
  const std::string small = plan(512, 3072, 768, avx2_with_l2(512 << 10)), big = plan(512, 3072, 768, avx2_with_l2(2 << 20));
  EXPECT_NE(small.find("BLOCK(2, 1536)"), std::string::npos) << small;
  EXPECT_NE(small.find("STAGE"), std::string::npos) << small;
  EXPECT_EQ(big.find("BLOCK"), std::string::npos) << big;
  EXPECT_NE(big.find("STAGE"), std::string::npos) << big;
  const Target tiny = avx2_with_l2(64 << 10);
  const std::string blocked = plan(96, 1024, 64, tiny);
  EXPECT_NE(blocked.find("BLOCK(2, 256)"), std::string::npos) << blocked;
  EXPECT_NE(blocked.find("STAGE"), std::string::npos) << blocked;
  expect_matmul(96, 1024, 64, tiny);
}

// x @ w.T stages w's panels (staged_transposed) whatever their length: a long reduce is cut into
// blocks whose panels fit a stage buffer (128 x 3072 @ (768 x 3072).T, a BERT MLP's second layer
// at batch 128: 384 KiB panels staged nothing, and the kernel fell back to dot products at half
// the rate), and the blocked kernel computes the product.
TEST(Stage, TransposedPanelsLargerThanAStageBufferAreStagedInBlocks) {
  auto plan = [](int64_t m, int64_t k, int64_t n, const Target& t) {
    return opts_text(to_program(kernel_of(ref({m, k}).matmul(ref({n, k}).transpose())), t).opts);
  };
  Target avx512 = kiln::testing::simulated_cpu(16, 2);
  avx512.l1d_bytes = 32 << 10, avx512.l2_bytes = 1 << 20;
  const std::string bert = plan(128, 3072, 768, avx512);
  EXPECT_NE(bert.find("BLOCK(2, 1536)"), std::string::npos) << bert;
  EXPECT_NE(bert.find("STAGE"), std::string::npos) << bert;
  const std::string fits = plan(128, 2048, 768, avx512);
  EXPECT_EQ(fits.find("BLOCK"), std::string::npos) << fits;
  EXPECT_NE(fits.find("STAGE"), std::string::npos) << fits;
  expect_matmul(72, 2560, 48, avx512, false, true);
}

// A B that fits the L2 is staged where its panel's rows, a power-of-two leading dimension apart,
// fall on too few L1 sets to hold the panel (AVX2, 256^3: rows 1 KiB apart use 4 of 64 sets, 32
// lines for 256 rows); 255 columns (rows 1020 bytes apart, walking every set) and a short panel
// (K = 16) are read in place. The staged kernel computes the product.
TEST(Stage, PanelsWhoseRowsFoldOntoFewL1SetsAreStaged) {
  const Target avx2 = avx2_with_l2(512 << 10);
  auto plan = [&](int64_t m, int64_t k, int64_t n) { return to_program(kernel_of(ref({m, k}).matmul(ref({k, n}))), avx2).opts; };
  EXPECT_TRUE(has_stage(plan(256, 256, 256))) << opts_text(plan(256, 256, 256));
  EXPECT_FALSE(has_stage(plan(255, 255, 255))) << opts_text(plan(255, 255, 255));
  EXPECT_FALSE(has_stage(plan(256, 16, 256))) << opts_text(plan(256, 16, 256));
  expect_matmul(128, 256, 256, avx2);
}

// A.T @ B whose A columns are more than the prefetcher's 2 KiB apart keeps its row tiles outside
// its column panels and stages both inputs: each thread's chunk of B before the row tiles, each
// row tile's A before the panels (a K too long for eight panels in a stage buffer is cut into
// blocks). A @ B, an A.T whose rows are 2 KiB apart and a GPU target keep the one-stage plan.
TEST(Stage, ATransposedStagesBothInputs) {
  const Target cpu = kiln::testing::simulated_cpu(16, 2);
  auto plan = [&](int64_t m, int64_t k, int64_t n, bool transposed, const Target& t) {
    Tensor a = transposed ? ref({k, m}).transpose() : ref({m, k});
    return to_program(kernel_of(a.matmul(ref({k, n}))), t).opts;
  };
  auto count = [](const std::vector<Opt>& opts, OptOp op) { return std::count_if(opts.begin(), opts.end(), [&](const Opt& o) { return o.op == op; }); };
  for (auto [m, k, n, blocks] : std::vector<std::tuple<int64_t, int64_t, int64_t, int>>{
           {1024, 1024, 1024, 1}, {4096, 1024, 512, 1}, {2048, 2048, 2048, 1}, {1024, 4096, 1024, 1}, {544, 160, 256, 0},
           {1000, 1000, 1000, 0}}) {  // (no masked vectors here: 1000 columns are 125 panels of 8, five to a chunk)
    const std::vector<Opt> opts = plan(m, k, n, true, cpu);
    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) + ": " + opts_text(opts));
    EXPECT_EQ(count(opts, OptOp::STAGE), 2);
    EXPECT_EQ(count(opts, OptOp::SWAP), 0);
    EXPECT_EQ(count(opts, OptOp::BLOCK), blocks);
  }
  for (const std::vector<Opt>& one : {plan(1024, 1024, 1024, false, cpu), plan(512, 256, 512, true, cpu)}) {
    EXPECT_EQ(count(one, OptOp::STAGE), 1) << opts_text(one);
    EXPECT_EQ(count(one, OptOp::SWAP), 1) << opts_text(one);
  }
  EXPECT_EQ(count(plan(1024, 1024, 1024, true, gpu_caps(256, 64, 256, 48 << 10, 4)), OptOp::STAGE), 0);
  // and the staged kernel computes the product (rows 2176 bytes apart, panels streaming from the
  // L2), on this target and on narrower and wider ones (whatever plan each gets)
  EXPECT_EQ(count(plan(544, 160, 256, true, cpu), OptOp::STAGE), 2);
  for (const Target& t : {cpu, kiln::testing::simulated_cpu(8, 2), kiln::testing::simulated_cpu(16, 8), kiln::testing::simulated_cpu(4, 1)}) {
    SCOPED_TRACE(opts_text(plan(544, 160, 256, true, t)));
    expect_matmul(544, 160, 256, t, true);
  }
  // a K cut into blocks (520 = 4 x 130)
  EXPECT_EQ(count(plan(544, 520, 256, true, cpu), OptOp::BLOCK), 1);
  expect_matmul(544, 520, 256, cpu, true);
}

// An A.T @ B whose A (its k steps within the prefetcher's reach) does not stay in half the L2
// between the column panels that re-read it stages both inputs too: mlp's weight gradient, 512 x
// 256 @ 256 x 784, on a 512 KiB L2 (A 512 KiB), in seven chunks of seven panels on two threads
// (at most an eighth of the threads' time idle); on a 2 MiB L2, which holds both, in place. A
// small one on a 64 KiB L2 computes the product.
TEST(Stage, ATransposedThatLeavesTheL2StagesBothInputs) {
  auto plan = [](int64_t m, int64_t k, int64_t n, const Target& t) {
    return to_program(kernel_of(ref({k, m}).transpose().matmul(ref({k, n}))), t).opts;
  };
  auto stages = [](const std::vector<Opt>& opts) { return std::count_if(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::STAGE; }); };
  const std::vector<Opt> small = plan(512, 256, 784, avx2_with_l2(512 << 10)), big = plan(512, 256, 784, avx2_with_l2(2 << 20));
  EXPECT_EQ(stages(small), 2) << opts_text(small);
  EXPECT_NE(opts_text(small).find("THREAD(1, 7)"), std::string::npos) << opts_text(small);
  EXPECT_EQ(stages(big), 0) << opts_text(big);
  const Target tiny = avx2_with_l2(64 << 10);
  EXPECT_EQ(stages(plan(128, 96, 224, tiny)), 2) << opts_text(plan(128, 96, 224, tiny));
  expect_matmul(128, 96, 224, tiny, true);
}

// A.T @ B.T (A stored K x M, its columns far apart; B stored N x K, read across its columns) gets
// the same plan as A.T @ B: both inputs staged, the row tiles outside (the staged B panels are
// what the x @ w.T plan stages too), on AVX2 six rows padded, also with odd sizes; and the kernel
// computes the product on several widths (544 rows padded to 546 on AVX2).
TEST(Stage, BothTransposedStagesBothInputs) {
  auto plan = [&](int64_t m, int64_t k, int64_t n, const Target& t) {
    return to_program(kernel_of(ref({k, m}).transpose().matmul(ref({n, k}).transpose())), t).opts;
  };
  auto count = [](const std::vector<Opt>& opts, OptOp op) { return std::count_if(opts.begin(), opts.end(), [&](const Opt& o) { return o.op == op; }); };
  Target avx2 = kiln::testing::simulated_cpu(8, 2);
  avx2.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  for (const Target& t : {kiln::testing::simulated_cpu(16, 2), avx2})
    for (auto [m, k, n] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1024, 768, 512}, {544, 160, 256}}) {
      const std::vector<Opt> opts = plan(m, k, n, t);
      SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) + ": " + opts_text(opts));
      EXPECT_EQ(count(opts, OptOp::STAGE), 2);
      EXPECT_EQ(count(opts, OptOp::SWAP), 0);
      // on AVX2 the rows pad to a tile of 6 (12 accumulators), their gates left in A's copy
      if (t.max_vector_width == 8) {
        EXPECT_NE(opts_text(opts).find("PADTO(0, 6) UPCAST(0, 6)"), std::string::npos);
      }
    }
  for (const Target& t : {kiln::testing::simulated_cpu(16, 2), avx2, kiln::testing::simulated_cpu(4, 1)}) {
    SCOPED_TRACE(opts_text(plan(544, 160, 256, t)));
    expect_matmul(544, 160, 256, t, true, true);
  }
  // odd sizes: padded columns of B.T (read 777 apart, clamped) are staged all the same
  // (regression: the clamp hid the panel's strides from STAGE and the plan fell back to scalars)
  SCOPED_TRACE(opts_text(plan(1001, 777, 513, avx2)));
  EXPECT_EQ(count(plan(1001, 777, 513, avx2), OptOp::STAGE), 2);
  const std::vector<Opt> small = plan(545, 160, 257, avx2);  // B's panel staged, its padded columns clamped
  EXPECT_EQ(count(small, OptOp::STAGE), 1) << opts_text(small);
  expect_matmul(545, 160, 257, avx2, true, true);
}

// A vector times a matrix (or fewer rows than a tile takes) whose B does not fit the L2 walks B
// in blocks of 16 of its rows, each block's partial sums added into the output (BLOCK), not down
// each column panel's whole length; 8 where the rows' lines at one column fall on one L1 set
// (rows_in_l1_ways); a B that fits the L2 is read as it is.
TEST(Block, AVectorTimesALargeMatrixWalksItInBlocksOfRows) {
  const Target cpu = kiln::testing::simulated_cpu(16, 2);
  auto block = [&](int64_t m, int64_t k, int64_t n) {  // the BLOCK's rows, 0 without one
    const std::vector<Opt> opts = to_program(kernel_of(ref({m, k}).matmul(ref({k, n}))), cpu).opts;
    const auto b = std::find_if(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::BLOCK; });
    return b == opts.end() ? int64_t{0} : b->amount;
  };
  EXPECT_EQ(block(1, 4096, 4096), 8) << "rows 16 KiB apart: one L1 set of 8 ways";
  EXPECT_EQ(block(4, 2048, 512), 16) << "4 rows: no row tile; rows 2 KiB apart fall on two sets";
  EXPECT_EQ(block(1, 256, 256), 0) << "B fits the L2";
  const std::vector<Opt> gpu = to_program(kernel_of(ref({4096}).matmul(ref({4096, 4096}))), gpu_caps(256, 64, 256, 48 << 10, 4)).opts;
  EXPECT_TRUE(std::none_of(gpu.begin(), gpu.end(), [](const Opt& o) { return o.op == OptOp::BLOCK; })) << "GPU targets do not block";
  expect_matmul(1, 2048, 512, cpu);
  expect_matmul(4, 2048, 528, cpu);
}

// x @ w.T with few rows is a tile of dot products (lanes along K); when w does not fit the L2 and
// x does, the columns go outside the rows (each column tile's w read once, x re-read from the
// L2) and are threaded, on CPU targets. Otherwise the rows stay outside.
TEST(Tile, DotProductsReadTheLargerInputOnce) {
  const Target cpu = kiln::testing::simulated_cpu(16, 2);
  auto plan = [&](int64_t m, int64_t k, int64_t n) { return to_program(kernel_of(ref({m, k}).matmul(ref({n, k}).transpose())), cpu).opts; };
  auto swapped = [](const std::vector<Opt>& opts) {
    return std::any_of(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::SWAP && o.axis == 0 && o.amount == 1; }) &&
           std::any_of(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::THREAD && o.axis == 1; });
  };
  EXPECT_TRUE(swapped(plan(64, 1024, 4096))) << opts_text(plan(64, 1024, 4096));
  EXPECT_TRUE(swapped(plan(16, 256, 1152))) << opts_text(plan(16, 256, 1152));
  EXPECT_FALSE(swapped(plan(64, 256, 512))) << "w fits the L2";
  const std::vector<Opt> gpu = to_program(kernel_of(ref({64, 1024}).matmul(ref({4096, 1024}).transpose())), gpu_caps(256, 64, 256, 48 << 10, 4)).opts;
  EXPECT_TRUE(std::none_of(gpu.begin(), gpu.end(), [](const Opt& o) { return o.op == OptOp::SWAP; })) << "measured on CPUs only";
  expect_reference([](const auto& in) { return in({16, 256}).matmul(in({1152, 256}).transpose()); }, cpu);
}

TEST(Stage, GivenStagesComputeTheReference) {
  const Target cpu = kiln::testing::simulated_cpu(8, 2);
  const std::vector<Opt> plain{stage_b};
  expect_reference([](const auto& in) { return in({13, 37}).matmul(in({37, 19})); }, cpu, &plain);
  const std::vector<Opt> tiled{{OptOp::UPCAST, 1, 8, true}, {OptOp::UPCAST, 0, 3}, {OptOp::THREAD, 0, 2}, {OptOp::SWAP, 0, 1}, stage_b};
  expect_reference([](const auto& in) { return in({9, 31}).matmul(in({31, 24})); }, cpu, &tiled);
  expect_reference([](const auto& in) { return in({9, 31}).matmul(in({24, 31}).transpose()); }, cpu, &tiled);
  // batched: axes (batch, rows, columns, reduce); B moves along the batch, not the rows
  const std::vector<Opt> batched{{OptOp::UPCAST, 2, 8, true}, {OptOp::STAGE, 1, kB}};
  expect_reference([](const auto& in) { return in({3, 5, 17}).matmul(in({3, 17, 16})); }, cpu, &batched);
  // conv2d, unpadded (one kernel; axes batch, out channels, rows, columns, then the reduces: in
  // channels, kh, kw): the weights do not move along the image's rows (axis 2)
  const std::vector<Opt> conv{{OptOp::STAGE, 2, kB}};
  expect_reference([](const auto& in) { return in({2, 3, 9, 11}).conv2d(in({4, 3, 3, 3})); }, cpu, &conv);
}

// A matmul with few rows (upcast whole, or fewer row tiles than chunks) threads its columns too; a
// register tile's kernel takes up to 4 chunks per thread, and a matmul walking column panels
// outside its row tiles threads the panels.
// On a 32-register CPU a matmul's tile takes up to 10 rows where that divides the rows (fewer
// passes over B's panel), else 8, padded when cheap; a 16-register CPU (AVX2) takes 6 or 5 where
// that divides (ten or twelve accumulators hide a 5-cycle FMA), else 6 padded where that adds
// less than a 32nd, the reduce is deep and A's rows clamp (not A.T's: its rows are contiguous, a
// gate, unless A.T is staged), else 4, and a convolution keeps 4 (its unrolled taps need the
// registers).
TEST(Tile, RowsThatDivideBeatPaddedRows) {
  auto rows_of = [](const std::vector<Opt>& opts) {
    for (const Opt& o : opts)
      if (o.op == OptOp::UPCAST && !o.vectorize && o.axis == 0) return o.amount;
    return int64_t{0};
  };
  auto rows = [&](int64_t m, const Target& t) { return rows_of(to_program(kernel_of(ref({m, 64}).matmul(ref({64, 256}))), t).opts); };
  const Target avx512 = kiln::testing::simulated_cpu(16, 2), avx2 = kiln::testing::simulated_cpu(8, 2);
  EXPECT_EQ(rows(1000, avx512), 10);
  EXPECT_EQ(rows(999, avx512), 9);
  EXPECT_EQ(rows(1024, avx512), 8);
  EXPECT_EQ(rows(1001, avx512), 8) << "no divisor from 8 to 10: padded to 1008";
  EXPECT_EQ(rows(1536, avx2), 6);
  EXPECT_EQ(rows(1000, avx2), 5);
  EXPECT_EQ(rows(1024, avx2), 6) << "padded to 1026";
  EXPECT_EQ(rows(1001, avx2), 6) << "padded to 1002";
  EXPECT_EQ(rows(128, avx2), 4) << "132 would add a 32nd";
  EXPECT_EQ(rows_of(to_program(kernel_of(ref({1024, 10}).matmul(ref({10, 256}))), avx2).opts), 4)
      << "a reduce of 10 steps: its stores bound it, padded rows cost as much as real ones";
  EXPECT_EQ(rows_of(to_program(kernel_of(ref({64, 1024}).transpose().matmul(ref({64, 256}))), avx2).opts), 4)
      << "A.T's rows are contiguous: padded ones would be gated";
  // staged with B (stage_both: A.T's k steps 4 KiB apart), A.T's gates stay in its copy: 6 rows,
  // padded to 1026 with both inputs staged; 1001 rows padded to 1002 compute the product (B past
  // a 16 KiB L2: column panels, staged)
  const std::vector<Opt> at = to_program(kernel_of(ref({1024, 1024}).transpose().matmul(ref({1024, 1024}))), avx2).opts;
  EXPECT_EQ(rows_of(at), 6) << opts_text(at);
  EXPECT_EQ(std::count_if(at.begin(), at.end(), [](const Opt& o) { return o.op == OptOp::STAGE; }), 2) << opts_text(at);
  Target small_l2 = avx2;
  small_l2.l2_bytes = 16 << 10;
  const std::vector<Opt> odd = to_program(kernel_of(ref({256, 1001}).transpose().matmul(ref({256, 512}))), small_l2).opts;
  EXPECT_EQ(rows_of(odd), 6) << opts_text(odd);
  expect_matmul(1001, 256, 512, small_l2, /*a_transposed=*/true);
  expect_matmul(30, 50, 70, avx512);  // tiles of 10 rows
  expect_matmul(45, 33, 40, avx512);  // of 9
  expect_matmul(42, 33, 40, avx2);    // of 6
  expect_matmul(35, 50, 24, avx2);    // of 5
  expect_matmul(194, 40, 32, avx2);   // of 6, padded to 198 (its last tile reads A's last row 4 times)
  // a batch-1 convolution: output channels (96, axis 0) tiled by 4
  EXPECT_EQ(rows_of(to_program(kernel_of(ref({1, 8, 34, 34}).conv2d(ref({96, 8, 3, 3}))), avx2).opts), 4);
}

// The AVX2 convolution tile with its second vector from the image's rows (Heuristic.Avx2*)
// computes the reference: 24 output columns (three vectors), read with strides 1 and 2, and 12
// output channels (not whole vectors: those would take the channels' vectors, ChannelVectors*).
TEST(Tile, Avx2ConvolutionsWithTwoImageRowsComputeTheReference) {
  Target avx2 = kiln::testing::simulated_cpu(8, 2);
  avx2.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  for (int stride : {1, 2}) {
    SCOPED_TRACE(stride);
    const int64_t h = 13 * stride + 3, w = 23 * stride + 3;  // unpadded (one kernel), 14 x 24 out
    auto conv = [&](const auto& in) { return in({1, 8, h, w}).conv2d(in({12, 8, 3, 3}), std::nullopt, stride); };
    const std::vector<Opt> opts = to_program(kernel_of(conv(ref)), avx2).opts;
    EXPECT_TRUE(std::any_of(opts.begin(), opts.end(), [](const Opt& o) { return o.str() == "UPCAST(1, 2)"; })) << "two image rows";
    expect_reference(conv, avx2);
  }
}

// Convolutions with vectors of output channels (Heuristic.ConvolutionsWithNarrowImages*) compute
// the reference on 16 and 8 lanes: 14 columns (tiles of 7), stride 2 with a batch of 2, an
// epilogue (bias and relu; the weights staged whole), and a panel staged in blocks of the input
// channels (256 of them, on 16 lanes), a pointwise convolution on rows of 7. Unpadded: the
// convolution is the program's one kernel.
TEST(Tile, ChannelVectorConvolutionsComputeTheReference) {
  Target avx2 = kiln::testing::simulated_cpu(8, 2), avx512 = kiln::testing::simulated_cpu(16, 2);
  for (Target* t : {&avx2, &avx512}) t->flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  const std::vector<std::function<Tensor(const std::function<Tensor(const Shape&)>&)>> convs = {
      [](const auto& in) { return in({1, 8, 9, 16}).conv2d(in({32, 8, 3, 3})); },
      [](const auto& in) { return in({2, 8, 17, 17}).conv2d(in({32, 8, 3, 3}), std::nullopt, 2); },
      [](const auto& in) { return in({1, 16, 6, 12}).conv2d(in({32, 16, 3, 3}), in({32})).relu(); },
      [](const auto& in) { return in({1, 256, 4, 8}).conv2d(in({32, 256, 3, 3})); },
      // (cropped from rows of 8: a whole 5 x 7 map merges into one axis of 35 positions)
      [](const auto& in) { return in({2, 40, 5, 8}).shrink({{0, 2}, {0, 40}, {0, 5}, {0, 7}}).conv2d(in({32, 40, 1, 1})); }};
  for (size_t i = 0; i < convs.size(); ++i) {
    const std::vector<float> want = run(convs[i], "ref");
    for (const Target& t : {avx2, avx512}) {
      SCOPED_TRACE(std::to_string(t.max_vector_width) + " lanes, case " + std::to_string(i));
      const std::vector<Opt> opts = to_program(kernel_of(convs[i](ref)), t).opts;
      auto has = [&](OptOp op) { return std::any_of(opts.begin(), opts.end(), [&](const Opt& o) { return o.op == op; }); };
      EXPECT_TRUE(has(OptOp::STAGE));
      EXPECT_EQ(has(OptOp::BLOCK), i == 3 && t.max_vector_width == 16);
      expect_near(run(convs[i], "cpu:0", &t), want);
    }
  }
}

// Convolutions walking their image rows outside their channel tiles (Heuristic.AConvolutionWhose*:
// the image leaves a 16 KiB L2, the weights stay) compute the reference: with a batch, with a bias
// and relu, and padded, on 8 and 4 lanes (small: the reference device is slow; 16 lanes would take
// these 16-wide maps' channels as vectors).
TEST(Tile, RowsOutsideChannelTilesComputeTheReference) {
  Target avx2 = kiln::testing::simulated_cpu(8, 2), sse = kiln::testing::simulated_cpu(4, 2);
  for (Target* t : {&avx2, &sse}) t->flags |= KILN_TARGET_HAS_MASKED_VECTORS, t->l1d_bytes = 4 << 10, t->l2_bytes = 16 << 10;
  const std::vector<std::function<Tensor(const std::function<Tensor(const Shape&)>&)>> convs = {
      [](const auto& in) { return in({2, 8, 18, 18}).conv2d(in({16, 8, 3, 3})); },
      [](const auto& in) { return in({1, 8, 18, 18}).conv2d(in({16, 8, 3, 3}), in({16})).relu(); },
      [](const auto& in) { return in({1, 8, 16, 16}).conv2d(in({16, 8, 3, 3}), std::nullopt, 1, 1); }};
  for (size_t i = 0; i < convs.size(); ++i) {
    const std::vector<float> want = run(convs[i], "ref");
    for (const Target& t : {avx2, sse}) {
      SCOPED_TRACE(std::to_string(t.max_vector_width) + " lanes, case " + std::to_string(i));
      std::vector<Opt> opts;
      for (const ExecItem& e : convs[i](ref).schedule())
        if (!e.is_copy && e.name.rfind("r_", 0) == 0) opts = to_program(e.ast, t).opts;
      EXPECT_TRUE(std::any_of(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::SWAP; }));
      expect_near(run(convs[i], "cpu:0", &t), want);
    }
  }
}

// A depthwise convolution's tile of output rows (Heuristic.Depthwise*) computes the reference,
// its rows dividing the map (8) or not (13 rows: the largest divisor up to the tile's, 1: a
// second vector), on 16 and 8 lanes.
TEST(Tile, DepthwiseRowsComputeTheReference) {
  Target avx2 = kiln::testing::simulated_cpu(8, 2), avx512 = kiln::testing::simulated_cpu(16, 2);
  for (Target* t : {&avx2, &avx512}) t->flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  for (const Target& t : {avx2, avx512})
    for (int64_t rows : {8, 13}) {
      SCOPED_TRACE(std::to_string(t.max_vector_width) + " lanes, " + std::to_string(rows) + " rows");
      auto dw = [&](const auto& in) { return in({1, 6, rows + 2, 37}).conv2d(in({6, 1, 3, 3}), std::nullopt, 1, 0, 1, 6); };
      const std::vector<Opt> opts = to_program(kernel_of(dw(ref)), t).opts;
      const bool tiled = std::any_of(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::UPCAST && !o.vectorize && o.axis == 1; });
      EXPECT_EQ(tiled, rows == 8);
      expect_reference(dw, t);
    }
  // stride 2: scalar outputs (no gathered vectors), padding 1, a batch
  for (const Target& t : {avx2, avx512}) {
    auto dw2 = [&](const auto& in) { return in({2, 5, 15, 23}).conv2d(in({5, 1, 3, 3}), std::nullopt, 2, 1, 1, 5); };
    expect_reference(dw2, t);
  }
}
