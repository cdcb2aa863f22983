// tests/e2e/cpu_isa_test.cpp - the cpu backend for each x86-64 level, on any host.
//
// ctest sets KILN_CPU_OFFLINE_ARCH=x86-64-v2,x86-64-v3,x86-64-v4,x86-64-v4+avx512bf16, so cpu:1..4
// compile for those levels whatever this machine is: the whole op corpus is compiled for all three (an AVX-512-only
// codegen bug shows on an AVX2 machine), and run, against the reference, on the levels the host
// can execute. A second entry sets KILN_CPU_ASSUME_HOST=x86-64-v2, so the compile-only path (a
// level above the host) is exercised on every machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backend_e2e.hpp"
#include "codegen/pipeline.hpp"
#include "error_check.hpp"
#include "kiln/kiln.hpp"
#include "plugin/device.hpp"
#include "runtime/device_alloc.hpp"
#include "sysinfo.hpp"

using namespace kiln;
using namespace kiln::testing;

namespace {

struct Level {
  const char* isa;
  const char* device;
  uint32_t lanes;
  uint32_t registers, fma_pipes;  // the vector unit the level names (the heuristics' register tiles)
  bool f16c;  // float16 loaded, stored and converted natively (the op corpus's half cases compile both ways)
};
constexpr Level kLevels[] = {{"x86-64-v2", "cpu:1", 4, 16, 1, false},
                             {"x86-64-v3", "cpu:2", 8, 16, 2, true},
                             {"x86-64-v4", "cpu:3", 16, 32, 2, true}};

bool host_runs(const Level& l) { return cpu::isa_rank(l.isa) <= cpu::isa_rank(cpu::runnable_isa_level()); }

}  // namespace

TEST(CpuIsa, EachLevelIsADeviceWithItsVectorWidth) {
  for (const Level& l : kLevels) {
    auto d = runtime::open_device(l.device);
    EXPECT_EQ(d->props().arch, l.isa);
    EXPECT_EQ(d->target().max_vector_width, l.lanes) << l.isa;
    EXPECT_EQ(d->target().vector_registers, l.registers) << l.isa;
    EXPECT_EQ(d->target().fma_pipes, l.fma_pipes) << l.isa;
    EXPECT_EQ(d->target().stores_dtype(KILN_LIR_DTYPE_FLOAT16), l.f16c) << l.isa << ": F16C from x86-64-v3 on";
    EXPECT_FALSE(d->target().stores_dtype(KILN_LIR_DTYPE_BFLOAT16)) << l.isa << ": bfloat16 converts with integers";
    EXPECT_EQ(d->props().description.find("compiles only") == std::string::npos, host_runs(l)) << d->props().description;
  }
}

// Every kernel of the op corpus renders and compiles to an x86-64 ELF object for every level.
TEST(CpuIsa, TheCorpusCompilesForEveryLevel) {
  for (const Level& l : kLevels) {
    auto d = runtime::open_device(l.device);
    int kernels = 0;
    for (const OpCase& c : op_corpus()) {
      std::vector<Tensor> inputs;
      for (const HostArray& a : c.inputs) inputs.push_back(Tensor::empty(a.shape, a.dtype, "ref"));
      for (const ExecItem& e : c.build(inputs).schedule()) {
        if (e.is_copy) continue;
        SCOPED_TRACE(c.name + " (" + e.name + ") for " + l.isa);
        ProgramSpec p = to_program(e.ast, d->target());
        std::string binary = d->compile(d->render(p.lir.view()), p.name);
        ASSERT_GE(binary.size(), 20u);
        EXPECT_EQ(binary.compare(0, 4, "\x7f" "ELF"), 0);
        EXPECT_EQ(static_cast<unsigned char>(binary[18]), 62u) << "e_machine: EM_X86_64";
        ++kernels;
      }
    }
    EXPECT_GT(kernels, 100) << l.isa;
  }
}

// The corpus runs and matches the reference on every level this host executes.
TEST(CpuIsa, TheCorpusRunsOnTheLevelsTheHostHas) {
  int ran = 0;
  for (const Level& l : kLevels) {
    if (!host_runs(l)) continue;
    for (const OpCase& c : op_corpus()) {
      SCOPED_TRACE(std::string(l.isa) + ": " + c.name);
      expect_matches_reference(c, l.device);
    }
    ++ran;
  }
  EXPECT_GE(ran, 1) << "every x86-64 host kiln supports runs x86-64-v2";
}

// A level above the host compiles but does not load: a clear error, not SIGILL.
TEST(CpuIsa, ALevelAboveTheHostCompilesButDoesNotRun) {
  const Level& top = kLevels[2];
  if (host_runs(top)) GTEST_SKIP() << "run with KILN_CPU_ASSUME_HOST=x86-64-v2 (ctest entry test_cpu_isa_compile_only)";
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {4}, top.device);
  expect_error([&] { (x * 2.0).to_vector<float>(); }, ErrorCode::unavailable, "cannot run");
}

// x86-64-v4+avx512bf16 (cpu:4) lists DOT2 and compiles a bfloat16 matmul's K pairs to vdpbf16ps
// on any host; where the host has AVX512-BF16 the kernel runs and agrees with plain x86-64-v4's
// (cpu:3: one multiply-add a product) within the two summation orders' rounding.
TEST(CpuIsa, Avx512Bf16CompilesBfloat16MatmulsInPairs) {
  auto plain = runtime::open_device("cpu:3"), bf16 = runtime::open_device("cpu:4");
  EXPECT_EQ(bf16->props().arch, "x86-64-v4+avx512bf16");
  EXPECT_TRUE(bf16->target().supports_op(KILN_LIR_OP_DOT2));
  EXPECT_FALSE(plain->target().supports_op(KILN_LIR_OP_DOT2));
  const Shape sa{48, 64}, sb{64, 80};
  Tensor a = Tensor::empty(sa, dtypes::bfloat16, "ref"), b = Tensor::empty(sb, dtypes::bfloat16, "ref");
  for (const ExecItem& e : a.matmul(b).schedule()) {
    if (e.is_copy) continue;
    ProgramSpec p = to_program(e.ast, bf16->target());
    EXPECT_TRUE(std::any_of(p.lir.insts.begin(), p.lir.insts.end(), [](const kiln_lir_inst& i) { return i.op == KILN_LIR_OP_DOT2; }));
    std::string binary = bf16->compile(bf16->render(p.lir.view()), p.name);
    EXPECT_EQ(binary.compare(0, 4, "\x7f" "ELF"), 0);
  }
  if (bf16->props().description.find("compiles only") != std::string::npos) GTEST_SKIP() << "this host has no AVX512-BF16 to run it";
  std::vector<float> va(48 * 64), vb(64 * 80);
  for (size_t i = 0; i < va.size(); ++i) va[i] = static_cast<float>((i * 7) % 13) / 8.0f - 0.75f;
  for (size_t i = 0; i < vb.size(); ++i) vb[i] = static_cast<float>((i * 5) % 11) / 4.0f - 1.25f;
  auto on = [&](const char* device) {
    Tensor x = Tensor::from_vector(va, sa, device).cast(dtypes::bfloat16), y = Tensor::from_vector(vb, sb, device).cast(dtypes::bfloat16);
    return x.matmul(y).cast(dtypes::float32).to_vector<float>();
  };
  const std::vector<float> want = on("cpu:3"), got = on("cpu:4");
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], std::ldexp(std::fabs(want[i]), -7) + 1e-6) << i;
}
