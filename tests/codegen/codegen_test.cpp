// tests/codegen/codegen_test.cpp - the pass pipeline, LIR, the C dialect's output, decompositions.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "c_dialect.hpp"
#include "llvm_ir.hpp"
#include "codegen/lir.hpp"
#include "codegen/passes.hpp"
#include "codegen/pipeline.hpp"
#include "codegen/transcendental.hpp"
#include "error_check.hpp"
#include "golden.hpp"
#include "simulated_cpu.hpp"
#include "ir/traverse.hpp"
#include "kiln/kiln.hpp"
#include "codegen/target.hpp"
#include "support/env.hpp"
#include "symbolic/interpret.hpp"

using namespace kiln;
using kiln::sdk::LirOp;
using kiln::testing::error_of;

namespace {

// A CPU-like target: 2 threads, FMA, 8 float lanes, no transcendental functions, no half types.
Target cpu_target() { return kiln::testing::simulated_cpu(8, 2); }

// The cpu-like target claiming exactly `ops` (an allow-list built with the SDK's sets).
Target claiming(const sdk::LirOpSet& ops) {
  Target t = cpu_target();
  t.ops[0] = ops.bits()[0], t.ops[1] = ops.bits()[1];
  return t;
}

// A GPU-like target: workgroups, shared memory, 4 float lanes.
Target gpu_target() { return kiln::testing::simulated_gpu(4); }

UOp kernel_of(const Tensor& out) {
  for (const ExecItem& e : out.schedule())
    if (!e.is_copy) return e.ast;
  return {};
}

struct Render : cpu::CDialect {
  using CDialect::render;
};

Tensor in(const Shape& s) { return Tensor::empty(s, dtypes::float32, "ref"); }
Tensor in(const Shape& s, DType d) { return Tensor::empty(s, d, "ref"); }

}  // namespace

TEST(Pipeline, ElementwiseIsVectorizedAndThreaded) {
  ProgramSpec p = to_program(kernel_of(((in({64, 1024}) + 1.0) * 2.0).relu()), cpu_target());
  std::string opts;
  for (const Opt& o : p.opts) opts += o.str() + " ";
  EXPECT_EQ(opts, "UPCAST(0, 8, vector) THREAD(0, 2) ");  // (64 x 1024 merged: one axis)
  EXPECT_TRUE(p.dims.global[0].is_const());
  EXPECT_EQ(p.dims.global[0].arg_int(), 2);
  kiln_lir l = p.lir.view();
  EXPECT_GOLDEN("codegen/elementwise_lir", lir_text(l));
  EXPECT_GOLDEN("codegen/elementwise_c", Render().render(l));
  EXPECT_GOLDEN("codegen/elementwise_llvm", cpu::render_llvm_ir(l));
}

// (144 columns: B's rows 576 bytes apart walk every L1 set, so its panels are read in place; a
// power-of-two width would fold them onto a few sets and stage them, plan_panels)
TEST(Pipeline, MatmulIsARegisterTile) {
  ProgramSpec p = to_program(kernel_of(in({64, 256}).matmul(in({256, 144}))), cpu_target());
  std::string opts;
  for (const Opt& o : p.opts) opts += o.str() + " ";
  EXPECT_EQ(opts, "UPCAST(1, 8, vector) UPCAST(1, 2) UPCAST(0, 4) THREAD(0, 8) ");
  std::string c = Render().render(p.lir.view());
  EXPECT_NE(c.find("floatx8 acc7[1];"), std::string::npos) << "eight vector accumulators";
  EXPECT_GOLDEN("codegen/matmul_c", c);
  EXPECT_GOLDEN("codegen/matmul_llvm", cpu::render_llvm_ir(p.lir.view()));
}

// A 3x3 convolution's register tile holds channels in its vector lanes and 7 output columns in
// its copies; NCHW keeps a channel's columns together, so each lane's 7 columns are one vector
// store (and its residual one vector load), not 7 scalar stores with an address each: those were
// half the kernel's LLVM IR and of its compile time (expander.cpp, transposed stores). With BLOCK
// the partial sums are read back the same way. A GPU gets powers of two (4 + 2 + 1).
TEST(Pipeline, AConvolutionTileStoresEachChannelsColumnsAsOneVector) {
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  const Tensor y = (in({1, 64, 14, 14}).conv2d(in({64, 64, 3, 3}), in({64}), 1, 1) + in({1, 64, 14, 14})).relu();
  UOp ast;  // the convolution's kernel (the input's padding is one before it)
  for (const ExecItem& e : y.schedule())
    if (!e.is_copy) ast = e.ast;
  const std::vector<Opt> tile{{OptOp::UPCAST, 0, 16, true}, {OptOp::UPCAST, 0, 2}, {OptOp::UPCAST, 2, 7}};
  std::string ir = cpu::render_llvm_ir(to_program(ast, kiln::testing::simulated_cpu(16, 2), &tile).lir.view());
  EXPECT_EQ(count(ir, "store <7 x float>"), 32u) << "16 lanes x 2 channel copies";
  EXPECT_EQ(count(ir, "load <7 x float>"), 32u) << "the residual";
  EXPECT_EQ(count(ir, "store float"), 0u);
  std::vector<Opt> blocked = tile;
  blocked.push_back({OptOp::BLOCK, 3, 16});
  ir = cpu::render_llvm_ir(to_program(ast, kiln::testing::simulated_cpu(16, 2), &blocked).lir.view());
  EXPECT_EQ(count(ir, "store <7 x float>"), 32u);
  EXPECT_EQ(count(ir, "load <7 x float>"), 64u) << "the residual and the partial sums";
  EXPECT_EQ(count(ir, "store float"), 0u);
  // a GPU: each lane's 7 columns in stores of 4, 2 and 1 (data0 is the output)
  const std::vector<Opt> gpu_tile{{OptOp::UPCAST, 0, 4, true}, {OptOp::UPCAST, 2, 7}};
  const std::string c = Render().render(to_program(ast, gpu_target(), &gpu_tile).lir.view());
  EXPECT_EQ(count(c, "*(floatx4_u*)((data0+"), 4u) << c;
  EXPECT_EQ(count(c, "*(floatx2_u*)((data0+"), 4u);
  EXPECT_EQ(count(c, "*((data0+"), 4u);
  EXPECT_EQ(count(c, "floatx7"), 0u);
}

// Regression: a matmul whose result updates a buffer (an SGD step, w - lr * dW, or a residual
// add) read the old value after the reduce, a load that moves along both output axes, and the
// heuristic took that for a load the row upcast would not reuse: the weight-gradient kernels of a
// training step ran without a register tile (a third of the speed). Loads outside the reduction
// do not decide the tile.
TEST(Pipeline, AMatmulWithAnEpilogueLoadKeepsItsRegisterTile) {
  Tensor w = in({64, 128});
  Tensor dw = in({32, 64}).transpose(0, 1).matmul(in({32, 128}));  // reduces over the batch, like a weight gradient
  ProgramSpec p = to_program(kernel_of(w - dw * 0.5), cpu_target());
  std::string opts;
  for (const Opt& o : p.opts) opts += o.str() + " ";
  EXPECT_NE(opts.find("UPCAST(0, 4)"), std::string::npos) << opts;
}

// The FLOP estimate behind GFLOP/s in debug lines and profiles: a reduce's own op counts once per
// term, and what follows a reduce runs once per output, not once per term.
TEST(Pipeline, FlopEstimateCountsEachOpAtItsOwnLoops) {
  EXPECT_EQ(to_program(kernel_of(in({64, 256}).matmul(in({256, 128}))), cpu_target()).flops, 2.0 * 64 * 256 * 128);
  EXPECT_EQ(to_program(kernel_of(in({64, 256}).sum({1}) + 1.0), cpu_target()).flops, 64.0 * 256 + 64);
}

TEST(Pipeline, SumReducesInVectorLanes) {
  ProgramSpec p = to_program(kernel_of(in({64, 256}).sum({1})), cpu_target());
  EXPECT_GOLDEN("codegen/sum_c", Render().render(p.lir.view()));
}

TEST(Pipeline, IndexMathIsInt32UnlessItCouldOverflow) {
  auto index_types = [](const ProgramSpec& p) {
    std::string t = lir_text(p.lir.view());
    return std::make_pair(t.find("RANGE int32") != std::string::npos, t.find("RANGE int64") != std::string::npos);
  };
  EXPECT_EQ(index_types(to_program(kernel_of(in({1024, 1024}) * 2.0), cpu_target())), std::make_pair(true, false));
  // 2^32 elements: flat indices do not fit in int32
  EXPECT_EQ(index_types(to_program(kernel_of(in({1 << 16, 1 << 16}) * 2.0), cpu_target())), std::make_pair(false, true));
}

// A group norm's statistics read a contiguous buffer through a reshape that splits its channels
// into groups: the index is the flat position again (no division or remainder left), so the
// reduce loads whole vectors. The index once kept ((r*4)//7 % 56)*56 + (r*4 % 7)*8 + ... and
// loaded each lane on its own, 6-10x slower than torch.
TEST(Pipeline, AReshapeOfAContiguousBufferIndexesItLinearly) {
  Tensor x = in({8, 64, 56, 56}).reshape({8, 8, 64 * 56 * 56 / 8});
  for (const Tensor& out : {x.sum({2}), x.var({2}, false, 0)}) {
    std::string lir = lir_text(to_program(kernel_of(out), cpu_target()).lir.view());
    EXPECT_EQ(lir.find("IDIV"), std::string::npos) << lir;
    EXPECT_EQ(lir.find("MOD"), std::string::npos) << lir;
    EXPECT_NE(lir.find("LOAD float32x8"), std::string::npos) << lir;
  }
}

// A gather (an embedding lookup) is a one-hot sum over the table's rows at the tensor level; the
// codegen folds it into one gated load of the picked row, and the scheduler does not split the
// sum of a table longer than a split reduce's threshold into partial kernels first. (The sum
// read all 32000 rows of a table per output: an embedding of 1024 tokens took 1.4 s, 0.1 ms now.)
TEST(Pipeline, AGatherIsALoadOfThePickedRow) {
  auto reduces = [](const UOp& ast) {
    int n = 0;
    for (const UOp& u : toposort(ast)) n += u.op() == Ops::REDUCE;
    return n;
  };
  for (int64_t rows : {320, 40000}) {
    Tensor table = in({rows, 16}), idx = Tensor::empty({8, 1}, dtypes::int32, "ref");
    Tensor out = table.gather(0, idx.expand({8, 16}));
    EXPECT_EQ(out.schedule().size(), 1u) << rows << " rows: one kernel";
    UOp ast = kernel_of(out);
    EXPECT_EQ(reduces(ast), 1) << "the scheduler's kernel sums the one-hot";
    EXPECT_EQ(reduces(fold_onehot_reduces(ast)), 0) << rows << " rows";
    // the program's loops: the rows and the column vectors, none over the table
    std::string lir = lir_text(to_program(ast, cpu_target()).lir.view());
    size_t loops = 0;
    for (size_t at = lir.find("= RANGE "); at != std::string::npos; at = lir.find("= RANGE ", at + 1)) ++loops;
    EXPECT_EQ(loops, 2u) << rows << " rows: " << lir;
    EXPECT_NE(lir.find("LOAD float32x8"), std::string::npos) << "the picked row, a vector at a time: " << lir;
  }
  // a sum that is not one-hot stays a sum
  EXPECT_EQ(reduces(fold_onehot_reduces(kernel_of(in({320, 16}).sum({0})))), 1);
}

// A matmul stored through a transpose and a reshape (attention's heads merged back into
// (B, S, H*D)) loops over H*D columns that v reads as the head c // D and the position c % D.
// split_digit_axes makes them two axes, so the kernel's indices are linear: vectors along the
// head's positions and a register tile, where the divided index left it scalar (59x slower
// than torch on 2 x 12 heads of 256 x 64).
TEST(Pipeline, DigitsOfAnOutputAxisBecomeAxes) {
  auto divisions = [](const UOp& ast) {
    int n = 0;
    for (const UOp& u : toposort(ast)) n += u.op() == Ops::IDIV || u.op() == Ops::MOD;
    return n;
  };
  UOp ast = kernel_of(in({2, 12, 64, 64}).matmul(in({2, 12, 64, 64})).transpose(1, 2).reshape({2, 64, 768}));
  EXPECT_GT(divisions(ast), 0) << "the scheduler's kernel divides its 768 columns";
  EXPECT_EQ(divisions(split_digit_axes(ast)), 0);
  Target avx512 = cpu_target();
  avx512.max_vector_width = 16;
  ProgramSpec p = to_program(ast, avx512);
  std::string opts;
  for (const Opt& o : p.opts) opts += o.str() + " ";
  EXPECT_NE(opts.find(", 16, vector)"), std::string::npos) << opts;
  EXPECT_NE(opts.find("UPCAST(1, "), std::string::npos) << "rows of a register tile: " << opts;
  // an axis the kernel does not divide stays whole
  UOp plain = kernel_of(in({64, 768}) * 2.0);
  EXPECT_EQ(split_digit_axes(plain), plain);
}

// The other way: an NCHW kernel over 7 x 7 maps loops over rows of 7 columns although every
// access walks the 49 positions as one run (vectors padded 7 -> 8, register tiles of 7 columns).
// merge_adjacent_axes makes such neighbours one axis, for outputs and reduces alike, and leaves
// apart those that some access reads on their own: a padded window's rows and columns (its gates),
// a strided input, a transposed one, a per-row operand.
TEST(Pipeline, AdjacentAxesReadAsOneNumberBecomeOne) {
  auto sizes = [](const UOp& ast, AxisType type) {
    std::vector<int64_t> s;
    for (const UOp& r : ranges_of(ast))
      if (range_type(r) == type) s.push_back(const_size(r));
    std::sort(s.begin(), s.end());
    return s;
  };
  using Sizes = std::vector<int64_t>;
  const UOp pointwise = merge_adjacent_axes(kernel_of(in({4, 64, 7, 7}).conv2d(in({32, 64, 1, 1}))), cpu_target());
  EXPECT_EQ(sizes(pointwise, AxisType::LOOP), (Sizes{4, 32, 49}));
  EXPECT_EQ(sizes(pointwise, AxisType::REDUCE), (Sizes{64}));
  EXPECT_EQ(sizes(merge_adjacent_axes(kernel_of(in({3, 5, 7}) + 1.0), cpu_target()), AxisType::LOOP), (Sizes{105}));
  // a GPU's output axes are launch dimensions: merged only while they fit the smallest, and only
  // into whole vectors (no masked vectors, no peel: 7 x 7 -> 49 would clamp lanes at run time)
  Target gpu = kiln::testing::simulated_gpu(4);
  EXPECT_EQ(sizes(merge_adjacent_axes(kernel_of(in({2, 7, 7}) + 1.0), gpu), AxisType::LOOP), (Sizes{2, 7, 7}));
  for (uint32_t& g : gpu.global_max) g = 64;
  EXPECT_EQ(sizes(merge_adjacent_axes(kernel_of(in({3, 4, 8}) + 1.0), gpu), AxisType::LOOP), (Sizes{3, 32}));
  const UOp pooled = merge_adjacent_axes(kernel_of(in({32, 64, 7, 7}).sum({2, 3})), cpu_target());
  EXPECT_EQ(sizes(pooled, AxisType::LOOP), (Sizes{2048}));
  EXPECT_EQ(sizes(pooled, AxisType::REDUCE), (Sizes{49}));
  const Tensor apart[] = {in({1, 8, 9, 9}).conv2d(in({4, 8, 3, 3}), std::nullopt, 1, 1),
                          in({1, 8, 14, 14}).conv2d(in({4, 8, 1, 1}), std::nullopt, 2, 0), in({6, 10}).transpose() + 1.0,
                          in({3, 100}) * in({3, 1})};
  for (size_t i = 0; i < std::size(apart); ++i) {
    const UOp ast = kernel_of(apart[i]);
    EXPECT_EQ(sizes(merge_adjacent_axes(ast, cpu_target()), AxisType::LOOP), sizes(ast, AxisType::LOOP)) << "case " << i;
  }
  // (the kernel's name, from the scheduler, keeps the tensor's dimensions)
  EXPECT_EQ(to_program(kernel_of(in({3, 5, 7}) + 1.0), cpu_target()).name, "E_3_5_7");
}


// A bfloat16 matrix-vector product whose B (32 MiB) does not fit the caches walks B in K-blocks
// as float32's does (4096 x 4096: 1.76 -> 0.55 ms, 2 threads): its sums are float32, rounded once
// into the bfloat16 output, so the blocks' partial sums go to a float32 stack array the size of
// the output (not into the output: rounding them there would change the answer) and the last
// block stores.
TEST(Opt, ABfloat16GemvBlocksItsReduceThroughAFloat32Array) {
  ProgramSpec p = to_program(kernel_of(in({1, 4096}, dtypes::bfloat16).matmul(in({4096, 4096}, dtypes::bfloat16))), cpu_target());
  bool blocked = false;
  for (const Opt& o : p.opts) blocked |= o.op == OptOp::BLOCK;
  EXPECT_TRUE(blocked) << opts_text(p.opts);
  const std::string lir = lir_text(p.lir.view());
  EXPECT_NE(lir.find("DEFINE_REG float32*reg[4096]"), std::string::npos) << lir;
  // a float32 output keeps its partial sums in the output, no array
  ProgramSpec f = to_program(kernel_of(in({1, 4096}).matmul(in({4096, 4096}))), cpu_target());
  EXPECT_EQ(lir_text(f.lir.view()).find("reg[4096]"), std::string::npos);
}

// Every step of the pass list runs through the traced wrapper: at KILN_DEBUG=6 the trace names
// each step of codegen_passes(), in order and once, and every rewrite inside the pipeline says
// which step it ran in (a rewrite run beside the table, outside any step, would not).
TEST(Pipeline, EveryStepAppearsInTheTrace) {
  for (const Target& target : {cpu_target(), gpu_target()}) {
    UOp ast = kernel_of(in({8, 4096}).sum({1}) + 1.0);
    LaunchDims quiet_dims;
    UOp quiet = full_rewrite_to_sink(ast, target, quiet_dims);
    set_knob(Knob::debug, 6);
    ::testing::internal::CaptureStderr();
    LaunchDims dims;
    UOp traced = full_rewrite_to_sink(ast, target, dims);
    std::string err = ::testing::internal::GetCapturedStderr();
    set_knob(Knob::debug, 0);
    EXPECT_TRUE(traced == quiet) << "tracing changes nothing";
    std::vector<std::string> steps, want, outside;
    for (const CodegenPass& p : codegen_passes()) want.push_back(p.name);
    size_t at = 0;
    while (at < err.size()) {
      size_t eol = err.find('\n', at);
      if (eol == std::string::npos) eol = err.size();
      std::string line = err.substr(at, eol - at);
      at = eol + 1;
      if (line.rfind("step '", 0) == 0) steps.push_back(line.substr(6, line.find('\'', 6) - 6));
      if (line.rfind("graph_rewrite '", 0) == 0 && line.find("' in step '") == std::string::npos) outside.push_back(line);
    }
    EXPECT_EQ(steps, want) << err;
    EXPECT_TRUE(outside.empty()) << "rewrites outside any step: " << outside.front();
  }
}

TEST(Pipeline, NoOptKeepsPlainLoops) {
  set_knob(Knob::noopt, 1);
  ProgramSpec p = to_program(kernel_of(in({64, 1024}) * 2.0), cpu_target());
  set_knob(Knob::noopt, 0);
  EXPECT_TRUE(p.opts.empty());
  EXPECT_EQ(Render().render(p.lir.view()).find("floatx"), std::string::npos);
}

// Every pass and both renderers walk a kernel 300k ops deep (a recursive walk overflows an 8 MiB
// stack far sooner; a million passes too, in ~10 s).
TEST(Pipeline, ADeepKernelLowersAndRenders) {
  Tensor x = in({4});
  for (int i = 0; i < 300'000; ++i) x = x + 1.0;
  ProgramSpec p = to_program(kernel_of(x), cpu_target());
  kiln_lir l = p.lir.view();
  EXPECT_GT(l.n_insts, 300'000u);
  EXPECT_FALSE(Render().render(l).empty());
  EXPECT_FALSE(cpu::render_llvm_ir(l).empty());
}

TEST(Pipeline, SymbolicKernelTakesItsVariable) {
  Variable n("n", 1, 64);
  Tensor x = in({64, 8}).shrink(0, n.bind(5));
  ProgramSpec p = to_program(kernel_of((x * x).sum({1})), cpu_target());  // (x * 2.0 would add the scalar's variable)
  EXPECT_EQ(p.var_names, (std::vector<std::string>{"n"}));
  std::string c = Render().render(p.lir.view());
  EXPECT_NE(c.find("const int n = (int)vals[0];"), std::string::npos) << c;
}

// The renderer never sees an op or dtype its target lacks: what decompose() cannot replace is
// an error naming the kernel, the op and the dtype, before any source is rendered.
TEST(Pipeline, WhatTheTargetLacksAndNothingDecomposesIsAnError) {
  Target no_idiv = cpu_target();
  no_idiv.ops[KILN_LIR_OP_IDIV / 64] &= ~(uint64_t{1} << (KILN_LIR_OP_IDIV % 64));
  Tensor a = Tensor::empty({64}, dtypes::int32, "ref");
  kiln::testing::expect_error([&] { to_program(kernel_of(a.idiv(a + 1)), no_idiv); }, ErrorCode::unimplemented,
                              "needs IDIV (int32");
  Target no_f64 = cpu_target();
  no_f64.dtypes &= ~(1u << KILN_LIR_DTYPE_FLOAT64);
  kiln::testing::expect_error(
      [&] { to_program(kernel_of(Tensor::empty({64}, dtypes::float64, "ref") * 2.0), no_f64); },
      ErrorCode::unimplemented, "computes in float64");
  // what decompose() does replace passes: EXP2 is missing on this target too
  EXPECT_NO_THROW(to_program(kernel_of(in({64}).exp2()), cpu_target()));
}

// An op missing from a renderer's allow-list is unsupported by its target; the pipeline
// decomposes it where it has a decomposition (MAX -> CMPLT + WHERE) and otherwise refuses the
// kernel with an error naming the op, before any rendering (tests/e2e/cpu_e2e_test.cpp: and the
// device, at run time).
TEST(Pipeline, AnOpMissingFromTheAllowListIsDecomposedOrRefused) {
  // a list without MAX: not supported, decomposed (CMPLT + WHERE), and no MAX reaches the LIR
  sdk::LirOpSet no_max = sdk::lir_ops::kStructure | sdk::lir_ops::kVectors | sdk::lir_ops::kConversions |
                         sdk::LirOpSet{LirOp::NEG, LirOp::ADD, LirOp::SUB, LirOp::MUL, LirOp::IDIV, LirOp::MOD,
                                       LirOp::FDIV, LirOp::SHL, LirOp::SHR, LirOp::AND, LirOp::OR, LirOp::XOR,
                                       LirOp::CMPLT, LirOp::CMPNE, LirOp::CMPEQ, LirOp::WHERE, LirOp::MULACC};
  Target t = claiming(no_max);
  EXPECT_FALSE(t.supports_op(KILN_LIR_OP_MAX));
  Tensor a = Tensor::empty({64}, dtypes::float32, "ref");
  ProgramSpec p = to_program(kernel_of(a.maximum(a * 2.0)), t);
  for (const kiln_lir_inst& in : p.lir.insts) EXPECT_NE(in.op, KILN_LIR_OP_MAX);
  EXPECT_NO_THROW(cpu::render_llvm_ir(p.lir.view()));
  // without IDIV there is no decomposition: refused, naming the op and its dtype
  Target u = claiming(sdk::lir_ops::kStructure | sdk::lir_ops::kVectors | sdk::lir_ops::kConversions |
                             sdk::LirOpSet{LirOp::NEG, LirOp::ADD, LirOp::SUB, LirOp::MUL, LirOp::MOD, LirOp::FDIV,
                                           LirOp::MAX, LirOp::SHL, LirOp::SHR, LirOp::AND, LirOp::OR, LirOp::XOR,
                                           LirOp::CMPLT, LirOp::CMPNE, LirOp::CMPEQ, LirOp::WHERE, LirOp::MULACC});
  EXPECT_FALSE(u.supports_op(KILN_LIR_OP_IDIV));
  Tensor i = Tensor::empty({64}, dtypes::int32, "ref");
  kiln::testing::expect_error([&] { to_program(kernel_of(i.idiv(i + 1)), u); }, ErrorCode::unimplemented,
                              "needs IDIV (int32");
}

// A launch the target cannot take is an error naming the sizes and the limits, not a size cut
// to 32 bits: here a GPU-like target with at most 64 workgroups per dimension.
TEST(Pipeline, LaunchSizesPastTheTargetsLimitsAreErrors) {
  Target t = gpu_target();
  t.max_vector_width = 1;
  for (int d = 0; d < 3; ++d) t.global_max[d] = 64, t.local_max[d] = 1;
  t.local_prod_max = 1;
  EXPECT_NO_THROW(to_program(kernel_of(in({64}) * 2.0), t));
  kiln::testing::expect_error([&] { to_program(kernel_of(in({4096}) * 2.0), t); }, ErrorCode::resource_exhausted,
                              "exceeds the target's limits (64 x 1)");
}

// A target that computes in float16 but has no EXP2/LOG2/SIN (HIP without device libraries):
// the polynomials, built on float32 bits, run in float32 and round once. They were built on the
// float16 operand and bitcast 2-byte values to int32 (HIP's exp of float16 did not compile).
TEST(Decompose, TranscendentalsOfANativeHalfAreComputedInFloat32) {
  Target t = cpu_target();
  t.dtypes |= 1u << KILN_LIR_DTYPE_FLOAT16;
  ASSERT_TRUE(t.supports_dtype(KILN_LIR_DTYPE_FLOAT16));
  auto run = [&](Ops op, double x) {
    UOp m = decompose(UOp::sink({UOp::alu(op, {UOp::cvalue(dtypes::float16, x)})}), t).src(0);
    EXPECT_EQ(m.dtype(), dtypes::float16);
    for (const UOp& u : toposort(m)) {
      EXPECT_NE(u.op(), op);
      if (u.op() == Ops::BITCAST) {
        EXPECT_EQ(u.dtype().scalar_size(), u.src(0).dtype().scalar_size());
      }
    }
    return as_double(*interpret(m, {}));
  };
  EXPECT_EQ(run(Ops::EXP2, 3), 8);
  EXPECT_EQ(run(Ops::LOG2, 0.25), -2);
  EXPECT_NEAR(run(Ops::SIN, 0.5), std::sin(0.5), std::sin(0.5) * std::ldexp(1.0, -11));
}

// MAX on a target without it: CMPLT + WHERE, NaN-propagating for floats (either operand).
TEST(Decompose, MaxWithoutMax) {
  Target t = cpu_target();
  t.ops[KILN_LIR_OP_MAX / 64] &= ~(uint64_t{1} << (KILN_LIR_OP_MAX % 64));
  ProgramSpec p = to_program(kernel_of(in({64}).maximum(in({64})).relu()), t);
  for (const kiln_lir_inst& i : p.lir.insts) EXPECT_NE(i.op, KILN_LIR_OP_MAX);
  auto max_of = [&](DType d, double a, double b) {
    UOp m = decompose(UOp::sink({UOp::alu(Ops::MAX, {UOp::cvalue(d, a), UOp::cvalue(d, b)})}), t).src(0);
    for (const UOp& u : toposort(m)) EXPECT_NE(u.op(), Ops::MAX);
    return as_double(*interpret(m, {}));
  };
  EXPECT_EQ(max_of(dtypes::float32, 1, 2), 2);
  EXPECT_EQ(max_of(dtypes::float32, 2, -1), 2);
  EXPECT_EQ(max_of(dtypes::float32, -0.5, -0.25), -0.25);
  EXPECT_TRUE(std::isnan(max_of(dtypes::float32, NAN, 1)));
  EXPECT_TRUE(std::isnan(max_of(dtypes::float32, 1, NAN)));
  EXPECT_EQ(max_of(dtypes::int32, -7, -3), -3);
  EXPECT_EQ(max_of(dtypes::int32, 5, -3), 5);
}

// A pooling window's small reduce axes are unrolled whole; under a matmul-like register tile
// (conv2d) they stay loops.
TEST(Opt, SmallReduceWindowsAreUnrolledWhole) {
  auto unrolls = [](const ProgramSpec& p) {
    std::vector<std::string> out;
    for (const Opt& o : p.opts)
      if (o.op == OptOp::UNROLL) out.push_back(o.str());
    return out;
  };
  ProgramSpec pool = to_program(kernel_of(in({2, 8, 32, 32}).max_pool2d(2)), cpu_target());
  EXPECT_EQ(unrolls(pool).size(), 2u) << pool.name;
  for (const std::string& u : unrolls(pool)) EXPECT_NE(u.find(", 2)"), std::string::npos) << u;
  ProgramSpec conv = to_program(kernel_of(in({1, 8, 16, 16}).conv2d(in({16, 8, 3, 3}), std::nullopt, 1, 1)), cpu_target());
  EXPECT_TRUE(unrolls(conv).empty()) << unrolls(conv).front();
}

TEST(Opt, ActionsCheckTheirAxis) {
  UOp k = kernel_of(in({6, 10}) * 2.0);
  EXPECT_THROW(apply_opt(k, Opt{OptOp::UPCAST, 1, 4}), Error) << "10 is not divisible by 4";
  EXPECT_THROW(apply_opt(k, Opt{OptOp::UPCAST, 7, 2}), Error) << "no axis 7";
  EXPECT_THROW(apply_opt(k, Opt{OptOp::UNROLL, 1, 2}), Error) << "UNROLL is for reduce axes";
  UOp t = apply_opt(k, Opt{OptOp::THREAD, 0, 4});  // 6 in chunks of 2: 3 threads
  int threads = 0;
  for (const UOp& u : toposort(t))
    if (u.op() == Ops::RANGE && static_cast<AxisType>(u.arg_ints()[1]) == AxisType::THREAD) threads = static_cast<int>(u.src(0).arg_int());
  EXPECT_EQ(threads, 3);
  // SWAP exchanges two output loops; reduce axes and unknown axes are refused
  UOp sw = apply_opt(k, Opt{OptOp::SWAP, 0, 1});
  for (const UOp& u : toposort(sw)) {
    if (u.op() == Ops::END && u.nsrc() == 3) {
      EXPECT_EQ(u.src(1).arg_ints()[0], 1) << "axis 1 is now the outer loop";
    }
  }
  EXPECT_THROW(apply_opt(k, Opt{OptOp::SWAP, 0, 5}), Error);
  UOp r = kernel_of(in({6, 10}).sum({1}));
  EXPECT_THROW(apply_opt(r, Opt{OptOp::SWAP, 0, 1}), Error) << "axis 1 is a reduce axis";
}

// kOptActions is what the validator and apply_opt read: every row's axis type is enforced, the
// part it splits off has the row's type, and remaining() divides by exactly the exact splits.
TEST(Opt, TheActionTableIsWhatApplies) {
  UOp k = kernel_of(in({8, 64}).sum({1}));  // axis 0: an output loop, axis 1: a reduce
  Target t = cpu_target();
  t.flags |= KILN_TARGET_HAS_LOCAL | KILN_TARGET_HAS_SHARED;
  t.local_max[0] = t.local_max[1] = t.local_max[2] = 256;
  t.local_prod_max = 256;
  t.shared_max = 48 << 10;
  for (const OptAction& a : kOptActions) {
    if (a.split == OptSplit::exchange) continue;  // SWAP names a second axis: ActionsCheckTheirAxis
    if (a.split == OptSplit::pad) continue;       // PADTO splits nothing: Opt.PadtoMasksWhatItAdds
    if (a.split == OptSplit::stage) continue;     // STAGE names an input: matmul_plan_test.cpp
    const int64_t right = a.on == kLoopAxes ? 0 : 1, wrong = 1 - right;
    EXPECT_NE(opt_problem(k, Opt{a.op, wrong, 2}, &t).find(a.on == kLoopAxes ? "output (loop) axes" : "reduce axes"),
              std::string::npos)
        << a.name;
    ASSERT_EQ(opt_problem(k, Opt{a.op, right, 2}, &t), "") << a.name;
    UOp out = apply_opt(k, Opt{a.op, right, 2}, &t);
    int made = 0;
    for (const UOp& u : toposort(out))
      if (u.op() == Ops::RANGE && range_type(u) == a.makes && range_axis(u) != right) ++made;
    EXPECT_EQ(made, 1) << a.name << " splits off one " << axis_type_name(a.makes) << " range";
    for (const UOp& u : toposort(k))
      if (u.op() == Ops::RANGE && range_axis(u) == right) {
        std::vector<Opt> applied{{a.op, right, 2}};
        // an exact split leaves the outer part on the axis, a BLOCK the block (its loop over blocks
        // is a new axis)
        int64_t left = a.split == OptSplit::exact ? const_size(u) / 2 : a.split == OptSplit::blocks ? 2 : const_size(u);
        EXPECT_EQ(remaining(u, applied), left) << a.name;
      }
    Target bare = cpu_target();
    bare.flags = 0;
    if (a.needs) {
      EXPECT_NE(opt_problem(k, Opt{a.op, right, 2}, &bare), "") << a.name << " needs what the target lacks";
    }
  }
}

TEST(Opt, WideMatmulWalksColumnPanelsOutside) {
  // B (256 x 2048 floats, 2 MiB) does not fit the L2; one 32-column panel (32 KiB) does
  ProgramSpec wide = to_program(kernel_of(in({64, 256}).matmul(in({256, 2048}))), cpu_target());
  ASSERT_GE(wide.opts.size(), 2u);
  EXPECT_EQ(wide.opts[wide.opts.size() - 2].op, OptOp::SWAP) << wide.opts[wide.opts.size() - 2].str();
  EXPECT_EQ(wide.opts.back().str(), "STAGE(0, 2)") << "each panel of B is staged";
  ProgramSpec small = to_program(kernel_of(in({64, 256}).matmul(in({256, 144}))), cpu_target());
  for (const Opt& o : small.opts) EXPECT_NE(o.op, OptOp::SWAP) << "B fits the L2 (and its rows walk every L1 set)";
}

// A half matmul's staged panel holds float32 (its loads are only widened: tensor/nn.cpp
// sum_of_products, and decompose on targets that compute half types in float32), so the inner
// loop reads floats; a half load read as itself stays half.
TEST(Opt, AHalfPanelIsStagedWidened) {
  auto panel_dtypes = [](const ProgramSpec& p) {
    std::string out;
    for (const kiln_lir_inst& i : p.lir.insts)
      if (i.op == KILN_LIR_OP_DEFINE_REG && i.type.size > 1000) out += std::to_string(i.type.scalar) + " ";
    return out;
  };
  // float32's plan, which stages B (its 2 MiB do not fit the L2)
  std::vector<Opt> given = to_program(kernel_of(in({64, 256}).matmul(in({256, 2048}))), cpu_target()).opts;
  ASSERT_EQ(given.back().str(), "STAGE(0, 2)");
  for (DType d : {dtypes::bfloat16, dtypes::float16}) {
    SCOPED_TRACE(d.name());
    ProgramSpec p = to_program(kernel_of(in({64, 256}, d).matmul(in({256, 2048}, d))), cpu_target(), &given);
    EXPECT_EQ(panel_dtypes(p), std::to_string(KILN_LIR_DTYPE_FLOAT32) + " ");
    // on a target that computes in the half type, the half product reads B as itself: the panel
    // keeps the half type
    Target native = cpu_target();
    native.dtypes |= 1u << lir_dtype(d.scalar());
    Tensor a = in({64, 256}, d), b = in({256, 2048}, d);
    ProgramSpec q = to_program(kernel_of((a.reshape({64, 256, 1}) * b.reshape({1, 256, 2048})).sum({1})), native, &given);
    EXPECT_EQ(panel_dtypes(q), std::to_string(lir_dtype(d.scalar())) + " ");
  }
}

// Regression (AVX-512 hosts): with 16 float lanes, 8 rows of A are one whole-axis UPCAST, which
// removes axis 0; the panel SWAP the heuristic planned for axis 0 threw "the kernel has no axis 0".
// A heuristic's action that no longer applies is skipped.
TEST(Opt, HeuristicSkipsActionsThatNoLongerApply) {
  Target avx512 = cpu_target();
  avx512.max_vector_width = 16;
  for (const Tensor& t : {in({8, 256}).matmul(in({256, 2048})), in({8, 2048}).matmul(in({2048, 256}))}) {
    ProgramSpec p = to_program(kernel_of(t), avx512);
    for (const Opt& o : p.opts) EXPECT_NE(o.op, OptOp::SWAP) << "axis 0 was upcast whole: " << o.str();
    EXPECT_TRUE(apply_opts(kernel_of(t), p.opts, avx512)) << "the applied list validates as a given list";
  }
}

// A given action list is checked action by action against the kernel as the previous ones left it.
TEST(Opt, GivenActionListsAreValidated) {
  UOp k = kernel_of(in({8, 64}).matmul(in({64, 32})));
  Target t = cpu_target();
  const Opt whole{OptOp::UPCAST, 0, 8}, swap{OptOp::SWAP, 0, 1};
  std::string what = error_of([&] { apply_opts(k, std::vector<Opt>{whole, swap}, t); });
  EXPECT_NE(what.find("opt #2 SWAP(0, 1)"), std::string::npos) << what;
  EXPECT_NE(what.find("the kernel has no axis 0"), std::string::npos) << what;
  EXPECT_NE(error_of([&] { apply_opts(k, std::vector<Opt>{{OptOp::LOCAL, 0, 2}}, t); }).find("no workgroups"), std::string::npos);
  Target few = t;
  few.global_max[0] = 3;
  EXPECT_NE(error_of([&] { apply_opts(k, std::vector<Opt>{{OptOp::THREAD, 0, 2}, {OptOp::THREAD, 1, 2}}, few); })
                .find("more threads than the target launches (3)"),
            std::string::npos)
      << "threads on two axes multiply";
  EXPECT_TRUE(apply_opts(k, std::vector<Opt>{{OptOp::THREAD, 0, 2}, {OptOp::THREAD, 1, 2}}, t));
  // a second THREAD on an axis the first left one iteration of: its chunk was the axis itself, and
  // the split replaced the END's range by an index expression (found by the random-lists test)
  EXPECT_NE(error_of([&] { apply_opts(k, std::vector<Opt>{{OptOp::THREAD, 0, 8}, {OptOp::THREAD, 0, 2}}, t); })
                .find("one iteration"),
            std::string::npos);
  EXPECT_NE(error_of([&] { apply_opts(k, std::vector<Opt>{{OptOp::UPCAST, 1, 2, true}, {OptOp::UNROLL, 2, 2, true}}, t); })
                .find("one vector axis"),
            std::string::npos);
  EXPECT_NE(error_of([&] { apply_opts(k, std::vector<Opt>{{OptOp::UPCAST, 1, 32}, {OptOp::UPCAST, 0, 8}, {OptOp::UNROLL, 2, 64}}, t); })
                .find("copies of a value"),
            std::string::npos);
  EXPECT_EQ(opt_problem(k, Opt{OptOp::UPCAST, 1, 4, true}, &t), "");
}

// Two reduces in turn over one row (softmax's max, then its sum of exp: schedule/group.cpp) each
// get vector lanes: no value depends on both axes. A matmul's output lanes and its reduce do meet.
TEST(Opt, IndependentReducesEachGetVectorLanes) {
  Tensor x = in({8, 64});
  UOp k = kernel_of((x - x.max({1}, true)).exp().sum({1}));
  Target t = cpu_target();
  const std::vector<Opt> both{{OptOp::UNROLL, 1, 16, true}, {OptOp::UNROLL, 2, 16, true}};
  UOp vectorized = apply_opts(k, both, t);
  int vector_ranges = 0;
  for (const UOp& u : toposort(vectorized))
    if (u.op() == Ops::RANGE && range_vectorized(u)) ++vector_ranges;
  EXPECT_EQ(vector_ranges, 2);
  OptPlan plan = hand_coded_optimizations(k, t);
  int heuristic_vectors = 0;
  for (const Opt& o : plan.opts()) heuristic_vectors += o.vectorize;
  EXPECT_EQ(heuristic_vectors, 2) << "the heuristic vectorizes both reduces";
}

TEST(Opt, ActionsReadBackAsTheyArePrinted) {
  const std::vector<Opt> opts{{OptOp::UPCAST, 1, 8, true}, {OptOp::UNROLL, 2, 4}, {OptOp::LOCAL, 0, 16},
                              {OptOp::THREAD, 0, 64}, {OptOp::SWAP, 0, 1}, {OptOp::GROUP, 3, 256},
                              {OptOp::PADTO, 1, 8, false, true}};
  const std::string text = opts_text(opts);  // (what the search cache stores)
  EXPECT_EQ(text.find("  "), std::string::npos);
  std::vector<Opt> back = parse_opts(text);
  ASSERT_EQ(back.size(), opts.size());
  for (size_t i = 0; i < opts.size(); ++i) EXPECT_EQ(back[i], opts[i]) << opts[i].str();
  EXPECT_EQ(opts.back().str(), "PADTO(1, 8, gated)");
  EXPECT_EQ(parse_opts("UPCAST(1,8,vector);THREAD(0,2)").size(), 2u);
  EXPECT_TRUE(parse_opts("  ").empty());
  EXPECT_EQ(opts_text({}), "");
  for (const char* bad : {"UPCAST(1 8)", "TILE(0, 2)", "UPCAST(1, 8, lanes)", "UPCAST(1, x)", "UPCAST(1, 8", "(1, 2)", "PADTO(1, 8, masked)"})
    EXPECT_NE(error_of([&] { parse_opts(bad); }).find("cannot read the action"), std::string::npos) << bad;
}

TEST(Lir, TextRoundTrips) {
  for (const Tensor& t : {((in({16, 32}) + 1.0) * 2.0).relu(), in({16, 32}).matmul(in({32, 8})), in({16, 32}).softmax(),
                          in({4, 8}).exp().cast(dtypes::float16)}) {
    for (const ExecItem& e : t.schedule()) {
      if (e.is_copy) continue;
      ProgramSpec p = to_program(e.ast, cpu_target());
      kiln_lir l = p.lir.view();
      std::string text = lir_text(l);
      LirProgram back = parse_lir_text(text);
      kiln_lir l2 = back.view();
      EXPECT_EQ(lir_text(l2), text);
      EXPECT_EQ(lir_key(l2), lir_key(l));
    }
  }
  EXPECT_THROW(parse_lir_text("%0 = FROB int32\n"), Error);
  EXPECT_THROW(parse_lir_text("%0 = ADD int32 (%3, %4)\n"), Error) << "sources must be earlier";
}

// The cpu's native EXP2 (vscalef, AVX-512) selects 0 for lanes below its range instead of
// scaling them down to it: an underflowing vscalef takes a microcode assist, and a masked
// attention's exp(-inf) (half its scores) ran 1.5x slower for it, exp of large negative values
// 8x. The values are CpuTarget.Exp2NativeAndDecomposedMatchTheReference's.
TEST(Transcendental, NativeExp2SelectsZeroBelowItsRange) {
  Target t = cpu_target();
  t.max_vector_width = 16;
  t.ops[KILN_LIR_OP_EXP2 / 64] |= uint64_t{1} << (KILN_LIR_OP_EXP2 % 64);
  const std::string ir = cpu::render_llvm_ir(to_program(kernel_of(in({4096}).exp2()), t).lir.view());
  const size_t scalef = ir.find("= call <16 x float> @llvm.x86.avx512.mask.scalef.ps.512(");
  ASSERT_NE(scalef, std::string::npos) << ir;
  const std::string scaled = ir.substr(ir.rfind('%', scalef), ir.find(' ', ir.rfind('%', scalef)) - ir.rfind('%', scalef));
  EXPECT_NE(ir.find("zeroinitializer, <16 x float> " + scaled, scalef), std::string::npos) << "the scaled value passes a select: " << ir;
  EXPECT_EQ(ir.find("float 0xC062C00000000000, <16 x float>"), std::string::npos) << "no lane is scaled by 2^-150: " << ir;
}

namespace {
double run(UOp (*f)(const UOp&), double x, DType d) {
  auto v = interpret(f(UOp::cfloat(d, x)), {});
  return v ? as_double(*v) : NAN;
}
double rel(double got, double want) { return want == 0 ? std::fabs(got) : std::fabs(got - want) / std::fabs(want); }
}  // namespace

TEST(Transcendental, Exp2) {
  for (double x : {0.0, 1.0, -1.0, 0.5, 3.3, -7.25, 20.0, 100.0, 127.9, -125.0, -140.0, -149.0})
    EXPECT_LT(rel(run(exp2_poly, x, dtypes::float32), static_cast<float>(std::exp2(static_cast<double>(static_cast<float>(x))))), 3e-7) << x;
  EXPECT_EQ(run(exp2_poly, 128.0, dtypes::float32), INFINITY);
  EXPECT_EQ(run(exp2_poly, 1e30, dtypes::float32), INFINITY);
  EXPECT_EQ(run(exp2_poly, -INFINITY, dtypes::float32), 0.0);
  EXPECT_EQ(run(exp2_poly, -200, dtypes::float32), 0.0);
  EXPECT_TRUE(std::isnan(run(exp2_poly, NAN, dtypes::float32)));
  EXPECT_EQ(run(exp2_poly, INFINITY, dtypes::float32), INFINITY);
  EXPECT_EQ(run(exp2_poly, -150.0, dtypes::float32), 0.0);
  // a sweep over the normal range (x = k/8 + 0.013: both ends of every rounding interval)
  for (int k = -1000; k < 1024; ++k) {
    double x = k / 8.0 + 0.013;
    EXPECT_LT(rel(run(exp2_poly, x, dtypes::float32), static_cast<float>(std::exp2(static_cast<double>(static_cast<float>(x))))), 3e-7) << x;
  }
  EXPECT_EQ(run(exp2_poly, INFINITY, dtypes::float64), INFINITY);
  EXPECT_EQ(run(exp2_poly, -1e300, dtypes::float64), 0.0);
  EXPECT_TRUE(std::isnan(run(exp2_poly, NAN, dtypes::float64)));
  for (double x : {0.1, -500.5, 1000.0, -1070.0}) EXPECT_LT(rel(run(exp2_poly, x, dtypes::float64), std::exp2(x)), 1e-15) << x;
}

TEST(Transcendental, Log2) {
  for (double x : {1.0, 2.0, 0.5, 3.0, 1e-3, 12345.678, 1e30, 1e-30, 1.0000001, 1e-40 /* subnormal */})
    EXPECT_LT(std::fabs(run(log2_poly, x, dtypes::float32) - std::log2(static_cast<float>(x))), 4e-7 * std::max(1.0, std::fabs(std::log2(x))))
        << x;
  EXPECT_EQ(run(log2_poly, 0.0, dtypes::float32), -INFINITY);
  EXPECT_EQ(run(log2_poly, INFINITY, dtypes::float32), INFINITY);
  EXPECT_TRUE(std::isnan(run(log2_poly, -1.0, dtypes::float32)));
  EXPECT_TRUE(std::isnan(run(log2_poly, NAN, dtypes::float32)));
  EXPECT_LT(std::fabs(run(log2_poly, 1e-310, dtypes::float64) - std::log2(1e-310)), 1e-12);
}

TEST(Transcendental, Sin) {
  auto sin32 = [](const UOp& x) { return sin_poly(x, true); };
  for (double x : {0.0, 0.5, -1.0, 3.14159, 10.0, -100.0, 1000.5, 123456.0, 1.0e6})
    EXPECT_LT(std::fabs(run(sin32, x, dtypes::float32) - std::sin(static_cast<float>(x))), 2e-7) << x;
  auto sin32f = [](const UOp& x) { return sin_poly(x, false); };
  for (double x : {0.5, -3.0, 40.0, 5000.0, -5999.0}) EXPECT_LT(std::fabs(run(sin32f, x, dtypes::float32) - std::sin(static_cast<float>(x))), 1e-6) << x;
  // large arguments: exact reduction (Payne-Hanek) over the whole float32 range, with or without float64
  for (double x : {6001.0, 1.0e5 + 0.5, 2.0e6, -1.0e7, 3.0e8, 1.2345e15, -1.0e20, 3.0e38, 105414350.0 /* near 2^26.65: k*pi/2 */,
                   static_cast<double>(std::numeric_limits<float>::max())}) {
    double want = std::sin(static_cast<double>(static_cast<float>(x)));
    EXPECT_LT(std::fabs(run(sin32, x, dtypes::float32) - want), 2e-7) << x;
    EXPECT_LT(std::fabs(run(sin32f, x, dtypes::float32) - want), 1e-6) << x;
  }
  EXPECT_TRUE(std::isnan(run(sin32, INFINITY, dtypes::float32)));
  EXPECT_TRUE(std::isnan(run(sin32, NAN, dtypes::float32)));
}

// A padded output axis reads the last real element where its loads step over it (a matmul's rows
// of A): clamped, not gated, so a register tile's padded rows are no branches in its k loop. Only
// the store is gated; a load contiguous or nearly so along the axis (A.T's rows; rows 2 to 4
// apart: a vector or shuffle candidate) keeps its gate, and STAGE sees through the clamp
// (Stage.BothTransposedStagesBothInputs).
TEST(Opt, PaddedOutputRowsReadTheLastRowUngated) {
  Target t = cpu_target();
  t.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  auto gates = [&](const UOp& k, int64_t slot, const Target& target) {
    UOp padded = apply_opt(k, Opt{OptOp::PADTO, 0, 4}, &target);
    int gated = -1, clamped = 0;
    for (const UOp& u : toposort(padded)) {
      if (u.op() == Ops::INDEX && u.src(0).op() == Ops::PARAM && u.src(0).arg_int() == slot) gated = u.nsrc() > 2;
      if (u.op() == Ops::STORE) {
        EXPECT_EQ(u.src(0).nsrc(), 3u) << "the padded rows' stores are gated";
      }
      clamped += u.op() == Ops::WHERE && u.dtype() == dtypes::index;
    }
    return std::pair{gated, clamped};
  };
  EXPECT_EQ(gates(kernel_of(in({7, 13}).matmul(in({13, 16}))), 1, t), std::pair(0, 1)) << "A's rows: clamped";
  EXPECT_EQ(gates(kernel_of(in({13, 7}).transpose().matmul(in({13, 16}))), 1, t), std::pair(1, 0)) << "A.T's rows: gated";
  EXPECT_EQ(gates(kernel_of(in({7, 3}).matmul(in({3, 16}))), 1, t), std::pair(1, 0)) << "rows 3 apart: a shuffle's, gated";
  // where the columns have the vector lanes the rows never will (one vector axis per value): a
  // load along them is a scalar, clamped (a gated scalar is a branch)
  const UOp col_lanes = apply_opt(kernel_of(in({7, 3}).matmul(in({3, 16}))), Opt{OptOp::UPCAST, 1, 8, true}, &t);
  EXPECT_EQ(gates(col_lanes, 1, t), std::pair(0, 1)) << "rows 3 apart beside column lanes: clamped";
  // without masked vectors a gated vector would be gated lanes anyway: every stride clamps
  const Target gpu = gpu_target();
  EXPECT_EQ(gates(kernel_of(in({13, 7}).transpose().matmul(in({13, 16}))), 1, gpu), std::pair(0, 1)) << "A.T's rows, no masks";
  EXPECT_EQ(gates(kernel_of(in({7, 3}).matmul(in({3, 16}))), 1, gpu), std::pair(0, 1)) << "rows 3 apart, no masks";
}

// PADTO grows an odd axis to a multiple of its amount: then a vector of that amount divides it.
// What it adds is masked: loads and stores along it are gated, a reduce over it adds its
// identity (a MAX takes a select; an ADD of a product of gated loads needs none), and with
// masked vectors the lanes become one masked access instead of a gather.
TEST(Opt, PadtoMasksWhatItAdds) {
  Target t = cpu_target();
  UOp mm = kernel_of(in({7, 13}).matmul(in({13, 999})));  // axis 0: 7, axis 1: 999, axis 2: the reduce (13)
  EXPECT_NE(opt_problem(mm, Opt{OptOp::UPCAST, 1, 8, true}, &t), "") << "999 does not divide by 8";
  EXPECT_EQ(opt_problem(mm, Opt{OptOp::PADTO, 1, 8}, &t), "");
  std::vector<Opt> opts{{OptOp::PADTO, 1, 8}, {OptOp::UPCAST, 1, 8, true}, {OptOp::PADTO, 2, 4}, {OptOp::UNROLL, 2, 4}};
  UOp padded = apply_opts(mm, opts, t);
  int gated = 0, selects = 0;
  for (const UOp& u : toposort(apply_opts(mm, std::span<const Opt>(opts).first(3), t))) {
    gated += u.op() == Ops::INDEX && u.nsrc() > 2;
    selects += u.op() == Ops::WHERE && u.dtype() != dtypes::index;  // (a clamped index is not one)
  }
  EXPECT_EQ(gated, 3) << "both loads and the store are gated";
  EXPECT_EQ(selects, 0) << "a sum of products of gated loads adds 0 for the padding by itself";
  for (const UOp& r : toposort(mm))
    if (r.op() == Ops::RANGE && range_axis(r) == 1) {
      EXPECT_EQ(remaining(r, opts), 1000 / 8);
    }
  // a max over a padded axis takes the identity for the padding
  UOp mx = apply_opt(kernel_of(in({5, 13}).max({1})), Opt{OptOp::PADTO, 1, 4}, &t);
  int where = 0;
  for (const UOp& u : toposort(mx)) where += u.op() == Ops::WHERE;
  EXPECT_EQ(where, 1);
  // what PADTO refuses, and why
  EXPECT_NE(opt_problem(mm, Opt{OptOp::PADTO, 0, 7}, &t).find("multiple of 7 already"), std::string::npos);
  EXPECT_NE(opt_problem(mm, Opt{OptOp::PADTO, 0, 16}, &t).find("more than half"), std::string::npos);
  EXPECT_NE(opt_problem(mm, Opt{OptOp::PADTO, 1, 8, true}, &t).find("vector lanes"), std::string::npos);
  // lowered: one masked vector load per row with masked vectors, lanes without
  Target masked = t;
  masked.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  const std::string ir = cpu::render_llvm_ir(to_program(mm, masked, &opts).lir.view());
  EXPECT_NE(ir.find("@llvm.masked.load"), std::string::npos);
  EXPECT_NE(ir.find("@llvm.masked.store"), std::string::npos);
  // a store whose lanes are all on (every vector but the padded last) is a plain one
  EXPECT_NE(ir.find("@llvm.vector.reduce.and.v8i1"), std::string::npos) << ir;
  EXPECT_NE(ir.find("store <8 x float>"), std::string::npos) << ir;
  const std::string c = Render().render(to_program(mm, t, &opts).lir.view());
  EXPECT_EQ(c.find("masked"), std::string::npos);
}
