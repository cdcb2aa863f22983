// tests/ir/alu_test.cpp - value semantics of every ALU op (C semantics per dtype).
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <utility>

#include "ir/alu.hpp"
#include "ir/verify.hpp"
#include "kiln/error.hpp"

using namespace kiln;

namespace {
AluResult run(Ops op, DType d, std::initializer_list<Value> v) {
  DType out = groups::Comparison.has(op) ? dtypes::bool_ : d;
  return exec_alu(op, out, d, std::span<const Value>(v.begin(), v.size()));
}
int64_t I(Ops op, DType d, int64_t a, int64_t b) { return std::get<int64_t>(*run(op, d, {Value{a}, Value{b}})); }
double F(Ops op, DType d, double a, double b) { return std::get<double>(*run(op, d, {Value{a}, Value{b}})); }
}  // namespace

TEST(Alu, IntegerDivisionTruncatesTowardZero) {
  EXPECT_EQ(I(Ops::IDIV, dtypes::int32, 7, 2), 3);
  EXPECT_EQ(I(Ops::IDIV, dtypes::int32, -7, 2), -3);
  EXPECT_EQ(I(Ops::IDIV, dtypes::int32, 7, -2), -3);
  EXPECT_EQ(I(Ops::MOD, dtypes::int32, -7, 2), -1);
  EXPECT_EQ(I(Ops::MOD, dtypes::int32, 7, -2), 1);
}

// What C leaves undefined, kiln defines (Tensor::idiv): every backend and the folder agree.
TEST(Alu, IntegerDivisionIsTotal) {
  EXPECT_EQ(I(Ops::IDIV, dtypes::int32, 7, 0), 0);
  EXPECT_EQ(I(Ops::MOD, dtypes::int32, -7, 0), -7);
  EXPECT_EQ(I(Ops::IDIV, dtypes::uint8, 200, 0), 0);
  EXPECT_EQ(I(Ops::MOD, dtypes::uint8, 200, 0), 200);
  EXPECT_EQ(I(Ops::IDIV, dtypes::int32, INT32_MIN, -1), INT32_MIN) << "wraps like two's complement";
  EXPECT_EQ(I(Ops::MOD, dtypes::int32, INT32_MIN, -1), 0);
  EXPECT_EQ(I(Ops::IDIV, dtypes::int8, -128, -1), -128);
  EXPECT_EQ(I(Ops::IDIV, dtypes::int64, INT64_MIN, -1), INT64_MIN);
  EXPECT_EQ(I(Ops::MOD, dtypes::int64, INT64_MIN, -1), 0);
  EXPECT_EQ(I(Ops::IDIV, dtypes::int32, 7, -1), -7);
}

TEST(Alu, WrapAroundAtTheDtypeWidth) {
  EXPECT_EQ(I(Ops::ADD, dtypes::int8, 127, 1), -128);
  EXPECT_EQ(I(Ops::ADD, dtypes::uint8, 255, 1), 0);
  EXPECT_EQ(I(Ops::MUL, dtypes::int16, 300, 300), static_cast<int16_t>(90000));
  EXPECT_EQ(I(Ops::SUB, dtypes::uint32, 0, 1), int64_t{4294967295});
  EXPECT_EQ(static_cast<uint64_t>(I(Ops::SUB, dtypes::uint64, 0, 1)), UINT64_MAX);
  EXPECT_EQ(std::get<int64_t>(*run(Ops::NEG, dtypes::int32, {Value{int64_t{INT32_MIN}}})), INT32_MIN);
}

TEST(Alu, UnsignedComparesAndDividesUnsigned) {
  int64_t big = static_cast<int64_t>(UINT64_MAX);  // stored by bits
  EXPECT_TRUE(std::get<bool>(*run(Ops::CMPLT, dtypes::uint64, {Value{int64_t{1}}, Value{big}})));
  EXPECT_FALSE(std::get<bool>(*run(Ops::CMPLT, dtypes::int64, {Value{int64_t{1}}, Value{big}})));
  EXPECT_EQ(static_cast<uint64_t>(I(Ops::IDIV, dtypes::uint64, big, 2)), UINT64_MAX / 2);
  EXPECT_EQ(I(Ops::MAX, dtypes::uint32, 1, 4294967295), 4294967295);
}

TEST(Alu, Shifts) {
  EXPECT_EQ(I(Ops::SHL, dtypes::int32, 1, 31), INT32_MIN);
  EXPECT_EQ(I(Ops::SHR, dtypes::int32, -8, 1), -4) << "arithmetic for signed";
  EXPECT_EQ(I(Ops::SHR, dtypes::uint8, 0x80, 7), 1);
  EXPECT_FALSE(run(Ops::SHL, dtypes::int32, {Value{int64_t{1}}, Value{int64_t{32}}})) << "shift by the width";
  EXPECT_FALSE(run(Ops::SHL, dtypes::int32, {Value{int64_t{1}}, Value{int64_t{-1}}}));
}

TEST(Alu, FloatsRoundToTheirDtype) {
  EXPECT_EQ(F(Ops::ADD, dtypes::float32, 1.0, 1e-10), 1.0) << "float32 rounding";
  EXPECT_NE(F(Ops::ADD, dtypes::float64, 1.0, 1e-10), 1.0);
  EXPECT_EQ(F(Ops::ADD, dtypes::float16, 2048.0, 1.0), 2048.0) << "half has 11 bits";
  EXPECT_EQ(F(Ops::MUL, dtypes::float16, 65504.0, 2.0), INFINITY);
  EXPECT_EQ(F(Ops::ADD, dtypes::bfloat16, 256.0, 1.0), 256.0) << "bfloat16 has 8 bits";
  EXPECT_TRUE(std::isnan(F(Ops::MAX, dtypes::float32, NAN, 1.0))) << "MAX propagates NaN";
  EXPECT_TRUE(std::isnan(F(Ops::MAX, dtypes::float32, 1.0, NAN)));
  EXPECT_EQ(F(Ops::FDIV, dtypes::float32, 1.0, 0.0), INFINITY);
  EXPECT_FALSE(std::get<bool>(*run(Ops::CMPLT, dtypes::float32, {Value{NAN}, Value{1.0}})));
  EXPECT_TRUE(std::get<bool>(*run(Ops::CMPNE, dtypes::float32, {Value{NAN}, Value{NAN}})));
  EXPECT_TRUE(std::isnan(std::get<double>(*run(Ops::LOG2, dtypes::float32, {Value{-1.0}}))));
  EXPECT_EQ(std::get<double>(*run(Ops::EXP2, dtypes::float32, {Value{-INFINITY}})), 0.0);
  EXPECT_EQ(std::get<double>(*run(Ops::RECIPROCAL, dtypes::float32, {Value{-0.0}})), -INFINITY);
  EXPECT_FALSE(run(Ops::IDIV, dtypes::float32, {Value{1.0}, Value{2.0}})) << "IDIV is integer-only";
}

TEST(Alu, Casts) {
  EXPECT_EQ(std::get<int64_t>(*exec_cast(dtypes::float32, dtypes::int32, Value{-2.7})), -2) << "truncation";
  EXPECT_FALSE(exec_cast(dtypes::float32, dtypes::int32, Value{3e9})) << "out of range is undefined";
  EXPECT_FALSE(exec_cast(dtypes::float32, dtypes::int32, Value{NAN}));
  EXPECT_EQ(std::get<int64_t>(*exec_cast(dtypes::int32, dtypes::uint8, Value{int64_t{-1}})), 255);
  EXPECT_EQ(std::get<int64_t>(*exec_cast(dtypes::int32, dtypes::int8, Value{int64_t{200}})), -56);
  EXPECT_TRUE(std::get<bool>(*exec_cast(dtypes::float32, dtypes::bool_, Value{NAN})));
  EXPECT_FALSE(std::get<bool>(*exec_cast(dtypes::float32, dtypes::bool_, Value{-0.0})));
  EXPECT_EQ(std::get<double>(*exec_cast(dtypes::uint64, dtypes::float64, Value{static_cast<int64_t>(UINT64_MAX)})), 18446744073709551615.0);
  EXPECT_EQ(std::get<double>(*exec_cast(dtypes::float32, dtypes::float16, Value{1.0 + 1.0 / 4096})), 1.0) << "round to nearest even";
  EXPECT_EQ(std::get<double>(*exec_cast(dtypes::int32, dtypes::float32, Value{int64_t{16777217}})), 16777216.0);
}

TEST(Alu, Bitcast) {
  EXPECT_EQ(std::get<int64_t>(*exec_bitcast(dtypes::float32, dtypes::int32, Value{1.0})), 0x3f800000);
  EXPECT_EQ(std::get<double>(*exec_bitcast(dtypes::uint16, dtypes::float16, Value{int64_t{0x3c00}})), 1.0);
  EXPECT_EQ(std::get<int64_t>(*exec_bitcast(dtypes::bfloat16, dtypes::int16, Value{-2.0})), static_cast<int16_t>(0xc000));
  EXPECT_FALSE(exec_bitcast(dtypes::float32, dtypes::int16, Value{1.0})) << "sizes differ";
}

TEST(Alu, ThreefryKnownAnswers) {
  // Random123 known-answer vectors for threefry2x32 with 20 rounds: (ctr, key) -> out, lane 0 low.
  EXPECT_EQ(threefry2x32(0, 0), 0x99ba4efe6b200159ULL);
  EXPECT_EQ(threefry2x32(~0ULL, ~0ULL), 0xbb002be71cb996fcULL);
  EXPECT_EQ(threefry2x32(0x85a308d3243f6a88ULL, 0x0370734413198a2eULL), 0x483df7a0c4923a9cULL);
}

// "Undefined for these operands" (never folded; an executor reports the operands) is not "no
// semantics for this dtype" (a bug or a graph the verifier should refuse).
TEST(Alu, UndefinedOperandsAreNotUnimplementedOps) {
  auto shl = run(Ops::SHL, dtypes::int32, {Value{int64_t{1}}, Value{int64_t{32}}});
  EXPECT_TRUE(shl.is_undefined());
  EXPECT_FALSE(shl.is_unimplemented());
  auto idiv = run(Ops::IDIV, dtypes::float32, {Value{1.0}, Value{2.0}});
  EXPECT_TRUE(idiv.is_unimplemented());
  EXPECT_FALSE(idiv.is_undefined());
  EXPECT_TRUE(run(Ops::IDIV, dtypes::int32, {Value{int64_t{1}}, Value{int64_t{0}}})) << "division by zero is defined";
  EXPECT_TRUE(exec_cast(dtypes::float32, dtypes::int32, Value{3e9}).is_undefined());
  EXPECT_TRUE(exec_bitcast(dtypes::float32, dtypes::int16, Value{1.0}).is_undefined());
  EXPECT_THROW((void)*idiv, Error) << "no value to read";
  Value one[1] = {Value{1.0}};
  EXPECT_THROW(exec_alu(Ops::CAST, dtypes::float32, dtypes::float32, one), Error) << "not an ALU op";
}

// Every ALU op, at every dtype the verifier accepts it with, has semantics in exec_alu, except the
// combinations listed here (kiln folds none of them and the reference executor refuses them).
TEST(Alu, EveryOpTheVerifierAcceptsHasSemantics) {
  const std::set<std::pair<Ops, Scalar>> no_semantics = {
      {Ops::NEG, Scalar::bool_}, {Ops::SUB, Scalar::bool_}, {Ops::POW, Scalar::bool_}, {Ops::SHL, Scalar::bool_},
      {Ops::SHR, Scalar::bool_}, {Ops::MULACC, Scalar::bool_}, {Ops::POW, Scalar::int32}, {Ops::POW, Scalar::uint8},
      {Ops::POW, Scalar::int64}, {Ops::POW, Scalar::uint64},
  };
  const DType types[] = {dtypes::bool_, dtypes::int32, dtypes::uint8, dtypes::int64, dtypes::uint64, dtypes::float32, dtypes::float16};
  int checked = 0;
  for (int i = 0; i < kNumOps; ++i) {
    Ops op = static_cast<Ops>(i);
    if (!groups::ALU.has(op)) continue;
    for (DType d : types) {
      int n = groups::Unary.has(op) ? 1 : groups::Binary.has(op) ? 2 : 3;
      std::vector<UOp> src;
      for (int k = 0; k < n; ++k) {
        DType sd = (op == Ops::WHERE && k == 0) ? dtypes::bool_ : ((op == Ops::SHL || op == Ops::SHR) && k == 1) ? dtypes::int32 : d;
        src.push_back(const_of(sd, Value{int64_t{1}}));
      }
      DType out = groups::Comparison.has(op) ? dtypes::bool_ : d;
      UOp u = UOp::make(op, out, src);
      if (!verify_node(u).empty()) continue;
      Value vals[3];
      for (int k = 0; k < n; ++k) vals[k] = value_of(src[k]);
      DType in = op == Ops::WHERE ? d : src[0].dtype();
      AluResult r = exec_alu(op, out, in, std::span<const Value>(vals, n));
      bool listed = no_semantics.count({op, d.scalar()}) > 0;
      EXPECT_EQ(r.is_unimplemented(), listed) << op_name(op) << " at " << d.name();
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
}
