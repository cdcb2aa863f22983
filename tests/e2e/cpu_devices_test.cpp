// tests/e2e/cpu_devices_test.cpp - the cpu backend as several devices (option devices = 2, one
// thread each; run by test_e2e_cpu_devices with tests/e2e/cpu_two_devices.toml): both are listed,
// each computes on its own memory and threads, tensors move between them, and a Jit captures work
// on both.
#include <gtest/gtest.h>

#include <algorithm>

#include "error_check.hpp"
#include "kiln/kiln.hpp"
#include "plugin/device.hpp"
#include "runtime/device_alloc.hpp"
#include "runtime/runtime.hpp"

using namespace kiln;

namespace {
// Skips unless the cpu backend shows two devices (the ctest entry's config); the other entries run
// this executable with one.
class CpuDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<std::string> all = devices();
    if (std::find(all.begin(), all.end(), "cpu:1") == all.end())
      GTEST_SKIP() << "needs [backends.cpu.options] devices = 2 (ctest runs it as test_e2e_cpu_devices)";
  }
};
}  // namespace

TEST_F(CpuDevices, TwoDevicesAreListedWithTheirOwnThreads) {
  std::vector<std::string> all = devices();
  EXPECT_NE(std::find(all.begin(), all.end(), "cpu:0"), all.end());
  EXPECT_NE(std::find(all.begin(), all.end(), "cpu:1"), all.end());
  EXPECT_EQ(std::find(all.begin(), all.end(), "cpu:2"), all.end());
  for (const char* name : {"cpu:0", "cpu:1"}) EXPECT_EQ(runtime::open_device(name)->target().threads, 1u) << name;
  EXPECT_NE(runtime::open_device("cpu:0").get(), runtime::open_device("cpu:1").get());
}

TEST_F(CpuDevices, EachComputesAndTensorsMoveBetweenThem) {
  std::vector<float> a(1000), b(1000);
  for (size_t i = 0; i < a.size(); ++i) a[i] = 0.5f * static_cast<float>(i % 17), b[i] = static_cast<float>(i % 5) - 2;
  Tensor x0 = Tensor::from_vector<float>(a, {10, 100}, "cpu:0"), y1 = Tensor::from_vector<float>(b, {10, 100}, "cpu:1");
  Tensor s1 = (x0.to("cpu:1") * y1).sum({1});
  EXPECT_EQ(s1.device(), "cpu:1");
  std::vector<float> got = s1.to("cpu:0").to_vector<float>();
  for (int r = 0; r < 10; ++r) {
    float want = 0;
    for (int c = 0; c < 100; ++c) want += a[r * 100 + c] * b[r * 100 + c];
    EXPECT_FLOAT_EQ(got[r], want) << "row " << r;
  }
  kiln::testing::expect_error([&] { (x0 + y1).realize(); }, ErrorCode::invalid_argument, "cpu:1");
}

TEST_F(CpuDevices, AJitCapturesWorkOnBothDevices) {
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    Tensor half = (in[0] * 2).to("cpu:1");
    return std::vector<Tensor>{(half + 1).to("cpu:0")};
  });
  for (int call = 1; call <= 4; ++call) {
    std::vector<Tensor> out = f({Tensor::from_vector<float>({float(call), 3}, {2}, "cpu:0")});
    EXPECT_EQ(out[0].device(), "cpu:0");
    EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{2.f * call + 1, 7})) << "call " << call;
  }
  EXPECT_TRUE(f.captured());
  EXPECT_EQ(f.kernel_count(), 4u);  // kernel on cpu:0, copy, kernel on cpu:1, copy
}

// A copy between two devices larger than the host staging chunk goes through host memory in
// pieces; every byte arrives (two full chunks and a remainder).
TEST_F(CpuDevices, ALargeCopyIsStagedInChunks) {
  const int64_t n = static_cast<int64_t>(2 * runtime::kStagingChunk / 4 + 12345);
  Tensor x = Tensor::arange(0, static_cast<double>(n), 1, dtypes::int32, "cpu:0").realize();
  std::vector<int32_t> got = x.to("cpu:1").to_vector<int32_t>();
  ASSERT_EQ(static_cast<int64_t>(got.size()), n);
  for (int64_t i = 0; i < n; i += 4099) ASSERT_EQ(got[i], i) << "element " << i;
  EXPECT_EQ(got[n - 1], n - 1);
}

// copy_peer between the two devices lands every byte; a "peer" copy from the device itself is
// refused with an error naming both ends (the host checks before calling the plugin).
TEST_F(CpuDevices, APeerCopyMovesBytesAndRefusesItself) {
  auto d0 = runtime::open_device("cpu:0"), d1 = runtime::open_device("cpu:1");
  ASSERT_TRUE(d0->has_peer_copy());
  std::vector<int32_t> data(1000), back(1000, 0);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int32_t>(i * 7);
  kiln_buffer* src = d1->alloc(4000, 0);
  kiln_buffer* dst = d0->alloc(4000, KILN_ALLOC_ZERO);
  d1->copy_in(src, 0, data.data(), 4000);
  d0->copy_from_peer(dst, 0, *d1, src, 0, 4000);
  d0->copy_out(back.data(), dst, 0, 4000);
  EXPECT_EQ(back, data);
  kiln::testing::expect_error([&] { d0->copy_from_peer(dst, 0, *d0, dst, 0, 4); }, ErrorCode::invalid_argument,
                              "not another device of the same backend");
  d0->free(dst);
  d1->free(src);
}
