// tests/codegen/pair_products_test.cpp - a bfloat16 matmul's K pairs summed by DOT2 on targets
// that list it (AVX512-BF16's vdpbf16ps: opt/heuristic.cpp in_pairs, opt/stage.cpp, codegen/
// pair_products.cpp), and nothing changes elsewhere. Compile-only, on simulated targets: what
// this host has does not matter (tests/e2e/half_test.cpp runs them where the host has it).
#include <gtest/gtest.h>

#include <string>

#include "codegen/pipeline.hpp"
#include "kiln/kiln.hpp"
#include "llvm_ir.hpp"
#include "simulated_cpu.hpp"

using namespace kiln;

namespace {

UOp kernel_of(const Tensor& out) {
  for (const ExecItem& e : out.schedule())
    if (!e.is_copy && e.name.rfind("r_", 0) == 0) return e.ast;
  return {};
}

Tensor in(const Shape& s, DType d) { return Tensor::empty(s, d, "ref"); }

// An AVX-512 cpu (16 float lanes, 32 registers, masked vectors) with the LLVM renderer's ops, and
// DOT2 where `dot2`.
Target avx512(bool dot2) {
  Target t = kiln::testing::simulated_cpu(16, 2);
  t.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  const auto ops = cpu::llvm_ir_ops(true, dot2).bits();
  t.ops[0] = ops[0], t.ops[1] = ops[1];
  t.vector_registers = 32, t.fma_pipes = 2;
  t.source_format = "llvm-ir";
  return t;
}

int count(const ProgramSpec& p, uint32_t op) {
  int n = 0;
  for (const kiln_lir_inst& i : p.lir.insts) n += i.op == op;
  return n;
}

// DOT2 instructions whose accumulator is not the constant 0 (the reduce's add folded into them).
int accumulating(const ProgramSpec& p) {
  int n = 0;
  for (const kiln_lir_inst& i : p.lir.insts)
    if (i.op == KILN_LIR_OP_DOT2) n += p.lir.insts[p.lir.srcs[i.first_src + 2]].op != KILN_LIR_OP_CONST;
  return n;
}

ProgramSpec matmul(int64_t m, int64_t k, int64_t n, const Target& t, DType d = dtypes::bfloat16, bool a_transposed = false) {
  Tensor a = a_transposed ? in({k, m}, d).transpose() : in({m, k}, d);
  return to_program(kernel_of(a.matmul(in({k, n}, d))), t);
}

}  // namespace

// A tile of 8 rows x 2 vectors: 16 accumulators, each one DOT2 per K pair, rendered as vdpbf16ps.
TEST(PairProducts, ABfloat16MatmulSumsKPairsWithDot2) {
  for (auto [m, k, n] : {std::tuple{256, 256, 256}, {64, 96, 128}, {100, 70, 96}, {33, 64, 50}}) {
    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n));
    ProgramSpec p = matmul(m, k, n, avx512(true));
    EXPECT_NE(opts_text(p.opts).find("UNROLL(2, 2)"), std::string::npos) << opts_text(p.opts);
    EXPECT_GT(count(p, KILN_LIR_OP_DOT2), 0) << opts_text(p.opts);
    EXPECT_EQ(accumulating(p), count(p, KILN_LIR_OP_DOT2)) << "each accumulates in place";
    EXPECT_NE(cpu::render_llvm_ir(p.lir.view()).find("@llvm.x86.avx512bf16.dpbf16ps.512"), std::string::npos);
  }
}

// A weight gradient's A.T @ B reads A's pair a row apart: two loads and a shuffle per pair and row
// measured slower than float32's multiply-adds (512 x 1024 x 512: 7.9 ms against 4.9), so it keeps
// the plan it has without DOT2.
TEST(PairProducts, ATransposedMatmulKeepsItsPlan) {
  ProgramSpec with = matmul(128, 128, 128, avx512(true), dtypes::bfloat16, true);
  EXPECT_EQ(count(with, KILN_LIR_OP_DOT2), 0);
  EXPECT_EQ(opts_text(with.opts), opts_text(matmul(128, 128, 128, avx512(false), dtypes::bfloat16, true).opts));
}

// x @ w.T (a linear layer: both read K contiguously) pairs as A @ B does.
TEST(PairProducts, ALinearLayerSumsKPairs) {
  Tensor x = in({128, 768}, dtypes::bfloat16), w = in({512, 768}, dtypes::bfloat16);
  ProgramSpec p = to_program(kernel_of(x.matmul(w.transpose())), avx512(true));
  EXPECT_GT(count(p, KILN_LIR_OP_DOT2), 0) << opts_text(p.opts);
}

// Nothing pairs where the target has no DOT2, the dtype is not bfloat16, or K is odd (the plan is
// then the one without DOT2: no unroll of K is added for nothing).
TEST(PairProducts, OnlyBfloat16WithDot2AndAnEvenK) {
  EXPECT_EQ(count(matmul(64, 96, 128, avx512(false)), KILN_LIR_OP_DOT2), 0);
  for (DType d : {dtypes::float32, dtypes::float16}) {
    ProgramSpec with = matmul(64, 96, 128, avx512(true), d), without = matmul(64, 96, 128, avx512(false), d);
    EXPECT_EQ(count(with, KILN_LIR_OP_DOT2), 0) << d.name();
    EXPECT_EQ(opts_text(with.opts), opts_text(without.opts)) << d.name();
  }
  ProgramSpec odd = matmul(64, 97, 128, avx512(true));
  EXPECT_EQ(count(odd, KILN_LIR_OP_DOT2), 0);
  EXPECT_EQ(opts_text(odd.opts), opts_text(matmul(64, 97, 128, avx512(false)).opts));
}

// The staged B panel of pairs is filled by whole interleaving vector stores (expander.cpp), its
// bfloat16 bits copied, not converted (decompose.cpp): no scalar stores into it, no float32.
TEST(PairProducts, ThePanelOfPairsIsFilledByVectorStores) {
  ProgramSpec p = matmul(256, 256, 256, avx512(true));
  int panel_stores = 0, scalar = 0;
  for (const kiln_lir_inst& i : p.lir.insts) {
    if (i.op != KILN_LIR_OP_STORE) continue;
    const kiln_lir_inst& at = p.lir.insts[p.lir.srcs[i.first_src]];
    const kiln_lir_inst& base = p.lir.insts[p.lir.srcs[at.first_src]];
    if (base.op != KILN_LIR_OP_DEFINE_REG || base.type.scalar != KILN_LIR_DTYPE_UINT16) continue;
    ++panel_stores;
    scalar += p.lir.insts[p.lir.srcs[i.first_src + 1]].type.count == 1;
  }
  EXPECT_GT(panel_stores, 0);
  EXPECT_EQ(scalar, 0);
}

// A bfloat16 convolution over enough output positions (kPairedConvPositions) pairs its input
// channels: the staged weights in pairs, the image's pair two loads a plane apart made one 32-bit
// word; fewer positions, an odd channel count or float32 keep the plan they have without DOT2.
TEST(PairProducts, ABfloat16ConvolutionPairsItsInputChannels) {
  auto conv = [](int64_t n, int64_t c, int64_t hw, int64_t o, const Target& t, DType d = dtypes::bfloat16) {
    Tensor x = in({n, c, hw + 2, hw + 2}, d), w = in({o, c, 3, 3}, d);  // (an unpadded input: no gates)
    return to_program(kernel_of(x.conv2d(w)), t);
  };
  for (auto [n, c, hw, o] : {std::tuple{8, 64, 28, 64}, {8, 32, 24, 32}, {2, 16, 48, 32}}) {
    SCOPED_TRACE(std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(hw) + " -> " + std::to_string(o));
    ProgramSpec p = conv(n, c, hw, o, avx512(true));
    EXPECT_GT(count(p, KILN_LIR_OP_DOT2), 0) << opts_text(p.opts);
    EXPECT_EQ(accumulating(p), count(p, KILN_LIR_OP_DOT2)) << "each accumulates in place";
  }
  for (auto [n, c, hw, o] : {std::tuple{1, 64, 14, 64}, {8, 33, 28, 64}}) {
    SCOPED_TRACE(std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(hw) + " -> " + std::to_string(o));
    ProgramSpec with = conv(n, c, hw, o, avx512(true)), without = conv(n, c, hw, o, avx512(false));
    EXPECT_EQ(count(with, KILN_LIR_OP_DOT2), 0) << opts_text(with.opts);
    EXPECT_EQ(opts_text(with.opts), opts_text(without.opts));
  }
  EXPECT_EQ(count(conv(8, 64, 28, 64, avx512(true), dtypes::float32), KILN_LIR_OP_DOT2), 0);
}
