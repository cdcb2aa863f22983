// tests/symbolic/bounds_test.cpp - vmin/vmax through every kind of node.
#include <gtest/gtest.h>

#include "symbolic/bounds.hpp"

using namespace kiln;

namespace {
std::pair<int64_t, int64_t> B(int64_t lo, int64_t hi) { return {lo, hi}; }
}  // namespace

TEST(Bounds, ThroughRangesVarsAndAlu) {
  UOp x = UOp::variable("x", -3, 5), r = UOp::range(8, 0);
  EXPECT_EQ(bounds(r), B(0, 7));
  EXPECT_EQ(bounds(x * 2 + r), B(-6, 17));
  EXPECT_EQ(bounds(x * -1), B(-5, 3));
  EXPECT_EQ(bounds(r.idiv(3)), B(0, 2));
  EXPECT_EQ(bounds(x.idiv(2)), B(-1, 2)) << "C truncation";
  EXPECT_EQ(bounds(r.mod(3)), B(0, 2));
  EXPECT_EQ(bounds(x.mod(4)), B(-3, 3));
  EXPECT_EQ(bounds((r + 8).mod(16)), B(8, 15)) << "no wrap inside";
  EXPECT_EQ(bounds(r.lt(UOp::cint(dtypes::index, 8))), B(1, 1));
  EXPECT_EQ(bounds(r.lt(UOp::cint(dtypes::index, 4))), B(0, 1));
  EXPECT_EQ(bounds(x.maximum(r)), B(0, 7));
  EXPECT_EQ(bounds(x.lt(UOp::cint(dtypes::index, 0)).where(r, x)), B(-3, 7));
  UOp i8 = UOp::variable("b", 100, 120, dtypes::int8);
  EXPECT_EQ(bounds(i8 + UOp::cint(dtypes::int8, 10)), B(-128, 127)) << "may wrap";
}
