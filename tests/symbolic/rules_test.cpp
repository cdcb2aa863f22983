// tests/symbolic/rules_test.cpp - one expectation per rule family: input -> simplified text.
#include <gtest/gtest.h>

#include <cmath>

#include "index_const.hpp"
#include "ir/print.hpp"
#include "symbolic/bounds.hpp"
#include "symbolic/interpret.hpp"
#include "symbolic/symbolic.hpp"

using namespace kiln;
using kiln::testing::ci;

namespace {
UOp x() { return UOp::variable("x", 0, 100); }
UOp y() { return UOp::variable("y", 0, 3); }
UOp z() { return UOp::variable("z", -10, 10); }
std::string s(const UOp& u) { return render_expr(simplify(u)); }
}  // namespace

TEST(Symbolic, ConstantFolding) {
  EXPECT_EQ(s(ci(3) + ci(4) * ci(5)), "23");
  EXPECT_EQ(s(ci(-7).idiv(2)), "-3");
  EXPECT_EQ(s(ci(-7).mod(2)), "-1");
  EXPECT_EQ(s(ci(7).lt(ci(3))), "False");
  UOp f = UOp::cfloat(dtypes::float32, 2.0);
  EXPECT_EQ(simplify(UOp::alu(Ops::SQRT, {f}) * f), UOp::cfloat(dtypes::float32, std::sqrt(2.0f) * 2.0f));
  EXPECT_EQ(simplify(UOp::cint(dtypes::int32, 300).cast(dtypes::uint8)), UOp::cint(dtypes::uint8, 44));
  // integer division is total, as the generated code computes it
  EXPECT_EQ(s(ci(7).idiv(ci(0))), "0");
  EXPECT_EQ(s(ci(-7).mod(ci(0))), "-7");
  EXPECT_EQ(simplify(UOp::cint(dtypes::int32, INT32_MIN).idiv(UOp::cint(dtypes::int32, -1))), UOp::cint(dtypes::int32, INT32_MIN));
  EXPECT_EQ(simplify(UOp::cint(dtypes::int32, INT32_MIN).mod(UOp::cint(dtypes::int32, -1))), UOp::cint(dtypes::int32, 0));
}

TEST(Symbolic, Identities) {
  EXPECT_EQ(s(x() + 0), "x");
  EXPECT_EQ(s(x() * 1), "x");
  EXPECT_EQ(s(x().idiv(1)), "x");
  EXPECT_EQ(s(x() * 0), "0");
  EXPECT_EQ(s(x().mod(1)), "0");
  EXPECT_EQ(s((x() + 1).idiv(x() + 1)), "1");
  EXPECT_EQ(simplify(x().idiv(x())).op(), Ops::IDIV) << "x may be 0, and 0 / 0 = 0";
  EXPECT_EQ(s(x().maximum(x())), "x");
  EXPECT_EQ(s(x().lt(x())), "False");
  EXPECT_EQ(s(x() - x()), "0");
  // floats keep IEEE semantics: x*0 is not 0 (x may be inf or NaN)
  UOp f = UOp::variable("f", 0, 1).cast(dtypes::float32);
  EXPECT_EQ(simplify(f * UOp::cfloat(dtypes::float32, 0.0)).op(), Ops::MUL);
  EXPECT_EQ(simplify(f + UOp::cfloat(dtypes::float32, 0.0)), f);
}

TEST(Symbolic, CanonicalOrderAndReassociation) {
  EXPECT_EQ(s(ci(3) + x()), "(x+3)");
  EXPECT_EQ(s((x() + 3) + 4), "(x+7)");
  EXPECT_EQ(s((x() + 3) + y()), "((x+y)+3)");
  EXPECT_EQ(s(y() + x()), "(x+y)");
  EXPECT_EQ(s((x() * 2) * 3), "(x*6)");
  EXPECT_EQ(s((x() + 2) * 3), "((x*3)+6)");
  EXPECT_EQ(s(UOp::range(4, 1) + UOp::range(4, 0)), "(r0+r1)");
}

TEST(Symbolic, LikeTerms) {
  EXPECT_EQ(s(x() * 2 + x() * 3), "(x*5)");
  EXPECT_EQ(s(x() + x() * 3), "(x*4)");
  EXPECT_EQ(s((y() + x()) + x() * 3), "(y+(x*4))");
  EXPECT_EQ(s(x() * 3 - x() * 3), "0");
}

TEST(Symbolic, DivModFromBounds) {
  EXPECT_EQ(s((x() * 4 + y()).idiv(4)), "x");
  EXPECT_EQ(s((x() * 4 + y()).mod(4)), "y");
  EXPECT_EQ(s(y().idiv(4)), "0");
  EXPECT_EQ(s(y().mod(4)), "y");
  EXPECT_EQ(s((x() * 8 + y() * 2 + 1).idiv(2)), "(y+(x*4))");
  EXPECT_EQ(s((x() * 6 + 4).idiv(2)), "((x*3)+2)") << "gcd";
  EXPECT_EQ(s((x() * 4 + 7).idiv(4)), "(x+1)") << "constant split";
  EXPECT_EQ(s((x() * 4 + 7).mod(4)), "3");
  EXPECT_EQ(s(x().idiv(2).idiv(3)), "(x//6)");
  EXPECT_EQ(s(x().mod(8).mod(4)), "(x%4)");
  EXPECT_EQ(s((x() * 8).mod(4)), "0");
  EXPECT_EQ(s((x() * 8).idiv(4)), "(x*2)");
  // C semantics: a possibly negative numerator is not split
  EXPECT_EQ(s((z() * 4 + y()).idiv(4)), "((y+(z*4))//4)");
  // a term whose coefficient divides the divisor, the rest below that coefficient
  EXPECT_EQ(s((x() * 4 + y()).idiv(12)), "(x//3)");
  EXPECT_EQ(s((x() * 4 + y()).mod(12)), "(y+((x%3)*4))");
  EXPECT_EQ(s((x() * 4 + y() * 2).idiv(12)), "((y+(x*2))//6)") << "y reaches 3 > 2: only the gcd folds";
  // the rest within [k, 2k) lends k to the term: a view shifted by one row and one column, (w + 1)
  // + (h + 1)*8 over a 16-wide block of two rows (w < 7)
  UOp h = UOp::variable("h", 0, 9), w = UOp::variable("w", 0, 6);
  EXPECT_EQ(s((h * 8 + w + 9).idiv(16)), "((h+1)//2)");
  EXPECT_EQ(s((h * 8 + w + 9).mod(16)), "(((w+(h*8))+9)%16)") << "its remainder would be no smaller";
  EXPECT_EQ(s((h * 8 + x() + 9).idiv(16)), "(((x+(h*8))+9)//16)") << "x + 9 spans several rows: nothing to lend";
  // a scaled sum counts as its terms: a stride-2 window over a 59-wide row (ky < 3, oy < 29), whose
  // 60 = 59 + 1 leaves ky + 2*oy < 59 (the MOD stayed, and a padded oy could not drop it later)
  UOp ky = UOp::variable("ky", 0, 2), oy = UOp::variable("oy", 0, 28);
  EXPECT_EQ(s(((ky * 30 + oy) * 2).mod(59)), "(ky+(oy*2))");
  EXPECT_EQ(s(((ky * 30 + oy) * 2).idiv(59)), "ky");
}

TEST(Symbolic, DivModRecombine) {
  EXPECT_EQ(s(x().mod(4) + x().idiv(4) * 4), "x");
  EXPECT_EQ(s(z().mod(4) + z().idiv(4) * 4), "z") << "holds for negative values with C semantics";
  EXPECT_EQ(s(y() + x().mod(4) * 3 + x().idiv(4) * 12), "(y+(x*3))");
  // digits: x's remainder by 4, then its quotient's remainder by 5, put back
  EXPECT_EQ(s(x().mod(4) + x().idiv(4).mod(5) * 4), "(x%20)");
  EXPECT_EQ(s(z().mod(4) * 2 + z().idiv(4).mod(5) * 8), "((z%20)*2)") << "C semantics again";
  // a quotient inside a scaled sum: (y + x//4)*8 holds (x//4)*8
  EXPECT_EQ(s((y() + x().idiv(4)) * 8 + x().mod(4) * 2), "((x*2)+(y*8))");
  // a reshape of a contiguous (8, 64, 56, 56) buffer to (8, 8, 25088), group g, position r
  UOp g = UOp::variable("g", 0, 7), r = UOp::variable("r", 0, 25087), flat = g * 25088 + r;
  EXPECT_EQ(s(flat.idiv(3136) * 3136 + flat.idiv(56).mod(56) * 56 + flat.mod(56)), "(r+(g*25088))");
  // no digit pair: nothing changes
  EXPECT_EQ(s(x().mod(4) + x().idiv(4).mod(5) * 3), "((((x//4)%5)*3)+(x%4))");
}

TEST(Symbolic, ComparisonsFromBounds) {
  EXPECT_EQ(s(x().lt(ci(101))), "True");
  EXPECT_EQ(s(x().lt(ci(0))), "False");
  EXPECT_EQ(s(y().lt(ci(2))), "(y<2)");
  EXPECT_EQ(s((x() + 3).lt(ci(10))), "(x<7)");
  EXPECT_EQ(s((x() * 4).lt(ci(10))), "(x<3)");
  EXPECT_EQ(s((x() * 4 + y()).lt(ci(8))), "(x<2)") << "gcd with a small remainder";
  EXPECT_EQ(s(x().ne(ci(200))), "True");
  EXPECT_EQ(s(x().eq(ci(-1))), "False");
}

// The guards of (x + c1) * c0 and (x + c0) < c1 check every operand, not x alone: a constant of
// another dtype (a graph the verifier would refuse) stops them.
TEST(Symbolic, IntegerRulesCheckEveryOperand) {
  UOp half = UOp::cfloat(dtypes::float32, 0.5);
  UOp mul = UOp::make(Ops::MUL, dtypes::index, {x() + 2, half});
  EXPECT_EQ(render_expr(simplify(mul)), render_expr(mul)) << "no distribution over a float constant";
  UOp lt = UOp::make(Ops::CMPLT, dtypes::bool_, {x() + 3, half});
  EXPECT_EQ(render_expr(simplify(lt)), render_expr(lt)) << "no constant moved across a float one";
  // both still fire where every operand is an integer
  EXPECT_EQ(s((x() + 2) * 3), "((x*3)+6)");
  EXPECT_EQ(s((x() + 3).lt(ci(10))), "(x<7)");
}

// Moving a constant across a comparison (or dividing it out) is only right where nothing wraps:
// in uint8, 250 + 10 is 4 and 4 < 5, but 250 < 5 - 10 is not.
TEST(Symbolic, ComparisonsDoNotMoveConstantsAcrossAWrap) {
  auto u8 = [](int64_t v) { return UOp::cint(dtypes::uint8, v); };
  auto i32 = [](int64_t v) { return UOp::cint(dtypes::int32, v); };
  UOp v = UOp::variable("v", 0, 255, dtypes::uint8);
  UOp w = UOp::variable("w", INT32_MIN, INT32_MAX, dtypes::int32);
  UOp small = UOp::variable("s", 0, 200, dtypes::int32);
  const std::pair<UOp, std::vector<UOp>> cases[] = {
      {(v + u8(10)).lt(u8(5)), {v}},
      {(w + i32(1)).lt(i32(0)), {w}},
      {(w * i32(2)).lt(i32(7)), {w}},
      {(small + i32(1)).lt(i32(5)), {small}},  // cannot wrap: still folds
  };
  for (const auto& [e, vars] : cases) {
    UOp simple = simplify(e);
    const UOp& var = vars[0];
    for (int64_t val : {vmin(var), vmin(var) + 1, int64_t{0}, int64_t{3}, int64_t{250}, vmax(var) - 1, vmax(var)}) {
      if (val < vmin(var) || val > vmax(var)) continue;
      Assignment a{{var, Value{val}}};
      EXPECT_EQ(as_int(*interpret(simple, a)), as_int(*interpret(e, a)))
          << render_expr(e) << " -> " << render_expr(simple) << " at " << val;
    }
  }
  EXPECT_EQ(s((small + i32(1)).lt(i32(5))), "(s<4)");
}

// Folding a product or a quotient through a division is exact only while nothing wraps: for an
// int32 w = 2^30, (w*4)/2 is 0 (w*4 wraps to 0), not w*2 = INT32_MIN. Index math has bounds and
// still folds.
TEST(Symbolic, DivisionRulesDoNotFoldAcrossAWrap) {
  auto i32 = [](int64_t v) { return UOp::cint(dtypes::int32, v); };
  UOp w = UOp::variable("w", INT32_MIN, INT32_MAX, dtypes::int32);
  UOp u = UOp::variable("u", INT32_MIN, INT32_MAX, dtypes::int32);
  const UOp cases[] = {
      (w * i32(4)).idiv(i32(2)),
      (w * i32(6)).mod(i32(3)),
      w.idiv(i32(65537)).idiv(i32(65537)),  // 65537 * 65537 wraps to 131073 in int32
      (w * i32(4) + u * i32(2)).lt(i32(6)),
  };
  for (const UOp& e : cases) {
    UOp simple = simplify(e);
    for (int64_t wv : {int64_t{INT32_MIN}, int64_t{-(1 << 30)}, int64_t{-3}, int64_t{0}, int64_t{5}, int64_t{1} << 30, int64_t{INT32_MAX}})
      for (int64_t uv : {int64_t{0}, int64_t{1} << 30, int64_t{INT32_MAX}}) {
        Assignment a{{w, Value{wv}}, {u, Value{uv}}};
        EXPECT_EQ(as_int(*interpret(simple, a)), as_int(*interpret(e, a)))
            << render_expr(e) << " -> " << render_expr(simple) << " at w=" << wv << " u=" << uv;
      }
  }
  EXPECT_EQ(s((x() * 4).idiv(2)), "(x*2)");
  EXPECT_EQ(s((x() * 6).mod(3)), "0");
  EXPECT_EQ(s(x().idiv(8).idiv(4)), "(x//32)");
}

TEST(Symbolic, WhereAndMaxFromBounds) {
  EXPECT_EQ(s(x().lt(ci(1000)).where(x(), y())), "x");
  EXPECT_EQ(s(x().maximum(ci(0))), "x");
  EXPECT_EQ(s(ci(-5).maximum(y())), "y");
  UOp b = y().lt(ci(2));
  EXPECT_EQ(s(b.where(x(), x())), "x");
  EXPECT_EQ(s(b.logical_not().where(x(), y())), "((y<2)?y:x)");
}

TEST(Symbolic, RangeOfOneIsZero) {
  UOp r = UOp::range(1, 0);
  EXPECT_EQ(s(r * 7 + x()), "x");
}

TEST(Symbolic, BooleanAlgebra) {
  UOp b = y().lt(ci(2));
  EXPECT_EQ(simplify(b & UOp::cbool(true)), simplify(b));
  EXPECT_EQ(s(b & UOp::cbool(false)), "False");
  EXPECT_EQ(s(b | UOp::cbool(true)), "True");
  EXPECT_EQ(s(b.logical_not().logical_not()), "(y<2)");
  // a bool picked or false is an and (LLVM 15 looped forever on the select of vectors of bools)
  UOp c = x().lt(ci(3));
  EXPECT_EQ(simplify(b.where(c, UOp::cbool(false))), simplify(b & c));
}
