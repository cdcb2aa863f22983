// tests/plugins/cpu_llvm_test.cpp - the cpu backend with its default compiler: LLVM IR compiled
// inside the process by LLVM 15 (the built manifest's options).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plugin/registry.hpp"

namespace kiln {
namespace {

std::shared_ptr<Device> cpu() {
  static Registry* r = [] {
    Settings s;
    s.backends = KILN_CPU_MANIFEST;
    s.prefix_dirs = std::vector<std::string>{};
    s.report_problems = false;
    return new Registry(s);
  }();
  return r->open("cpu:0");
}

// out[g0*4 + i] = a[g0*4 + i] * b + c  for i in 0..3, as 4-lane vectors with llvm.fmuladd.
const char* kAxpb = R"(
@kiln_nargs_axpb = constant [2 x i32] [i32 2, i32 1]
declare <4 x float> @llvm.fmuladd.v4f32(<4 x float>, <4 x float>, <4 x float>)
define void @axpb(ptr %bufs, ptr %vals, i32 %g0, i32 %g1, i32 %g2) {
entry:
  %po = load ptr, ptr %bufs
  %pa.p = getelementptr ptr, ptr %bufs, i64 1
  %pa = load ptr, ptr %pa.p
  %n = load i64, ptr %vals
  %bf = sitofp i64 %n to float
  %b0 = insertelement <4 x float> poison, float %bf, i32 0
  %b = shufflevector <4 x float> %b0, <4 x float> poison, <4 x i32> zeroinitializer
  %i = mul i32 %g0, 4
  %src = getelementptr float, ptr %pa, i32 %i
  %dst = getelementptr float, ptr %po, i32 %i
  %x = load <4 x float>, ptr %src, align 4
  %y = call <4 x float> @llvm.fmuladd.v4f32(<4 x float> %x, <4 x float> %b, <4 x float> <float 1.0, float 1.0, float 1.0, float 1.0>)
  store <4 x float> %y, ptr %dst, align 4
  ret void
}
)";

struct Buf {
  std::shared_ptr<Device> d;
  kiln_buffer* b;
  Buf(std::shared_ptr<Device> dev, uint64_t n) : d(std::move(dev)), b(d->alloc(n)) {}
  ~Buf() { d->free(b); }
};

TEST(CpuLlvm, TargetAndCacheKeyNameTheInProcessCompiler) {
  auto d = cpu();
  EXPECT_EQ(d->target().source_format, "llvm-ir");
  EXPECT_TRUE(d->has_renderer());
  EXPECT_FALSE(d->target().supports_op(KILN_LIR_OP_LOG2));  // decomposed by the core, as for C
  const std::string& key = d->compiler_cache_key();
  EXPECT_EQ(key.rfind("llvm 15.", 0), 0u) << key;
  EXPECT_NE(key.find("|kiln-pipeline-1|x86_64"), std::string::npos) << key;
  EXPECT_NE(key.find("+sse2"), std::string::npos) << key;  // the host's features are part of it
}

TEST(CpuLlvm, CompilesLoadsAndLaunchesAnLlvmIrKernel) {
  auto d = cpu();
  std::string binary = d->compile(kAxpb, "axpb");
  EXPECT_EQ(binary.substr(1, 3), "ELF");
  std::shared_ptr<Program> p = d->load(binary, "axpb");
  std::vector<float> a(32), out(32, -1);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i) - 7.5f;
  Buf bo(d, 128), ba(d, 128);
  d->copy_in(ba.b, 0, a.data(), 128);
  kiln_buffer* bufs[] = {bo.b, ba.b};
  int64_t vals[] = {3};
  uint32_t global[3] = {8, 1, 1}, local[3] = {1, 1, 1};
  d->launch(*p, bufs, {}, vals, global, local, true);
  d->copy_out(out.data(), bo.b, 0, 128);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_FLOAT_EQ(out[i], a[i] * 3 + 1) << i;
  // kiln_nargs_axpb: the argument counts are checked
  try {
    d->launch(*p, std::span(bufs, 1), {}, vals, global, local, true);
    ADD_FAILURE() << "a launch with one buffer too few ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("takes 2 buffers, the launch passed 1"), std::string::npos) << e.what();
  }
}

TEST(CpuLlvm, BadIrIsAnErrorWithTheParserLocation) {
  auto d = cpu();
  try {
    d->compile("define void @k(ptr %b) {\nentry:\n  %x = frobnicate i32 1\n  ret void\n}\n", "k");
    ADD_FAILURE() << "bad IR compiled";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << m;
    EXPECT_NE(m.find("compiling kernel 'k' failed: the LLVM IR does not parse"), std::string::npos) << m;
    EXPECT_NE(m.find("k.ll:3:8: error: expected instruction opcode"), std::string::npos) << m;  // line 3
  }
  try {  // parses, but is not valid IR (a use before its definition in the same block)
    d->compile("define void @k() {\nentry:\n  %y = add i32 %x, 1\n  %x = add i32 1, 1\n  ret void\n}\n", "k");
    ADD_FAILURE() << "invalid IR compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("invalid LLVM IR"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln
