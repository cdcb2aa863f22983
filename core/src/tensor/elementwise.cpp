// tensor/elementwise.cpp - arithmetic, math functions, comparisons, where and casts.
//
// Math functions are compositions of the primitive ops (EXP2, LOG2, SIN, SQRT, RECIPROCAL, ...);
// integer inputs to float functions compute in float32, as numpy computes in float.
#include <cmath>

#include "tensor/tensor_state.hpp"

namespace kiln {

using namespace detail;

namespace {

Tensor as_float(const Tensor& t) { return t.dtype().is_float() ? t : t.cast(dtypes::default_float); }

Tensor binary(Ops op, const Tensor& a, const Tensor& b, const char* name) {
  auto [x, y] = promote(a, b, name);
  return alu(op, {x, y}, x.dtype());
}

Tensor compare(Ops op, const Tensor& a, const Tensor& b, const char* name) {
  auto [x, y] = promote(a, b, name);
  return alu(op, {x, y}, dtypes::bool_);
}

Tensor unary_float(Ops op, const Tensor& t) {
  Tensor f = as_float(t);
  return alu(op, {f}, f.dtype());
}

// A scalar operand: `double` values are weak floats (an integer tensor becomes float32).
Tensor scalar_f(const Tensor& like, double v) {
  DType d = like.dtype().is_float() ? like.dtype() : dtypes::default_float;
  return const_like(like, v, d);
}

}  // namespace

Tensor scalar_like(const Tensor& like, int64_t v) {
  DType d = like.dtype().is_bool() ? dtypes::default_int : like.dtype();
  return const_like(like, static_cast<double>(v), d);
}

Tensor Tensor::operator+(const Tensor& o) const { return binary(Ops::ADD, *this, o, "add"); }
Tensor Tensor::operator-(const Tensor& o) const {
  if (dtype().is_bool() && o.dtype().is_bool()) fail(ErrorCode::invalid_argument, "sub: cannot subtract bool tensors; use ne");
  auto [x, y] = promote(*this, o, "sub");
  return alu(Ops::SUB, {x, y}, x.dtype());
}
Tensor Tensor::operator*(const Tensor& o) const { return binary(Ops::MUL, *this, o, "mul"); }
Tensor Tensor::operator/(const Tensor& o) const {
  auto [x, y] = promote(*this, o, "div");
  if (!x.dtype().is_float()) x = x.cast(dtypes::default_float), y = y.cast(dtypes::default_float);
  return alu(Ops::FDIV, {x, y}, x.dtype());
}
Tensor Tensor::operator-() const {
  if (dtype().is_bool()) fail(ErrorCode::invalid_argument, "neg: cannot negate a bool tensor; use logical_not");
  if (dtype().is_float()) return alu(Ops::NEG, {*this}, dtype());
  return *this * const_like(*this, -1);
}

Tensor Tensor::idiv(const Tensor& o) const {
  auto [x, y] = promote(*this, o, "idiv");
  if (!x.dtype().is_int())
    fail(ErrorCode::invalid_argument, "idiv: integer division needs integer tensors, got ", dtype().name(), " and ", o.dtype().name());
  return alu(Ops::IDIV, {x, y}, x.dtype());
}
Tensor Tensor::mod(const Tensor& o) const {
  auto [x, y] = promote(*this, o, "mod");
  if (!x.dtype().is_int())
    fail(ErrorCode::invalid_argument, "mod: needs integer tensors, got ", dtype().name(), " and ", o.dtype().name());
  return alu(Ops::MOD, {x, y}, x.dtype());
}

Tensor Tensor::exp2() const { return unary_float(Ops::EXP2, *this); }
Tensor Tensor::log2() const { return unary_float(Ops::LOG2, *this); }
Tensor Tensor::exp() const { return (as_float(*this) * M_LOG2E).exp2(); }
Tensor Tensor::log() const { return log2() * M_LN2; }
Tensor Tensor::sqrt() const { return unary_float(Ops::SQRT, *this); }
Tensor Tensor::rsqrt() const { return sqrt().reciprocal(); }
Tensor Tensor::sin() const { return unary_float(Ops::SIN, *this); }
Tensor Tensor::cos() const { return (M_PI_2 - as_float(*this)).sin(); }
Tensor Tensor::tan() const { return sin() / cos(); }
Tensor Tensor::reciprocal() const { return unary_float(Ops::RECIPROCAL, *this); }
Tensor Tensor::abs() const {
  // unsigned values (and bools) are their own magnitude: maximum(x, -x) would pick the wrapped
  // -x (abs of uint8 3 would be 253)
  if (dtype().is_bool() || dtype().is_unsigned()) return *this;
  if (!dtype().is_float()) return maximum(-*this);
  // maximum(x, -x) of +0.0 may be -0.0 (the operands compare equal): both zeros become +0.0,
  // and NaN (no comparison holds) passes through
  Tensor zero = const_like(*this, 0);
  return where(lt(zero), -*this, where(eq(zero), zero, *this));
}
Tensor Tensor::sign() const {
  if (dtype().is_bool()) return *this;
  Tensor zero = const_like(*this, 0), one = const_like(*this, 1);
  Tensor s = where(ne(zero), where(lt(zero), -one, one), zero);
  // sign(NaN) = NaN (x != x only for NaN); x*0 would also make sign(+-inf) NaN
  return dtype().is_float() ? where(ne(*this), *this, s) : s;
}
Tensor Tensor::relu() const {
  if (!dtype().is_float()) return maximum(const_like(*this, 0));
  // x where x > 0, else 0 (NaN stays NaN): the gradient is 0 at 0 (torch), where maximum(x, 0)
  // would split it between the tied sides
  Tensor zero = const_like(*this, 0);
  return where(gt(zero), *this, where(ne(*this), *this, zero));
}
Tensor Tensor::sigmoid() const {
  auto form = [](const Tensor& x) { return (1.0 + (-x).exp()).reciprocal(); };
  Tensor x = as_float(*this), s = form(x);
  // s (1 - s): the chain through exp would give 0 * inf = NaN at -inf (torch: 0). (The function
  // builds s again from x, the same node, rather than holding its own output.)
  set_gradient(s, {x}, [x, form](const Tensor& g) {
    Tensor again = form(x);
    return std::vector<Tensor>{g * again * (1.0 - again)};
  });
  return s;
}
Tensor Tensor::tanh() const {
  // 2 sigmoid(2x) - 1 cancels near 0 (tanh(1e-6) came out 5% off in float32, tanh(1e-8) as 0). Below
  // |x| = 0.3 the odd series to x^9 (its next term is under 1e-9 of the value there); above, with
  // t = exp(-2|x|) <= 0.55, (1 - t) / (1 + t) loses nothing. Each branch only sees inputs where it is
  // finite, so the select's gradient has no 0 * inf.
  Tensor x = as_float(*this), a = x.abs(), zero = const_like(x, 0);
  Tensor small = a.lt(const_like(x, 0.3)), xs = where(small, x, zero), x2 = xs * xs;  // (xs: the series never sees inf)
  Tensor series = xs + xs * x2 * (-1.0 / 3 + x2 * (2.0 / 15 + x2 * (-17.0 / 315 + x2 * (62.0 / 2835))));
  Tensor t = (a * -2.0).exp(), big = (1.0 - t) / (1.0 + t);
  return where(small, series, where(x.lt(zero), -big, big));
}
Tensor Tensor::gelu() const {
  Tensor x = as_float(*this);
  return 0.5 * x * (1.0 + (std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)).tanh());
}
Tensor Tensor::silu() const { return as_float(*this) * sigmoid(); }

Tensor Tensor::maximum(const Tensor& o) const { return binary(Ops::MAX, *this, o, "maximum"); }
Tensor Tensor::minimum(const Tensor& o) const {
  auto [x, y] = promote(*this, o, "minimum");
  if (x.dtype().is_float()) return -((-x).maximum(-y));  // keeps NaN propagation of MAX
  return where(x.lt(y), x, y);
}

Tensor Tensor::pow(const Tensor& o) const {
  auto [x, y] = promote(*this, o, "pow");
  if (!x.dtype().is_float()) x = x.cast(dtypes::default_float), y = y.cast(dtypes::default_float);
  return alu(Ops::POW, {x, y}, x.dtype());
}
Tensor Tensor::pow(double e) const {
  Tensor x = as_float(*this);
  if (e == 1) return x;
  if (e == 2) return x * x;
  if (e == 0.5) return x.sqrt();
  if (e == -1) return x.reciprocal();
  return x.pow(const_like(x, e));
}

Tensor Tensor::where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  Tensor c = cond.dtype().is_bool() ? cond : cond.ne(const_like(cond, 0));
  auto [x, y] = promote(a, b, "where");
  auto [c2, x2] = broadcast(c, x, "where");
  auto [c3, y2] = broadcast(c2, y, "where");
  auto [x3, y3] = broadcast(x2, y2, "where");
  return alu(Ops::WHERE, {c3, x3, y3}, x3.dtype());
}

Tensor Tensor::lt(const Tensor& o) const { return compare(Ops::CMPLT, *this, o, "lt"); }
Tensor Tensor::gt(const Tensor& o) const { return compare(Ops::CMPLT, o, *this, "gt"); }
Tensor Tensor::le(const Tensor& o) const { return lt(o) | eq(o); }
Tensor Tensor::ge(const Tensor& o) const { return gt(o) | eq(o); }
Tensor Tensor::eq(const Tensor& o) const { return compare(Ops::CMPEQ, *this, o, "eq"); }
Tensor Tensor::ne(const Tensor& o) const { return compare(Ops::CMPNE, *this, o, "ne"); }
Tensor Tensor::logical_not() const {
  if (!dtype().is_bool()) fail(ErrorCode::invalid_argument, "logical_not: needs a bool tensor, got ", dtype().name());
  return alu(Ops::CMPNE, {*this, const_like(*this, 1)}, dtypes::bool_);
}

Tensor Tensor::cast(DType d) const {
  if (d.is_ptr() || d.count() != 1 || d.is_void() || d.scalar() == Scalar::index)
    fail(ErrorCode::invalid_argument, "cast: ", d.name(), " is not a tensor element type");
  if (d == dtype()) return *this;
  return alu(Ops::CAST, {*this}, d);
}

namespace {
Tensor bitwise(Ops op, const Tensor& a, const Tensor& b, const char* name) {
  auto [x, y] = promote(a, b, name);
  if (x.dtype().is_float()) fail(ErrorCode::invalid_argument, name, ": needs integer or bool tensors, got ", x.dtype().name());
  return alu(op, {x, y}, x.dtype());
}
}  // namespace
Tensor operator&(const Tensor& a, const Tensor& b) { return bitwise(Ops::AND, a, b, "and"); }
Tensor operator|(const Tensor& a, const Tensor& b) { return bitwise(Ops::OR, a, b, "or"); }
Tensor operator^(const Tensor& a, const Tensor& b) { return bitwise(Ops::XOR, a, b, "xor"); }

Tensor operator+(double a, const Tensor& t) { return detail::const_like(t, a, t.dtype().is_float() ? t.dtype() : dtypes::default_float) + t; }
Tensor operator-(double a, const Tensor& t) { return detail::const_like(t, a, t.dtype().is_float() ? t.dtype() : dtypes::default_float) - t; }
Tensor operator*(double a, const Tensor& t) { return detail::const_like(t, a, t.dtype().is_float() ? t.dtype() : dtypes::default_float) * t; }
Tensor operator/(double a, const Tensor& t) { return detail::const_like(t, a, t.dtype().is_float() ? t.dtype() : dtypes::default_float) / t; }
Tensor operator+(const Tensor& t, double a) { return t + scalar_f(t, a); }
Tensor operator-(const Tensor& t, double a) { return t - scalar_f(t, a); }
Tensor operator*(const Tensor& t, double a) { return t * scalar_f(t, a); }
Tensor operator/(const Tensor& t, double a) { return t / scalar_f(t, a); }

}  // namespace kiln
