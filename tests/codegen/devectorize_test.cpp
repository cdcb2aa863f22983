// tests/codegen/devectorize_test.cpp - vectors wider than the target's become pieces of its width
// (codegen/devectorize.cpp), and half types convert natively where the target stores them
// (kiln_target.storage_dtypes) and with integers elsewhere (codegen/decompose.cpp). Compile-only,
// on simulated targets: what this host has does not matter.
#include <gtest/gtest.h>

#include <string>

#include "codegen/lir.hpp"
#include "codegen/pipeline.hpp"
#include "kiln/kiln.hpp"
#include "llvm_ir.hpp"
#include "simulated_cpu.hpp"

using namespace kiln;

namespace {

UOp kernel_of(const Tensor& out) {
  for (const ExecItem& e : out.schedule())
    if (!e.is_copy) return e.ast;
  return {};
}

Tensor in(const Shape& s, DType d = dtypes::float32) { return Tensor::empty(s, d, "ref"); }

// An AVX-512-like target (16 float lanes, masked vector accesses) with the LLVM renderer's ops.
Target wide_cpu(bool masked = true) {
  Target t = kiln::testing::simulated_cpu(16, 2);
  if (masked) t.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  t.ops[0] = cpu::llvm_ir_ops(true).bits()[0], t.ops[1] = cpu::llvm_ir_ops(true).bits()[1];
  return t;
}

struct Accesses {
  int widest = 0, loads = 0, scalar_loads = 0, stores = 0, scalar_stores = 0, insts = 0;
};
// The widest vector of the program and its accesses of buffer data (not the kernel's arguments).
Accesses shape_of(const ProgramSpec& p) {
  Accesses s;
  for (const kiln_lir_inst& i : p.lir.insts) {
    s.widest = std::max<int>(s.widest, i.type.count);
    ++s.insts;
    if (i.op == KILN_LIR_OP_LOAD) ++s.loads, s.scalar_loads += i.type.count == 1;
  }
  for (const kiln_lir_inst& i : p.lir.insts)
    if (i.op == KILN_LIR_OP_STORE) {
      ++s.stores;
      const kiln_lir_inst& v = p.lir.insts[p.lir.srcs[i.first_src + 1]];
      s.scalar_stores += v.type.count == 1;
    }
  return s;
}

std::string opts_of(const ProgramSpec& p) {
  std::string out;
  for (const Opt& o : p.opts) out += o.str() + " ";
  return out;
}

}  // namespace

// A float16 kernel is vectorized by 32 (512 bits of halves) and computes in float32: 2 pieces of
// 16 lanes each, not 32 scalar lanes (4000 instructions and a second of LLVM compile).
TEST(Devectorize, AnOverWideVectorBecomesPiecesOfTheTargetsWidth) {
  for (DType d : {dtypes::float16, dtypes::bfloat16}) {
    SCOPED_TRACE(d.name());
    UOp k = kernel_of(in({1 << 16}, d) * in({1 << 16}, d) + 1.0);
    // the heuristic counts float32 lanes (the target computes half types in float32)...
    EXPECT_NE(opts_of(to_program(k, wide_cpu())).find("UPCAST(0, 16, vector)"), std::string::npos);
    // ...and a list that asks for 32 of them gets two pieces of the target's width
    std::vector<Opt> wide{{OptOp::UPCAST, 0, 32, true}};
    ProgramSpec p = to_program(k, wide_cpu(), &wide);
    Accesses s = shape_of(p);
    EXPECT_EQ(s.widest, 16);
    EXPECT_EQ(s.loads, 4) << "two inputs, two pieces each";
    EXPECT_EQ(s.stores, 2);
    EXPECT_EQ(s.scalar_loads + s.scalar_stores, 0);
    EXPECT_LT(s.insts, 400);
  }
  // any dtype mix: bytes widened to floats (64 lanes of uint8 -> 4 x 16 float32)
  UOp k = kernel_of(in({1 << 16}, dtypes::uint8).cast(dtypes::float32) * 2.0);
  std::vector<Opt> given{{OptOp::UPCAST, 0, 64, true}};
  ProgramSpec q = to_program(k, wide_cpu(), &given);
  Accesses s = shape_of(q);
  EXPECT_EQ(s.widest, 16);
  EXPECT_EQ(s.loads, 4);
  EXPECT_EQ(s.stores, 4);
  EXPECT_EQ(s.scalar_loads + s.scalar_stores, 0);
  // a reduce over 32 lanes: two 16-lane accumulators
  std::vector<Opt> unroll{{OptOp::UNROLL, 0, 32, true}};
  ProgramSpec r = to_program(kernel_of(in({4096}).sum()), wide_cpu(), &unroll);
  EXPECT_EQ(shape_of(r).widest, 16);
  EXPECT_EQ(shape_of(r).scalar_loads, 0);
}

// A lane-gated access (a padded vector axis) keeps one gate per lane: pieces of masked accesses on
// a target with them, single gated lanes on one without.
TEST(Devectorize, LaneGatedAccessesSplitTheirGates) {
  UOp k = kernel_of(in({1000}) * 2.0);
  std::vector<Opt> given{{OptOp::PADTO, 0, 1024, false, true}, {OptOp::UPCAST, 0, 32, true}};
  Accesses masked = shape_of(to_program(k, wide_cpu(true), &given));
  EXPECT_EQ(masked.widest, 16);
  EXPECT_EQ(masked.scalar_loads + masked.scalar_stores, 0);
  EXPECT_EQ(masked.loads, 2);
  Accesses plain = shape_of(to_program(k, wide_cpu(false), &given));
  EXPECT_EQ(plain.loads, 32) << "one gated scalar load per lane";
  EXPECT_EQ(plain.scalar_stores, 32);
}

// float16 on a target that stores it (F16C): loads and stores of half vectors and CASTs (fpext /
// fptrunc), every op's result rounded through half; on one that does not, 16-bit integers.
TEST(Decompose, HalfTypesConvertNativelyWhereTheTargetStoresThem) {
  UOp k = kernel_of(in({4096}, dtypes::float16) * in({4096}, dtypes::float16) + 1.0);
  Target native = wide_cpu();
  native.storage_dtypes = 1u << KILN_LIR_DTYPE_FLOAT16;
  std::vector<Opt> wide{{OptOp::UPCAST, 0, 32, true}};  // two pieces of 16
  ProgramSpec p = to_program(k, native, &wide);
  int half_loads = 0, to_half = 0, from_half = 0;
  for (const kiln_lir_inst& i : p.lir.insts) {
    half_loads += i.op == KILN_LIR_OP_LOAD && i.type.scalar == KILN_LIR_DTYPE_FLOAT16 && i.type.count == 16;
    if (i.op == KILN_LIR_OP_CAST) {
      const kiln_lir_inst& s = p.lir.insts[p.lir.srcs[i.first_src]];
      to_half += i.type.scalar == KILN_LIR_DTYPE_FLOAT16 && s.type.scalar == KILN_LIR_DTYPE_FLOAT32;
      from_half += i.type.scalar == KILN_LIR_DTYPE_FLOAT32 && s.type.scalar == KILN_LIR_DTYPE_FLOAT16;
    }
  }
  EXPECT_EQ(half_loads, 4);
  EXPECT_EQ(to_half, 4) << "a rounding after the multiply and the stored sum, per piece";
  EXPECT_EQ(from_half, 6) << "4 loads and the rounded product widened";
  const std::string ir = cpu::render_llvm_ir(p.lir.view());
  EXPECT_NE(ir.find("fpext <16 x half>"), std::string::npos) << ir;
  EXPECT_NE(ir.find("store <16 x half>"), std::string::npos) << ir;
  // widened halves stay float for LLVM: its InstCombine narrowed a relu's compare back to half,
  // which the backend scalarizes without AVX512-FP16 (30x slower)
  EXPECT_NE(ir.find("call <16 x float> @llvm.arithmetic.fence.v16f32(<16 x float>"), std::string::npos) << ir;
  // bfloat16 is not in the list: integer conversions
  for (const kiln_lir_inst& i : to_program(kernel_of(in({4096}, dtypes::bfloat16) + 1.0), native).lir.insts)
    EXPECT_NE(i.type.scalar, KILN_LIR_DTYPE_BFLOAT16);
  // without the cap, no float16 reaches the renderer
  for (const kiln_lir_inst& i : to_program(k, wide_cpu()).lir.insts) EXPECT_NE(i.type.scalar, KILN_LIR_DTYPE_FLOAT16);
}

// KILN_TARGET_VECTOR_MEMORY_ONLY (CUDA's float4): 4-byte lanes load and store as vectors where
// the index is a multiple of the lane count, and nothing else is a vector. A float4 load at an
// address 4 bytes past alignment faults on a GPU, so rows of 1001 floats load lane by lane.
TEST(Devectorize, VectorsInMemoryOnlyWhereAligned) {
  Target t = kiln::testing::simulated_gpu(4);
  t.flags |= KILN_TARGET_VECTOR_MEMORY_ONLY;
  auto lir_of = [&](const Tensor& y) { return lir_text(to_program(kernel_of(y), t).lir.view()); };
  const std::string aligned = lir_of(((in({64, 1024}) + 1.0) * 2.0).relu());
  EXPECT_NE(aligned.find("LOAD float32x4"), std::string::npos) << aligned;
  EXPECT_NE(aligned.find("STORE void"), std::string::npos);
  for (const char* alu : {"ADD float32x", "MUL float32x", "MAX float32x", "CMPLT boolx", "WHERE float32x"})
    EXPECT_EQ(aligned.find(alu), std::string::npos) << alu << " in\n" << aligned;
  // rows of 1001 from the second column: the loads lane by lane, the (aligned) output still whole
  const std::string odd = lir_of(in({64, 1001}).shrink({{0, 64}, {1, 1001}}) + 1.0);
  EXPECT_EQ(odd.find("LOAD float32x"), std::string::npos) << odd;
  EXPECT_NE(odd.find("INDEX float32x4*global[64000]"), std::string::npos) << odd;
  const std::string halves = lir_of(in({64, 1024}, dtypes::float16) + 1.0);  // 2-byte lanes: scalar
  for (const char* v : {"16x2", "16x4", "32x2", "32x4"}) EXPECT_EQ(halves.find(v), std::string::npos) << v << " in\n" << halves;
  const std::string sums = lir_of(in({64, 1024}).sum({1}));
  EXPECT_EQ(sums.find("ADD float32x"), std::string::npos) << sums;
}
