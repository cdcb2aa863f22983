// tests/cuda/cuda_gpu_test.cpp - the cuda backend on an NVIDIA GPU: the op corpus and the sweeps
// on cuda:0 against the reference executor, Jit replay, BEAM, and cuda:0 with cpu:0 (copies of
// every dtype, one tensor sharded over both). Without a GPU every test skips, saying why
// (scripts/gpu-check.sh runs this on one).
#include <gtest/gtest.h>

#include <cmath>

#include "backend_e2e.hpp"
#include "fusion_e2e.hpp"
#include "kiln/kiln.hpp"
#include "plugin/registry.hpp"

using namespace kiln;
using namespace kiln::testing;

namespace {

const char* kDevice = "cuda:0";

// "" when cuda:0 is a GPU, else why not.
const std::string& no_gpu() {
  static const std::string reason = [] {
    const BackendRecord* r = Registry::get().backend("cuda");
    if (!r) return std::string("no cuda backend in KILN_BACKENDS");
    if (!r->ok()) return "the cuda backend is " + std::string(status_name(r->status)) + ": " + r->reason;
    std::string d = Registry::get().open(kDevice)->props().description;
    if (d.find("offline compiler") != std::string::npos) return "cuda:0 is an offline target (" + d + ")";
    return std::string();
  }();
  return reason;
}

#define KILN_REQUIRE_GPU() \
  if (!no_gpu().empty()) GTEST_SKIP() << no_gpu()

Tensor values(int64_t n, DType d, const std::string& device) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<int32_t>((i * 37) % 101);
  return Tensor::from_vector<int32_t>(v, {n}, device).cast(d).realize();
}

}  // namespace

// The corpus, built once (op_corpus() builds it on every call; naming ~190 cases would take seconds).
const std::vector<OpCase>& corpus() {
  static const std::vector<OpCase> cases = op_corpus();
  return cases;
}

class CudaCorpus : public ::testing::TestWithParam<size_t> {};
TEST_P(CudaCorpus, MatchesReferenceExecutor) {
  KILN_REQUIRE_GPU();
  expect_matches_reference(corpus()[GetParam()], kDevice);
}
INSTANTIATE_TEST_SUITE_P(Corpus, CudaCorpus, ::testing::Range<size_t>(0, corpus().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) { return corpus()[info.param].name; });

TEST(CudaGpu, DeviceReportsItsCaps) {
  KILN_REQUIRE_GPU();
  auto dev = Registry::get().open(kDevice);
  DeviceProps p = dev->props();
  std::printf("[   INFO   ] %s: %s\n", kDevice, p.description.c_str());
  EXPECT_EQ(p.arch.rfind("sm_", 0), 0u);
  EXPECT_GT(p.memory_total, 0u);
  EXPECT_GT(p.compute_units, 0u);
  EXPECT_GE(dev->target().shared_max, 48u * 1024);
  EXPECT_EQ(dev->target().local_prod_max, 1024u);
}

TEST(CudaSweep, OddSizes) { KILN_REQUIRE_GPU(); check_odd_sizes(kDevice); }
TEST(CudaSweep, LongReductions) { KILN_REQUIRE_GPU(); check_long_reductions(kDevice); }
TEST(CudaSweep, EmptyTensorsAreReadable) { KILN_REQUIRE_GPU(); check_empty_tensors(kDevice); }
TEST(CudaSweep, UserGuardedDivisorsAreStillGuarded) { KILN_REQUIRE_GPU(); check_user_guarded_division(kDevice); }
TEST(CudaSweep, EveryDtypeAndAxis) {
  KILN_REQUIRE_GPU();
  check_every_dtype_and_axis(kDevice, {dtypes::bool_, dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64,
                                       dtypes::uint8, dtypes::uint16, dtypes::uint32, dtypes::uint64, dtypes::float32,
                                       dtypes::float64});
}
TEST(CudaFusion, MultiOutputAndFusedReduceKernels) { KILN_REQUIRE_GPU(); check_fused_kernels(kDevice); }
TEST(CudaPrepared, SymbolicLaunchSizes) { KILN_REQUIRE_GPU(); check_variable_launches(kDevice, 4096, /*symbolic_sizes=*/true); }
TEST(CudaJit, ReplayEqualsEagerBitForBit) { KILN_REQUIRE_GPU(); check_jit_matches_eager(kDevice, 3); }
TEST(CudaBeam, SearchedKernelsMatchTheReference) { KILN_REQUIRE_GPU(); check_beam_matches_reference(kDevice, 15); }

TEST(CudaMulti, CopiesBetweenCpuAndCudaKeepEveryDtype) {
  KILN_REQUIRE_GPU();
  for (DType d : {dtypes::bool_, dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64, dtypes::uint8, dtypes::uint16,
                  dtypes::uint32, dtypes::uint64, dtypes::float16, dtypes::float32, dtypes::float64})
    for (int64_t n : {int64_t{1}, int64_t{7}, (int64_t{1} << 21) + 3}) {
      Tensor c = values(n, d, "cpu:0");
      std::vector<double> want = c.cast(dtypes::float64).to_vector<double>();
      Tensor g = c.to(kDevice).realize();
      EXPECT_EQ(g.device(), kDevice);
      EXPECT_EQ(g.cast(dtypes::float64).to_vector<double>(), want) << d.name() << " n " << n << " cpu -> cuda";
      Tensor back = (g + g).to("cpu:0");
      EXPECT_EQ(back.cast(dtypes::float64).to_vector<double>(), (c + c).cast(dtypes::float64).to_vector<double>())
          << d.name() << " n " << n << " cuda -> cpu";
    }
}

TEST(CudaMulti, OneTensorShardedOverCpuAndCuda) {
  KILN_REQUIRE_GPU();
  const std::vector<std::string> mix{"cpu:0", kDevice};
  std::vector<float> xv(12 * 10), wv(10 * 6);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = 0.25f * static_cast<float>(i % 13) - 1.5f;
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = 0.125f * static_cast<float>(i % 7) - 0.5f;
  Tensor x = Tensor::from_vector<float>(xv, {12, 10}, "cpu:0"), w = Tensor::from_vector<float>(wv, {10, 6}, "cpu:0");
  Tensor xs = x.shard(mix, 0), ws = w.shard(mix);
  EXPECT_EQ(xs.to_vector<float>(), xv);
  auto near = [](const std::vector<float>& got, const std::vector<float>& want, const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4f * (1 + std::fabs(want[i]))) << what << " at " << i;
  };
  near((xs * 2.0f + 1.0f).exp().to_vector<float>(), (x * 2.0f + 1.0f).exp().to_vector<float>(), "elementwise");
  near(xs.matmul(ws).to_vector<float>(), x.matmul(w).to_vector<float>(), "data-parallel matmul");
}
