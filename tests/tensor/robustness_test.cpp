// tests/tensor/robustness_test.cpp - inputs at the edges of what the frontend accepts: graphs a
// million nodes deep, tensors shared between threads, shapes whose size overflows.
#include <gtest/gtest.h>

#include "backend_e2e.hpp"
#include "kiln/kiln.hpp"

using namespace kiln;

namespace {
const char* R = "ref";
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
