// tests/codegen/peel_test.cpp - a padded loop's last iteration runs apart (peel.cpp): the loop's
// accesses are ungated, the gates stay in the last iteration, and what nothing proves stays as it
// was. On simulated targets; the values are checked end to end (the shape sweep, and
// OptProperty's random action lists, which pad).
#include <gtest/gtest.h>

#include <algorithm>

#include "codegen/opt/opt.hpp"
#include "codegen/passes.hpp"
#include "codegen/pipeline.hpp"
#include "error_check.hpp"
#include "ir/traverse.hpp"
#include "kiln/kiln.hpp"
#include "simulated_cpu.hpp"
#include "symbolic/symbolic.hpp"

using namespace kiln;
using kiln::testing::simulated_cpu;
using kiln::testing::simulated_gpu;
using kiln::testing::error_of;

namespace {

// A 2-thread AVX2-like cpu: 8 lanes, masked vector loads and stores.
Target avx2() {
  Target t = simulated_cpu(8, 2);
  t.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  return t;
}

Tensor in(const Shape& s) { return Tensor::empty(s, dtypes::float32, "ref"); }

// The last kernel of `out` (a padded convolution's, after the kernel that pads its input).
UOp kernel_of(const Tensor& out) {
  UOp last;
  for (const ExecItem& e : out.schedule())
    if (!e.is_copy) last = e.ast;
  return last;
}

// Gated loads and stores of a linearized program, by the size of the innermost loop around them
// (0: outside every loop).
struct Gates {
  std::vector<std::pair<int64_t, int>> by_loop;
  std::vector<int64_t> loops;  // every loop's size
  int in_loop(int64_t size) const {
    int n = 0;
    for (const auto& [s, c] : by_loop) n += s == size ? c : 0;
    return n;
  }
  bool has_loop(int64_t size) const { return std::find(loops.begin(), loops.end(), size) != loops.end(); }
  int total() const {
    int n = 0;
    for (const auto& p : by_loop) n += p.second;
    return n;
  }
};

Gates gates_of(const UOp& ast, const Target& t, const std::vector<Opt>& opts) {
  LaunchDims dims;
  std::vector<UOp> program = do_linearize(full_rewrite_to_sink(ast, t, dims, nullptr, &opts));
  Gates g;
  std::vector<int64_t> open;
  for (const UOp& u : program) {
    if (u.op() == Ops::RANGE) open.push_back(u.src(0).is_const() ? u.src(0).arg_int() : -1), g.loops.push_back(open.back());
    if (u.op() == Ops::END && u.nsrc() == 1) open.pop_back();
    if ((u.op() == Ops::LOAD || u.op() == Ops::STORE) && u.src(0).op() == Ops::INDEX && u.src(0).nsrc() > 2) {
      const int64_t size = open.empty() ? 0 : open.back();
      auto it = std::find_if(g.by_loop.begin(), g.by_loop.end(), [&](const auto& p) { return p.first == size; });
      if (it == g.by_loop.end()) g.by_loop.push_back({size, 1});
      else ++it->second;
    }
  }
  return g;
}

}  // namespace

// A sum over 1001-wide rows in vectors of 8, unrolled twice: 1008 / 16 = 63 iterations, of which
// only the last reads past the row. The loop runs 62 with plain loads; the last iteration's two
// vector loads keep their masks.
TEST(Peel, APaddedReduceLoadsUngatedInItsLoop) {
  const UOp ast = kernel_of(in({64, 1001}).sum({1}));
  const std::vector<Opt> opts{{OptOp::PADTO, 1, 8}, {OptOp::UNROLL, 1, 8, true}, {OptOp::UNROLL, 1, 2}};
  const Gates cpu = gates_of(ast, avx2(), opts);
  EXPECT_TRUE(cpu.has_loop(62) && !cpu.has_loop(63));
  EXPECT_EQ(cpu.in_loop(62), 0) << "the first 62 iterations load whole vectors";
  EXPECT_EQ(cpu.in_loop(64), 2) << "the last iteration's two vectors are masked, in the row loop";
  // a reduce loop is a loop in a GPU's work item too (the rows are launch indices, the masked
  // vectors gated lanes)
  const Gates gpu = gates_of(ast, simulated_gpu(8), opts);
  EXPECT_TRUE(gpu.has_loop(62));
  EXPECT_EQ(gpu.in_loop(62), 0);
  EXPECT_EQ(gpu.in_loop(0), 16);
  // a max selects its identity per padded element: not in the loop either
  const Gates m = gates_of(kernel_of(in({64, 1001}).max({1})), avx2(), opts);
  EXPECT_TRUE(m.has_loop(62));
  EXPECT_EQ(m.in_loop(62), 0);
  EXPECT_EQ(m.in_loop(64), 2);
}

// An odd-width elementwise kernel on a CPU: its column loop (126 vectors of 8, the last one
// partial) runs 125 ungated and the last vector apart. On a GPU the output loops are launch
// indices: no loop to peel, every work item keeps its gates.
TEST(Peel, AnOddOutputRowStoresWholeVectorsButTheLast) {
  // (a per-row operand keeps the rows an axis: merged, 7 x 1001 would be one run of 7007)
  const UOp ast = kernel_of((in({7, 1001}) * in({7, 1}) + 1.0f).exp());
  const std::vector<Opt> opts{{OptOp::PADTO, 1, 8}, {OptOp::UPCAST, 1, 8, true}};
  const Gates cpu = gates_of(ast, avx2(), opts);
  EXPECT_TRUE(cpu.has_loop(125));
  EXPECT_EQ(cpu.in_loop(125), 0);
  EXPECT_EQ(cpu.in_loop(7), 2) << "the last vector's load and store, in the row loop";
  // a gated pad (the search's other choice) keeps the loop whole and its gates in every iteration
  const std::vector<Opt> gated{{OptOp::PADTO, 1, 8, false, true}, {OptOp::UPCAST, 1, 8, true}};
  const Gates kept = gates_of(ast, avx2(), gated);
  EXPECT_TRUE(kept.has_loop(126) && !kept.has_loop(125));
  EXPECT_EQ(kept.in_loop(126), 2);
  EXPECT_EQ(kept.total(), 2);
  EXPECT_NE(error_of([&] { apply_opts(ast, std::vector<Opt>{{OptOp::UPCAST, 1, 8, false, true}}, avx2()); }).find("only PADTO keeps its gates"),
            std::string::npos);
  const Gates gpu = gates_of(ast, simulated_gpu(8), opts);
  EXPECT_TRUE(gpu.loops.empty());
  EXPECT_EQ(gpu.in_loop(0), gpu.total());
  EXPECT_GT(gpu.total(), 0);
}

// What the bounds cannot prove stays as it was: a convolution's padding depends on the output
// position as well as on the window's, so no iteration of the window loop is free of it.
TEST(Peel, AWindowEdgeIsNotPeeled) {
  const Target t = simulated_cpu(8, 2);
  const UOp ast = kernel_for_opts(kernel_of(in({1, 3, 17, 17}).conv2d(in({4, 3, 3, 3}), std::nullopt, 1, 1)), t);
  const UOp simple = simplify(ast);
  EXPECT_EQ(peel_partial_iterations(simple, t), simple);
  // nor a loop without gates
  const UOp plain = simplify(kernel_for_opts(kernel_of(in({64, 1024}).sum({1})), t));
  EXPECT_EQ(peel_partial_iterations(plain, t), plain);
}

// Regressions: a range closes at one END, and the peel copies whole loop nests. Each of these
// threw in linearize ("a range closed by two ENDs" but the one below): an UPCAST listed outside
// the peeled range (the expander copied the inner loop per lane), a THREAD listed inside it
// (gpudims dropped it from one END only), a staged panel whose copy loop depends on a renamed
// THREAD, and a reduce nested in a peeled output loop.
TEST(Peel, CopiedLoopNestsCloseEachRangeOnce) {
  const Target t = avx2();
  struct Case {
    Tensor out;
    std::vector<Opt> opts;
  };
  const Case cases[] = {
      {in({2, 1, 4, 9}).max_pool2d(2, 2),
       {{OptOp::THREAD, 2, 2}, {OptOp::THREAD, 0, 3}, {OptOp::PADTO, 4, 3}, {OptOp::PADTO, 0, 2}}},
      {in({64, 37}).matmul(in({37, 1001})), {{OptOp::PADTO, 1, 8}, {OptOp::UPCAST, 1, 8, true}, {OptOp::UPCAST, 0, 2}}},
      // (the host's plan for a padded 3x3 convolution with staged weights: the reduce in the
      // peeled loop depends on fewer ranges than the loops around it, and linearize, which took
      // ENDs by the size of their loop sets, met the reduce's before the peeled loop's)
      {in({4, 64, 31, 31}).conv2d(in({64, 64, 3, 3}), std::nullopt, 1, 1),
       {{OptOp::UPCAST, 1, 8, true}, {OptOp::UPCAST, 1, 2}, {OptOp::PADTO, 3, 4}, {OptOp::UPCAST, 3, 4},
        {OptOp::THREAD, 1, 4}, {OptOp::THREAD, 0, 2}, {OptOp::STAGE, 0, 2}}},
      {in({77, 1001}).sum({0}), {{OptOp::PADTO, 0, 8}, {OptOp::UPCAST, 0, 8, true}, {OptOp::UPCAST, 0, 3}, {OptOp::THREAD, 0, 2}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(opts_text(c.opts));
    EXPECT_NO_THROW(gates_of(kernel_of(c.out), t, c.opts));
  }
  // the heuristic's plans of the kernels that failed (a staged transposed matmul, column vectors
  // of a convolution with 1020 outputs)
  for (const Tensor& out : {in({512, 1000}).linear(in({1000, 1000})), in({2, 64, 1, 1022}).conv2d(in({64, 64, 1, 3}))}) {
    EXPECT_NO_THROW(to_program(kernel_of(out), t));
  }
}

// Regression: a buffer whose every access the passes fold away (here a select the bounds decide;
// a peeled loop's copy can decide one the whole range could not) stays a parameter. The C
// renderers declared only the buffers the program named, so a launch passing the schedule's
// three buffers met a kernel that took two ("takes 2 buffers, the launch passed 3").
TEST(Pipeline, ABufferWhoseAccessesFoldAwayStaysAParameter) {
  const UOp out = UOp::make(Ops::PARAM, dtypes::float32.ptr(16, AddrSpace::global), {}, Arg{int64_t{0}});
  const UOp unread = UOp::make(Ops::PARAM, dtypes::float32.ptr(16, AddrSpace::global), {}, Arg{int64_t{1}});
  const UOp r = UOp::make(Ops::RANGE, dtypes::index, {UOp::cindex(16)}, Arg{std::vector<int64_t>{0, static_cast<int64_t>(AxisType::LOOP)}});
  const UOp never = r.lt(UOp::cindex(0));
  const UOp value = never.where(UOp::make(Ops::LOAD, dtypes::float32, {UOp::make(Ops::INDEX, unread.dtype(), {unread, r})}),
                                UOp::cvalue(dtypes::float32, 1.0));
  const UOp store = UOp::make(Ops::STORE, dtypes::void_, {UOp::make(Ops::INDEX, out.dtype(), {out, r}), value});
  const UOp ast = UOp::make(Ops::SINK, dtypes::void_, {UOp::make(Ops::END, dtypes::void_, {store, r})}, Arg{std::string("k")});
  const ProgramSpec p = to_program(ast, avx2());
  EXPECT_EQ(p.lir.n_buffers, 2u);
  int params = 0;
  for (const kiln_lir_inst& i : p.lir.insts) params += i.op == KILN_LIR_OP_PARAM;
  EXPECT_EQ(params, 2) << "both buffers are parameters of the rendered kernel";
}
