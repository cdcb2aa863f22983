// tests/rewrite/id_map_test.cpp - IdMap, graph_rewrite's memo: a small inline table for the first
// entries, pages of consecutive ids after it fills; every value kept across the move.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>

#include "support/id_map.hpp"

using namespace kiln;

namespace {

// Writes `n` ids (scattered like a small graph's: old and new nodes far apart), checking the map
// against a std::map after every write: find, contains, size and the values.
void check_against_map(uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  IdMap<int64_t> m;
  std::map<uint64_t, int64_t> ref;
  for (int i = 0; i < n; ++i) {
    uint64_t id = 1 + rng() % (i % 3 == 0 ? 50 : 5'000'000);  // some repeated, some far apart
    int64_t v = static_cast<int64_t>(rng() % 1000);
    m[id] = v;
    ref[id] = v;
    ASSERT_EQ(m.size(), ref.size());
    if (i % 7 == 0 || i < 70)
      for (const auto& [k, want] : ref) {
        int64_t* got = m.find(k);
        ASSERT_NE(got, nullptr) << "id " << k << " after " << i + 1 << " writes";
        EXPECT_EQ(*got, want);
      }
  }
  for (int j = 0; j < 200; ++j) {  // ids never written are absent
    uint64_t id = 5'000'001 + rng() % 1000;
    EXPECT_FALSE(m.contains(id));
  }
}

}  // namespace

TEST(IdMap, SmallTableAlone) { check_against_map(1, 20); }
TEST(IdMap, SmallTableThenPages) { check_against_map(2, 400); }
TEST(IdMap, ManyConsecutiveIds) {
  IdMap<uint64_t> m;
  for (uint64_t id = 1; id <= 10'000; ++id) m[id] = id * 3;
  EXPECT_EQ(m.size(), 10'000u);
  for (uint64_t id = 1; id <= 10'000; ++id) ASSERT_EQ(*m.find(id), id * 3);
  EXPECT_EQ(m.find(10'001), nullptr);
}
TEST(IdMap, ReadingAKeyDoesNotAddIt) {
  IdMap<int> m;
  EXPECT_EQ(m.find(42), nullptr);
  EXPECT_FALSE(m.contains(42));
  EXPECT_EQ(m.size(), 0u);
  m[42];  // operator[] adds a default value
  EXPECT_TRUE(m.contains(42));
  EXPECT_EQ(*m.find(42), 0);
  EXPECT_EQ(m.size(), 1u);
}
