// tests/codegen/heuristic_test.cpp - the hand-coded heuristic on simulated CPUs: every layout and
// every size gets vector lanes along its contiguous axis, a register tile where inputs are
// reused, and threads (issue 15, items 0 and 1). Only the chosen actions are checked here; the
// property test runs such kernels against the reference.
#include <gtest/gtest.h>

#include "codegen/opt/heuristic.hpp"
#include "codegen/opt/opt.hpp"
#include "codegen/pipeline.hpp"
#include "ir/traverse.hpp"
#include "kiln/kiln.hpp"
#include "runtime/program_cache.hpp"
#include "schedule/schedule.hpp"
#include "simulated_cpu.hpp"

using namespace kiln;
using kiln::testing::simulated_cpu;

namespace {

// An AVX-512-like machine: 16 float lanes, 8 threads, masked vector accesses (as the cpu
// backend's in-process compiler).
const Target& avx512() {
  static const Target t = [] {
    Target t = simulated_cpu(16, 8);
    t.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
    return t;
  }();
  return t;
}

Tensor in(const Shape& s) { return Tensor::empty(s, dtypes::float32, "ref"); }
// A 7 x 7 map cropped from a wider NCHW image: its rows and columns stay two axes (a whole 7 x 7
// map's merge into one axis of positions, merge_adjacent_axes).
Tensor crop7(const Tensor& x) { return x.shrink({{0, x.shape()[0]}, {0, x.shape()[1]}, {0, 7}, {0, 7}}); }

// One kernel of a program and what the heuristic chose for it.
struct Chosen {
  std::string name;
  std::vector<Opt> opts;
  int64_t ops = 1;  // iterations of the kernel's loops (outputs x reduce terms)

  bool has(OptOp op, bool vector = false) const {
    return std::any_of(opts.begin(), opts.end(), [&](const Opt& o) { return o.op == op && (!vector || o.vectorize); });
  }
  bool vectorized() const { return has(OptOp::UPCAST, true) || has(OptOp::UNROLL, true); }
  int upcasts() const {
    return static_cast<int>(std::count_if(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::UPCAST && !o.vectorize; }));
  }
  std::string str() const {
    std::string s = name + ":";
    for (const Opt& o : opts) s += " " + o.str();
    return s;
  }
};

std::vector<Chosen> chosen(const Tensor& out, const Target& target = avx512()) {
  std::vector<Chosen> all;
  for (const ExecItem& e : out.schedule()) {
    if (e.is_copy) continue;
    Chosen c{e.name, to_program(e.ast, target).opts};
    for (const UOp& u : toposort(e.ast))
      if (u.op() == Ops::RANGE) c.ops *= const_size(u);
    all.push_back(std::move(c));
  }
  return all;
}

// The program's main kernel: the one with the most work.
Chosen main_kernel(const Tensor& out, const Target& target = avx512()) {
  std::vector<Chosen> all = chosen(out, target);
  return *std::max_element(all.begin(), all.end(), [](const Chosen& a, const Chosen& b) { return a.ops < b.ops; });
}

// No kernel with more than ~1M operations runs on one thread when the target has several.
void expect_threaded_when_large(const Tensor& out, const Target& target = avx512()) {
  for (const Chosen& c : chosen(out, target)) {
    if (c.ops > (int64_t{1} << 20)) {
      EXPECT_TRUE(c.has(OptOp::THREAD)) << c.str();
    }
  }
}

}  // namespace

// out[j] = sum_i x[i, j]: the inputs walk the reduce axis with a stride of a row, so the vector
// goes along the contiguous output axis, several of them, with the reduce unrolled a little.
TEST(Heuristic, ReduceOverALeadingAxisVectorizesTheOutputAxis) {
  Chosen c = main_kernel(in({4096, 4096}).sum({0}));
  EXPECT_TRUE(c.has(OptOp::UPCAST, true)) << c.str();
  EXPECT_GE(c.upcasts(), 1) << "several vectors side by side: " << c.str();
  EXPECT_TRUE(c.has(OptOp::UNROLL)) << c.str();
  EXPECT_TRUE(c.has(OptOp::THREAD)) << c.str();
}

// x @ W.T (linear): W's rows are the output columns. With many rows, W's panels are staged
// (laid out with the lanes innermost) and the kernel is the matmul tile, a reduce too long for a
// stage buffer cut into blocks (BLOCK; it was a dot product tile, 1.3x slower at 512 x 8192 @
// (256 x 8192).T); with few rows or a narrow output, a dot product tile (lanes along K, a tile
// of outputs reusing each loaded vector).
TEST(Heuristic, TransposedOperandIsStagedOrADotProductTile) {
  for (const Tensor& out : {in({512, 1024}).linear(in({1024, 1024})), in({512, 8192}).linear(in({256, 8192}))}) {
    Chosen c = main_kernel(out);
    EXPECT_TRUE(c.has(OptOp::UPCAST, true)) << c.str();
    EXPECT_TRUE(c.has(OptOp::SWAP)) << c.str();
    EXPECT_TRUE(c.has(OptOp::STAGE)) << c.str();
    EXPECT_TRUE(c.has(OptOp::THREAD)) << c.str();
  }
  EXPECT_TRUE(main_kernel(in({512, 8192}).linear(in({256, 8192}))).has(OptOp::BLOCK));
  for (const Tensor& out : {in({16, 1024}).linear(in({1024, 1024})), in({512, 1024}).linear(in({10, 1024}))}) {
    Chosen d = main_kernel(out);
    EXPECT_TRUE(d.has(OptOp::UNROLL, true)) << d.str();
    EXPECT_FALSE(d.has(OptOp::STAGE)) << d.str();
    EXPECT_GE(d.upcasts(), 2) << d.str();
  }
  // a target without threads (GPUs: no per-thread stack buffers) keeps the dot product
  Target gpu_like = avx512();
  gpu_like.flags &= ~KILN_TARGET_HAS_THREADS;
  EXPECT_FALSE(main_kernel(in({512, 1024}).linear(in({1024, 1024})), gpu_like).has(OptOp::STAGE));
}

// A row kernel (schedule/kernelize.cpp's row fusion): vector lanes along the row it writes, and
// along each reduce over the row (with an unroll), threads over the rows.
TEST(Heuristic, RowKernelHasVectorsAlongItsRowAndItsReduces) {
  runtime::set_target_override(&avx512());  // scheduled as for this cpu: it runs rows (clears the caches)
  Chosen c = main_kernel(in({4096, 1024}).softmax(-1));
  runtime::set_target_override(nullptr);
  EXPECT_TRUE(c.has(OptOp::UPCAST, true)) << c.str();
  EXPECT_EQ(std::count_if(c.opts.begin(), c.opts.end(), [](const Opt& o) { return o.op == OptOp::UNROLL && o.vectorize; }), 2) << c.str();
  EXPECT_TRUE(c.has(OptOp::THREAD)) << c.str();
}

// A batch-1 ResNet convolution (56 wide: not a multiple of 16 lanes) is a register tile of output
// channels and columns, threaded although its batch axis is 1.
TEST(Heuristic, BatchOneConvolutionIsARegisterTile) {
  for (int stride : {1, 2}) {
    Tensor out = in({1, 64, 56, 56}).conv2d(in({64, 64, 3, 3}), std::nullopt, stride, 1);
    Chosen c = main_kernel(out);
    EXPECT_TRUE(c.has(OptOp::UPCAST, true)) << "stride " << stride << ": " << c.str();
    EXPECT_GE(c.upcasts(), 1) << "rows of output channels: " << c.str();
    EXPECT_TRUE(c.has(OptOp::THREAD)) << c.str();
    expect_threaded_when_large(out);
  }
}

// A convolution whose columns waste vector lanes (56, 28, 14 and 7 wide maps; a stride-2 one's
// gathered columns) takes its vector lanes along the output channels (axis 0 at batch 1, 1 with a
// batch), the image's columns as the tile's rows, and stages its weights (read across the
// channels): whole where the panel fits a stage buffer, else in blocks of the input channels.
// A pointwise (1 x 1) convolution, a matmul but for its image's rows, takes them where a row is
// narrower than a vector and its rows stay apart (a cropped map; a whole one merges its rows and
// columns into one axis of positions and is a matmul, merge_adjacent_axes). Columns that take whole vectors (64), output channels that do not (36),
// a pointwise convolution with rows wider than a vector (28), and a convolution cast
// to float16 (no blocks: they would round its partial sums) whose panel is too large to stage
// whole keep their column vectors.
TEST(Heuristic, ConvolutionsWithNarrowImagesVectorizeTheirOutputChannels) {
  Target avx2 = simulated_cpu(8, 8);
  avx2.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  auto vector_axis = [](const Chosen& c) {
    for (const Opt& o : c.opts)
      if (o.op == OptOp::UPCAST && o.vectorize) return o.axis;
    return int64_t{-1};
  };
  auto rows_along = [](const Chosen& c, int64_t axis) {
    int64_t n = 1;
    for (const Opt& o : c.opts)
      if (o.op == OptOp::UPCAST && !o.vectorize && o.axis == axis) n *= o.amount;
    return n;
  };
  struct Case {
    Shape x, w;
    int stride;
    int64_t channels, cols;  // axes
  };
  const Case cases[] = {{{1, 64, 56, 56}, {64, 64, 3, 3}, 1, 0, 2},
                        {{1, 512, 7, 8}, {256, 512, 1, 1}, 1, 0, 2},  // pointwise, rows narrower than a vector (cropped)
                        {{1, 64, 56, 56}, {128, 64, 3, 3}, 2, 0, 2},
                        {{1, 512, 7, 7}, {512, 512, 3, 3}, 1, 0, 2},
                        {{2, 256, 14, 14}, {256, 256, 3, 3}, 1, 1, 3},
                        {{1, 256, 56, 56}, {512, 256, 1, 1}, 2, 0, 2}};  // pointwise, strided: column vectors would be gathers
  for (const Target& t : {avx512(), avx2})
    for (const Case& k : cases) {
      // (an image 8 wide is cropped to 7 x 7: its rows stay apart)
      const Tensor x = k.x[3] == 8 ? crop7(in(k.x)) : in(k.x);
      Chosen c = main_kernel(x.conv2d(in(k.w), std::nullopt, k.stride, k.w[2] / 2), t);
      EXPECT_EQ(vector_axis(c), k.channels) << c.str();
      EXPECT_GE(rows_along(c, k.cols), 2) << "columns as the tile's rows: " << c.str();
      EXPECT_TRUE(c.has(OptOp::STAGE)) << c.str();
      EXPECT_TRUE(c.has(OptOp::THREAD)) << c.str();
    }
  // 2 vectors x 16 channels x 512 x 9 taps x 4 bytes: 576 KiB, staged in blocks of input
  // channels, with a bias and relu too (the last block runs them)
  for (const Tensor& out : {in({1, 512, 7, 7}).conv2d(in({512, 512, 3, 3}), std::nullopt, 1, 1),
                            in({1, 512, 7, 7}).conv2d(in({512, 512, 3, 3}), in({512}), 1, 1).relu()}) {
    Chosen big = main_kernel(out);
    EXPECT_EQ(vector_axis(big), 0) << big.str();
    EXPECT_TRUE(big.has(OptOp::BLOCK)) << big.str();
  }
  // a pointwise panel larger than half the L1d (1 vector x 8 channels x 2048 x 4 bytes: 64 KiB
  // against 16) is staged in blocks of input channels that fit it; a larger L1d takes it whole
  const Tensor pointwise = crop7(in({1, 2048, 7, 8})).conv2d(in({512, 2048, 1, 1}));
  for (uint64_t l1 : {uint64_t{32} << 10, uint64_t{1} << 20}) {
    Target t = avx2;
    t.l1d_bytes = l1;
    Chosen c = main_kernel(pointwise, t);
    const auto block = std::find_if(c.opts.begin(), c.opts.end(), [](const Opt& o) { return o.op == OptOp::BLOCK; });
    EXPECT_TRUE(c.has(OptOp::STAGE)) << c.str();
    if (l1 > (uint64_t{64} << 10)) {
      EXPECT_EQ(block, c.opts.end()) << c.str();
      continue;
    }
    ASSERT_NE(block, c.opts.end()) << c.str();
    EXPECT_LE(block->amount * 8 * 4, static_cast<int64_t>(l1 / 2)) << c.str();
    EXPECT_GE(block->amount, 64) << c.str();
  }
  // a prime width (29 columns after a stride of 2) is padded to the tile's 6 columns (2 vectors
  // x 6: 12 accumulators of 16 registers); 28 keeps the 4 that divide it
  for (const auto& [width, cols] : {std::pair{int64_t{57}, int64_t{6}}, std::pair{int64_t{56}, int64_t{4}}}) {
    Chosen c = main_kernel(in({1, 64, width, width}).conv2d(in({128, 64, 3, 3}), std::nullopt, 2, 1), avx2);
    EXPECT_EQ(vector_axis(c), 0) << c.str();
    EXPECT_EQ(rows_along(c, 2), cols) << c.str();
    EXPECT_EQ(c.has(OptOp::PADTO), width == 57) << c.str();
  }
  // (the pointwise one's rows and columns are one axis of 784 positions, axis 1)
  for (const auto& [out, columns] : {std::pair{in({1, 32, 64, 64}).conv2d(in({64, 32, 3, 3}), std::nullopt, 1, 1), 2},
                                     std::pair{in({1, 64, 56, 56}).conv2d(in({36, 64, 3, 3}), std::nullopt, 1, 1), 2},
                                     std::pair{in({1, 256, 28, 28}).conv2d(in({128, 256, 1, 1})), 1}}) {
    Chosen c = main_kernel(out);
    EXPECT_EQ(vector_axis(c), columns) << "column vectors: " << c.str();
    EXPECT_FALSE(std::any_of(c.opts.begin(), c.opts.end(), [](const Opt& o) { return o.op == OptOp::STAGE && o.amount == 2; }))
        << "the weights (input 2) in place: " << c.str();
  }
  // a sum cast to float16 blocks its input channels as float32's does: the blocks' partial sums stay
  // float32 in a stack array the size of the output (block.cpp), rounded once by the last block
  // (before, 16-bit outputs stayed unblocked and this one, whose panel does not fit a stage buffer
  // whole, took column vectors: 3.4x slower in bfloat16)
  {
    Chosen c = main_kernel(in({1, 512, 7, 7}).conv2d(in({512, 512, 3, 3}), std::nullopt, 1, 1).cast(dtypes::float16));
    EXPECT_EQ(vector_axis(c), 0) << c.str();
    EXPECT_TRUE(c.has(OptOp::BLOCK) && c.has(OptOp::STAGE)) << c.str();
  }
  // a matmul's B moves along its columns only: 10 columns (a classifier) keep their vector
  EXPECT_EQ(vector_axis(main_kernel(in({256, 512}).matmul(in({512, 10})))), 1);
  // a symbolic size (here the input channels) leaves the kernel to the general plan
  Variable n("n", 1, 64);
  std::vector<Chosen> all;
  EXPECT_NO_THROW(all = chosen(in({1, 64, 7, 7}).shrink(1, n.bind(32)).conv2d(in({64, 64, 3, 3}).shrink(1, n.bind(32)), std::nullopt, 1, 1)));
  const auto conv = std::find_if(all.begin(), all.end(), [](const Chosen& c) { return c.name.rfind("r_", 0) == 0; });
  ASSERT_NE(conv, all.end());
  EXPECT_EQ(vector_axis(*conv), 2) << conv->str();
}

// A pointwise (1 x 1) convolution over more output positions than output channels walks its
// channel panels inside the output rows (it would otherwise read the whole image once per panel):
// the channels threaded one chunk a thread (and another axis where a target has more threads than
// panels), swapped inside the rows, each thread's weights staged once. Fewer positions than
// channels (2048 -> 512 on 7 x 7), and a thread's weights past a stage buffer (512 -> 1024
// channels: 1 MiB a thread on 2 threads), keep the panels outermost.
TEST(Heuristic, PointwiseConvolutionsOverManyPositionsWalkTheirPanelsInsideTheRows) {
  auto target = [](uint32_t lanes, uint32_t threads) {
    Target t = simulated_cpu(lanes, threads);
    t.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
    return t;
  };
  auto find = [](const Chosen& c, OptOp op) { return std::find_if(c.opts.begin(), c.opts.end(), [&](const Opt& o) { return o.op == op; }); };
  struct Case {
    Tensor out;
    int64_t channels;  // the output channels' axis
  };
  const Case inside[] = {{in({8, 256, 56, 56}).conv2d(in({512, 256, 1, 1}), std::nullopt, 2, 0), 1},
                         {in({1, 256, 56, 56}).conv2d(in({512, 256, 1, 1}), std::nullopt, 2, 0), 0},
                         {crop7(in({64, 256, 7, 8})).conv2d(in({512, 256, 1, 1})), 1}};
  for (const Case& k : inside)
    for (const auto& [lanes, threads] : {std::pair{8u, 2u}, std::pair{16u, 8u}, std::pair{8u, 64u}}) {
      Chosen c = main_kernel(k.out, target(lanes, threads));
      const auto swap = find(c, OptOp::SWAP), stage = find(c, OptOp::STAGE);
      ASSERT_NE(swap, c.opts.end()) << c.str();
      EXPECT_EQ(swap->axis, k.channels) << c.str();
      EXPECT_EQ(swap->amount, k.channels + 1) << "inside the output rows: " << c.str();
      ASSERT_NE(stage, c.opts.end()) << c.str();
      EXPECT_EQ(stage->amount, 2) << "the weights: " << c.str();
      EXPECT_GT(stage, swap) << c.str();
      int64_t chunks = 1;
      for (const Opt& o : c.opts) chunks *= o.op == OptOp::THREAD ? o.amount : 1;
      EXPECT_GE(chunks, threads) << c.str();
      const auto thread = find(c, OptOp::THREAD);
      ASSERT_NE(thread, c.opts.end()) << c.str();
      EXPECT_EQ(thread->axis, k.channels) << c.str();
      EXPECT_LE(thread->amount, threads) << "one chunk of channels a thread: " << c.str();
    }
  for (const Tensor& out : {crop7(in({1, 2048, 7, 8})).conv2d(in({512, 2048, 1, 1})), in({1, 512, 28, 28}).conv2d(in({1024, 512, 1, 1}), std::nullopt, 2, 0)}) {
    Chosen c = main_kernel(out, target(8, 2));
    EXPECT_EQ(find(c, OptOp::SWAP), c.opts.end()) << c.str();
    EXPECT_NE(find(c, OptOp::STAGE), c.opts.end()) << c.str();
  }
}

// On AVX2 (16 registers) a convolution whose columns would need padding to take two vectors, and
// whose output channels do not take whole vectors (36 of 8 lanes), takes its second vector from
// the image's rows (an UPCAST by 2 of the output rows, axis 1): padded, the last column block's
// vector of padding sat behind branches in the k loop and the broadcasts spilled. AVX-512 keeps
// the padded pair; columns that take two vectors, and a depthwise convolution (no output channels
// to tile), keep theirs.
// A 1-D convolution over 1022 positions: two positions short of whole column vectors, which
// (masked) keep them; channel vectors are for maps that waste lanes (56 -> 64).
TEST(Heuristic, ColumnsNearlyWholeVectorsKeepColumnVectors) {
  Target avx2 = simulated_cpu(8, 8);
  avx2.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  auto channel_vectors = [](const Chosen& c) {  // axes: batch, channels, positions, then the reduces
    return std::any_of(c.opts.begin(), c.opts.end(), [](const Opt& o) { return o.op == OptOp::UPCAST && o.vectorize && o.axis == 1; });
  };
  for (const Target& target : {avx512(), avx2}) {
    Chosen c = main_kernel(in({2, 64, 1, 1022}).conv2d(in({64, 64, 1, 3})).reshape({2, 64, 1020}), target);
    EXPECT_TRUE(c.vectorized()) << c.str();
    EXPECT_FALSE(channel_vectors(c)) << c.str();
    Chosen narrow = main_kernel(in({2, 64, 56, 56}).conv2d(in({64, 64, 3, 3}), std::nullopt, 1, 1), target);
    EXPECT_TRUE(channel_vectors(narrow)) << narrow.str();
  }
}

// A pointwise convolution over a 7 x 7 map (one axis of 49 positions) pads its positions to 56
// for 8 lanes, then to 64 for whole 16-lane vectors: measured 2x faster on an AVX-512 Xeon than
// 56 positions in 8-lane vectors (heuristic.cpp, where the matmul tile asks for its lanes).
TEST(Heuristic, PositionsPadTwiceForWholeAvx512Vectors) {
  Chosen c = main_kernel(in({1, 2048, 7, 7}).conv2d(in({512, 2048, 1, 1})));
  auto vector_of_16 = [](const Opt& o) { return o.op == OptOp::UPCAST && o.vectorize && o.amount == 16; };
  EXPECT_TRUE(std::any_of(c.opts.begin(), c.opts.end(), vector_of_16)) << c.str();
  EXPECT_TRUE(std::any_of(c.opts.begin(), c.opts.end(), [](const Opt& o) { return o.op == OptOp::PADTO && o.amount == 16; })) << c.str();
}

TEST(Heuristic, Avx2ConvolutionTakesItsSecondVectorFromTheImageRows) {
  Target avx2 = simulated_cpu(8, 8);
  avx2.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  auto upcast = [](const Chosen& c, int64_t axis, int64_t amount) {
    return std::any_of(c.opts.begin(), c.opts.end(), [&](const Opt& o) { return o.op == OptOp::UPCAST && !o.vectorize && o.axis == axis && o.amount == amount; });
  };
  auto padded_to = [](const Chosen& c, int64_t axis) {
    for (const Opt& o : c.opts)
      if (o.op == OptOp::PADTO && o.axis == axis) return o.amount;
    return int64_t{0};
  };
  for (int stride : {1, 2}) {
    Tensor out = in({1, 64, 56, 56}).conv2d(in({36, 64, 3, 3}), std::nullopt, stride, 1);
    Chosen c = main_kernel(out, avx2);  // axes: output channels, rows, columns (56 or 28)
    EXPECT_TRUE(upcast(c, 1, 2)) << "stride " << stride << ": " << c.str();
    EXPECT_FALSE(upcast(c, 2, 2)) << c.str();
    EXPECT_EQ(padded_to(c, 2), stride == 1 ? 0 : 8) << "56 = 7 vectors; 28 padded for one vector: " << c.str();
    EXPECT_TRUE(upcast(c, 0, 4)) << "rows of output channels: " << c.str();
    Chosen wide = main_kernel(out);
    EXPECT_EQ(padded_to(wide, 2), 32) << "AVX-512 pads for two vectors: " << wide.str();
    EXPECT_FALSE(upcast(wide, 1, 2)) << wide.str();
  }
  Chosen even = main_kernel(in({1, 32, 64, 64}).conv2d(in({64, 32, 3, 3}), std::nullopt, 1, 1), avx2);
  EXPECT_TRUE(upcast(even, 2, 2)) << "64 columns take two vectors: " << even.str();
  Chosen depthwise = main_kernel(in({1, 128, 56, 56}).conv2d(in({128, 1, 3, 3}), std::nullopt, 1, 1, 1, 128), avx2);
  EXPECT_FALSE(upcast(depthwise, 1, 2)) << depthwise.str();
  EXPECT_TRUE(depthwise.has(OptOp::UNROLL)) << "its taps unrolled: " << depthwise.str();
}

// A depthwise convolution (no output channels to tile) with stride 1 unrolls its 3 x 3 taps and
// upcasts its output rows (axis 1) to a tile of about 64 outputs, so neighbouring rows share the
// input rows their taps read: 4 rows of 16 lanes, 8 of 8. A window too large to unroll (5 x 5)
// keeps a second column vector instead; with stride 2 its column vectors would be gathers that no
// tile row reuses, so it takes none (scalar outputs, taps unrolled).
TEST(Heuristic, DepthwiseConvolutionIsVectorizedAndThreaded) {
  Target avx2 = simulated_cpu(8, 8);
  avx2.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  auto upcasts = [](const Chosen& c, int64_t axis) {
    int64_t n = 1;
    for (const Opt& o : c.opts)
      if (o.op == OptOp::UPCAST && !o.vectorize && o.axis == axis) n *= o.amount;
    return n;
  };
  auto dw = [](int64_t window, int stride) {
    return in({1, 128, 56, 56}).conv2d(in({128, 1, window, window}), std::nullopt, stride, window / 2, 1, 128);
  };
  for (const auto& [target, rows] : {std::pair<Target, int64_t>{avx512(), 4}, {avx2, 8}}) {
    Chosen c = main_kernel(dw(3, 1), target);  // axes: channels, rows, columns, then the taps
    EXPECT_TRUE(c.has(OptOp::UPCAST, true)) << c.str();
    EXPECT_TRUE(c.has(OptOp::THREAD)) << c.str();
    EXPECT_TRUE(c.has(OptOp::UNROLL)) << c.str();
    EXPECT_EQ(upcasts(c, 1), rows) << c.str();
    EXPECT_EQ(upcasts(c, 2), 1) << "one column vector: " << c.str();
    Chosen wide = main_kernel(dw(5, 1), target);
    EXPECT_EQ(upcasts(wide, 1), 1) << "5x5: " << wide.str();
    EXPECT_EQ(upcasts(wide, 2), 2) << "two column vectors: " << wide.str();
    // stride 2: no register tile of gathered vectors, but a strided window's column vectors
    // (loads and picks; padded inside the kernel, so at most 8 lanes) over its whole row
    Chosen strided = main_kernel(dw(3, 2), target);
    EXPECT_EQ(upcasts(strided, 1), 1) << "no tile rows: " << strided.str();
    EXPECT_TRUE(std::any_of(strided.opts.begin(), strided.opts.end(), [](const Opt& o) { return o.op == OptOp::UPCAST && o.vectorize && o.amount == 8; }))
        << strided.str();
    EXPECT_TRUE(strided.has(OptOp::UNROLL)) << strided.str();
    EXPECT_TRUE(strided.has(OptOp::THREAD)) << strided.str();
  }
}

// Softmax's backward is one row kernel with several reduces of the row in turn: the work counted
// for threading multiplied their sizes, overflowed (64 x 4096^5 here) and the kernel ran on one
// thread.
TEST(Heuristic, ARowKernelWithManyReducesIsThreaded) {
  Tensor x = in({64, 4096}), r = in({64, 4096});
  x.requires_grad_();
  int rows = 0;
  for (const Chosen& c : chosen((x.softmax(-1) * r).sum().gradient({x})[0]))
    if (c.name.rfind("r_64_4096_4096", 0) == 0) {
      EXPECT_TRUE(c.has(OptOp::THREAD)) << c.str();
      ++rows;
    }
  EXPECT_EQ(rows, 1);
}

// A depthwise convolution's weight gradient sums over batch, rows and columns for each of few
// outputs (channel, tap): the last reduce axis found cannot take vector lanes, the columns (the
// loads walk them contiguously) do, on AVX2 and AVX-512 caps alike.
TEST(Heuristic, AWeightGradientTakesLanesAlongTheReduceItsLoadsWalk) {
  Target avx2 = simulated_cpu(8, 8);
  avx2.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  Tensor x = in({8, 32, 28, 28}), w = in({32, 1, 3, 3}), r = in({8, 32, 28, 28});
  Tensor dw = (x.conv2d(w, std::nullopt, 1, 1, 1, 32) * r).sum().gradient({w})[0];
  for (const Target& target : {avx512(), avx2}) {
    Chosen c = main_kernel(dw, target);
    EXPECT_TRUE(c.has(OptOp::UNROLL, true)) << c.str();
    EXPECT_TRUE(c.has(OptOp::THREAD)) << c.str();
  }
}

// A convolution tiled over its output channels whose image does not stay in the L2 between channel
// tiles, while its weights do, walks its image rows outside the channel tiles and stages the rows
// one output row reads (8 x 32 x 64 x 64 -> 64, 3 x 3: the image plane 557 KiB, the weights 74 KiB).
// The same convolution on a core whose L2 holds the image, and one whose weights do not fit (256
// -> 256 channels: 2.3 MiB), keep the natural order; so does a matmul (one reduce).
TEST(Heuristic, AConvolutionWhoseImageLeavesTheL2WalksRowsOutsideItsChannelTiles) {
  auto with_l2 = [](Target t, uint64_t l2) {
    t.l1d_bytes = 32 << 10, t.l2_bytes = l2;
    return t;
  };
  Target avx2 = simulated_cpu(8, 2);
  avx2.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  auto swapped = [](const Chosen& c, int64_t channels, int64_t rows) {
    return std::any_of(c.opts.begin(), c.opts.end(), [&](const Opt& o) {
      return o.op == OptOp::SWAP && std::min(o.axis, o.amount) == channels && std::max(o.axis, o.amount) == rows;
    });
  };
  auto stages_image = [](const Chosen& c) {  // input 1, the image, staged at the channel tiles
    return std::any_of(c.opts.begin(), c.opts.end(), [](const Opt& o) { return o.op == OptOp::STAGE && o.amount == 1; });
  };
  const Tensor conv = in({8, 32, 64, 64}).conv2d(in({64, 32, 3, 3}), std::nullopt, 1, 1);
  for (const Target& t : {with_l2(avx2, 512 << 10), with_l2(avx512(), 512 << 10)}) {
    Chosen c = main_kernel(conv, t);  // axes: batch, output channels, rows, columns
    EXPECT_TRUE(swapped(c, 1, 2)) << c.str();
    EXPECT_TRUE(stages_image(c)) << c.str();
    EXPECT_TRUE(c.has(OptOp::THREAD)) << c.str();
    Chosen roomy = main_kernel(conv, with_l2(t, 2 << 20));
    EXPECT_FALSE(roomy.has(OptOp::SWAP)) << roomy.str();
    Chosen heavy = main_kernel(in({1, 256, 64, 64}).conv2d(in({256, 256, 3, 3}), std::nullopt, 1, 1), t);
    EXPECT_FALSE(heavy.has(OptOp::SWAP)) << heavy.str();
  }
  // batch 1: the threads split the rows, which are outside the channel tiles
  Chosen one = main_kernel(in({1, 32, 256, 256}).conv2d(in({32, 32, 3, 3}), std::nullopt, 1, 1), with_l2(avx2, 512 << 10));
  EXPECT_TRUE(swapped(one, 0, 1)) << one.str();
  EXPECT_TRUE(std::any_of(one.opts.begin(), one.opts.end(), [](const Opt& o) { return o.op == OptOp::THREAD && o.axis == 1; })) << one.str();
}

// Grouped: the input moves from one group of output channels to the next, but not within one, so
// rows of output channels inside a group still reuse its vectors.
TEST(Heuristic, GroupedConvolutionIsARegisterTile) {
  Chosen c = main_kernel(in({1, 64, 56, 56}).conv2d(in({64, 16, 3, 3}), std::nullopt, 1, 1, 1, 4));
  EXPECT_TRUE(c.has(OptOp::UPCAST, true)) << c.str();
  EXPECT_GE(c.upcasts(), 1) << c.str();
  EXPECT_TRUE(c.has(OptOp::THREAD)) << c.str();
}

// A transposed view read into a contiguous output: vectors along the output's contiguous axis
// and the input's contiguous axis upcast too, so each cache line of the input is used whole.
TEST(Heuristic, PermutedViewsAreTiled) {
  Chosen c = main_kernel(in({2048, 2048}).transpose() + 1.0);
  EXPECT_TRUE(c.has(OptOp::UPCAST, true)) << c.str();
  EXPECT_EQ(c.upcasts(), 1) << c.str();
  EXPECT_TRUE(c.has(OptOp::THREAD)) << c.str();
}

// A leading axis shorter than the thread count (batch 1-4) does not hold the threads: it takes
// what it can and the next axes take the rest (their chunks multiply).
TEST(Heuristic, ThreadsSplitTheAxisWithTheMostIterations) {
  Chosen c = main_kernel(in({3, 1 << 18}) * in({3, 1}));  // (a per-row operand: the axes stay two)
  int64_t chunks = 1;
  bool long_axis = false;
  for (const Opt& o : c.opts)
    if (o.op == OptOp::THREAD) chunks *= o.amount, long_axis |= o.axis != 0;
  EXPECT_GE(chunks, 8) << "every thread has work: " << c.str();
  EXPECT_TRUE(long_axis) << "axis 0 has 3 iterations: " << c.str();
  // the plain case is unchanged: a long leading axis is split
  Chosen plain = main_kernel(in({64, 1024}) * 2.0);
  EXPECT_NE(std::find_if(plain.opts.begin(), plain.opts.end(), [](const Opt& o) { return o.op == OptOp::THREAD && o.axis == 0; }),
            plain.opts.end())
      << plain.str();
}

// On a CPU that starts one full-width multiply-add a cycle (Zen 4's AVX-512: a 512-bit FMA is two
// passes of its 256-bit pipes), a 3 x 3 convolution over a 7 x 7 map at batch 1 (49 positions)
// takes half-width column vectors (7 -> 8 lanes), its rows and two output channels upcast whole,
// and broadcasts its weights in place: no staged copy. Its batch of 8 (392 positions), a 14 x 14
// map, a pointwise or strided one, and a core with two full-width pipes keep the channel vectors.
TEST(Heuristic, NarrowColumnsTakeHalfWidthVectorsWhereFullWidthFmasAreOneACycle) {
  Target fma1 = avx512();
  fma1.vector_registers = 32, fma1.fma_pipes = 1;
  auto column_lanes = [](const Chosen& c, int64_t axis) {
    for (const Opt& o : c.opts)
      if (o.op == OptOp::UPCAST && o.vectorize && o.axis == axis) return o.amount;
    return int64_t{0};
  };
  auto upcast = [](const Chosen& c, int64_t axis) {
    int64_t n = 1;
    for (const Opt& o : c.opts)
      if (o.op == OptOp::UPCAST && !o.vectorize && o.axis == axis) n *= o.amount;
    return n;
  };
  for (const Tensor& out : {in({1, 512, 7, 7}).conv2d(in({512, 512, 3, 3}), std::nullopt, 1, 1),
                            in({1, 512, 7, 7}).conv2d(in({512, 512, 3, 3}), in({512}), 1, 1).relu()}) {
    Chosen c = main_kernel(out, fma1);  // axes: channels, rows, columns
    EXPECT_EQ(column_lanes(c, 2), 8) << c.str();
    EXPECT_EQ(upcast(c, 1), 7) << c.str();
    EXPECT_EQ(upcast(c, 0), 2) << c.str();
    EXPECT_FALSE(c.has(OptOp::STAGE)) << c.str();
    EXPECT_TRUE(c.has(OptOp::THREAD)) << c.str();
    Chosen two_pipes = main_kernel(out);
    EXPECT_EQ(column_lanes(two_pipes, 0), 16) << "channel vectors: " << two_pipes.str();
  }
  for (const Tensor& out : {in({8, 512, 7, 7}).conv2d(in({512, 512, 3, 3}), std::nullopt, 1, 1),
                            in({1, 256, 14, 14}).conv2d(in({256, 256, 3, 3}), std::nullopt, 1, 1),
                            crop7(in({1, 512, 7, 8})).conv2d(in({256, 512, 1, 1})),
                            in({1, 256, 14, 14}).conv2d(in({512, 256, 3, 3}), std::nullopt, 2, 1)}) {
    Chosen c = main_kernel(out, fma1);
    EXPECT_TRUE(c.has(OptOp::STAGE)) << "channel vectors, weights staged: " << c.str();
  }
}

// A window read at a stride of 2 along the output columns (ResNet's 3 x 3 stride-2 max pool over
// its padded 114 x 114 map, the same padded inside the kernel, a 2 x 2 average pool, a stride-2
// depthwise convolution) takes vectors of output columns, each a few contiguous loads and a pick
// of their lanes (picks_strided_lanes). Where the vector would be gathered instead (4 lanes at a
// stride of 2, a stride past kMaxShuffleStride) each output stays a scalar reduce over its window.
TEST(Heuristic, StridedWindowsVectorizeTheirOutputColumns) {
  Target avx2 = simulated_cpu(8, 2), sse = simulated_cpu(4, 2);
  avx2.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  sse.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  const Tensor windows[] = {in({1, 64, 114, 114}).max_pool2d(3, 2), in({1, 64, 112, 112}).max_pool2d(3, 2, 1),
                            in({1, 64, 112, 112}).avg_pool2d(2),
                            in({1, 96, 112, 112}).conv2d(in({96, 1, 3, 3}), std::nullopt, 2, 1, 1, 96)};
  auto lanes = [](const Chosen& c) {
    for (const Opt& o : c.opts)
      if (o.op == OptOp::UPCAST && o.vectorize) return o.amount;
    return int64_t{1};
  };
  for (const Tensor& out : windows) {
    for (const Target* t : {&avx512(), static_cast<const Target*>(&avx2)}) {
      Chosen c = main_kernel(out, *t);
      EXPECT_GE(lanes(c), 8) << c.str();
      EXPECT_TRUE(c.has(OptOp::THREAD)) << c.str();
    }
    Chosen narrow = main_kernel(out, sse);
    EXPECT_FALSE(narrow.vectorized()) << "4 lanes at a stride of 2 are a gather: " << narrow.str();
  }
  Chosen wide_stride = main_kernel(in({1, 64, 120, 120}).max_pool2d(5, 5));
  EXPECT_FALSE(wide_stride.vectorized()) << wide_stride.str();
}

// No kernel with more than ~1M operations runs on one thread, whatever its kind.
TEST(Heuristic, LargeKernelsAreThreaded) {
  Tensor x = in({1024, 1024});
  for (const Tensor& out : {x.sum(), x.sum({1}), x.sum({0}), x.softmax(-1), x.max({0}), (x - x.mean({1}, true)) * 2.0,
                            in({4, 1024}).matmul(in({1024, 1024})), in({1, 1024}).linear(in({1000, 1024})),
                            in({1, 32, 64, 64}).max_pool2d(2), in({1 << 22}) + 1.0})
    expect_threaded_when_large(out);
}

// A vector times a matrix larger than the L2 walks the matrix in blocks of its rows (BLOCK on K).
// Rows 4096 floats apart fall on one set of a 32 KiB, 8-way L1 at each column: a block of more
// than 8 of them evicts its own lines (the prefetched next ones too), so it takes 8; rows whose
// stride is not a multiple of a line walk every set and keep 16 (issue 50).
TEST(Heuristic, AVectorTimesAMatrixBlocksNoMoreRowsThanTheirL1SetsHold) {
  const auto block_of = [](const Chosen& c) {
    const auto b = std::find_if(c.opts.begin(), c.opts.end(), [](const Opt& o) { return o.op == OptOp::BLOCK; });
    return b == c.opts.end() ? int64_t{0} : b->amount;
  };
  Target t = avx512();
  t.l1d_bytes = 32 << 10;
  const Chosen aliased = main_kernel(in({1, 4096}).matmul(in({4096, 4096})), t);
  EXPECT_EQ(block_of(aliased), 8) << aliased.str();
  const Chosen spread = main_kernel(in({1, 4096}).matmul(in({4096, 4100})), t);
  EXPECT_EQ(block_of(spread), 16) << spread.str();
  // a tile with rows keeps its blocks of 16 (its lines of B feed every row; measured even)
  const Chosen rows = main_kernel(in({8, 4096}).matmul(in({4096, 4096})), t);
  EXPECT_EQ(block_of(rows), 16) << rows.str();
}

// Odd sizes keep the fast path (item 1): axes that do not divide by the lanes or the tile are
// padded (PADTO, the padded iterations masked) or take an amount that divides; every kernel of
// at least 7 iterations along its vector axis gets vectors, and the large ones threads.
TEST(Heuristic, OddSizesKeepVectorsTilesAndThreads) {
  for (int64_t n : {1, 7, 127, 999, 1000, 1001, 1023}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    Tensor x = in({n, n});
    Chosen mm = main_kernel(x.matmul(in({n, n})));
    for (const Tensor& out : {x.matmul(in({n, n})), x.linear(in({n, n})), x.sum({0}), x.sum({1}), x * 2.0 + 1.0}) {
      Chosen c = main_kernel(out);
      if (n >= 7) {
        EXPECT_TRUE(c.vectorized()) << c.str();
      }
      expect_threaded_when_large(out);
    }
    if (n >= 127) {
      EXPECT_GE(mm.upcasts(), 1) << "a register tile: " << mm.str();
    }
  }
}

// Rows too short and odd for the lanes that divide or pad cheaply (5, 6, 9) take one masked vector
// of the next power of two each on a CPU with masked vectors (ResNet's padded 9 x 9 maps), two
// where a row fits two (9 on 8 lanes), and stay scalar without masks; an axis already vectored is
// not padded again.
TEST(Heuristic, ShortOddRowsTakeOneMaskedVectorEach) {
  auto lanes = [](const Chosen& c) {
    for (const Opt& o : c.opts)
      if (o.vectorize) return o.amount;
    return int64_t{1};
  };
  for (auto [n, want] : {std::pair<int64_t, int64_t>{5, 8}, {6, 8}, {9, 16}, {3, 4}}) {
    SCOPED_TRACE("rows of " + std::to_string(n));
    Tensor y = (in({512, n - 2, n - 2}) + 1.0).relu().pad({{0, 0}, {1, 1}, {1, 1}});  // a padded map: rows stay rows
    Chosen masked = main_kernel(y), plain = main_kernel(y, simulated_cpu(16, 8));
    EXPECT_EQ(lanes(masked), want) << masked.str();
    EXPECT_EQ(lanes(plain), 1) << "no masks: " << plain.str();
  }
  // an AVX2-like target (8 lanes, masked): a row of 9 is padded to two whole vectors
  Target avx2 = simulated_cpu(8, 8);
  avx2.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  Chosen two = main_kernel((in({512, 7, 7}) + 1.0).relu().pad({{0, 0}, {1, 1}, {1, 1}}), avx2);
  EXPECT_EQ(lanes(two), 8) << two.str();
  EXPECT_TRUE(std::any_of(two.opts.begin(), two.opts.end(), [](const Opt& o) { return o.op == OptOp::PADTO && o.amount == 16; }))
      << two.str();
  // a row kernel's output axis (asked for lanes twice) keeps its first vector and one PADTO
  Chosen row = main_kernel(in({64, 10, 10}).softmax(-1));
  EXPECT_LE(std::count_if(row.opts.begin(), row.opts.end(), [](const Opt& o) { return o.op == OptOp::PADTO && o.axis == 1; }), 1)
      << row.str();
}

// Without masked vector accesses a padded vector would load lane by lane: the vector axis takes
// an amount that divides instead, while the rows of a tile (no vector gate) are still padded.
TEST(Heuristic, VectorAxesArePaddedOnlyWithMaskedVectors) {
  auto pads = [](const Chosen& c) {
    std::vector<int64_t> axes;
    for (const Opt& o : c.opts)
      if (o.op == OptOp::PADTO) axes.push_back(o.axis);
    return axes;
  };
  Tensor mm = in({1001, 1000}).matmul(in({1000, 1000}));  // rows 1001 (axis 0), columns 1000 (axis 1)
  Chosen masked = main_kernel(mm), plain = main_kernel(mm, simulated_cpu(16, 8));
  EXPECT_EQ(pads(masked), (std::vector<int64_t>{1, 0})) << masked.str();
  EXPECT_EQ(pads(plain), (std::vector<int64_t>{0})) << plain.str();
  EXPECT_TRUE(plain.has(OptOp::UPCAST, true)) << "8 lanes divide 1000: " << plain.str();
}

// A GPU-like target (OpenCL on PoCL, HIP) has no masked vectors either, and its explicit vectors
// are what makes its matmuls fast: odd columns are padded to whole vectors all the same, B's loads
// along them clamp to the last column lane by lane (no gate), and only the stores are gated (PoCL,
// 1001^3: scalar columns 2.4 s, padded vectors 80-130 ms).
TEST(Heuristic, GpuMatmulPadsOddColumnsToVectorsThatClamp) {
  const Target gpu = kiln::testing::simulated_gpu(8);
  Tensor mm = in({999, 1001}).matmul(in({1001, 1001}));  // rows 999 (axis 0), columns 1001 (axis 1)
  std::vector<ExecItem> items = mm.schedule();
  ASSERT_EQ(items.size(), 1u);
  const std::vector<Opt> opts = to_program(items[0].ast, gpu).opts;
  Chosen c{items[0].name, opts};
  EXPECT_TRUE(std::any_of(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::PADTO && o.axis == 1; })) << c.str();
  EXPECT_TRUE(c.has(OptOp::UPCAST, true)) << c.str();
  int gated_loads = 0, gated_stores = 0;
  for (const UOp& u : toposort(apply_opts(items[0].ast, opts, gpu))) {
    if (u.op() == Ops::LOAD && u.src(0).op() == Ops::INDEX) gated_loads += u.src(0).nsrc() > 2;
    if (u.op() == Ops::STORE) gated_stores += u.src(0).nsrc() > 2;
  }
  EXPECT_EQ(gated_loads, 0) << "padded rows and columns clamp: " << c.str();
  EXPECT_EQ(gated_stores, 1) << c.str();
}

// The classifier (classify.cpp): each representative kernel's classes, most specific first, as
// the heuristic tries their planners (docs/optimizer.md, "Kernel classes").
TEST(Heuristic, KernelsAreClassified) {
  Target avx2 = simulated_cpu(8, 8);
  avx2.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  const Target scalar = simulated_cpu(1, 2), gpu = kiln::testing::simulated_gpu(4);
  auto classes = [](const Tensor& out, const Target& t) {
    std::vector<ExecItem> items = out.schedule();
    const ExecItem* main = nullptr;
    int64_t most = -1;
    for (const ExecItem& e : items) {
      if (e.is_copy) continue;
      int64_t ops = 1;
      for (const UOp& u : toposort(e.ast))
        if (u.op() == Ops::RANGE) ops *= const_size(u);
      if (ops > most) most = ops, main = &e;
    }
    std::string s;
    for (KernelClass c : classify_kernel(main->ast, t)) s += (s.empty() ? "" : " ") + std::string(kernel_class_name(c));
    return s;
  };
  EXPECT_EQ(classes(in({512, 512}).matmul(in({512, 512})), avx512()), "matmul");
  EXPECT_EQ(classes(in({512, 512}).matmul(in({512, 512})), gpu), "matmul");
  EXPECT_EQ(classes(in({1024, 1024}).transpose().matmul(in({1024, 1024})), avx2), "staged_down_columns matmul");
  EXPECT_EQ(classes(in({1024, 1024}).transpose().matmul(in({1024, 1024})), avx512()), "matmul");
  EXPECT_EQ(classes(in({512, 1024}).linear(in({1024, 1024})), avx512()), "staged_transposed dot");
  EXPECT_EQ(classes(in({512, 1024}).linear(in({1024, 1024})), gpu), "dot");
  EXPECT_EQ(classes(in({512, 512}).linear(in({10, 512})), avx512()), "dot");
  EXPECT_EQ(classes(in({4096}).dot(in({4096})), avx2), "dot");
  EXPECT_EQ(classes(in({1, 64, 56, 56}).conv2d(in({64, 64, 3, 3}), std::nullopt, 1, 1), avx512()), "channel_conv matmul");
  EXPECT_EQ(classes(in({8, 32, 64, 64}).conv2d(in({64, 32, 3, 3}), std::nullopt, 1, 1), avx512()), "matmul");
  EXPECT_EQ(classes(in({1, 256, 56, 56}).conv2d(in({256, 1, 3, 3}), std::nullopt, 1, 1, 1, 256), avx512()), "depthwise");
  EXPECT_EQ(classes(in({1, 256, 56, 56}).conv2d(in({512, 256, 1, 1}), std::nullopt, 2), avx2), "channel_conv matmul");
  EXPECT_EQ(classes(in({4096, 4096}).sum({0}), avx512()), "reduce_across");
  EXPECT_EQ(classes(in({1, 64, 114, 114}).max_pool2d(3, 2), avx512()), "reduce_across");
  EXPECT_EQ(classes(in({1, 64, 114, 114}).max_pool2d(3, 2), scalar), "reduce");
  EXPECT_EQ(classes(in({4096, 4096}).sum({1}), avx512()), "dot");
  EXPECT_EQ(classes(in({4096, 4096}).sum({1}), scalar), "reduce");
  EXPECT_EQ(classes(in({4096, 4096}) + in({4096}), avx512()), "elementwise");
  EXPECT_EQ(classes(in({4096, 4096}) + in({4096}), scalar), "elementwise");
  runtime::set_target_override(&avx512());  // scheduled as for this cpu: it runs rows (clears the caches)
  const std::string softmax = classes(in({4096, 1024}).softmax(-1), avx512());
  runtime::set_target_override(nullptr);
  EXPECT_EQ(softmax, "row");
}
