// tests/opencl/opencl_frontend_test.cpp - the pieces of the clang front end for PoCL, without a
// device: reading PoCL's LLVM target from its device version, PoCL's list of renamed built-ins,
// and renaming the built-ins clang's bitcode calls.
#include <gtest/gtest.h>

#include <string>

#include "../common/process.hpp"
#include "error_check.hpp"
#include "frontend.hpp"
#include "pocl_names.hpp"

using namespace kiln::opencl;

TEST(OpenclFrontend, PoclNamesItsLlvmTargetInTheDeviceVersion) {
  auto t = pocl_llvm_target("OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-haswell");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->triple, "x86_64-pc-linux-gnu");
  EXPECT_EQ(t->cpu, "haswell");
  auto dashed = pocl_llvm_target("OpenCL 3.0 PoCL HSTR: cpu-x86_64-pc-linux-gnu-skylake-avx512 extra");
  ASSERT_TRUE(dashed);
  EXPECT_EQ(dashed->cpu, "skylake-avx512");
  EXPECT_EQ(pocl_llvm_target("OpenCL 3.0 PoCL HSTR: basic-aarch64-unknown-linux-gnu-cortex-a72")->triple,
            "aarch64-unknown-linux-gnu");
  // other drivers, PoCL's GPU devices (no host triple), and malformed strings
  EXPECT_FALSE(pocl_llvm_target("OpenCL 3.0 CUDA 12.2.140"));
  EXPECT_FALSE(pocl_llvm_target("OpenCL 3.0 PoCL HSTR: pthread-x86_64"));
  EXPECT_FALSE(pocl_llvm_target("OpenCL 3.0 PoCL HSTR: pthread-x86_64--linux-gnu-haswell"));
  EXPECT_FALSE(pocl_llvm_target("OpenCL 3.0 PoCL"));
}

TEST(OpenclFrontend, PoclsRenamedBuiltinsComeFromItsHeader) {
  std::string where;
  NameSet names = pocl_renamed_builtins(where);
  ASSERT_FALSE(names.empty()) << "looked in " << where;
  EXPECT_CONTAINS(where, "_builtin_renames.h");
  for (const char* n : {"vload8", "vstore4", "convert_ulong8", "sqrt", "exp2", "fmax"}) EXPECT_TRUE(names.count(n)) << n;
  EXPECT_FALSE(names.count("get_group_id"));  // work-item functions keep their names
}

// clang's bitcode for the CPU target calls the standard names; PoCL's library defines the CPU
// versions under _cl_ names (the standard ones are SPIR wrappers with another ABI).
TEST(OpenclFrontend, BuiltinCallsAreRenamedAsPoclsFrontEndWould) {
  const char* source =
      "__kernel void k(__global float* restrict a) {\n"
      "  size_t i = get_group_id(0);\n"
      "  vstore8(sqrt(vload8(i, a)), i, a);\n"
      "}\n";
  kiln::plugins::ProcessResult clang = kiln::plugins::run_process(
      {"clang-15", "-x", "cl", "-cl-std=CL1.2", "-target", "x86_64-pc-linux-gnu", "-c", "-emit-llvm", "-o", "-", "-"},
      source, "clang-15 is needed (apt-get install clang-15)");
  ASSERT_EQ(clang.exit_code, 0) << clang.err;
  auto has = [](const std::string& bitcode, const char* name) { return bitcode.find(name) != std::string::npos; };
  ASSERT_TRUE(has(clang.out, "_Z6vload8mPU8CLglobalKf"));
  std::string renamed = rename_builtins(clang.out, {"vload8", "vstore8", "sqrt"});
  EXPECT_TRUE(has(renamed, "_Z10_cl_vload8mPU8CLglobalKf"));
  EXPECT_TRUE(has(renamed, "_Z11_cl_vstore8Dv8_fmPU8CLglobalf"));
  EXPECT_TRUE(has(renamed, "_Z8_cl_sqrtDv8_f"));
  EXPECT_FALSE(has(renamed, "_Z6vload8mPU8CLglobalKf"));
  EXPECT_TRUE(has(renamed, "_Z12get_group_idj"));  // not in the set: unchanged
  EXPECT_TRUE(has(renamed, "k"));
  kiln::sdk::Error error{KILN_STATUS_OK, ""};
  try {
    rename_builtins("not bitcode", {"sqrt"});
  } catch (const kiln::sdk::Error& e) {
    error = e;
  }
  EXPECT_EQ(error.code, KILN_STATUS_INTERNAL);
  EXPECT_CONTAINS(error.message, "reading clang's bitcode failed");
}
