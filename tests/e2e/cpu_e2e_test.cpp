// tests/e2e/cpu_e2e_test.cpp - the op corpus and size/dtype sweeps on the CPU plugin, each result
// compared with the reference executor; plus the compile cache.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "kiln/kiln.hpp"
#include "backend_e2e.hpp"
#include "runtime/compile_cache.hpp"
#include "runtime/program_cache.hpp"

using namespace kiln;
using namespace kiln::testing;

namespace {

const char* kDevice = "cpu:0";

}  // namespace

KILN_OP_CORPUS_SUITE(CpuCorpus, kDevice);

TEST(CpuSweep, OddSizes) { check_odd_sizes(kDevice); }

TEST(CpuSweep, LongReductions) { check_long_reductions(kDevice); }

TEST(CpuSweep, EveryDtypeAndAxis) {
  // every dtype the cpu target lists (the half types, emulated, are covered inside)
  check_every_dtype_and_axis(kDevice, {dtypes::bool_, dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64, dtypes::uint8,
                                       dtypes::uint16, dtypes::uint32, dtypes::uint64, dtypes::float32, dtypes::float64});
}

TEST(CompileCache, HitSkipsCompilationAndCorruptEntriesAreRebuilt) {
  std::string dir = ::testing::TempDir() + "kiln_cc_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  setenv("KILN_CACHE_DIR", dir.c_str(), 1);
  runtime::clear_program_cache();
  runtime::clear_compile_memory_cache();
  auto program = [] {
    Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7}, {7}, kDevice);
    return ((x * 3.25) - 1.0).to_vector<float>();
  };
  auto s0 = runtime::compile_stats();
  auto r1 = program();
  auto s1 = runtime::compile_stats();
  EXPECT_EQ(s1.compiles, s0.compiles + 1);
  auto r2 = program();  // same kernel: program cache
  EXPECT_EQ(runtime::compile_stats().compiles, s1.compiles);
  runtime::clear_program_cache();
  runtime::clear_compile_memory_cache();
  program();  // a new "process": from disk
  auto s2 = runtime::compile_stats();
  EXPECT_EQ(s2.compiles, s1.compiles);
  EXPECT_EQ(s2.disk_hits, s1.disk_hits + 1);
  // truncate every entry: detected, rebuilt, same result
  for (const auto& f : std::filesystem::directory_iterator(dir)) std::filesystem::resize_file(f.path(), 20);
  runtime::clear_program_cache();
  runtime::clear_compile_memory_cache();
  auto r3 = program();
  auto s3 = runtime::compile_stats();
  EXPECT_EQ(s3.compiles, s2.compiles + 1);
  EXPECT_EQ(s3.corrupt_rebuilt, s2.corrupt_rebuilt + 1);
  EXPECT_EQ(r1, r3);
  EXPECT_EQ(r1, r2);
  unsetenv("KILN_CACHE_DIR");
  std::filesystem::remove_all(dir);
}

TEST(Profile, RecordsEveryLaunchWhileAlive) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}, kDevice);
  x.realize();
  Profile outer;
  {
    Profile inner;
    EXPECT_EQ((x + 1).to_vector<float>(), (std::vector<float>{2, 3, 4, 5}));
    ASSERT_EQ(inner.runs().size(), 1u);
    const KernelRun& r = inner.runs()[0];
    EXPECT_EQ(r.device, kDevice);
    EXPECT_EQ(r.name.rfind("E_", 0), 0u) << r.name;
    EXPECT_GT(r.seconds, 0);
    EXPECT_EQ(r.global[0] * r.global[1] * r.global[2] >= 1, true);
    EXPECT_NE(inner.table().find(r.name), std::string::npos);
    EXPECT_NE(inner.table().find("1 kernel,"), std::string::npos) << inner.table();
  }
  x.sum().realize();
  EXPECT_EQ(outer.runs().size(), 2u);  // the inner launch and the sum
}
