// codegen/transcendental.cpp - exp2, log2 and sin from +, *, compares and bit manipulation.
//
// For targets without these functions (the CPU's freestanding C has no libm, HIP without the
// device libraries has none). Built per lane, so vectors stay vectors.
//  exp2(x)  x clamped to [-150, 128] ([-1075, 1024]); n = round(x), f = x - n in [-1/2, 1/2];
//           2^f by its Taylor series in f*ln2 (degree 7 for float32, 13 for float64); 2^n applied
//           as two exponent-field scalings so results down to the subnormal range are exact and
//           the clamp's ends give inf and 0. NaN stays NaN.
//  log2(x)  x = m * 2^e with m in [sqrt(1/2), sqrt(2)) (subnormals pre-scaled by 2^64);
//           ln(m) = 2 atanh((m-1)/(m+1)) as an odd series. x < 0 and NaN give NaN, 0 gives -inf,
//           inf gives inf.
//  sin(x)   |x| = k*pi/2 + r: Cody-Waite (pi/2 in exact-product parts, in float64 when the
//           target has it) for moderate |x|, Payne-Hanek (integer arithmetic on the bits of 2/pi)
//           above 6000 (1e5 for float64 inputs or float64 arithmetic), so every float type is
//           accurate over its whole range; sin/cos of r by Taylor series, chosen by k mod 4; the
//           sign of x restored. inf and NaN give NaN.
#include <cmath>
#include <tuple>

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

// v * 2^n for an integer n in [-(bias+mant), bias+1]: two exponent-field scalings (n split
// by an arithmetic shift), applied one after the other so no intermediate overflows
UOp ldexp_int(const UOp& v, const UOp& n, const B& b) {
  bool dbl = b.f.scalar_size() == 8;
  int64_t bias = dbl ? 1023 : 127, shift = dbl ? 52 : 23;
  UOp n1 = UOp::alu(Ops::SHR, {n, b.ci(1)}), n2 = n - n1;
  auto scale = [&](const UOp& e) { return UOp::alu(Ops::SHL, {e + b.ci(bias), b.ci(shift)}).bitcast(b.f); };
  return (v * scale(n1)) * scale(n2);
}

}  // namespace

UOp exp2_poly(const UOp& x) {
  B b{x.dtype()};
  bool dbl = b.f.scalar_size() == 8;
  double hi = dbl ? 1024 : 128, lo = dbl ? -1075 : -150;
  // Clamped by compare and select, not MAX/MIN (which also propagate NaN: twice the ops); NaN is
  // restored last. The clamp alone gives the edges: 2^hi overflows to inf and 2^lo rounds to 0.
  UOp xc = x.lt(b.c(lo)).where(b.c(lo), x);
  xc = b.c(hi).lt(xc).where(b.c(hi), xc);
  // round to nearest even by adding 1.5 * 2^mant: the sum has no fraction bits left, and its
  // low bits are n as an integer (one add, one subtract; |xc| < 2^22 keeps one binade)
  UOp magic = b.c(dbl ? 0x1.8p52 : 0x1.8p23);
  UOp t = xc + magic;
  UOp n = t - magic;
  UOp ni = t.bitcast(b.ity()) - magic.bitcast(b.ity());
  UOp f = (xc - n) * b.c(M_LN2);
  // |f| <= ln2/2: the first omitted term is below 6e-9 (float32) and 5e-18 (float64) relative
  int degree = dbl ? 13 : 7;
  std::vector<double> coef;
  double fact = 1;
  for (int k = 0; k <= degree; ++k) {
    if (k) fact *= k;
    coef.push_back(1 / fact);
  }
  UOp r = ldexp_int(horner(f, coef, b), ni, b);
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

namespace {

// Reduction of a >= 0 modulo pi/2 for large a: returns (r, q) with a = q*pi/2 + r, |r| <= pi/4
// (q mod 4 is what matters). `a` holds float32 values; r comes out in b.f.
//
// Payne-Hanek: a = m * 2^E with m a 24-bit integer. a*(2/pi) mod 4 only needs the bits of 2/pi
// from position E-1 on (earlier bits make multiples of 4) and ~90 bits after it, so three 32-bit
// words of 2/pi, shifted into place, times m in 64-bit fixed point give the quadrant (top two
// bits) and the fraction (the rest) without any rounding of large products.
std::pair<UOp, UOp> payne_hanek(const UOp& a, const B& b) {
  int n = a.dtype().count();
  DType u32 = dtypes::uint32.vec(n), u64 = dtypes::uint64.vec(n), i32 = dtypes::int32.vec(n);
  auto k32 = [&](uint64_t v) { return UOp::make(Ops::CONST, u32, {}, Arg{static_cast<int64_t>(v)}); };
  auto k64 = [&](uint64_t v) { return UOp::make(Ops::CONST, u64, {}, Arg{static_cast<int64_t>(v)}); };
  auto ki = [&](int64_t v) { return UOp::cint(i32, v); };
  auto shl = [](const UOp& x, const UOp& s) { return UOp::alu(Ops::SHL, {x, s}); };
  auto shr = [](const UOp& x, const UOp& s) { return UOp::alu(Ops::SHR, {x, s}); };
  // bits of 2/pi after the binary point, 32 at a time, behind one zero word (for small E)
  static const uint64_t W[8] = {0,          0xa2f9836e, 0x4e441529, 0xfc2757d1,
                                0xf534ddc0, 0xdb629599, 0x3c439041, 0xfe5163ab};
  UOp bits = a.cast(dtypes::float32.vec(n)).bitcast(u32);
  UOp e = (shr(bits, k32(23)) & k32(0xff)).cast(i32) - ki(150);        // a = m * 2^e
  UOp m = ((bits & k32(0x7fffff)) | k32(0x800000)).cast(u64);
  UOp pos = (e + ki(30)).maximum(ki(0));                                // bit E-1 of 2/pi in W
  UOp word = pos.idiv(ki(32)), sh = (pos & ki(31)).cast(u64);
  auto take = [&](int k) {  // W[word + k], word in 0..4 (e <= 104 for float32)
    UOp w = k64(W[4 + k]);
    for (int j = 3; j >= 0; --j) w = word.eq(ki(j)).where(k64(W[j + k]), w);
    return w;
  };
  UOp w0 = take(0), w1 = take(1), w2 = take(2), w3 = take(3);
  UOp back = k64(32) - sh, low = k64(0xffffffff);
  UOp hi = (shl(w0, sh) | shr(w1, back)) & low;
  UOp mi = (shl(w1, sh) | shr(w2, back)) & low;
  UOp lo = (shl(w2, sh) | shr(w3, back)) & low;
  UOp p = shl(m * hi, k64(32)) + m * mi + shr(m * lo, k64(32));  // m * 2/pi-window, mod 2^64
  UOp q = shr(p, k64(62)).cast(i32);
  UOp frac = shl(p, k64(2));
  bool dbl = b.f.scalar_size() == 8;
  UOp f = dbl ? frac.cast(b.f) * b.c(std::ldexp(1.0, -64)) : shr(frac, k64(40)).cast(b.f) * b.c(std::ldexp(1.0, -24));
  UOp up = f.lt(b.c(0.5)).logical_not();  // round the quadrant to nearest
  f = up.where(f - b.c(1), f);
  q = up.where(q + ki(1), q);
  return {f * b.c(M_PI_2), q};
}

// The same for float64 a >= 1e5: a = m * 2^e with m a 53-bit integer, e up to 971, so the window
// of 2/pi starts anywhere in its first ~1000 bits. m times a 128-bit window, in 32-bit limbs
// (every partial product fits 64 bits), mod 2^128: the top two bits are the quadrant, the 126
// below the fraction, which keeps ~60 significant bits even when it is tiny (the worst double
// for this has 61 leading zeros after the quadrant).
std::pair<UOp, UOp> payne_hanek64(const UOp& a, const B& b) {
  int n = a.dtype().count();
  DType u64 = dtypes::uint64.vec(n), i32 = dtypes::int32.vec(n), f64 = dtypes::float64.vec(n);
  auto k64 = [&](uint64_t v) { return UOp::make(Ops::CONST, u64, {}, Arg{static_cast<int64_t>(v)}); };
  auto ki = [&](int64_t v) { return UOp::cint(i32, v); };
  auto shl = [](const UOp& x, const UOp& s) { return UOp::alu(Ops::SHL, {x, s}); };
  auto shr = [](const UOp& x, const UOp& s) { return UOp::alu(Ops::SHR, {x, s}); };
  // 1184 bits of 2/pi after the binary point (37 words), behind two zero words (e >= -35 here)
  static const uint64_t T[39] = {
    0, 0,
    0xa2f9836e, 0x4e441529, 0xfc2757d1, 0xf534ddc0, 0xdb629599, 0x3c439041,
    0xfe5163ab, 0xdebbc561, 0xb7246e3a, 0x424dd2e0, 0x06492eea, 0x09d1921c,
    0xfe1deb1c, 0xb129a73e, 0xe88235f5, 0x2ebb4484, 0xe99c7026, 0xb45f7e41,
    0x3991d639, 0x835339f4, 0x9c845f8b, 0xbdf9283b, 0x1ff897ff, 0xde05980f,
    0xef2f118b, 0x5a0a6d1f, 0x6d367ecf, 0x27cb09b7, 0x4f463f66, 0x9e5fea2d,
    0x7527bac7, 0xebe5f17b, 0x3d0739f7, 0x8a5292ea, 0x6bfb5fb1, 0x1f8d5d08,
    0x56033046,
  };
  UOp bits = a.bitcast(u64);
  UOp e = (shr(bits, k64(52)) & k64(0x7ff)).cast(i32) - ki(1075);   // a = m * 2^e
  UOp m = (bits & k64((uint64_t{1} << 52) - 1)) | k64(uint64_t{1} << 52);
  UOp t = e + ki(62);                                                 // bit e-1 of 2/pi in T
  UOp word = t.idiv(ki(32)), sh = (t & ki(31)).cast(u64);
  auto take = [&](int k) {  // T[word + k], word in 0..32
    UOp w = k64(T[32 + k]);
    for (int j = 31; j >= 0; --j) w = word.eq(ki(j)).where(k64(T[j + k]), w);
    return w;
  };
  UOp tw[5];
  for (int k = 0; k < 5; ++k) tw[k] = take(k);
  UOp back = k64(32) - sh, low = k64(0xffffffff);
  UOp w[4];  // the window, most significant limb first
  for (int k = 0; k < 4; ++k) w[k] = (shl(tw[k], sh) | shr(tw[k + 1], back)) & low;
  UOp m1 = shr(m, k64(32)), m0 = m & low;
  auto lo = [&](const UOp& x) { return x & low; };
  auto hi = [&](const UOp& x) { return shr(x, k64(32)); };
  // limb c of the product collects m_a * w_b with (1 - a) + (3 - b) = c (w[3] is the lowest)
  UOp p00 = m0 * w[3], p01 = m0 * w[2], p02 = m0 * w[1], p03 = m0 * w[0];
  UOp p10 = m1 * w[3], p11 = m1 * w[2], p12 = m1 * w[1];
  UOp c1 = hi(p00) + lo(p01) + lo(p10);
  UOp c2 = hi(p01) + hi(p10) + lo(p02) + lo(p11) + hi(c1);
  UOp c3 = hi(p02) + hi(p11) + lo(p03) + lo(p12) + hi(c2);
  UOp l1 = lo(c1), l2 = lo(c2), l3 = lo(c3);
  // round the quadrant to nearest: above one half, the fraction is minus its complement
  UOp up = (shr(l3, k64(29)) & k64(1)).ne(k64(0));
  UOp f3 = (up.where(l3 ^ k64(0x3fffffff), l3)) & k64(0x3fffffff);
  UOp f2 = up.where(l2 ^ low, l2), f1 = up.where(l1 ^ low, l1);
  UOp f = (f1.cast(f64) * b.c(std::ldexp(1.0, -94)) + f2.cast(f64) * b.c(std::ldexp(1.0, -62))) +
          f3.cast(f64) * b.c(std::ldexp(1.0, -30));
  f = up.where(f.neg(), f);
  UOp q = shr(l3, k64(30)).cast(i32) + up.cast(i32);
  return {f * b.c(M_PI_2), q};
}

// Cody-Waite: a - k*pi/2 with pi/2 in three parts whose products with k stay exact while k is
// small (2^20 in float64, 2^12 for the float32 parts).
std::pair<UOp, UOp> cody_waite(const UOp& a, const B& b) {
  bool dbl = b.f.scalar_size() == 8;
  // float32: pi/2 to 12, 12, 12 and 24 significant bits (products with k < 2^12 are exact)
  const double p1 = dbl ? 1.5707963267341256e+00 : 1.57080078125, p2 = dbl ? 6.0771005065061922e-11 : -4.453584551811218e-06,
               p3 = dbl ? 2.0222662487959506e-21 : -8.706138032721356e-10, p4 = dbl ? 0 : 6.223371969669989e-14;
  UOp k = round_float(a * b.c(M_2_PI), b);
  UOp r = ((a - k * b.c(p1)) - k * b.c(p2)) - k * b.c(p3);
  if (p4 != 0) r = r - k * b.c(p4);
  return {r, k.cast(dtypes::int32.vec(a.dtype().count()))};
}

}  // namespace

UOp sin_poly(const UOp& x, bool use_f64) {
  DType in = x.dtype();
  DType f = use_f64 ? dtypes::float64.vec(in.count()) : in;
  B b{f};
  bool in64 = in.scalar_size() == 8;
  UOp finite = (x - x).eq(x - x);  // inf - inf and NaN - NaN are NaN
  UOp ax = finite.where(x.lt(UOp::cvalue(in, 0)).where(x.neg(), x), UOp::cvalue(in, 0));
  UOp af = f == in ? ax : ax.cast(f);
  UOp r, q;
  {  // every float type reduces exactly over its whole range
    UOp big = (f.scalar_size() == 8 ? b.c(1e5) : b.c(6000)).lt(af);
    // Cody-Waite sees 0 instead of large values: k = round(a * 2/pi) must fit its integer type
    auto [rs, qs] = cody_waite(big.where(b.c(0), af), b);
    auto [rl, ql] = in64 ? payne_hanek64(ax, b) : payne_hanek(ax, b);
    r = big.where(rl, rs);
    q = big.where(ql, qs);
  }
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
  DType qi = dtypes::int32.vec(in.count());
  UOp odd = (q & UOp::cint(qi, 1)).ne(UOp::cint(qi, 0)), neg = (q & UOp::cint(qi, 2)).ne(UOp::cint(qi, 0));
  UOp v = odd.where(c, s);
  v = neg.where(v.neg(), v);
  UOp out = f == in ? v : v.cast(in);
  out = x.lt(UOp::cvalue(in, 0)).where(out.neg(), out);  // sin(-x) = -sin(x)
  return finite.where(out, UOp::cvalue(in, NAN));
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
