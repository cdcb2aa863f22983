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
