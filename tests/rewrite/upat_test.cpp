// tests/rewrite/upat_test.cpp - the pattern DSL and the PatternMatcher.
#include <gtest/gtest.h>

#include "index_const.hpp"
#include "kiln/error.hpp"
#include "rewrite/pattern_matcher.hpp"

using namespace kiln;
using kiln::testing::ci;
using namespace kiln::pat;

namespace {
UOp var(const char* n) { return UOp::variable(n, 0, 100); }
}  // namespace

TEST(UPat, MatchesOpAndBindsSlots) {
  UOp a = var("a"), b = var("b");
  Match m;
  ASSERT_TRUE(match(x + y, a + b, m));
  EXPECT_EQ(m[x], a);
  EXPECT_EQ(m[y], b);
  Match m2;
  EXPECT_FALSE(match(x * y, a + b, m2));
}

TEST(UPat, CommutativeTriesBothOrders) {
  UOp a = var("a");
  Match m;
  ASSERT_TRUE(match(x + 3, ci(3) + a, m)) << "constant on the left still matches x + 3";
  EXPECT_EQ(m[x], a);
  Match m2;
  EXPECT_FALSE(match(x < 3, ci(3).lt(a), m2)) << "CMPLT is not commutative";
}

TEST(UPat, RepeatedSlotMeansSameNode) {
  UOp a = var("a"), b = var("b");
  Match m;
  EXPECT_TRUE(match(x + x, a + a, m));
  Match m2;
  EXPECT_FALSE(match(x + x, a + b, m2));
}

TEST(UPat, BacktracksThroughNestedCommutative) {
  // (x*c0) + x: the inner MUL and the outer ADD both commute; only one assignment works
  UOp a = var("a"), b = var("b");
  UOp e = (ci(2) * b) + (a * b);  // ADD(MUL(2, b), MUL(a, b))
  Match m;
  ASSERT_TRUE(match((x * y) + (x * c0), e, m));
  EXPECT_EQ(m[x], b);
  EXPECT_EQ(m[y], a);
  EXPECT_EQ(m.i(c0), 2);
}

TEST(UPat, ConstantsAndDtypes) {
  Match m;
  EXPECT_TRUE(match(UPat(0), ci(0), m));
  EXPECT_TRUE(match(UPat(0), UOp::cfloat(dtypes::float32, 0.0), m)) << "numeric value, any dtype";
  EXPECT_FALSE(match(UPat(1), ci(0), m));
  EXPECT_TRUE(match(UPat(c0), ci(5), m));
  EXPECT_FALSE(match(UPat(c0), var("a"), m)) << "c0 binds constants only";
  EXPECT_TRUE(match(UPat(x).dtype(dts::floats), UOp::cfloat(dtypes::float16, 1), m));
  EXPECT_FALSE(match(UPat(x).dtype(dts::floats), ci(1), m));
  EXPECT_TRUE(match(UPat(x).dtype(dts::floats), UOp::cfloat(dtypes::float32.vec(4), 1), m)) << "any vector width";
}

TEST(UPat, SourceLengthsAndRepeat) {
  UOp a = var("a");
  UOp w = a.lt(ci(3)).where(a, ci(0));
  Match m;
  EXPECT_TRUE(match(UPat::op(Ops::WHERE, {x}, true), w, m)) << "allow_any_len";
  EXPECT_FALSE(match(UPat::op(Ops::WHERE, {x}), w, m));
  EXPECT_TRUE(match(UPat::repeat(OpMask{Ops::ADD}, UPat::any_const()), ci(1) + ci(2), m));
  EXPECT_FALSE(match(UPat::repeat(OpMask{Ops::ADD}, UPat::any_const()), a + ci(2), m));
}

TEST(PatternMatcher, TemplateRulesInstantiateWithDtypes) {
  PatternMatcher pm{rule(x * 0, 0), rule(x + y * -1, x - y)};
  UOp f = UOp::variable("f", 0, 10, dtypes::int32);
  UOp r = pm.rewrite(f * UOp::cint(dtypes::int32, 0));
  ASSERT_TRUE(r);
  EXPECT_EQ(r, UOp::cint(dtypes::int32, 0)) << "the constant takes the root's dtype";
}

TEST(PatternMatcher, FirstRuleWinsAndCompositionKeepsOrder) {
  PatternMatcher a{rule(x + 0, x)};
  PatternMatcher b{rule(x + c0, 42)};
  UOp v = var("v");
  EXPECT_EQ((a + b).rewrite(v + 0), v);
  EXPECT_EQ((b + a).rewrite(v + 0), ci(42));
}

TEST(PatternMatcher, GuardDeclineLetsOtherOrderMatch) {
  // max(x, y) -> x when x is the bigger constant; written once, matches either order
  PatternMatcher pm{rule(UPat(c0).maximum(c1), c0, [](const Match& m) { return m.i(c0) >= m.i(c1); })};
  EXPECT_EQ(pm.rewrite(ci(7).maximum(ci(3))), ci(7));
  EXPECT_EQ(pm.rewrite(ci(3).maximum(ci(7))), ci(7));
}

TEST(PatternMatcher, FlatPatternsMatchInOneStep) {
  // a root over unconstrained wildcards skips the backtracking matcher; it must agree with it
  UPat flat = UPat::op(Ops::ADD, {y, z}).named(r0);
  EXPECT_TRUE(flat.is_flat());
  EXPECT_TRUE(UPat::ops(groups::ALU).allow_any_len().named(r0).is_flat());
  EXPECT_FALSE((x + x).is_flat()) << "a repeated slot must bind the same node twice";
  EXPECT_FALSE((x + 1).is_flat()) << "commutative, and a constrained source";
  EXPECT_FALSE(UPat::op(Ops::ADD, {UPat(c0), y}).is_flat()) << "c0 only binds constants";
  UOp a = var("a"), b = var("b");
  Match m;
  ASSERT_TRUE(match_flat(flat, a + b, m));
  EXPECT_EQ(m[r0], a + b);
  EXPECT_EQ(m[y], a);
  EXPECT_EQ(m[z], b);
  Match m2;
  EXPECT_FALSE(match_flat(flat, a * b, m2));
  Match m3;
  EXPECT_FALSE(match_flat(UPat::op(Ops::ADD, {y}), a + b, m3)) << "source count must agree";
  // and through a PatternMatcher, with a callback that sees the bindings
  PatternMatcher pm{rule(flat, [](const Match& mm) { return mm[z] + mm[y]; })};
  EXPECT_EQ(pm.rewrite(a + b), b + a);
}

struct Counter {
  int calls = 0;
};
static UOp count_and_fold(const Match& m, Counter& c) {
  ++c.calls;
  return m[x];
}

TEST(PatternMatcher, TypedContextCallbacks) {
  PatternMatcher pm{rule(x * 1, count_and_fold)};
  Counter c;
  UOp v = var("v");
  EXPECT_EQ(pm.rewrite(v * 1, &c), v);
  EXPECT_EQ(c.calls, 1);
}

TEST(PatternMatcher, RejectsMalformedRules) {
  EXPECT_THROW(PatternMatcher({rule(x + 0, y)}), Error) << "right-hand side uses an unbound slot";
  EXPECT_THROW(PatternMatcher({rule(UPat(x), x)}), Error) << "root must name an op";
  EXPECT_THROW(PatternMatcher({rule(x + 0, UPat::op(Ops::LOAD, {x}))}), Error) << "template must be buildable";
}

TEST(PatternMatcher, RulesKnowWhereTheyAre) {
  Rule r = rule(x + 0, x);
  EXPECT_NE(r.where().find("upat_test.cpp:"), std::string::npos) << r.where();
}
