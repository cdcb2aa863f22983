// tests/codegen/groups_test.cpp - grouped reductions on GPU-like targets (opt/opt_gpu.cpp's GROUP,
// gpudims.cpp's group indices, lower_reduce.cpp's partials in shared memory). Compile-only, on
// simulated targets.
#include <gtest/gtest.h>

#include <string>

#include "codegen/lir.hpp"
#include "codegen/pipeline.hpp"
#include "golden.hpp"
#include "kiln/kiln.hpp"
#include "simulated_cpu.hpp"

using namespace kiln;

namespace {

// A GPU-like target: workgroups, shared memory, 4 float lanes.
Target gpu_target() { return kiln::testing::simulated_gpu(4); }

UOp kernel_of(const Tensor& out) {
  for (const ExecItem& e : out.schedule())
    if (!e.is_copy) return e.ast;
  return {};
}

Tensor in(const Shape& s) { return Tensor::empty(s, dtypes::float32, "ref"); }

}  // namespace

TEST(Pipeline, FewOutputsGroupTheReduceThroughSharedMemory) {
  ProgramSpec p = to_program(kernel_of(in({8, 4096}).sum({1})), gpu_target());
  std::string opts;
  for (const Opt& o : p.opts) opts += o.str() + " ";
  EXPECT_NE(opts.find("GROUP(1, 256)"), std::string::npos) << opts;
  EXPECT_EQ(p.dims.local[0].arg_int(), 256);  // the group is lidx0, one workgroup wide
  std::string lir = lir_text(p.lir.view());
  EXPECT_NE(lir.find("DEFINE_LOCAL"), std::string::npos);
  EXPECT_NE(lir.find("BARRIER"), std::string::npos);
  EXPECT_GOLDEN("codegen/group_sum_lir", lir);
  // without shared memory: no groups
  Target plain = gpu_target();
  plain.flags &= ~KILN_TARGET_HAS_SHARED;
  for (const Opt& o : to_program(kernel_of(in({8, 4096}).sum({1})), plain).opts) EXPECT_NE(o.op, OptOp::GROUP);
}

// Regression (found by BEAM on an H200): a grouped reduce beside workgroup items along an output
// (LOCAL) kept one row of partials for the whole workgroup, so items of different columns folded
// each other's partials (matmul1024 with UNROLL(2, 4) LOCAL(1, 64) GROUP(2, 4): 5.01 for 5.39).
// Each item now has its own row of the group's partials.
TEST(Pipeline, AGroupedReduceKeepsARowOfPartialsPerWorkgroupItem) {
  const UOp ast = kernel_of(in({64, 256}).matmul(in({256, 64})));
  for (const std::vector<Opt>& opts : {std::vector<Opt>{{OptOp::UNROLL, 2, 4}, {OptOp::LOCAL, 1, 16}, {OptOp::GROUP, 2, 4}},
                                       std::vector<Opt>{{OptOp::GROUP, 2, 4}, {OptOp::LOCAL, 1, 16}}}) {
    ProgramSpec p = to_program(ast, gpu_target(), &opts);
    EXPECT_EQ(p.dims.local[0].arg_int() * p.dims.local[1].arg_int(), 64);
    std::string lir = lir_text(p.lir.view());
    EXPECT_NE(lir.find("DEFINE_LOCAL float32*local[64]"), std::string::npos) << opts_text(opts) << "\n" << lir;
  }
}

// A row kernel's reduces (softmax's max, then its sum of exp) are grouped alike on a GPU and share
// one group index: one workgroup dimension, two rows of partials, the items reading each row side
// by side (a row per item read rows a row apart: 0.62 ms -> 0.22 ms for 32768 rows on an H200).
TEST(Pipeline, ARowKernelsReducesShareOneGroupIndex) {
  ProgramSpec p = to_program(kernel_of(in({4096, 1024}).softmax(-1)), gpu_target());
  int groups = 0;
  for (const Opt& o : p.opts) groups += o.op == OptOp::GROUP;
  EXPECT_EQ(groups, 2) << opts_text(p.opts);
  EXPECT_GT(p.dims.local[0].arg_int(), 1);
  EXPECT_EQ(p.dims.local[1].arg_int(), 1);
  std::string lir = lir_text(p.lir.view());
  size_t locals = 0;
  for (size_t at = lir.find("= DEFINE_LOCAL"); at != std::string::npos; at = lir.find("= DEFINE_LOCAL", at + 1)) ++locals;
  EXPECT_EQ(locals, 2u);
  EXPECT_EQ(lir.find("lidx1"), std::string::npos);
}
