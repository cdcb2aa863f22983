// tests/codegen/renderer_ops_test.cpp - the in-tree renderers against their op allow-lists: every
// LIR op a renderer claims renders (a claimed op it forgot fails here, not at a user's render);
// the SDK's named sets are pinned; each LIR op comes from one core op. (What the pipeline does
// with an op a target does not list: codegen_test.cpp, Pipeline.AnOpMissingFromTheAllowList...)
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "c_dialect.hpp"
#include "codegen/lir.hpp"
#include "hip_c.hpp"
#include "ir/verify.hpp"
#include "kiln/sdk/lir.hpp"
#include "llvm_ir.hpp"
#include "opencl_c.hpp"

using namespace kiln;
using sdk::LirOp;

namespace {

// The core op that becomes LIR op `op` (ops.def's LIR column).
Ops core_op(uint32_t op) {
  for (int o = 0; o < kNumOps; ++o)
    if (lir_op(static_cast<Ops>(o)) == op) return static_cast<Ops>(o);
  ADD_FAILURE() << "no core op becomes LIR op " << op;
  return Ops::NOOP;
}

// The first of float32, int32 the ALU op takes (by the IR verifier's dtype rules).
DType alu_dtype(Ops op, int arity) {
  for (DType d : {dtypes::float32, dtypes::int32}) {
    std::vector<UOp> src(static_cast<size_t>(arity), UOp::cvalue(d, 1));
    if (verify_node(UOp::make(op, groups::Comparison.has(op) ? dtypes::bool_ : d, src)).empty()) return d;
  }
  ADD_FAILURE() << op_name(op) << " takes neither float32 nor int32 operands";
  return dtypes::float32;
}

// A small kernel (LIR text) that uses `op`: out[0] = f(in[0]) around the op, with the structure
// every kernel has (PARAM, VAR, CONST, INDEX, LOAD, STORE), so rendering it shows the renderer
// handles the op. ALU ops are built from their kind and dtype rules in ops.def, so a new one
// needs no case here.
std::string kernel_using(LirOp op) {
  std::string k =
      "kernel k buffers=2 vars=1 global=1,1,1 local=1,1,1\n"
      "%0 = PARAM float32*global[16] 0\n"
      "%1 = PARAM float32*global[16] 1\n"
      "%2 = VAR int32 \"n\"\n"
      "%3 = CONST int32 0\n"
      "%4 = INDEX float32*global[16] (%0, %3)\n"
      "%5 = LOAD float32 (%4)\n"
      "%6 = INDEX float32*global[16] (%1, %3)\n";
  auto store = [&](const std::string& body, int value) {  // ... then out[0] = %value
    std::string text = k + body;
    const auto next = std::count(text.begin(), text.end(), '\n') - 1;  // instructions so far
    return text + "%" + std::to_string(next) + " = STORE void (%6, %" + std::to_string(value) + ")\n";
  };
  switch (op) {
    case LirOp::PARAM: case LirOp::VAR: case LirOp::CONST: case LirOp::INDEX: case LirOp::LOAD: case LirOp::STORE:
      return store("", 5);
    case LirOp::WHERE: return store("%7 = CMPLT bool (%5, %5)\n%8 = WHERE float32 (%7, %5, %5)\n", 8);
    case LirOp::CAST: return store("%7 = CAST int32 (%5)\n%8 = CAST float32 (%7)\n", 8);
    case LirOp::BITCAST: return store("%7 = BITCAST int32 (%5)\n%8 = BITCAST float32 (%7)\n", 8);
    case LirOp::VECTORIZE: case LirOp::GEP:
      return store("%7 = VECTORIZE float32x2 (%5, %5)\n%8 = GEP float32 (%7) [1]\n", 8);
    case LirOp::SPECIAL: return store("%7 = CONST int32 1\n%8 = SPECIAL int32 (%7) \"gidx0\"\n%9 = CAST float32 (%8)\n", 9);
    case LirOp::RANGE: case LirOp::END:
      return k + "%7 = CONST int32 4\n%8 = RANGE int32 (%7) 0\n%9 = INDEX float32*global[16] (%1, %8)\n"
                 "%10 = STORE void (%9, %5)\n%11 = END void (%8)\n";
    case LirOp::IF: case LirOp::ENDIF:
      return k + "%7 = CMPLT bool (%5, %5)\n%8 = IF void (%7)\n%9 = STORE void (%6, %5)\n%10 = ENDIF void (%8)\n";
    case LirOp::DEFINE_REG:
      return store("%7 = DEFINE_REG float32*reg[1] 0\n%8 = INDEX float32*reg[1] (%7, %3)\n%9 = STORE void (%8, %5)\n"
                   "%10 = LOAD float32 (%8)\n", 10);
    case LirOp::DEFINE_LOCAL: case LirOp::BARRIER:
      return store("%7 = DEFINE_LOCAL float32*local[4] 0\n%8 = INDEX float32*local[4] (%7, %3)\n"
                   "%9 = STORE void (%8, %5)\n%10 = BARRIER void\n%11 = LOAD float32 (%8)\n", 11);
    case LirOp::CUSTOM: return store("%7 = CUSTOM void (%5) \"/* {0} */\"\n", 5);
    case LirOp::CUSTOMI: return store("%7 = CUSTOMI float32 (%5) \"({0})\"\n", 7);
    case LirOp::PREFETCH: return store("%7 = PREFETCH void (%4)\n", 5);
    case LirOp::DOT2: {  // 8 float32 lanes of 16 bfloat16 pairs (ymm: AVX512-VL)
      std::string u16 = "%7", f32 = "%5";
      for (int i = 1; i < 16; ++i) u16 += ", %7";
      for (int i = 1; i < 8; ++i) f32 += ", %5";
      return store("%7 = CAST uint16 (%5)\n%8 = VECTORIZE uint16x16 (" + u16 + ")\n%9 = VECTORIZE float32x8 (" + f32 +
                       ")\n%10 = DOT2 float32x8 (%8, %8, %9)\n%11 = GEP float32 (%10) [3]\n",
                   11);
    }
    default: break;
  }
  const Ops o = core_op(static_cast<uint32_t>(op));
  if (!groups::ALU.has(o)) {
    ADD_FAILURE() << sdk::lir_op_name(static_cast<uint32_t>(op)) << " is not ALU: give it a kernel here";
    return "";
  }
  const int arity = groups::Unary.has(o) ? 1 : groups::Binary.has(o) ? 2 : 3;
  const DType d = alu_dtype(o, arity);
  const bool is_float = d == dtypes::float32;
  std::string body = is_float ? "" : "%7 = CAST int32 (%5)\n";
  const std::string x = is_float ? "%5" : "%7", at = is_float ? "7" : "8";
  body += "%" + at + " = " + sdk::lir_op_name(static_cast<uint32_t>(op)) + " " +
          (groups::Comparison.has(o) ? "bool" : is_float ? "float32" : "int32") + " (" + x;
  for (int i = 1; i < arity; ++i) body += ", " + x;
  body += ")\n";
  if (!is_float || groups::Comparison.has(o)) {
    body += "%" + std::to_string(std::stoi(at) + 1) + " = CAST float32 (%" + at + ")\n";
    return store(body, std::stoi(at) + 1);
  }
  return store(body, std::stoi(at));
}

struct Renderer {
  const char* name;
  sdk::LirOpSet claims;
  std::function<std::string(const kiln_lir&)> render;
};

struct C : cpu::CDialect {
  using CDialect::render;
};

std::vector<Renderer> renderers() {
  return {
      {"cpu C", cpu::c_dialect_ops(), [](const kiln_lir& l) { return C().render(l); }},
      {"cpu LLVM IR", cpu::llvm_ir_ops(false), [](const kiln_lir& l) { return cpu::render_llvm_ir(l); }},
      {"cpu LLVM IR (AVX-512)", cpu::llvm_ir_ops(true), [](const kiln_lir& l) { return cpu::render_llvm_ir(l); }},
      {"cpu LLVM IR (AVX512-BF16)", cpu::llvm_ir_ops(true, true), [](const kiln_lir& l) { return cpu::render_llvm_ir(l); }},
      {"opencl", opencl::opencl_ops(), [](const kiln_lir& l) { return opencl::OpenclDialect().render_kernel(l); }},
      {"hip", hip::hip_ops(), [](const kiln_lir& l) { return hip::HipDialect().render_kernel(l); }},
  };
}

}  // namespace

// A claimed op that a renderer cannot spell would reach it only at a user's render; here every
// op each in-tree renderer claims renders.
TEST(RendererOps, EveryClaimedOpRenders) {
  for (const Renderer& r : renderers()) {
    for (uint32_t op = 1; op < KILN_LIR_OP_COUNT; ++op) {
      SCOPED_TRACE(std::string(r.name) + ": " + sdk::lir_op_name(op));
      LirProgram p = parse_lir_text(kernel_using(static_cast<LirOp>(op)));
      bool uses = false;
      for (const kiln_lir_inst& in : p.insts) uses |= in.op == op;
      ASSERT_TRUE(uses);
      if (r.claims.has(op)) {
        std::string out;
        EXPECT_NO_THROW(out = r.render(p.view()));
        EXPECT_FALSE(out.empty());
      }
    }
  }
}

// The named sets of the SDK are frozen (an op added to the LIR later joins none of them, so no
// renderer built from them claims it): their contents are pinned here. Their union is every op of
// LIR version 1 (the numbers below PREFETCH, the first op appended after) but the transcendentals,
// which each target lists itself; an op appended later needs no line here.
TEST(RendererOps, TheSdksNamedSetsAreFrozen) {
  using namespace sdk::lir_ops;
  EXPECT_EQ((kStructure | kVectors | kConversions | kArithmetic | kWorkgroup | kCustom),
            [] {
              sdk::LirOpSet v1;
              for (uint32_t op = 1; op < KILN_LIR_OP_PREFETCH; ++op) v1.add(static_cast<LirOp>(op));
              return v1.without({LirOp::EXP2, LirOp::LOG2, LirOp::SIN, LirOp::SQRT, LirOp::RECIPROCAL, LirOp::TRUNC, LirOp::POW});
            }());
  EXPECT_EQ(kStructure, (sdk::LirOpSet{LirOp::PARAM, LirOp::VAR, LirOp::SPECIAL, LirOp::RANGE, LirOp::END, LirOp::IF,
                                       LirOp::ENDIF, LirOp::DEFINE_REG, LirOp::INDEX, LirOp::LOAD, LirOp::STORE,
                                       LirOp::CONST}));
  EXPECT_EQ(kRequired, (sdk::LirOpSet{LirOp::PARAM, LirOp::RANGE, LirOp::END, LirOp::INDEX, LirOp::LOAD, LirOp::STORE,
                                      LirOp::CONST, LirOp::ADD, LirOp::MUL, LirOp::CMPLT}));
  EXPECT_FALSE(kArithmetic.has(LirOp::POW));
  EXPECT_FALSE(kArithmetic.has(LirOp::EXP2));
}

// One table maps core ops to LIR ops: each LIR op comes from exactly one core op, with its name.
TEST(RendererOps, EveryLirOpHasOneCoreOp) {
  for (uint32_t op = 1; op < KILN_LIR_OP_COUNT; ++op) {
    int from = 0;
    for (int o = 0; o < kNumOps; ++o)
      if (lir_op(static_cast<Ops>(o)) == op) {
        ++from;
        if (op != KILN_LIR_OP_VAR) {
          EXPECT_STREQ(op_name(static_cast<Ops>(o)), sdk::lir_op_name(op));
        }
      }
    EXPECT_EQ(from, 1) << sdk::lir_op_name(op);
  }
  EXPECT_EQ(lir_op(Ops::DEFINE_VAR), KILN_LIR_OP_VAR);
  EXPECT_EQ(lir_op(Ops::THREEFRY), 0u);  // always decomposed
  EXPECT_EQ(lir_op(Ops::SINK), 0u);
}
