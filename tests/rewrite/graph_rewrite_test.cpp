// tests/rewrite/graph_rewrite_test.cpp - the rewrite drivers.
#include <gtest/gtest.h>

#include "index_const.hpp"
#include "ir/traverse.hpp"
#include "kiln/error.hpp"
#include "rewrite/graph_rewrite.hpp"
#include "support/env.hpp"

using namespace kiln;
using kiln::testing::ci;
using namespace kiln::pat;

TEST(GraphRewrite, ReachesAFixedPoint) {
  // x+0 -> x and x*1 -> x nested: every produced node is rewritten again
  PatternMatcher pm{rule(x + 0, x), rule(x * 1, x)};
  UOp v = UOp::variable("v", 0, 9);
  UOp e = ((v * 1) + 0) * 1 + 0;
  EXPECT_EQ(graph_rewrite(e, pm, nullptr, "test"), v);
}

TEST(GraphRewrite, RewritesBelowUnchangedParents) {
  PatternMatcher pm{rule(x * 1, x)};
  UOp v = UOp::variable("v", 0, 9), w = UOp::variable("w", 0, 9);
  UOp e = (v * 1).lt(w).where(v * 1, w);
  EXPECT_EQ(graph_rewrite(e, pm), v.lt(w).where(v, w));
}

struct Visits {
  int n = 0;
};
static UOp count_visit(const Match&, Visits& c) {
  ++c.n;
  return {};
}

TEST(GraphRewrite, SharedNodesAreVisitedOnce) {
  PatternMatcher pm{rule(UPat::op(Ops::ADD, {x, y}), count_visit)};
  Visits c;
  UOp v = UOp::variable("v", 0, 9);
  UOp shared = v + 1;
  UOp e = (shared * 2) + (shared * 3);
  graph_rewrite(e, pm, c, "count");
  EXPECT_EQ(c.n, 2) << "the shared ADD and the root ADD, once each";
}

TEST(GraphRewrite, ConstantFoldingChain) {
  // a rule whose output enables another: fold (c0 + c1) into one constant
  PatternMatcher pm{rule(UPat(c0) + c1, [](const Match& m) { return UOp::cint(dtypes::index, m.i(c0) + m.i(c1)); })};
  UOp e = ci(1);
  for (int i = 2; i <= 100; ++i) e = e + ci(i);
  EXPECT_EQ(graph_rewrite(e, pm), ci(5050));
}

TEST(GraphRewrite, InfiniteLoopIsAnError) {
  PatternMatcher pm{rule(x + y, UPat(y) + UPat(x))};  // flips forever
  UOp a = UOp::variable("a", 0, 1), b = UOp::variable("b", 0, 1);
  try {
    graph_rewrite(a + b, pm, nullptr, "flip");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'flip'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("graph_rewrite_test.cpp:"), std::string::npos) << "names the rule: " << msg;
  }
}

TEST(GraphRewrite, TopDownSeesParentsFirst) {
  // top-down: the parent rule fires before children are rewritten, so it sees x*1 unchanged
  PatternMatcher pm{rule(UPat::op(Ops::MUL, {x, UPat(1)}) + 0, x), rule(x * 1, x)};
  UOp v = UOp::variable("v", 0, 9);
  UOp e = (v * 1) + 0;
  EXPECT_EQ(graph_rewrite_topdown(e, pm), v);
  EXPECT_EQ(graph_rewrite(e, pm), (v + 0)) << "bottom-up rewrites v*1 first; x+0 is not in this matcher";
}

TEST(GraphRewrite, DeepGraphsDoNotRecurse) {
  PatternMatcher pm{rule(x * 1, x)};
  UOp acc = UOp::variable("deep", 0, 1);
  for (int i = 0; i < 200000; ++i) acc = (acc + 1) * 1;
  UOp out = graph_rewrite(acc, pm);
  EXPECT_EQ(toposort_nodes(out).size(), 200000u + 2);
}

TEST(GraphRewrite, DebugSixPrintsPerRuleHits) {
  set_knob(Knob::debug, 6);
  PatternMatcher pm{
      rule(x * 1, x),
      rule(x + 0, x),
  };
  UOp v = UOp::variable("v", 0, 9), w = UOp::variable("w", 0, 9);
  ::testing::internal::CaptureStderr();
  graph_rewrite((v * 1 + 0) * (w * 1), pm, nullptr, "traced");
  std::string err = ::testing::internal::GetCapturedStderr();
  set_knob(Knob::debug, 0);
  EXPECT_NE(err.find("graph_rewrite 'traced'"), std::string::npos) << err;
  EXPECT_NE(err.find("3 rewrites"), std::string::npos) << err;
  EXPECT_NE(err.find("2\tgraph_rewrite_test.cpp:"), std::string::npos) << "x*1 fired twice: " << err;
}

// A traced step prints its line after the rewrites inside it, and each of them names the step.
TEST(GraphRewrite, TracedStepsNameTheirRewrites) {
  PatternMatcher pm{rule(x * 1, x)};
  UOp v = UOp::variable("v", 0, 9);
  set_knob(Knob::debug, 6);
  ::testing::internal::CaptureStderr();
  UOp out = traced_step("my step", v * 1, [&](const UOp& u) { return graph_rewrite(u, pm, nullptr, "inner"); });
  graph_rewrite(v * 1, pm, nullptr, "outer");
  std::string err = ::testing::internal::GetCapturedStderr();
  set_knob(Knob::debug, 0);
  EXPECT_EQ(out, v);
  size_t inner = err.find("graph_rewrite 'inner' in step 'my step': "), step = err.find("step 'my step': 3 -> 1 nodes, ");
  EXPECT_NE(inner, std::string::npos) << err;
  EXPECT_NE(step, std::string::npos) << err;
  EXPECT_LT(inner, step) << "the step's line comes after the rewrites inside it";
  EXPECT_NE(err.find("graph_rewrite 'outer': "), std::string::npos) << "a rewrite outside any step names none: " << err;
}
