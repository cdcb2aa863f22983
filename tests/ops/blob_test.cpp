// tests/ops/blob_test.cpp - memory shared with other libraries: Tensor::from_blob wraps aligned
// host memory on cpu without a copy (writes show on both sides, the owner lives as long as a tensor
// over it), copies misaligned memory, and host_data hands out the tensor's own buffer.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "ops_check.hpp"

using namespace kiln;
using namespace kiln::testing;

namespace {
struct Aligned {
  float* p;
  explicit Aligned(size_t n) : p(static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64))) {}
  ~Aligned() { std::free(p); }
};
}  // namespace

TEST(Blob, AlignedHostMemoryIsSharedBothWays) {
  auto mem = std::make_shared<Aligned>(12);
  for (int i = 0; i < 12; ++i) mem->p[i] = static_cast<float>(i);
  bool shared = false;
  Tensor t = Tensor::from_blob(mem->p, dtypes::float32, {3, 4}, mem, kOpsDevice, &shared);
  ASSERT_TRUE(shared);
  EXPECT_EQ(compare(t.sum({1}), {3}, {6, 22, 38}), "");
  mem->p[0] = 100;  // the producer writes: kiln reads it
  EXPECT_EQ((t + 0.0f).to_vector<float>()[0], 100.0f);
  t.assign(t * 2.0f).realize();  // kiln writes: the producer sees it
  EXPECT_EQ(mem->p[1], 2.0f);
  EXPECT_EQ(t.host_data(), static_cast<void*>(mem->p));
}

TEST(Blob, TheOwnerLivesAsLongAsATensorOverIt) {
  auto mem = std::make_shared<Aligned>(4);
  std::weak_ptr<Aligned> watch = mem;
  for (int i = 0; i < 4; ++i) mem->p[i] = 1.5f;
  Tensor t = Tensor::from_blob(mem->p, dtypes::float32, {4}, mem, kOpsDevice);
  mem.reset();
  EXPECT_FALSE(watch.expired());
  Tensor r = (t * 2.0f).realize();
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{3, 3, 3, 3}));
  t = Tensor::zeros({1});
  EXPECT_TRUE(watch.expired());
}

TEST(Blob, MisalignedOrNonHostMemoryIsCopied) {
  auto mem = std::make_shared<Aligned>(9);
  for (int i = 0; i < 9; ++i) mem->p[i] = static_cast<float>(i);
  bool shared = true;
  Tensor t = Tensor::from_blob(mem->p + 1, dtypes::float32, {8}, mem, kOpsDevice, &shared);  // 4-byte aligned only
  EXPECT_FALSE(shared);
  mem->p[1] = 50;  // a copy: kiln does not see it
  EXPECT_EQ(t.to_vector<float>()[0], 1.0f);
  // the reference device keeps its own memory: a copy too
  Tensor r = Tensor::from_blob(mem->p, dtypes::float32, {8}, mem, "ref", &shared);
  EXPECT_FALSE(shared);
  EXPECT_EQ(r.to_vector<float>()[1], 50.0f);
  EXPECT_THROW(Tensor::from_blob(nullptr, dtypes::float32, {2}, nullptr, kOpsDevice), Error);
}

TEST(Blob, HostDataIsTheTensorsOwnRealizedBuffer) {
  Tensor a = (Tensor::arange(0, 6, 1, dtypes::float32, kOpsDevice) * 3.0f).reshape({2, 3});
  auto* p = static_cast<float*>(a.host_data());
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p[5], 15.0f);
  EXPECT_EQ(a.host_data(), static_cast<void*>(p));  // the same buffer, no copy, on every call
  // a transposed view realizes into a buffer of its own, in its own (row-major) order
  Tensor view = a.transpose();
  auto* q = static_cast<float*>(view.host_data());
  ASSERT_NE(q, nullptr);
  EXPECT_NE(q, p);
  EXPECT_EQ(q[1], 9.0f);
  // memory that is not host memory has no host address
  Tensor r = Tensor::ones({3}, dtypes::float32, "ref");
  EXPECT_NE(r.host_data(), nullptr);  // the reference device computes in host memory
}
