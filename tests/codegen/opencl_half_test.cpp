// tests/codegen/opencl_half_test.cpp - float16 in OpenCL C on a simulated GPU with and without
// cl_khr_fp16: the rendered kernels (golden), what each may and may not contain, and, where
// clang-15 is installed, that each compiles as OpenCL C for a device with exactly that extension
// (PoCL, the only OpenCL device CI has, lacks it: the native path is checked here, compile-only).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>

#include "codegen/lir.hpp"
#include "codegen/pipeline.hpp"
#include "golden.hpp"
#include "kiln/kiln.hpp"
#include "opencl_c.hpp"
#include "sim_targets.hpp"

using namespace kiln;

namespace {

// gpu_caps' GPU (8 float lanes, 48 KiB of shared memory), with float16 computed in or only stored.
Target opencl_gpu(opencl::HalfSupport half) {
  Target t = gpu_caps(256, 64, 256, 48 << 10, 8);
  opencl::opencl_caps(t.ops, t.dtypes, t.storage_dtypes, half == opencl::HalfSupport::native, false);
  return t;
}

Tensor in(const Shape& s) { return Tensor::empty(s, dtypes::float16, "ref"); }

// Every kernel of the cases below, rendered for the target, one after another.
std::string render_all(opencl::HalfSupport half) {
  const Target t = opencl_gpu(half);
  const std::vector<std::pair<const char*, Tensor>> cases = {
      {"relu(a * b + 1)", ((in({4096}) * in({4096})) + 1.0).relu()},
      {"sum of rows", in({64, 256}).sum({1})},
      {"softmax", in({32, 256}).softmax(-1)},
      {"matmul", in({64, 64}).matmul(in({64, 64}))},
      {"bits and back", (in({1024}).bitcast(dtypes::uint16) + 1).bitcast(dtypes::float16) * 2.0},
  };
  std::string out;
  for (const auto& [what, tensor] : cases)
    for (const ExecItem& e : tensor.schedule()) {
      if (e.is_copy) continue;
      ProgramSpec p = to_program(e.ast, t);
      out += "// " + std::string(what) + "\n" + opencl::OpenclDialect(0, half).render_kernel(p.lir.view()) + "\n";
    }
  return out;
}

// Whether clang-15 accepts `source` as OpenCL C 1.2 for a SPIR device with (or without) cl_khr_fp16;
// nullopt when clang-15 is not installed.
std::optional<std::string> clang_errors(const std::string& source, bool fp16) {
  if (std::system("clang-15 --version >/dev/null 2>&1") != 0) return std::nullopt;
  const std::string base = ::testing::TempDir() + "kiln_opencl_half_" + (fp16 ? "native" : "storage");
  std::ofstream(base + ".cl") << source;
  const std::string cmd = "clang-15 -x cl -cl-std=CL1.2 -target spir64 -Xclang -finclude-default-header -fsyntax-only "
                          "-Werror=implicit-function-declaration -Werror=incompatible-pointer-types -Xclang -cl-ext=" +
                          std::string(fp16 ? "+" : "-") + "cl_khr_fp16 " + base + ".cl >" + base + ".log 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream log(base + ".log");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  return rc == 0 ? std::string() : "clang-15 failed:\n" + text;
}

}  // namespace

// Without cl_khr_fp16 half is only what a buffer holds: values are floats, converted by
// vload_half / vstore_half_rte, and the kernel never enables the extension.
TEST(OpenclHalfRender, WithoutTheExtensionHalfIsOnlyStored) {
  const std::string src = render_all(opencl::HalfSupport::storage);
  EXPECT_GOLDEN("codegen/opencl_float16_storage", src);
  EXPECT_EQ(src.find("cl_khr_fp16"), std::string::npos);
  EXPECT_FALSE(std::regex_search(src, std::regex(R"(\bhalf[0-9]*\s+v[0-9])"))) << "a half value in a register";
  EXPECT_FALSE(std::regex_search(src, std::regex(R"(\(half[0-9]*\))"))) << "a conversion to half";
  EXPECT_NE(src.find("vload_half8("), std::string::npos);
  EXPECT_NE(src.find("_rte("), std::string::npos);
  EXPECT_NE(src.find("__global half* restrict data0"), std::string::npos);
  if (auto errors = clang_errors(src, false)) {
    EXPECT_EQ(*errors, "");
  }
}

// With cl_khr_fp16 the device computes in half: half values, no conversion built-ins.
TEST(OpenclHalfRender, WithTheExtensionHalfIsNative) {
  const std::string src = render_all(opencl::HalfSupport::native);
  EXPECT_GOLDEN("codegen/opencl_float16_native", src);
  EXPECT_NE(src.find("#pragma OPENCL EXTENSION cl_khr_fp16 : enable"), std::string::npos);
  EXPECT_EQ(src.find("vload_half"), std::string::npos);
  EXPECT_EQ(src.find("vstore_half"), std::string::npos);
  EXPECT_TRUE(std::regex_search(src, std::regex(R"(\bhalf[0-9]*\s+v[0-9])")));
  if (auto errors = clang_errors(src, true)) {
    EXPECT_EQ(*errors, "");
  }
}

// The target lists float16 as computed in with the extension, as stored only without it.
TEST(OpenclHalfRender, TheCapsSayWhichHalfTheDeviceHas) {
  const Target storage = opencl_gpu(opencl::HalfSupport::storage), native = opencl_gpu(opencl::HalfSupport::native);
  EXPECT_FALSE(storage.supports_dtype(KILN_LIR_DTYPE_FLOAT16));
  EXPECT_TRUE(storage.stores_dtype(KILN_LIR_DTYPE_FLOAT16));
  EXPECT_TRUE(native.supports_dtype(KILN_LIR_DTYPE_FLOAT16));
  EXPECT_FALSE(native.stores_dtype(KILN_LIR_DTYPE_FLOAT16));
  for (const Target* t : {&storage, &native}) {  // (bfloat16 has no OpenCL built-in: emulated)
    EXPECT_FALSE(t->supports_dtype(KILN_LIR_DTYPE_BFLOAT16));
    EXPECT_FALSE(t->stores_dtype(KILN_LIR_DTYPE_BFLOAT16));
  }
}

// Half in local and register arrays (ushort arrays read through half pointers: OpenCL C has no
// half arrays without the extension), vector and scalar, and a masked vector load, in LIR text:
// the storage dialect's spellings that the core's kernels above do not reach, compiled by clang-15.
TEST(OpenclHalfRender, LocalAndRegisterArraysOfHalf) {
  const std::string lir =
      "kernel k buffers=2 vars=0 global=1,1,1 local=4,1,1\n"
      "%0 = PARAM float16*global[64] 0\n"
      "%1 = PARAM float16*global[64] 1\n"
      "%2 = CONST int32 4\n"
      "%3 = SPECIAL int32 (%2) \"lidx0\"\n"
      "%4 = CONST int32 0\n"
      "%5 = CMPLT bool (%3, %2)\n"
      "%6 = INDEX float16x4*global[64] (%1, %3)\n"
      "%7 = CONST float16x4 0x0000000000000000 (0)\n"
      "%8 = LOAD float16x4 (%6, %7, %5)\n"
      "%9 = DEFINE_LOCAL float16x4*local[4] 0\n"
      "%10 = INDEX float16x4*local[4] (%9, %3)\n"
      "%11 = STORE void (%10, %8)\n"
      "%12 = BARRIER void\n"
      "%13 = LOAD float16x4 (%10)\n"
      "%14 = DEFINE_REG float16*reg[2] 1\n"
      "%15 = INDEX float16*reg[2] (%14, %4)\n"
      "%16 = GEP float16 (%13) [2]\n"
      "%17 = STORE void (%15, %16)\n"
      "%18 = LOAD float16 (%15)\n"
      "%19 = CAST float32 (%18)\n"
      "%20 = CAST float16 (%19)\n"
      "%21 = INDEX float16*global[64] (%0, %3)\n"
      "%22 = STORE void (%21, %20)\n"
      "%23 = INDEX float16x4*global[64] (%0, %2)\n"
      "%24 = STORE void (%23, %13)\n";
  LirProgram p = parse_lir_text(lir);
  const std::string src = opencl::OpenclDialect(0, opencl::HalfSupport::storage).render_kernel(p.view());
  EXPECT_NE(src.find("__local ushort4 local0[4];"), std::string::npos) << src;
  EXPECT_NE(src.find("ushort acc1[2];"), std::string::npos) << src;
  EXPECT_NE(src.find("vload_half4(0, ((__local half*)("), std::string::npos) << src;
  EXPECT_NE(src.find("vstore_half_rte("), std::string::npos) << src;
  EXPECT_NE(src.find("((__private half*)("), std::string::npos) << src;
  EXPECT_EQ(src.find("cl_khr_fp16"), std::string::npos) << src;
  if (auto errors = clang_errors(src, false)) {
    EXPECT_EQ(*errors, "") << src;
  }
}
