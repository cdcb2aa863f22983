// tests/tensor/ops_test.cpp - every op of the corpus on the reference executor against plain C++.
#include <gtest/gtest.h>

#include "op_corpus.hpp"

using namespace kiln;
using namespace kiln::testing;

class OpCorpus : public ::testing::TestWithParam<size_t> {};

TEST_P(OpCorpus, MatchesPlainCpp) {
  static const std::vector<OpCase> cases = op_corpus();
  const OpCase& c = cases[GetParam()];
  SCOPED_TRACE(c.name);
  HostArray got = run_case(c, "ref");
  HostArray want = c.reference(c.inputs);
  std::string err = compare(got, want, c.rtol, c.atol);
  EXPECT_EQ(err, "") << c.name;
}

INSTANTIATE_TEST_SUITE_P(Ref, OpCorpus, ::testing::Range<size_t>(0, op_corpus().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) { return op_corpus()[info.param].name; });

// The corpus moves 16-bit inputs and results as bit patterns, encoded and decoded on its own
// (independent of kiln): every pattern but NaN survives the round trip, and known values have
// their IEEE patterns.
TEST(OpCorpusHalfBits, EveryPatternRoundTripsAndKnownValuesMatch) {
  for (DType d : {dtypes::float16, dtypes::bfloat16}) {
    int nans = 0;
    for (uint32_t b = 0; b < 65536; ++b) {
      double x = from_half_bits(static_cast<uint16_t>(b), d);
      if (std::isnan(x)) {
        ++nans;
        continue;
      }
      ASSERT_EQ(half_bits(x, d), b) << d.name() << " " << x;
      ASSERT_EQ(to_dtype(x, d), x) << d.name();
    }
    EXPECT_EQ(nans, d == dtypes::float16 ? 2046 : 254) << d.name();
  }
  EXPECT_EQ(half_bits(1.0, dtypes::float16), 0x3c00);
  EXPECT_EQ(half_bits(-2.0, dtypes::float16), 0xc000);
  EXPECT_EQ(half_bits(65504.0, dtypes::float16), 0x7bff);
  EXPECT_EQ(half_bits(std::ldexp(1.0, -24), dtypes::float16), 0x0001);
  EXPECT_EQ(half_bits(1 + std::ldexp(1.0, -11), dtypes::float16), 0x3c00);  // tie to even
  EXPECT_EQ(half_bits(1.0, dtypes::bfloat16), 0x3f80);
  EXPECT_EQ(half_bits(-0.0, dtypes::bfloat16), 0x8000);
  EXPECT_EQ(half_bits(1 + 3 * std::ldexp(1.0, -8), dtypes::bfloat16), 0x3f82);  // 1.5 ulps: tie to even, upward
}
