// tests/runtime/free_cache_test.cpp - the cache of freed allocations: exact sizes, the warmest
// block first, the budget kept by releasing the least recently freed blocks; and the runtime
// reusing freed buffers through it.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "kiln/kiln.hpp"
#include "runtime/buffer.hpp"
#include "runtime/free_cache.hpp"

using namespace kiln;
using runtime::FreeCache;

namespace {
struct Released {
  std::vector<std::pair<int, uint64_t>> blocks;
  auto fn() {
    return [this](int h, uint64_t size) { blocks.push_back({h, size}); };
  }
};
}  // namespace

TEST(FreeCache, ReusesExactSizesWarmestFirst) {
  FreeCache<int> c(1000);
  Released r;
  c.put(64, 1, r.fn());
  c.put(64, 2, r.fn());
  c.put(128, 3, r.fn());
  EXPECT_EQ(c.bytes(), 256u);
  EXPECT_FALSE(c.take(32));
  EXPECT_EQ(c.take(64), 2);  // the most recently freed of that size
  EXPECT_EQ(c.take(64), 1);
  EXPECT_FALSE(c.take(64));
  EXPECT_EQ(c.bytes(), 128u);
  EXPECT_TRUE(r.blocks.empty());
}

TEST(FreeCache, OverTheBudgetTheOldestGoFirst) {
  FreeCache<int> c(300);
  Released r;
  c.put(100, 1, r.fn());
  c.put(100, 2, r.fn());
  c.put(100, 3, r.fn());
  c.put(150, 4, r.fn());  // 450 > 300: blocks 1 and 2 (the oldest) are released
  EXPECT_EQ(r.blocks, (std::vector<std::pair<int, uint64_t>>{{1, 100}, {2, 100}}));
  EXPECT_EQ(c.bytes(), 250u);
  EXPECT_EQ(c.take(100), 3);
  c.put(400, 5, r.fn());  // alone larger than the budget: released at once, nothing else goes
  EXPECT_EQ(r.blocks.back(), (std::pair<int, uint64_t>{5, 400}));
  EXPECT_EQ(c.blocks(), 1u);
  c.clear(r.fn());
  EXPECT_EQ(r.blocks.back(), (std::pair<int, uint64_t>{4, 150}));
  EXPECT_EQ(c.bytes(), 0u);
}

// Realizing the same step again reuses the buffers the first one freed: host memory (ref) and a
// plugin's memory (cpu:0) alike.
TEST(FreeCache, TheRuntimeReusesFreedBuffers) {
  for (const char* dev : {"ref", "cpu:0"}) {
    SCOPED_TRACE(dev);
    runtime::clear_allocation_cache();
    auto step = [&] { return (Tensor::full({1000}, 2.0, dtypes::float32, dev) * 3.0).sum().item<float>(); };
    EXPECT_EQ(step(), 6000.0f);
    runtime::MemoryStats first = runtime::memory_stats(dev);
    EXPECT_EQ(step(), 6000.0f);
    runtime::MemoryStats second = runtime::memory_stats(dev);
    EXPECT_GT(second.cache_hits, first.cache_hits);
    EXPECT_EQ(second.allocations, first.allocations);  // nothing new was allocated
  }
}
