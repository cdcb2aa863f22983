// tests/ir/print_test.cpp - the graph printer and expression renderer are golden-tested.
#include <gtest/gtest.h>

#include "golden.hpp"
#include "ir/print.hpp"

using namespace kiln;

TEST(Print, Graph) {
  UOp r = UOp::range(16, 0);
  UOp buf = UOp::make(Ops::PARAM, dtypes::float32.ptr(16), {}, Arg{int64_t{0}});
  UOp out = UOp::make(Ops::PARAM, dtypes::float32.ptr(16), {}, Arg{int64_t{1}});
  UOp ld = UOp::make(Ops::LOAD, dtypes::float32, {UOp::make(Ops::INDEX, dtypes::float32.ptr(16), {buf, r})});
  UOp val = UOp::alu(Ops::MAX, {ld * UOp::cfloat(dtypes::float32, 2.0), UOp::cfloat(dtypes::float32, -0.0)});
  UOp st = UOp::make(Ops::STORE, dtypes::void_, {UOp::make(Ops::INDEX, dtypes::float32.ptr(16), {out, r}), val});
  UOp end = UOp::make(Ops::END, dtypes::void_, {st, r});
  UOp sink = UOp::sink({end}, Arg{std::string("relu2")});
  EXPECT_GOLDEN("ir/print_graph", print_graph(sink));
  // printing is deterministic
  EXPECT_EQ(print_graph(sink), print_graph(sink));
}

TEST(Print, Expr) {
  UOp x = UOp::variable("x", 0, 10), y = UOp::variable("y", 0, 3);
  EXPECT_EQ(render_expr((x * 4 + y).idiv(4)), "(((x*4)+y)//4)");
  EXPECT_EQ(render_expr(x.lt(y).where(x, y.maximum(x))), "((x<y)?x:max(y, x))");
  EXPECT_EQ(render_expr(UOp::range(8, 2) + 1), "(r2+1)");
  EXPECT_EQ(render_expr(UOp::cbool(true)), "True");
  EXPECT_EQ(render_expr(UOp::cfloat(dtypes::float32, 1.5)), "1.5");
}
