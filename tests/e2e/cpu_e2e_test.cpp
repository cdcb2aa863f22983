// tests/e2e/cpu_e2e_test.cpp - the op corpus and size/dtype sweeps on the CPU plugin, each result
// compared with the reference executor; plus the compile cache.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "kiln/kiln.hpp"
#include "op_corpus.hpp"
#include "runtime/compile_cache.hpp"
#include "runtime/program_cache.hpp"

using namespace kiln;
using namespace kiln::testing;

namespace {

const char* kDevice = "cpu:0";

class CpuCorpus : public ::testing::TestWithParam<size_t> {};

// floats within the case's tolerance (or 2e-6 relative, whichever is larger: the CPU's
// polynomial transcendentals and fused multiply-adds differ from the reference in the last bits)
void expect_matches_reference(const OpCase& c, const std::string& device) {
  HostArray got = run_case(c, device);
  HostArray want = run_case(c, "ref");
  std::string err = compare(got, want, std::max(c.rtol, 2e-6), std::max(c.atol, 1e-6));
  EXPECT_EQ(err, "") << c.name << " on " << device;
}

}  // namespace

TEST_P(CpuCorpus, MatchesReferenceExecutor) {
  static const std::vector<OpCase> cases = op_corpus();
  expect_matches_reference(cases[GetParam()], kDevice);
}

INSTANTIATE_TEST_SUITE_P(Cpu, CpuCorpus, ::testing::Range<size_t>(0, op_corpus().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) { return op_corpus()[info.param].name; });

TEST(CpuSweep, OddSizes) {
  for (int64_t n : {1, 3, 17, 1000003}) {
    HostArray a = make_array({n}, dtypes::float32, 1), b = make_array({n}, dtypes::float32, 2);
    std::vector<OpCase> cases = {
        {"ew", {a, b}, [](const std::vector<Tensor>& t) { return ((t[0] + 1.0) * t[1]).relu(); }, nullptr},
        {"sum", {a}, [](const std::vector<Tensor>& t) { return t[0].sum(); }, nullptr, 1e-4},
        {"max", {a}, [](const std::vector<Tensor>& t) { return t[0].max(); }, nullptr},
        {"exp", {a}, [](const std::vector<Tensor>& t) { return t[0].exp(); }, nullptr},
    };
    for (const OpCase& c : cases) {
      if (n == 1000003 && c.name == "exp") continue;  // the reference executor is slow; exp is covered above
      SCOPED_TRACE(c.name + " n=" + std::to_string(n));
      expect_matches_reference(c, kDevice);
    }
  }
  HostArray m = make_array({17, 33}, dtypes::float32, 3), w = make_array({33, 5}, dtypes::float32, 4);
  expect_matches_reference({"odd_matmul", {m, w}, [](const std::vector<Tensor>& t) { return t[0].matmul(t[1]); }, nullptr}, kDevice);
  expect_matches_reference({"odd_softmax", {m}, [](const std::vector<Tensor>& t) { return t[0].softmax(0); }, nullptr}, kDevice);
}

TEST(CpuSweep, EveryDtypeAndAxis) {
  for (DType d : {dtypes::bool_, dtypes::int8, dtypes::int32, dtypes::int64, dtypes::uint8, dtypes::float32, dtypes::float64}) {
    HostArray a = make_array({3, 4, 5}, d, 5, -20, 20), b = make_array({4, 5}, d, 6, -20, 20);
    SCOPED_TRACE(d.name());
    expect_matches_reference({"add", {a, b}, [](const std::vector<Tensor>& t) { return t[0] + t[1]; }, nullptr}, kDevice);
    expect_matches_reference({"lt", {a, b}, [](const std::vector<Tensor>& t) { return t[0].lt(t[1]); }, nullptr}, kDevice);
    for (int axis : {0, 1, 2})
      expect_matches_reference({"sum", {a}, [axis](const std::vector<Tensor>& t) { return t[0].sum({axis}); }, nullptr}, kDevice);
    expect_matches_reference({"max_t", {a}, [](const std::vector<Tensor>& t) { return t[0].transpose(0, 2).max({1}); }, nullptr}, kDevice);
  }
  // half types: emulated on the CPU (stored as bits, computed in float32)
  for (DType d : {dtypes::float16, dtypes::bfloat16}) {
    HostArray a = make_array({7, 9}, dtypes::float32, 7, -50, 50);
    SCOPED_TRACE(d.name());
    expect_matches_reference({"half", {a}, [d](const std::vector<Tensor>& t) {
                                return ((t[0].cast(d) * t[0].cast(d)) + 1.0).sum({1}).cast(dtypes::float32);
                              }, nullptr, 1e-2}, kDevice);
  }
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
