// tests/opencl/opencl_e2e_test.cpp - the op corpus and the size/dtype sweeps on opencl:0 (PoCL in
// CI), each result compared with the reference executor.
#include <gtest/gtest.h>

#include "backend_e2e.hpp"
#include "kiln/kiln.hpp"
#include "runtime/prepared.hpp"
#include "schedule/schedule.hpp"

using namespace kiln;
using namespace kiln::testing;

namespace {
const char* kDevice = "opencl:0";
}  // namespace

KILN_OP_CORPUS_SUITE(OpenclCorpus, kDevice);

TEST(OpenclSweep, OddSizes) { check_odd_sizes(kDevice); }

TEST(OpenclSweep, EmptyTensorsAreReadable) { check_empty_tensors(kDevice); }
TEST(OpenclSweep, LongReductions) { check_long_reductions(kDevice); }

TEST(OpenclSweep, EveryDtypeAndAxis) {
  // every dtype PoCL's device lists (the half types, emulated or native, are covered inside)
  check_every_dtype_and_axis(kDevice, {dtypes::bool_, dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64,
                                       dtypes::uint8, dtypes::uint16, dtypes::uint32, dtypes::uint64,
                                       dtypes::float32, dtypes::float64});
}

// A GPU target's launch size depends on a variable: each realize of the one cached schedule binds
// the prepared kernel to its value and evaluates the size for it (runtime/prepared.hpp).
TEST(OpenclPrepared, SymbolicLaunchSizes) {
  Variable n("n", 1, 4096);
  Tensor data = Tensor::arange(0, 4096, 1, dtypes::float32, kDevice).realize();
  bool symbolic = false;
  for (int64_t v : {1000, 4096, 1, 257}) {
    SCOPED_TRACE(v);
    Tensor y = (data.shrink(0, n.bind(v)) * 3).contiguous() + 1;
    std::vector<float> want;
    for (int64_t i = 0; i < v; ++i) want.push_back(static_cast<float>(i * 3 + 1));
    LinearResult lr = create_linear_with_vars(UOp::sink({y.uop()}));  // before y is realized
    EXPECT_EQ(y.to_vector<float>(), want);
    EXPECT_EQ(lr.cache_hit, v != 1000);
    for (const runtime::PreparedItem& it : lr.prepared->prepare(lr.linear, lr.var_vals)) {
      if (it.kernel->static_dims) continue;
      symbolic = true;
      EXPECT_GE(int64_t{it.global[0]} * it.local[0], v) << "the launch covers the bound size";
    }
  }
  EXPECT_TRUE(symbolic) << "a launch size that depends on the variable";
}
