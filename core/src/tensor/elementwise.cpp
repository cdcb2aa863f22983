// tensor/elementwise.cpp - arithmetic, math functions, comparisons, where and casts, and the
// derivative of each elementwise primitive (elementwise_gradient, at the end).
//
// Math functions are compositions of the primitive ops (EXP2, LOG2, SIN, SQRT, RECIPROCAL, ...);
// integer inputs to float functions compute in float32, as numpy computes in float.
#include <cmath>
#include <limits>

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
  // 0.5 x (1 + tanh(u)) is x sigmoid(2u): one exp and no select where tanh has two branches (4.6x
  // faster on 4M floats), and no cancellation in 1 + tanh(u) for large negative x, where the tanh
  // form loses every digit (gelu(-10) came out 0 instead of -7.6e-22).
  Tensor x = as_float(*this);
  return x * ((2.0 * std::sqrt(2.0 / M_PI)) * (x + 0.044715 * x * x * x)).sigmoid();
}
Tensor Tensor::silu() const { return as_float(*this) * sigmoid(); }

Tensor Tensor::maximum(const Tensor& o) const { return binary(Ops::MAX, *this, o, "maximum"); }
Tensor Tensor::minimum(const Tensor& o) const {
  auto [x, y] = promote(*this, o, "minimum");
  if (x.dtype().is_float()) return -((-x).maximum(-y));  // keeps NaN propagation of MAX
  return where(x.lt(y), x, y);
}

namespace {
// integer ** integer stays an integer (torch, tinygrad): square and multiply over the exponent's
// bits, wrapping as integer multiplication does. A negative exponent gives 1 for base 1, +-1 for
// base -1 (by parity) and 0 otherwise (the truncated value of base ** e, as torch).
Tensor int_pow(const Tensor& x, const Tensor& e) {
  Tensor one = scalar_like(x, 1), zero = scalar_like(x, 0);
  Tensor result = Tensor::where(e.eq(e), one, one), base = x, rest = e;  // (result: broadcast to the common shape)
  int bits = static_cast<int>(x.dtype().itemsize()) * 8 - (x.dtype().is_unsigned() ? 0 : 1);
  for (int i = 0; i < bits; ++i) {
    Tensor odd = (rest & one).ne(zero);
    result = Tensor::where(odd, result * base, result);
    base = base * base;
    rest = rest.idiv(scalar_like(x, 2));
  }
  if (x.dtype().is_unsigned()) return result;
  Tensor neg_one = scalar_like(x, -1), e_odd = (e & one).ne(zero);
  Tensor negative = Tensor::where(x.eq(one), one, Tensor::where(x.eq(neg_one), Tensor::where(e_odd, neg_one, one), zero));
  return Tensor::where(e.lt(zero), negative, result);
}
}  // namespace

Tensor Tensor::pow(const Tensor& o) const {
  auto [x, y] = promote(*this, o, "pow");
  if (x.dtype().is_int()) return int_pow(x, y);
  if (!x.dtype().is_float()) x = x.cast(dtypes::default_float), y = y.cast(dtypes::default_float);
  // pow(-inf, e) as C and torch: inf for e > 0, 0 for e < 0, 1 for e = 0, negated for an odd integer
  // e; the kernel's rule for a negative base (NaN unless e is an integer) would make it NaN
  constexpr double kInf = std::numeric_limits<double>::infinity();
  Tensor zero = const_like(y, 0), half = y * 0.5;
  Tensor odd = y.eq(y.trunc()) & half.trunc().ne(half);
  Tensor mag = where(y.gt(zero), const_like(y, kInf), where(y.lt(zero), zero, const_like(y, 1)));
  Tensor out = where(x.eq(const_like(x, -kInf)), where(odd, -mag, mag), alu(Ops::POW, {x, y}, x.dtype()));
  // the derivative is POW's own (below), also at -inf, where the select above would pass none
  set_gradient(out, {x, y}, [x, y](const Tensor& g) {
    Tensor z = const_like(g, 0), self = x.pow(y);
    Tensor db = where(y.eq(z), z, g * y * x.pow(y - 1.0));
    Tensor de = where(x.eq(z), where(y.ge(z), z, g * self * x.log()), g * self * x.log());
    return std::vector<Tensor>{db, de};
  });
  return out;
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

// ---------------------------------------------------------------------------------------------
// gradients (tensor/gradient.cpp runs them; torch's conventions at the kinks, docs/autograd.md)

namespace {

constexpr double kLn2 = 0.69314718055994530942;

// torch's rule for elementwise max: the larger side takes the gradient, ties split it evenly.
Tensor max_share(const Tensor& g, const Tensor& a, const Tensor& b) {
  return Tensor::where(a.gt(b), g, Tensor::where(a.eq(b), g * 0.5, const_like(g, 0)));
}

}  // namespace

// Every elementwise op is named (the other kinds' labels come from ops.def), so a new one does
// not compile until it has its derivative here or is listed as passing none (and in ops.def's
// NotDifferentiable: tests/tensor/gradient_rules_test.cpp checks that the two agree) or as
// having none at all.
ElementwiseGradient detail::elementwise_gradient(Ops op) {
  switch (op) {
    case Ops::ADD: return [](const GradArgs& a) -> Grads { return {a.g, a.g}; };
    case Ops::SUB: return [](const GradArgs& a) -> Grads { return {a.g, -a.g}; };
    case Ops::MUL: return [](const GradArgs& a) -> Grads { return {a.g * a.src(1), a.g * a.src(0)}; };
    case Ops::FDIV:
      return [](const GradArgs& a) -> Grads { return {a.g / a.src(1), -a.g * a.src(0) / (a.src(1) * a.src(1))}; };
    case Ops::NEG: return [](const GradArgs& a) -> Grads { return {-a.g}; };
    case Ops::MAX:
      return [](const GradArgs& a) -> Grads { return {max_share(a.g, a.src(0), a.src(1)), max_share(a.g, a.src(1), a.src(0))}; };
    // torch at the kinks: d/dbase is 0 where the exponent is 0 (pow(0, 0) would give 0 * inf);
    // d/dexponent is 0 where the base is 0 and the exponent >= 0 (log(0) = -inf)
    case Ops::POW:
      return [](const GradArgs& a) -> Grads {
        Tensor b = a.src(0), e = a.src(1), zero = const_like(a.g, 0);
        Tensor db = Tensor::where(e.eq(zero), zero, a.g * e * b.pow(e - 1.0));
        Tensor de = Tensor::where(b.eq(zero), Tensor::where(e.ge(zero), zero, a.g * a.self() * b.log()), a.g * a.self() * b.log());
        return {db, de};
      };
    case Ops::EXP2: return [](const GradArgs& a) -> Grads { return {a.g * a.self() * kLn2}; };
    case Ops::LOG2: return [](const GradArgs& a) -> Grads { return {a.g / (a.src(0) * kLn2)}; };
    case Ops::SQRT: return [](const GradArgs& a) -> Grads { return {a.g / (a.self() * 2.0)}; };
    case Ops::SIN: return [](const GradArgs& a) -> Grads { return {a.g * a.src(0).cos()}; };
    case Ops::RECIPROCAL: return [](const GradArgs& a) -> Grads { return {-a.g * a.self() * a.self()}; };
    case Ops::WHERE:
      return [](const GradArgs& a) -> Grads {
        Tensor cond = a.src(0), zero = const_like(a.g, 0);
        return {std::nullopt, Tensor::where(cond, a.g, zero), Tensor::where(cond, zero, a.g)};
      };
    case Ops::CAST:
      return [](const GradArgs& a) -> Grads {
        DType from = a.src(0).dtype();
        return {from.is_float() ? std::optional<Tensor>(a.g.cast(from)) : std::nullopt};
      };
    // none, on purpose: ops.def's NotDifferentiable
    case Ops::CMPLT: case Ops::CMPNE: case Ops::CMPEQ: case Ops::AND: case Ops::OR: case Ops::XOR: case Ops::SHL: case Ops::SHR:
    case Ops::IDIV: case Ops::MOD: case Ops::THREEFRY: case Ops::TRUNC: case Ops::BITCAST:
      return nullptr;
    // none, and an error if a backward pass meets it: codegen fuses MULACC, a tensor graph has none
    // (GradientKinks.AnOpWithoutARuleIsAnErrorNamingIt builds one to see the error)
    case Ops::MULACC:
      return nullptr;
    // not elementwise: tensor/gradient.cpp's rules
#define KILN_NOT_ELEMENTWISE_Unary(name)
#define KILN_NOT_ELEMENTWISE_Binary(name)
#define KILN_NOT_ELEMENTWISE_Ternary(name)
#define KILN_NOT_ELEMENTWISE_Cast(name)
#define KILN_NOT_ELEMENTWISE_KernelOnly(name) case Ops::name:
#define KILN_NOT_ELEMENTWISE_Movement(name) case Ops::name:
#define KILN_NOT_ELEMENTWISE_TensorOnly(name) case Ops::name:
#define KILN_NOT_ELEMENTWISE_ProgramLevel(name) case Ops::name:
#define KILN_OP(name, kind, lir, doc) KILN_NOT_ELEMENTWISE_##kind(name)
#include "kiln/ops.def"
      return nullptr;
  }
  return nullptr;
}

}  // namespace kiln
