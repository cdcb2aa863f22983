// tests/runtime/cache_bounds_test.cpp - what bounds the caches: the map behind the in-memory
// caches (lookups refresh an entry, insertions past the capacity drop the least recently used)
// and the parsing of the size knobs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "error_check.hpp"
#include "support/env.hpp"
#include "support/lru_map.hpp"

using kiln::LruMap;

TEST(LruMap, DropsTheLeastRecentlyUsedPastItsCapacity) {
  LruMap<int, std::string> m;
  m.put(1, "a", 3);
  m.put(2, "b", 3);
  m.put(3, "c", 3);
  ASSERT_NE(m.find(1), nullptr);  // 1 is now the most recently used, 2 the least
  m.put(4, "d", 3);
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m.find(2), nullptr);
  EXPECT_EQ(*m.find(1), "a");
  EXPECT_TRUE(m.contains(3) && m.contains(4));
  m.put(3, "c2", 3);  // replaces, no eviction
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(*m.find(3), "c2");
  m.put(5, "e", 1);  // a smaller capacity trims at once
  EXPECT_EQ(m.size(), 1u);
  EXPECT_EQ(*m.find(5), "e");
  m.erase(5);
  EXPECT_EQ(m.size(), 0u);
}

TEST(LruMap, CapacityZeroIsUnbounded) {
  LruMap<int, int> m;
  for (int i = 0; i < 1000; ++i) m.put(i, i, 0);
  EXPECT_EQ(m.size(), 1000u);
  m.clear();
  EXPECT_EQ(m.find(0), nullptr);
}

TEST(CacheKnobs, SizesTakeBinarySuffixesAndRejectTheRest) {
  auto bytes = [](const char* v) {
    setenv("KILN_TEST_SIZE", v, 1);
    int64_t n = kiln::getenv_bytes("KILN_TEST_SIZE", -1);
    unsetenv("KILN_TEST_SIZE");
    return n;
  };
  EXPECT_EQ(bytes("4096"), 4096);
  EXPECT_EQ(bytes("512M"), int64_t{512} << 20);
  EXPECT_EQ(bytes("1G"), int64_t{1} << 30);
  EXPECT_EQ(bytes("2t"), int64_t{2} << 40);
  EXPECT_EQ(bytes(""), -1) << "unset or empty: the default";
  for (const char* bad : {"1.5G", "G", "-1", "10X", "99999999999T"}) {
    SCOPED_TRACE(bad);
    kiln::testing::expect_error([&] { bytes(bad); }, kiln::ErrorCode::invalid_argument, "KILN_TEST_SIZE");
  }
}
