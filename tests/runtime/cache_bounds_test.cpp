// tests/runtime/cache_bounds_test.cpp - what bounds the caches: the map behind the in-memory
// caches (lookups refresh an entry, insertions past the capacity drop the least recently used)
// and the parsing of the size knobs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
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

// Issue 43: KILN_BEAM=-1, KILN_CACHE_ENTRIES=-5, KILN_CACHE_MAX=12Q and integers past 64 bits were
// taken (as 0, as unbounded, or wrapped); each is now an error naming the variable and its range.
TEST(CacheKnobs, OutOfRangeKnobsAreErrorsAndAWideBeamIsCapped) {
  auto read = [](const char* env, const char* v, kiln::Knob k) {
    setenv(env, v, 1);
    struct Unset {
      const char* e;
      ~Unset() { unsetenv(e); }
    } unset{env};
    return kiln::read_knob(k);
  };
  using kiln::Knob;
  const auto bad = kiln::ErrorCode::invalid_argument;
  kiln::testing::expect_error([&] { read("KILN_BEAM", "-1", Knob::beam); }, bad, "KILN_BEAM=-1 is out of range: expected 0 to 64");
  kiln::testing::expect_error([&] { read("KILN_CACHE_ENTRIES", "-5", Knob::cache_entries); }, bad,
                              "KILN_CACHE_ENTRIES=-5 is out of range: expected 0 or more");
  kiln::testing::expect_error([&] { read("KILN_CACHE_MAX", "12Q", Knob::cache_max); }, bad, "KILN_CACHE_MAX='12Q' is not a size");
  kiln::testing::expect_error([&] { read("KILN_CACHE_ENTRIES", "99999999999999999999999", Knob::cache_entries); }, bad,
                              "out of the range of a 64-bit integer");
  kiln::testing::expect_error([&] { read("KILN_NOOPT", "2", Knob::noopt); }, bad, "expected 0 to 1");
  kiln::testing::expect_error([&] { read("KILN_BEAM_CACHE", "2", Knob::beam_cache); }, bad, "KILN_BEAM_CACHE=2 is out of range: expected 0 to 1");
  EXPECT_EQ(read("KILN_BEAM_CACHE", "", Knob::beam_cache), 1) << "unset: the search cache is read";
  EXPECT_EQ(read("KILN_BEAM", "4", Knob::beam), 4);
  testing::internal::CaptureStderr();
  EXPECT_EQ(read("KILN_BEAM", "100000", Knob::beam), 64);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("KILN_BEAM=100000 is above the largest value, 64; using 64"), std::string::npos);
}

// The text knobs: read once, on first use, and set by set_knob (the kiln tool sets them so, never
// with setenv).
TEST(CacheKnobs, TextKnobsAreReadOnceAndSetBySetKnob) {
  const char* env = std::getenv("KILN_BEAM_DIR");
  const std::optional<std::string> env_saved = env ? std::optional<std::string>(env) : std::nullopt;
  const std::string saved = kiln::knob(kiln::TextKnob::beam_dir);
  setenv("KILN_BEAM_DIR", "/somewhere/else", 1);
  EXPECT_EQ(kiln::knob(kiln::TextKnob::beam_dir), saved) << "cached on first use";
  if (env_saved) setenv("KILN_BEAM_DIR", env_saved->c_str(), 1);
  else unsetenv("KILN_BEAM_DIR");
  kiln::set_knob(kiln::TextKnob::beam_dir, "off");
  EXPECT_EQ(kiln::knob(kiln::TextKnob::beam_dir), "off");
  kiln::set_knob(kiln::TextKnob::beam_dir, saved);
}
