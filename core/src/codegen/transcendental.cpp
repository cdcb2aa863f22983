// codegen/transcendental.cpp - exp2, log2 and sin from +, *, compares and bit manipulation.
//
// For targets without these functions (the CPU's freestanding C has no libm, HIP without the
// device libraries has none). Built per lane, so vectors stay vectors.
//  exp2(x)  n = round(x), f = x - n in [-1/2, 1/2]; 2^f by its Taylor series in f*ln2 (degree 8
//           for float32, 13 for float64); 2^n applied as two exponent-field scalings so results
//           down to the subnormal range are exact. x >= 128 (1024) is inf, x below the smallest
//           subnormal is 0, NaN stays NaN.
//  log2(x)  x = m * 2^e with m in [sqrt(1/2), sqrt(2)) (subnormals pre-scaled by 2^64);
//           ln(m) = 2 atanh((m-1)/(m+1)) as an odd series. x < 0 and NaN give NaN, 0 gives -inf,
//           inf gives inf.
//  sin(x)   k = round(x * 2/pi), r = x - k*pi/2 with pi/2 split in three parts (Cody-Waite, in
//           float64 when the target has it), sin/cos of r by Taylor series, chosen by k mod 4.
//           inf and NaN give NaN. Accurate while k*pi/2 is exact, |x| < 2^20 * pi/2; beyond that
//           the error grows with |x|.
#include <cmath>

#include "codegen/passes.hpp"
#include "codegen/transcendental.hpp"

namespace kiln {

namespace {

struct B {
  DType f;  // float type (vector width included)
  UOp c(double v) const { return UOp::cvalue(f, v); }
  DType ity() const { return DType(f.scalar_size() == 8 ? Scalar::int64 : Scalar::int32, f.count()); }
  UOp ci(int64_t v) const { return UOp::cint(ity(), v); }
};

UOp horner(const UOp& x, const std::vector<double>& c, const B& b) {
  UOp acc = b.c(c.back());
  for (size_t i = c.size() - 1; i-- > 0;) acc = acc * x + b.c(c[i]);
  return acc;
}

// round to nearest (ties away from zero) as a float
UOp round_float(const UOp& x, const B& b) {
  UOp half = x.lt(b.c(0)).where(b.c(-0.5), b.c(0.5));
  return (x + half).cast(b.ity()).cast(b.f);
}

// v * 2^n for integer-valued float n in [-(bias+mant), bias+1]: two exponent-field scalings,
// applied one after the other so no intermediate overflows
UOp ldexp(const UOp& v, const UOp& n, const B& b) {
  bool dbl = b.f.scalar_size() == 8;
  int64_t bias = dbl ? 1023 : 127, shift = dbl ? 52 : 23;
  UOp ni = n.cast(b.ity());
  UOp n1 = ni.idiv(b.ci(2)), n2 = ni - n1;
  auto scale = [&](const UOp& e) { return ((e + b.ci(bias)) * b.ci(int64_t{1} << shift)).bitcast(b.f); };
  return (v * scale(n1)) * scale(n2);
}

}  // namespace

UOp exp2_poly(const UOp& x) {
  B b{x.dtype()};
  bool dbl = b.f.scalar_size() == 8;
  double hi = dbl ? 1024 : 128, lo = dbl ? -1075 : -150;
  UOp xc = x.maximum(b.c(lo)).minimum(b.c(hi));
  UOp n = round_float(xc, b);
  UOp f = (xc - n) * b.c(M_LN2);
  int degree = dbl ? 13 : 8;
  std::vector<double> coef;
  double fact = 1;
  for (int k = 0; k <= degree; ++k) {
    if (k) fact *= k;
    coef.push_back(1 / fact);
  }
  UOp r = ldexp(horner(f, coef, b), n, b);
  r = x.lt(b.c(hi)).logical_not().where(b.c(INFINITY), r);
  r = x.lt(b.c(lo)).where(b.c(0), r);
  return x.ne(x).where(x, r);
}

UOp log2_poly(const UOp& x) {
  B b{x.dtype()};
  bool dbl = b.f.scalar_size() == 8;
  int64_t shift = dbl ? 52 : 23, bias = dbl ? 1023 : 127;
  double tiny = dbl ? std::ldexp(1.0, -1022) : std::ldexp(1.0, -126);
  UOp sub = x.lt(b.c(tiny));
  UOp xs = sub.where(x * b.c(std::ldexp(1.0, 64)), x);
  UOp e_adj = sub.where(b.c(-64), b.c(0));
  UOp bits = xs.bitcast(b.ity());
  int64_t mant_mask = (int64_t{1} << shift) - 1;
  UOp e = ((bits.idiv(b.ci(int64_t{1} << shift))) & b.ci(dbl ? 0x7ff : 0xff)) - b.ci(bias);
  UOp m = ((bits & b.ci(mant_mask)) | b.ci(bias << shift)).bitcast(b.f);
  UOp big = b.c(M_SQRT2).lt(m);
  m = big.where(m * b.c(0.5), m);
  UOp ef = e.cast(b.f) + big.where(b.c(1), b.c(0)) + e_adj;
  UOp t = UOp::alu(Ops::FDIV, {m - b.c(1), m + b.c(1)});
  UOp t2 = t * t;
  std::vector<double> coef;
  for (int k = 0; k < (dbl ? 12 : 7); ++k) coef.push_back(1.0 / (2 * k + 1));
  UOp ln_m = t * horner(t2, coef, b) * b.c(2);
  UOp r = ef + ln_m * b.c(1 / M_LN2);
  r = x.eq(b.c(INFINITY)).where(x, r);
  r = x.eq(b.c(0)).where(b.c(-INFINITY), r);
  r = x.lt(b.c(0)).where(b.c(NAN), r);
  return x.ne(x).where(x, r);
}

UOp sin_poly(const UOp& x, bool use_f64) {
  DType in = x.dtype();
  DType f = use_f64 ? dtypes::float64.vec(in.count()) : in;
  B b{f};
  UOp xf = f == in ? x : x.cast(f);
  // pi/2 in three parts whose products with k < 2^20 are exact
  const double p1 = 1.5707963267341256e+00, p2 = 6.0771005065061922e-11, p3 = 2.0222662487959506e-21;
  UOp k = round_float(xf * b.c(M_2_PI), b);
  UOp r = ((xf - k * b.c(p1)) - k * b.c(p2)) - k * b.c(p3);
  UOp q = k.cast(b.ity()) & b.ci(3);
  UOp r2 = r * r;
  // Taylor series on |r| <= pi/4: sin up to r^15, cos up to r^16 (both below float64 epsilon)
  std::vector<double> sc, cc;
  double fact = 1;
  for (int n = 1; n <= 16; ++n) {
    fact *= n;
    if (n % 2) sc.push_back((n / 2 % 2 ? -1.0 : 1.0) / fact);
    else cc.push_back((n / 2 % 2 ? -1.0 : 1.0) / fact);
  }
  UOp s = r * horner(r2, sc, b);
  cc.insert(cc.begin(), 1.0);
  UOp c = horner(r2, cc, b);
  UOp odd = (q & b.ci(1)).ne(b.ci(0)), neg = (q & b.ci(2)).ne(b.ci(0));
  UOp v = odd.where(c, s);
  v = neg.where(v.neg(), v);
  UOp out = f == in ? v : v.cast(in);
  UOp inf_or_nan = (x - x).ne(x - x);  // inf - inf and NaN - NaN are NaN
  return inf_or_nan.where(UOp::cvalue(in, NAN), out);
}

UOp pow_decomposed(const UOp& x, const UOp& y, bool has_exp2_log2) {
  B b{x.dtype()};
  auto e2 = [&](const UOp& v) { return has_exp2_log2 ? UOp::alu(Ops::EXP2, {v}) : exp2_poly(v); };
  auto l2 = [&](const UOp& v) { return has_exp2_log2 ? UOp::alu(Ops::LOG2, {v}) : log2_poly(v); };
  UOp ax = x.lt(b.c(0)).where(x.neg(), x);
  UOp mag = e2(y * l2(ax));
  // negative bases: integer exponents give a signed result, others NaN
  UOp yi = y.ne(y).logical_not() & (y - y).eq(b.c(0));  // finite
  UOp y_int = yi & round_float(y, b).eq(y);
  UOp y_odd = y_int & (round_float(y * b.c(0.5), b) * b.c(2)).ne(y);
  UOp neg_base = x.lt(b.c(0));
  UOp signed_mag = y_odd.where(mag.neg(), mag);
  UOp r = neg_base.where(y_int.where(signed_mag, b.c(NAN)), mag);
  // x**0 is 1 even for NaN x; 1**y is 1 even for NaN y
  r = y.eq(b.c(0)).where(b.c(1), r);
  return x.eq(b.c(1)).where(b.c(1), r);
}

}  // namespace kiln
