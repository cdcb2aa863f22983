// tests/opencl/opencl_multi_test.cpp - the cpu and opencl backends together: copies between them
// for every dtype (through host memory, in chunks), and one tensor sharded over cpu:0 and opencl:0,
// every result compared with the same op on one device.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.hpp"

using namespace kiln;

namespace {
const std::vector<std::string> kMix{"cpu:0", "opencl:0"};

Tensor values(int64_t n, DType d, const std::string& device) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<int32_t>((i * 37) % 101);
  return Tensor::from_vector<int32_t>(v, {n}, device).cast(d).realize();
}
}  // namespace

TEST(OpenclMulti, CopiesBetweenCpuAndOpenclKeepEveryDtype) {
  for (DType d : {dtypes::bool_, dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64, dtypes::uint8, dtypes::uint16,
                  dtypes::uint32, dtypes::uint64, dtypes::float16, dtypes::float32, dtypes::float64})
    for (int64_t n : {int64_t{1}, int64_t{7}, (int64_t{1} << 21) + 3}) {  // the last: more than one 8 MiB staging chunk for 4-byte types
      Tensor c = values(n, d, "cpu:0");
      std::vector<double> want = c.cast(dtypes::float64).to_vector<double>();
      Tensor g = c.to("opencl:0").realize();
      EXPECT_EQ(g.device(), "opencl:0");
      EXPECT_EQ(g.cast(dtypes::float64).to_vector<double>(), want) << d.name() << " n " << n << " cpu -> opencl";
      Tensor back = (g + g).to("cpu:0");  // computed on opencl, read back on cpu
      EXPECT_EQ(back.cast(dtypes::float64).to_vector<double>(), (c + c).cast(dtypes::float64).to_vector<double>())
          << d.name() << " n " << n << " opencl -> cpu";
    }
}

TEST(OpenclMulti, OneTensorShardedOverCpuAndOpencl) {
  std::vector<float> xv(12 * 10), wv(10 * 6);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = 0.25f * static_cast<float>(i % 13) - 1.5f;
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = 0.125f * static_cast<float>(i % 7) - 0.5f;
  Tensor x = Tensor::from_vector<float>(xv, {12, 10}, "cpu:0"), w = Tensor::from_vector<float>(wv, {10, 6}, "cpu:0");
  Tensor xs = x.shard(kMix, 0), ws = w.shard(kMix);
  EXPECT_EQ(xs.placement(), kMix);
  EXPECT_EQ(xs.to_vector<float>(), xv);
  auto near = [](const std::vector<float>& got, const std::vector<float>& want, const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4f * (1 + std::fabs(want[i]))) << what << " at " << i;
  };
  near((xs * 2.0f + 1.0f).exp().to_vector<float>(), (x * 2.0f + 1.0f).exp().to_vector<float>(), "elementwise");
  near(xs.matmul(ws).to_vector<float>(), x.matmul(w).to_vector<float>(), "data-parallel matmul");
  near(xs.sum({0}).to_vector<float>(), x.sum({0}).to_vector<float>(), "sum over the shard axis (all-reduce through host memory)");
  near(xs.max({1}).to_vector<float>(), x.max({1}).to_vector<float>(), "max over another axis");
  near(x.shard(kMix, 1).softmax(1).to_vector<float>(), x.softmax(1).to_vector<float>(), "softmax over the shard axis");
  Tensor on_cl = xs.sum({0}).to("opencl:0");
  EXPECT_EQ(on_cl.device(), "opencl:0");
}
