// tensor/math.cpp - the elementwise math of tinygrad's Tensor beyond the primitives: rounding,
// classification (isinf/isnan), inverse trig and hyperbolic functions, erf, the activations of
// torch.nn.functional, Python's division semantics (floor division and remainder), shifts, and the
// small reductions built on them (any/all, logsumexp, normalize).
//
// Everything is a composition of existing Tensor ops, so autograd follows. Where the composition's
// own derivative would be imprecise or wrong at the edges (a polynomial approximation, a 0 * inf
// from a select's dead branch), the function registers torch's closed-form derivative instead
// (set_gradient). Branches of a select only see inputs where they are finite.
#include <cmath>
#include <limits>

#include "tensor/tensor_state.hpp"

namespace kiln {

using namespace detail;

namespace {

Tensor as_float(const Tensor& t) { return t.dtype().is_float() ? t : t.cast(dtypes::default_float); }
Tensor zero_of(const Tensor& t) { return const_like(t, 0); }
Tensor c(const Tensor& like, double v) { return const_like(like, v); }

// op applied to x, with d(op)/dx = deriv(x) (torch's formula) instead of the composition's.
template <typename Fwd, typename Deriv>
Tensor with_derivative(const Tensor& x, Fwd fwd, Deriv deriv) {
  Tensor out = fwd(x);
  set_gradient(out, {x}, [x, deriv](const Tensor& g) { return std::vector<Tensor>{g * deriv(x)}; });
  return out;
}

// asin on [-1, 1] from Abramowitz & Stegun 4.4.46 (|error| <= 2e-8): pi/2 - sqrt(1 - |x|) p(|x|),
// with the sign of x. Outside the domain sqrt gives NaN, as torch. Below |x| = 0.25 the difference
// from pi/2 cancels (asin(0) came out 1.2e-7 in float32), so there it is the odd series to x^11
// (the next term is under 2e-9 of the value).
Tensor asin_value(const Tensor& x) {
  static const double k[] = {-0.0012624911, 0.0066700901, -0.0170881256, 0.0308918810,
                             -0.0501743046, 0.0889789874, -0.2145988016, 1.5707963050};
  Tensor a = x.abs(), p = c(x, k[0]);
  for (int i = 1; i < 8; ++i) p = p * a + k[i];
  Tensor v = M_PI_2 - (1.0 - a).sqrt() * p;
  Tensor small = a.lt(c(x, 0.25)), xs = Tensor::where(small, x, zero_of(x)), x2 = xs * xs;
  Tensor series = xs + xs * x2 * (1.0 / 6 + x2 * (3.0 / 40 + x2 * (5.0 / 112 + x2 * (35.0 / 1152 + x2 * (63.0 / 2816)))));
  return Tensor::where(small, series, Tensor::where(x.lt(zero_of(x)), -v, v));
}

// A zero result takes the dividend's sign, as C's fmod (and torch's remainder, built on it) give it;
// the subtraction would give +0.0. (A zero result means a finite dividend, so a * 0 is that zero.)
Tensor zero_with_sign_of(const Tensor& r, const Tensor& a) { return Tensor::where(r.eq(zero_of(r)), a * 0.0, r); }

}  // namespace

// ---- rounding -------------------------------------------------------------------------------

Tensor Tensor::trunc() const {
  if (!dtype().is_float()) return *this;
  return alu(Ops::TRUNC, {*this}, dtype());
}
Tensor Tensor::floor() const {
  if (!dtype().is_float()) return *this;
  Tensor b = trunc();
  return where(lt(b), b - 1.0, b);
}
Tensor Tensor::ceil() const {
  if (!dtype().is_float()) return *this;
  Tensor b = trunc();
  return where(gt(b), b + 1.0, b);
}
Tensor Tensor::round() const {
  if (!dtype().is_float()) return *this;
  // half to even from f = floor(x) and frac = x - f (exact in binary floating point, so the
  // halfway test is too; x + 0.5 would round before the floor): up to f + 1 when frac > 1/2, or
  // when frac = 1/2 and f is odd; else f. A zero result keeps x's sign (round(-0.4) = -0.0, as
  // torch); inf and nan are their own rounding.
  Tensor f = floor(), frac = *this - f;
  Tensor half = frac.eq(c(*this, 0.5));
  Tensor up = f + 1.0, f_odd = (f * 0.5).trunc().ne(f * 0.5);
  Tensor r = where(frac.gt(c(*this, 0.5)), up, where(half, where(f_odd, up, f), f));
  r = where(r.eq(zero_of(r)), *this * 0.0, r);
  return where(isfinite(), r, *this);
}

// ---- classification -------------------------------------------------------------------------

Tensor Tensor::isnan() const { return ne(*this); }
Tensor Tensor::isinf(bool detect_positive, bool detect_negative) const {
  Tensor no = const_like(*this, 0, dtypes::bool_);
  if (!dtype().is_float()) return no;
  Tensor pos = detect_positive ? eq(c(*this, std::numeric_limits<double>::infinity())) : no;
  Tensor neg = detect_negative ? eq(c(*this, -std::numeric_limits<double>::infinity())) : no;
  return pos | neg;
}
Tensor Tensor::isfinite() const { return (isinf() | isnan()).logical_not(); }

// ---- trig, hyperbolic, log10, erf -----------------------------------------------------------

Tensor Tensor::asin() const {
  return with_derivative(as_float(*this), asin_value, [](const Tensor& x) { return (1.0 - x * x).rsqrt(); });
}
Tensor Tensor::acos() const {
  return with_derivative(as_float(*this), [](const Tensor& x) { return M_PI_2 - asin_value(x); },
                         [](const Tensor& x) { return -(1.0 - x * x).rsqrt(); });
}
Tensor Tensor::atan() const {
  // atan(x) = asin(x / sqrt(1 + x^2)) for |x| <= 1; beyond, pi/2 - atan(1/|x|) keeps the argument
  // of asin away from 1, where its value would be ill-conditioned
  auto fwd = [](const Tensor& x) {
    Tensor a = x.abs(), big = a.gt(c(x, 1));
    Tensor r = Tensor::where(big, a.reciprocal(), a);
    Tensor v = asin_value(r * (r * r + 1.0).rsqrt());
    v = Tensor::where(big, M_PI_2 - v, v);
    return Tensor::where(x.lt(zero_of(x)), -v, v);
  };
  return with_derivative(as_float(*this), fwd, [](const Tensor& x) { return (x * x + 1.0).reciprocal(); });
}
// exp(|x| - ln 2) rather than exp(|x|) / 2: the latter overflows float32 for |x| in (88.7, 89.4],
// where sinh and cosh are still finite. Below |x| = 0.3, sinh is its odd series to x^7 (the next
// term is under 2e-10 of the value there): the difference of exponentials cancels near 0.
Tensor Tensor::sinh() const {
  Tensor x = as_float(*this), zero = zero_of(x);
  Tensor small = x.abs().lt(c(x, 0.3)), xs = where(small, x, zero), x2 = xs * xs;
  Tensor series = xs + xs * x2 * (1.0 / 6 + x2 * (1.0 / 120 + x2 * (1.0 / 5040)));
  return where(small, series, (x - M_LN2).exp() - (-x - M_LN2).exp());
}
Tensor Tensor::cosh() const {
  Tensor x = as_float(*this);
  return (x - M_LN2).exp() + (-x - M_LN2).exp();
}
Tensor Tensor::asinh() const {
  // odd: sign(x) log(|x| + sqrt(x^2 + 1)); the form with x itself cancels for large negative x.
  // Above 1e8 it is log(2|x|) to the last bit, and x^2 would overflow float32 from 1.8e19.
  auto fwd = [](const Tensor& x) {
    Tensor a = x.abs(), big = a.gt(c(x, 1e8)), small_a = Tensor::where(big, zero_of(x), a);
    Tensor v = Tensor::where(big, a.log() + M_LN2, (small_a + (small_a * small_a + 1.0).sqrt()).log());
    return Tensor::where(x.lt(zero_of(x)), -v, v);
  };
  return with_derivative(as_float(*this), fwd, [](const Tensor& x) { return (x * x + 1.0).rsqrt(); });
}
Tensor Tensor::acosh() const {
  auto fwd = [](const Tensor& x) {  // log(2x) above 1e8, as asinh
    Tensor big = x.gt(c(x, 1e8)), xs = Tensor::where(big, c(x, 1), x);
    return Tensor::where(big, x.log() + M_LN2, (xs + (xs * xs - 1.0).sqrt()).log());
  };
  return with_derivative(as_float(*this), fwd,
                         [](const Tensor& x) { return (x * x - 1.0).rsqrt(); });
}
Tensor Tensor::atanh() const {
  return with_derivative(as_float(*this), [](const Tensor& x) { return ((1.0 + x) / (1.0 - x)).log() * 0.5; },
                         [](const Tensor& x) { return (1.0 - x * x).reciprocal(); });
}
Tensor Tensor::log10() const { return log2() * 0.30102999566398119521; }
Tensor Tensor::erf() const {
  // Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7); derivative 2/sqrt(pi) exp(-x^2)
  auto fwd = [](const Tensor& x) {
    Tensor a = x.abs(), t = (a * 0.3275911 + 1.0).reciprocal();
    static const double k[] = {1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592};
    Tensor p = c(x, k[0]);
    for (int i = 1; i < 5; ++i) p = p * t + k[i];
    Tensor v = 1.0 - t * p * (-(a * a)).exp();
    return Tensor::where(x.lt(zero_of(x)), -v, Tensor::where(x.eq(zero_of(x)), x, v));
  };
  return with_derivative(as_float(*this), fwd, [](const Tensor& x) { return (-(x * x)).exp() * 1.12837916709551257390; });
}

// ---- activations ----------------------------------------------------------------------------

Tensor Tensor::softsign() const {
  Tensor x = as_float(*this);
  return x / (x.abs() + 1.0);
}
Tensor Tensor::softplus(double beta) const {
  // log(1 + exp(b x)) / b = (max(b x, 0) + log(exp(-|b x|) + 1)) / b: never overflows
  Tensor x = as_float(*this);
  return (x * beta).logaddexp(zero_of(x)) * (1.0 / beta);
}
Tensor Tensor::logsigmoid() const { return -(-as_float(*this)).softplus(); }
Tensor Tensor::hardsigmoid(double alpha, double beta) const {
  Tensor x = as_float(*this), y = x * alpha + beta, zero = zero_of(x);
  return where(y.le(zero), zero, where(y.ge(c(x, 1)), c(x, 1), y));
}
Tensor Tensor::gelu(const std::string& approximate) const {
  if (approximate == "tanh") return gelu();
  if (approximate == "none") {
    Tensor x = as_float(*this);
    return x * 0.5 * ((x * M_SQRT1_2).erf() + 1.0);
  }
  fail(ErrorCode::invalid_argument, "gelu: approximate must be 'tanh' or 'none', got '", approximate, "'");
}
Tensor Tensor::quick_gelu() const {
  Tensor x = as_float(*this);
  return x * (x * 1.702).sigmoid();
}
// elu and celu: the exponential branch sees only x <= 0 (exp of a large x would be inf, and the
// select's zero gradient times inf NaN); a select rather than minimum(x, 0), whose tie at 0 would
// halve torch's derivative there (alpha exp(0))
Tensor Tensor::elu(double alpha) const {
  Tensor x = as_float(*this), zero = zero_of(x), pos = x.gt(zero);
  return where(pos, x, (where(pos, zero, x).exp() - 1.0) * alpha);
}
Tensor Tensor::celu(double alpha) const {
  Tensor x = as_float(*this), zero = zero_of(x), pos = x.gt(zero);
  return where(pos, x, ((where(pos, zero, x) * (1.0 / alpha)).exp() - 1.0) * alpha);
}
Tensor Tensor::selu(double alpha, double gamma) const { return as_float(*this).elu(alpha) * gamma; }
Tensor Tensor::relu6() const { return hardtanh(0, 6); }
Tensor Tensor::hardswish() const {
  // torch's derivative: 0 up to -3, x/3 + 1/2 between, 1 from 3 on
  return with_derivative(as_float(*this), [](const Tensor& x) { return x * x.hardsigmoid(); },
                         [](const Tensor& x) {
                           Tensor three = c(x, 3);
                           return Tensor::where(x.le(-three), zero_of(x), Tensor::where(x.lt(three), x * (1.0 / 3) + 0.5, c(x, 1)));
                         });
}
Tensor Tensor::mish() const {
  Tensor x = as_float(*this);
  return x * x.softplus().tanh();
}
Tensor Tensor::hardtanh(double min_val, double max_val) const {
  Tensor x = as_float(*this), lo = c(x, min_val), hi = c(x, max_val);
  return where(x.le(lo), lo, where(x.ge(hi), hi, x));
}
Tensor Tensor::leaky_relu(double neg_slope) const {
  Tensor x = as_float(*this);
  return where(x.gt(zero_of(x)), x, x * neg_slope);
}
Tensor Tensor::swish() const { return silu(); }
Tensor Tensor::square() const { return *this * *this; }
Tensor Tensor::softmin(int axis) const { return (-as_float(*this)).softmax(axis); }
Tensor Tensor::bitwise_not() const {
  if (dtype().is_bool()) return logical_not();
  if (!dtype().is_int()) fail(ErrorCode::invalid_argument, "bitwise_not: needs an integer or bool tensor, got ", dtype().name());
  // (0 - x) - 1 wraps to ~x for signed and unsigned alike (no all-ones constant of uint64 in a double)
  Tensor zero = zero_of(*this);
  return alu(Ops::SUB, {zero, *this}, dtype()) - scalar_like(*this, 1);
}

// ---- binary ---------------------------------------------------------------------------------

Tensor Tensor::lerp(const Tensor& end, const Tensor& weight) const { return *this + (end - *this) * weight; }
Tensor Tensor::copysign(const Tensor& sign) const {
  auto [a, b] = promote(*this, sign, "copysign");
  Tensor zero = zero_of(b);
  // -0.0 < 0 is false; its reciprocal -inf tells it apart
  Tensor negative = b.dtype().is_float() ? (b.lt(zero) | b.reciprocal().lt(zero)) : b.lt(zero);
  Tensor mag = a.abs();
  return where(negative, -mag, mag);
}
Tensor Tensor::logaddexp(const Tensor& other) const {
  auto [a0, b0] = promote(*this, other, "logaddexp");
  Tensor a = as_float(a0), b = as_float(b0);
  // the shift m cancels analytically, so it takes no gradient; an infinite m shifts by 0 (inf - inf)
  Tensor m = a.maximum(b).detach();
  m = where(m.isfinite(), m, zero_of(m));
  return ((a - m).exp() + (b - m).exp()).log() + m;
}
Tensor Tensor::clip(const std::optional<Tensor>& min, const std::optional<Tensor>& max) const {
  if (!min && !max) fail(ErrorCode::invalid_argument, "clip: at least one of min and max must be given");
  Tensor r = *this;
  // torch's clamp passes no gradient at a bound that is reached (x == min or x == max)
  if (min) r = where(r.le(*min), *min, r);
  if (max) r = where(r.ge(*max), *max, r);
  return r;
}
Tensor Tensor::isclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  auto [a, b] = promote(*this, other, "isclose");
  Tensor finite = a.isfinite() & b.isfinite() & (a - b).abs().le(b.abs() * rtol + atol);
  Tensor inf_eq = (a.isinf() | b.isinf()) & a.eq(b);
  Tensor r = finite | inf_eq;
  return equal_nan ? r | (a.isnan() & b.isnan()) : r;
}
Tensor Tensor::allclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return isclose(other, rtol, atol, equal_nan).all();
}
Tensor Tensor::fmod(const Tensor& other) const {
  auto [a, b] = promote(*this, other, "fmod");
  if (a.dtype().is_int()) return a.mod(b);
  if (a.dtype().is_bool()) fail(ErrorCode::invalid_argument, "fmod: needs numeric tensors, got bool");
  // a finite dividend over an infinite divisor is itself (C): the quotient 0 times inf would be NaN
  return where(b.isinf() & a.isfinite(), a, zero_with_sign_of(a - (a / b).trunc() * b, a));
}
Tensor Tensor::div(const Tensor& other, const std::string& mode) const {
  if (mode != "" && mode != "trunc" && mode != "floor")
    fail(ErrorCode::invalid_argument, "div: rounding_mode must be None, 'trunc' or 'floor', got '", mode, "'");
  auto [a, b] = promote(*this, other, "div");
  if (mode == "" || !a.dtype().is_int()) {
    Tensor d = a / b;
    return mode == "trunc" ? d.trunc() : mode == "floor" ? d.floor() : d;
  }
  Tensor q = a.idiv(b);
  if (mode == "trunc" || a.dtype().is_unsigned()) return q;
  // C division truncates; floor is one less where the remainder is nonzero and its sign differs from b's
  Tensor r = a.mod(b), zero = zero_of(a);
  Tensor adjust = r.ne(zero) & r.lt(zero).ne(b.lt(zero));
  return where(adjust, q - scalar_like(q, 1), q);
}
Tensor Tensor::floordiv(const Tensor& other) const { return div(other, "floor"); }
Tensor Tensor::remainder(const Tensor& other) const {
  auto [a, b] = promote(*this, other, "remainder");
  if (a.dtype().is_bool()) fail(ErrorCode::invalid_argument, "remainder: needs numeric tensors, got bool");
  if (!a.dtype().is_int()) return zero_with_sign_of(a - (a / b).floor() * b, a);
  Tensor r = a.mod(b);
  if (a.dtype().is_unsigned()) return r;
  Tensor zero = zero_of(a);
  return where(r.ne(zero) & r.lt(zero).ne(b.lt(zero)), r + b, r);
}
Tensor Tensor::lshift(const Tensor& bits) const {
  auto [a, b] = promote(*this, bits, "lshift");
  if (!a.dtype().is_int())
    fail(ErrorCode::invalid_argument, "lshift: needs integer tensors, got ", dtype().name(), " and ", bits.dtype().name());
  return alu(Ops::SHL, {a, b}, a.dtype());
}
Tensor Tensor::rshift(const Tensor& bits) const {
  auto [a, b] = promote(*this, bits, "rshift");
  if (!a.dtype().is_int())
    fail(ErrorCode::invalid_argument, "rshift: needs integer tensors, got ", dtype().name(), " and ", bits.dtype().name());
  return alu(Ops::SHR, {a, b}, a.dtype());
}

// ---- reductions -----------------------------------------------------------------------------

// A count of the true elements, so that reducing nothing gives 0 (a max over a size-0 axis would
// give the identity of max, which is no bool).
Tensor Tensor::any(const std::vector<int>& axes, bool keepdim) const {
  Tensor n = cast(dtypes::bool_).cast(dtypes::int32).sum(axes, keepdim);
  return n.gt(zero_of(n));
}
Tensor Tensor::all(const std::vector<int>& axes, bool keepdim) const {
  Tensor n = cast(dtypes::bool_).logical_not().cast(dtypes::int32).sum(axes, keepdim);
  return n.eq(zero_of(n));
}
Tensor Tensor::logsumexp(const std::vector<int>& axes, bool keepdim) const {
  if (is_half_float(dtype())) return cast(dtypes::float32).logsumexp(axes, keepdim).cast(dtype());
  Tensor x = as_float(*this);
  if (x.ndim() == 0) {  // torch accepts dim 0 or -1 of a 0-d tensor: the value itself
    for (int a : axes)
      if (a != 0 && a != -1) fail(ErrorCode::invalid_argument, "logsumexp: axis ", a, " is out of range for a 0-d tensor");
    return x;
  }
  // the shift takes no gradient (it cancels); an infinite max shifts by 0 so that inf - inf is avoided
  Tensor m = x.max(axes, true).detach();
  m = where(m.isfinite(), m, zero_of(m));
  Tensor s = (x - m).exp().sum(axes, keepdim).log();
  return s + (keepdim ? m : m.reshape(s.shape()));
}
Tensor Tensor::normalize(double p, int dim, double eps) const {
  Tensor x = as_float(*this);
  Tensor den = p == 0 ? x.ne(zero_of(x)).cast(x.dtype()).sum({dim}, true) : x.abs().pow(p).sum({dim}, true).pow(1.0 / p);
  return x / den.maximum(c(den, eps));
}

}  // namespace kiln
