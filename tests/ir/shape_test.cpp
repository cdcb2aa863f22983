// tests/ir/shape_test.cpp - shape_of against the three rules it replaced, on random shapes.
//
// The scheduler (symbolic dims), the gradients and multi-device views (concrete dims) each had
// their own copy of the movement ops' shape rules; the copies are kept here as the reference.
#include <gtest/gtest.h>

#include <random>

#include "ir/shape.hpp"
#include "kiln/error.hpp"

using namespace kiln;

namespace {

using Shape = std::vector<int64_t>;

// tensor/multi.cpp's moved_shape (FLIP: the input shape)
Shape old_multi(Ops op, const std::vector<int64_t>& arg, const Shape& in) {
  Shape out = in;
  switch (op) {
    case Ops::RESHAPE:
    case Ops::EXPAND: return Shape(arg.begin(), arg.end());
    case Ops::PERMUTE:
      for (size_t i = 0; i < arg.size(); ++i) out[i] = in[static_cast<size_t>(arg[i])];
      return out;
    case Ops::PAD:
      for (size_t i = 0; i < in.size(); ++i) out[i] = in[i] + arg[2 * i] + arg[2 * i + 1];
      return out;
    case Ops::SHRINK:
      for (size_t i = 0; i < in.size(); ++i) out[i] = arg[2 * i + 1] - arg[2 * i];
      return out;
    default: return out;
  }
}

// tensor/gradient.cpp's NodeInfo (concrete shapes; REDUCE_AXIS too)
Shape old_gradient(Ops op, const std::vector<int64_t>& ints, const Shape& in) {
  Shape out;
  switch (op) {
    case Ops::RESHAPE:
    case Ops::EXPAND: return Shape(ints.begin(), ints.end());
    case Ops::PERMUTE:
      for (int64_t a : ints) out.push_back(in[static_cast<size_t>(a)]);
      return out;
    case Ops::PAD:
    case Ops::SHRINK:
      out = in;
      for (size_t i = 0; i < in.size(); ++i)
        out[i] = op == Ops::PAD ? in[i] + ints[2 * i] + ints[2 * i + 1] : ints[2 * i + 1] - ints[2 * i];
      return out;
    case Ops::REDUCE_AXIS:
      out = in;
      for (size_t i = 1; i < ints.size(); ++i) out[static_cast<size_t>(ints[i])] = 1;
      return out;
    default: return in;  // FLIP
  }
}

std::vector<UOp> old_movement_dims(const UOp& mop, size_t begin, size_t count) {
  const auto& arg = mop.arg_ints();
  std::vector<UOp> out;
  for (size_t i = begin; i < begin + count; ++i) {
    int64_t v = arg[i];
    if (v >= 0) {
      out.push_back(UOp::cint(dtypes::index, v));
    } else {
      UOp s = mop.src(static_cast<size_t>(-v));
      out.push_back(s.op() == Ops::BIND ? s.src(0) : s);
    }
  }
  return out;
}

// schedule/kernelize.cpp's analyze (symbolic dims, before its simplify)
std::vector<UOp> old_kernelize(const UOp& n, const std::vector<UOp>& src_shape) {
  std::vector<UOp> shape;
  switch (n.op()) {
    case Ops::RESHAPE: case Ops::EXPAND: shape = old_movement_dims(n, 0, n.arg_ints().size()); break;
    case Ops::PERMUTE:
      for (int64_t a : n.arg_ints()) shape.push_back(src_shape[a]);
      break;
    case Ops::PAD:
      shape = src_shape;
      for (size_t i = 0; i < shape.size(); ++i) shape[i] = shape[i] + n.arg_ints()[2 * i] + n.arg_ints()[2 * i + 1];
      break;
    case Ops::SHRINK:
      for (size_t i = 0; i < src_shape.size(); ++i) {
        UOp end = old_movement_dims(n, 2 * i + 1, 1)[0];
        shape.push_back(n.arg_ints()[2 * i] ? end - n.arg_ints()[2 * i] : end);
      }
      break;
    case Ops::REDUCE_AXIS:
      shape = src_shape;
      for (size_t k = 1; k < n.arg_ints().size(); ++k) shape[n.arg_ints()[k]] = UOp::cindex(1);
      break;
    default: shape = src_shape;
  }
  return shape;
}

struct Case {
  Ops op;
  std::vector<int64_t> arg;
  Shape in;
};

// A random, valid op over a random shape (rank 1..4, dims 1..6).
Case random_case(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Shape in(static_cast<size_t>(pick(1, 4)));
  for (auto& d : in) d = pick(1, 6);
  const Ops ops[] = {Ops::RESHAPE, Ops::EXPAND, Ops::PERMUTE, Ops::PAD, Ops::SHRINK, Ops::FLIP, Ops::REDUCE_AXIS};
  Ops op = ops[pick(0, 6)];
  std::vector<int64_t> arg;
  switch (op) {
    case Ops::RESHAPE: {
      int64_t n = 1;
      for (int64_t d : in) n *= d;
      arg = {n};
      if (n % 2 == 0) arg = {2, n / 2};
      break;
    }
    case Ops::EXPAND:
      for (int64_t d : in) arg.push_back(d == 1 ? pick(1, 5) : d);
      break;
    case Ops::PERMUTE: {
      for (size_t i = 0; i < in.size(); ++i) arg.push_back(static_cast<int64_t>(i));
      std::shuffle(arg.begin(), arg.end(), rng);
      break;
    }
    case Ops::PAD:
      for (size_t i = 0; i < in.size(); ++i) arg.push_back(pick(0, 3)), arg.push_back(pick(0, 3));
      break;
    case Ops::SHRINK:
      for (int64_t d : in) {
        int64_t b = pick(0, static_cast<int>(d) - 1);
        arg.push_back(b), arg.push_back(pick(static_cast<int>(b) + 1, static_cast<int>(d)));
      }
      break;
    case Ops::FLIP:
      for (size_t i = 0; i < in.size(); ++i) arg.push_back(pick(0, 1));
      break;
    default:  // REDUCE_AXIS: (op, axes...)
      arg.push_back(static_cast<int64_t>(Ops::ADD));
      for (size_t i = 0; i < in.size(); ++i)
        if (pick(0, 1)) arg.push_back(static_cast<int64_t>(i));
  }
  return {op, arg, in};
}

}  // namespace

TEST(ShapeOf, ConcreteAgreesWithTheOldRules) {
  std::mt19937 rng(44);
  for (int t = 0; t < 2000; ++t) {
    Case c = random_case(rng);
    Shape got = shape_of(c.op, c.arg, c.in);
    EXPECT_EQ(got, old_gradient(c.op, c.arg, c.in)) << op_name(c.op);
    if (c.op != Ops::REDUCE_AXIS) {
      EXPECT_EQ(got, old_multi(c.op, c.arg, c.in)) << op_name(c.op);
    }
  }
}

// Dims as UOps, some symbolic: a variable input dim, a variable RESHAPE/EXPAND entry or SHRINK end.
TEST(ShapeOf, SymbolicAgreesWithTheScheduler) {
  std::mt19937 rng(45);
  UOp n = UOp::variable("n", 1, 8);
  UOp bound = UOp::make(Ops::BIND, dtypes::index, {n, UOp::cindex(3)});
  UOp x = UOp::make(Ops::CONST, dtypes::float32, {}, Arg{Float(0.0)});
  for (int t = 0; t < 2000; ++t) {
    Case c = random_case(rng);
    std::vector<UOp> in;
    for (int64_t d : c.in) in.push_back(UOp::cindex(d));
    std::vector<UOp> src = {x};
    if (std::uniform_int_distribution<int>(0, 1)(rng)) in[0] = n;  // a symbolic input dim
    if (std::uniform_int_distribution<int>(0, 1)(rng)) {
      // a symbolic arg entry (-1: source 1), as Tensor::reshape/expand/shrink make them
      if (c.op == Ops::RESHAPE || c.op == Ops::EXPAND) c.arg[0] = -1, src.push_back(bound);
      if (c.op == Ops::SHRINK) c.arg[1] = -1, src.push_back(n);
    }
    UOp node = UOp::make(c.op, dtypes::float32, src, Arg{c.arg});
    std::vector<UOp> got = shape_of(node, in), want = old_kernelize(node, in);
    ASSERT_EQ(got.size(), want.size()) << op_name(c.op);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i] == want[i]) << op_name(c.op) << " dim " << i;
  }
}

TEST(ShapeOf, OnlyShapeChangingOpsHaveARule) {
  for (int i = 0; i < kNumOps; ++i) {
    Ops op = static_cast<Ops>(i);
    EXPECT_EQ(has_shape_rule(op), groups::Movement.has(op) || op == Ops::REDUCE_AXIS) << op_name(op);
    if (!has_shape_rule(op)) {
      EXPECT_THROW(shape_of(op, {}, {2}), Error) << op_name(op);
    }
  }
  EXPECT_EQ(shape_of(Ops::FLIP, {1, 0}, {2, 3}), (Shape{2, 3}));
}
