// tests/tensor/robustness_test.cpp - inputs at the edges of what the frontend accepts: graphs a
// million nodes deep, tensors shared between threads, shapes whose size overflows.
#include <gtest/gtest.h>

#include "backend_e2e.hpp"
#include "error_check.hpp"
#include "kiln/kiln.hpp"

using namespace kiln;

using kiln::testing::expect_error;

namespace {
const char* R = "ref";
constexpr int64_t kHuge = int64_t{1} << 40;  // two of these overflow int64 elements
}  // namespace

// Every walk over the graph (building, scheduling, rangeify, symbolic, the reference executor,
// rewriting live tensors after realize, releasing the nodes) is iterative: a recursive one
// overflows the stack long before a million.
TEST(DeepGraphs, AMillionLazyAddsBuildRealizeAndDestroy) {
  constexpr int kDepth = 1'000'000;
  {
    Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {4}, R);
    for (int i = 0; i < kDepth; ++i) x = x + 1.0;
    EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{kDepth + 1.0f, kDepth + 2.0f, kDepth + 3.0f, kDepth + 4.0f}));
  }
  {  // never realized: only destroyed
    Tensor y = Tensor::from_vector<float>({1}, {1}, R);
    for (int i = 0; i < kDepth; ++i) y = y * 2.0;
  }
}

TEST(DeepGraphs, LongMovementChainsRealize) {
  std::vector<float> want{1, 2, 3, 4, 5, 6};
  Tensor x = Tensor::from_vector<float>(want, {6}, R);
  for (int i = 0; i < 30'001; ++i) {
    x = x.reshape({2, 3}).permute({1, 0}).reshape({6});
    std::vector<float> t(6);
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 2; ++c) t[r * 2 + c] = want[c * 3 + r];
    want = t;
  }
  EXPECT_EQ(x.to_vector<float>(), want);
}

// Four threads reading one lazy tensor crashed in substitute (a realize rewrote a state another
// thread was reading); realizes now run one at a time and tensor graphs are read under a lock.
TEST(Threads, ConcurrentReadsOfSharedAndIndependentTensors) { kiln::testing::check_concurrent_reads(R, 40); }

// ones({2^40, 2^40}).numel() was 0 and its sum ran for minutes: every op that makes a shape
// rejects one whose element count or byte size does not fit in int64.
TEST(Shapes, SizesThatOverflowInt64AreErrors) {
  auto huge = [](auto&& f, const char* op) {
    SCOPED_TRACE(op);
    expect_error(f, ErrorCode::invalid_argument, std::string(op) + ": ");
    expect_error(f, ErrorCode::invalid_argument, "does not fit in a 64-bit signed integer");
  };
  huge([] { Tensor::ones({kHuge, kHuge}, dtypes::float32, R); }, "full");
  huge([] { Tensor::zeros({kHuge, kHuge}, dtypes::float32, R); }, "full");
  huge([] { Tensor::empty({kHuge, kHuge}, dtypes::float32, R); }, "empty");
  huge([] { Tensor::rand({kHuge, kHuge}, dtypes::float32, R); }, "rand");
  huge([] { Tensor::randn({kHuge, kHuge}, dtypes::float32, R); }, "randn");
  // the element count fits, the bytes do not
  huge([] { Tensor::empty({int64_t{1} << 62}, dtypes::float64, R); }, "empty");
  huge([] { Tensor::arange(0, 1e30, 1, dtypes::float32, R); }, "arange");
  Tensor one = Tensor::ones({1, 1}, dtypes::float32, R);
  Tensor col = Tensor::ones({kHuge, 1}, dtypes::float32, R), row = Tensor::ones({1, kHuge}, dtypes::float32, R);
  huge([&] { one.expand({kHuge, kHuge}); }, "expand");
  huge([&] { (void)(col + row); }, "add");
  huge([&] { col.pad({{0, 0}, {0, kHuge - 1}}); }, "pad");
  huge([&] { col.pad({{INT64_MAX, 0}, {0, 0}}); }, "pad");
  huge([&] { one.reshape({kHuge, kHuge, 0}); }, "reshape");
  huge([&] { Tensor::cat({col, col}, 0).pad({{0, INT64_MAX - 3 * kHuge}, {0, 0}}); }, "pad");
  expect_error([] { Tensor::zeros({2, -3}, dtypes::float32, R); }, ErrorCode::invalid_argument, "negative dimension");
  // at the limit: 2^62 int8 elements are fine (nothing is allocated until realized)
  EXPECT_EQ(Tensor::zeros({int64_t{1} << 31, int64_t{1} << 31}, dtypes::int8, R).numel(), int64_t{1} << 62);
  EXPECT_EQ(Tensor::zeros({0, kHuge, kHuge}, dtypes::float32, R).numel(), 0) << "no elements: any other dimension is fine";
}
