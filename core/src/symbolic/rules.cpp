// symbolic/rules.cpp - symbolic_simple and symbolic. One-line rules first, named folds below them.
#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "ir/alu.hpp"
#include "ir/traverse.hpp"
#include "symbolic/bounds.hpp"
#include "symbolic/symbolic.hpp"

namespace kiln {

using namespace pat;

namespace {

// ---------------------------------------------------------------------------------------------
// constant folding

UOp fold_const_alu(const Match& m) {
  const UOp& u = m[r0];
  Value vals[3];
  for (size_t i = 0; i < u.nsrc(); ++i) vals[i] = value_of(u.src(i));
  DType in = u.op() == Ops::WHERE ? u.src(1).dtype() : u.src(0).dtype();
  auto v = exec_alu(u.op(), u.dtype(), in.scalar_type(), std::span<const Value>(vals, u.nsrc()));
  // undefined for these operands (a shift by the width) or no semantics for the dtype: left to the
  // backend as it is, never folded
  return v ? const_of(u.dtype(), *v) : UOp{};
}

UOp fold_const_cast(const Match& m) {
  const UOp& u = m[r0];
  const UOp& c = m[c0];
  auto v = u.op() == Ops::CAST ? exec_cast(c.dtype().scalar_type(), u.dtype().scalar_type(), value_of(c))
                               : exec_bitcast(c.dtype().scalar_type(), u.dtype().scalar_type(), value_of(c));
  return v ? const_of(u.dtype(), *v) : UOp{};
}

// ---------------------------------------------------------------------------------------------
// casts

UOp fold_noop_cast(const Match& m) { return m[r0].dtype() == m[x].dtype() ? m[x] : UOp{}; }

// Every value of `from` is representable in `to`.
bool lossless(DType from, DType to) {
  if (from == to) return true;
  if (from.is_bool()) return true;
  if (from.is_int() && to.is_int()) {
    if (from.is_unsigned() == to.is_unsigned()) return to.scalar_size() >= from.scalar_size();
    return !to.is_unsigned() && to.scalar_size() > from.scalar_size();
  }
  if (from.is_int() && to.is_float()) {
    int mant = to.scalar() == Scalar::float64 ? 53 : to.scalar() == Scalar::float32 ? 24 : to.scalar() == Scalar::float16 ? 11 : 8;
    return 8 * from.scalar_size() - (from.is_unsigned() ? 0 : 1) <= mant;
  }
  if (from.is_float() && to.is_float())
    return to.scalar() == Scalar::float64 || (to.scalar() == Scalar::float32 && from.scalar() != Scalar::float64);
  return false;
}

// x.cast(a).cast(b) -> x when b is x's dtype and a holds every value of it
UOp fold_double_cast(const Match& m) {
  const UOp& outer = m[r0];
  const UOp& inner = m[r1];
  if (outer.dtype() == m[x].dtype() && lossless(m[x].dtype().scalar_type(), inner.dtype().scalar_type())) return m[x];
  return {};
}

UOp cast_to_bool(const Match& m) {
  if (!m[r0].dtype().is_bool() || m[x].dtype().is_bool()) return {};
  return m[x].ne(m[x].const_like(0));
}

UOp fold_const_where(const Match& m) { return std::get<bool>(value_of(m[c0])) ? m[x] : m[y]; }

// An access whose gate always holds is not gated (PADTO's gate on a loop its tail was peeled from).
UOp drop_true_gate(const Match& m) { return m[r0].replace_src({m[x], m[y]}); }

// ---------------------------------------------------------------------------------------------
// canonical order and bounds

int64_t order_rank(const UOp& u) { return static_cast<int64_t>(u.op()); }

// Structural comparison, depth limited; ties beyond the limit fall back to the stable key.
int compare(const UOp& a, const UOp& b, int depth) {
  if (a == b) return 0;
  if (order_rank(a) != order_rank(b)) return order_rank(a) < order_rank(b) ? -1 : 1;
  if (a.op() == Ops::RANGE) {
    int64_t x0 = a.arg_ints()[0], x1 = b.arg_ints()[0];
    if (x0 != x1) return x0 < x1 ? -1 : 1;
  }
  if (a.op() == Ops::DEFINE_VAR) {
    const auto& n0 = std::get<NamedInts>(a.arg()).name;
    const auto& n1 = std::get<NamedInts>(b.arg()).name;
    if (n0 != n1) return n0 < n1 ? -1 : 1;
  }
  if (a.op() == Ops::CONST) {
    double v0 = as_double(value_of(a)), v1 = as_double(value_of(b));
    if (v0 != v1) return v0 < v1 ? -1 : 1;
  }
  if (depth > 0 && a.nsrc() == b.nsrc()) {
    for (size_t i = 0; i < a.nsrc(); ++i)
      if (int c = compare(a.src(i), b.src(i), depth - 1)) return c;
  }
  Key128 ka = a.key(), kb = b.key();
  return ka == kb ? 0 : (ka < kb ? -1 : 1);
}

UOp fold_by_bounds(const Match& m) {
  const UOp& u = m[r0];
  DType d = u.dtype();
  if (d.count() != 1 || !(d.is_int() || d.is_bool()) || d.scalar() == Scalar::uint64) return {};
  auto [lo, hi] = bounds(u);
  if (lo != hi) return {};
  return d.is_bool() ? UOp::cbool(lo != 0) : UOp::cint(d, lo);
}

UOp canonical_swap(const Match& m) {
  const UOp& u = m[r0];
  if (!(u.dtype().is_int() || u.dtype().is_bool()) && !u.src(0).is_const()) return {};
  return canonical_after(u.src(0), u.src(1)) ? u.replace_src({u.src(1), u.src(0)}) : UOp{};
}

bool int_scalar(const UOp& u) { return u.dtype().is_int() && u.dtype().count() == 1 && u.dtype().scalar() != Scalar::uint64; }

// x + c for every value of x stays in x's dtype: no wrap.
bool add_fits(const UOp& v, int64_t c) {
  int64_t lo, hi;
  return !__builtin_add_overflow(vmin(v), c, &lo) && !__builtin_add_overflow(vmax(v), c, &hi) && lo >= v.dtype().imin() &&
         hi <= v.dtype().imax();
}
// x * k for every value of x stays in x's dtype: no wrap.
bool mul_fits(const UOp& v, int64_t k) {
  int64_t a, b;
  return !__builtin_mul_overflow(vmin(v), k, &a) && !__builtin_mul_overflow(vmax(v), k, &b) &&
         std::min(a, b) >= v.dtype().imin() && std::max(a, b) <= v.dtype().imax();
}

// ---------------------------------------------------------------------------------------------
// sums as terms: x = sum(atom_i * k_i) + offset

struct Term {
  const UOp* atom;  // a node inside the matched expression (kept alive by it)
  int64_t k;
};

// A sum's terms, in a fixed array: these folds run on every integer ADD, so no allocation.
constexpr size_t kMaxTerms = 32;
struct Terms {
  Term t[kMaxTerms];
  size_t n = 0;
  void push(Term x) { t[n++] = x; }
  const Term* begin() const { return t; }
  const Term* end() const { return t + n; }
  Term* begin() { return t; }
  Term* end() { return t + n; }
  bool empty() const { return n == 0; }
};

// Flattens an ADD tree into terms; false when it has more than kMaxTerms terms (long chains are
// left alone so folding stays linear in the graph size).
bool split_sum(const UOp& u, Terms& out, int64_t& offset) {
  const UOp* todo[kMaxTerms + 2];
  size_t top = 0;
  todo[top++] = &u;
  while (top) {
    if (out.n + top > kMaxTerms) return false;
    const UOp& t = *todo[--top];
    if (t.op() == Ops::ADD) {
      todo[top++] = &t.src(1);
      todo[top++] = &t.src(0);
    } else if (t.is_const()) {
      offset += as_int(value_of(t));
    } else if (t.op() == Ops::MUL && t.src(1).is_const()) {
      out.push({&t.src(0), as_int(value_of(t.src(1)))});
    } else {
      out.push({&t, 1});
    }
  }
  return true;
}

UOp build_sum(DType d, const Terms& terms, int64_t offset) {
  UOp acc;
  for (const Term& t : terms) {
    UOp v = t.k == 1 ? *t.atom : *t.atom * t.k;
    acc = acc ? acc + v : v;
  }
  if (!acc) return UOp::cint(d, offset);
  return offset ? acc + offset : acc;
}

int64_t mathmod(int64_t a, int64_t b) { return a - floordiv(a, b) * b; }

// `candidate` unless it is a larger expression than `original` (or too large to measure).
UOp if_not_larger(const UOp& candidate, const UOp& original) {
  uint32_t a = tree_size(candidate), b = tree_size(original);
  return a < kTreeSizeSaturated && a <= b ? candidate : UOp{};
}

// Like split_sum, but a sum scaled by a constant counts as its terms, each scaled: (a + b)*k holds
// a*k and b*k (only where every such product stays in the dtype, so the sum keeps its value).
bool split_sum_scaled(const UOp& u, Terms& out, int64_t& offset) {
  Term todo[kMaxTerms + 2];
  size_t top = 0;
  todo[top++] = {&u, 1};
  while (top) {
    if (out.n + top > kMaxTerms) return false;
    auto [t, k] = todo[--top];
    int64_t kk = 0;
    if (t->op() == Ops::ADD && top + 2 <= std::size(todo)) {
      todo[top++] = {&t->src(1), k};
      todo[top++] = {&t->src(0), k};
    } else if (t->is_const()) {
      if (__builtin_mul_overflow(as_int(value_of(*t)), k, &kk) || __builtin_add_overflow(offset, kk, &offset)) return false;
    } else if (t->op() == Ops::MUL && t->src(1).is_const() && !__builtin_mul_overflow(as_int(value_of(t->src(1))), k, &kk)) {
      if (k != 1 && !mul_fits(t->src(0), kk)) return false;  // a distributed product must not wrap
      if (t->src(0).op() == Ops::ADD) todo[top++] = {&t->src(0), kk};
      else out.push({&t->src(0), kk});
    } else {
      if (k != 1 && !mul_fits(*t, k)) return false;
      out.push({t, k});
    }
  }
  return true;
}

// (a*k + b) // (k*m) = a // m and (a*k + b) % (k*m) = (a % m)*k + b when 0 <= b < k (then a >= 0,
// since the numerator is): a flattened index divided by the size of a block of its axes, e.g.
// ((r1*56 + r2) + r0*3136) // 50176 = r0 // 16 for a grouped convolution's group. A b within
// [j*k, (j+1)*k) lends j*k to a: a view shifted by a pad or a shrink, (y*114 + x + 115) // 228 with
// x < 112, is ((y + 1)*114 + (x + 1)) // 228 = (y + 1) // 2.
UOp fold_divmod_by_term(const UOp& u, const Terms& terms, int64_t offset, int64_t c) {
  for (size_t i = 0; i < terms.n; ++i) {
    const int64_t k = terms.t[i].k;
    if (k <= 1 || c % k != 0) continue;
    Terms rest;
    for (size_t j = 0; j < terms.n; ++j)
      if (j != i) rest.push(terms.t[j]);
    auto [blo, bhi] = bounds(build_sum(u.dtype(), rest, offset));
    const int64_t lent = floordiv(blo, k);
    if (floordiv(bhi, k) != lent || !add_fits(*terms.t[i].atom, lent)) continue;
    const UOp b = build_sum(u.dtype(), rest, offset - lent * k), a = lent ? *terms.t[i].atom + lent : *terms.t[i].atom;
    return if_not_larger(u.op() == Ops::IDIV ? a.idiv(c / k) : a.mod(c / k) * k + b, u);
  }
  return {};
}

// (sum of terms) // c and % c for c > 0 and a non-negative numerator.
UOp fold_divmod(const Match& m) {
  const UOp& u = m[r0];
  const UOp& num = m[x];
  int64_t c = m.i(c0);
  if (c <= 0 || !int_scalar(u)) return {};
  bool is_div = u.op() == Ops::IDIV;
  auto [lo, hi] = bounds(num);
  if (lo < 0) return {};
  if (hi < c) return is_div ? u.const_like(0) : num;
  if (lo / c == hi / c) return is_div ? u.const_like(lo / c) : num - (lo / c) * c;
  // (a scaled sum counts as its terms: a strided window's ((ky*30 + y)*2) % 59 is ky + 2*y)
  Terms terms;
  int64_t offset = 0;
  if (!split_sum_scaled(num, terms, offset)) return {};
  // gcd of every factor with the divisor
  int64_t g = c;
  for (const Term& t : terms) g = std::gcd(g, t.k);
  g = std::gcd(g, offset);
  if (g > 1) {
    for (Term& t : terms) t.k /= g;
    UOp reduced = build_sum(u.dtype(), terms, offset / g);
    return if_not_larger(is_div ? reduced.idiv(c / g) : reduced.mod(c / g) * g, u);
  }
  // split every coefficient k into c*(k div c) (leaves the division) and k mod c (stays): exact
  // when the part that stays is non-negative, so only non-negative atoms are split
  Terms quot, rest;
  for (const Term& t : terms) {
    int64_t q = floordiv(t.k, c), r = mathmod(t.k, c);
    if (r == 0) quot.push({t.atom, q});
    else if (q != 0 && vmin(*t.atom) >= 0) quot.push({t.atom, q}), rest.push({t.atom, r});
    else rest.push(t);
  }
  int64_t q_off = floordiv(offset, c), r_off = mathmod(offset, c);
  if (quot.empty() && q_off == 0) return fold_divmod_by_term(u, terms, offset, c);
  UOp r = build_sum(u.dtype(), rest, r_off);
  auto [rlo, rhi] = bounds(r);
  if (rlo < 0) return {};
  if (is_div) {
    UOp q = build_sum(u.dtype(), quot, q_off);
    return if_not_larger(rhi < c ? q : q + r.idiv(c), u);
  }
  return if_not_larger(rhi < c ? r : r.mod(c), u);
}

// u as base + constant (the constant 0 when u is no such sum).
std::pair<const UOp*, int64_t> base_and_offset(const UOp& u) {
  if (u.op() == Ops::ADD && u.src(1).is_const()) return {&u.src(0), as_int(value_of(u.src(1)))};
  return {&u, 0};
}

// Whether x % c may count as x2 % c: the same numerator, or both non-negative and apart by a
// multiple of c (fold_divmod moves a remainder's constant by multiples of c, not a quotient's:
// (b-5)%2 becomes (b+1)%2 while (b-5)//2 stays).
bool same_remainder(const UOp& x, const UOp& x2, int64_t c) {
  if (x == x2) return true;
  auto [b, o] = base_and_offset(x);
  auto [b2, o2] = base_and_offset(x2);
  return *b == *b2 && (o - o2) % c == 0 && vmin(x) >= 0 && vmin(x2) >= 0;
}

// One recombination in `terms`, if any: (x%c)*k + (x//c)*(c*k) -> x*k, or
// (x%c)*k + ((x//c)%d)*(c*k) -> (x%(c*d))*k (the digits of x in base c, then d, put back). Both
// hold for every x with C semantics (truncated remainders share the sign of x); x is the
// quotient's numerator. `made` keeps a new atom alive.
bool recombine_once(Terms& terms, UOp& made) {
  for (size_t i = 0; i < terms.n; ++i) {
    const UOp& mod = *terms.t[i].atom;
    const int64_t k = terms.t[i].k;
    if (mod.op() != Ops::MOD || !mod.src(1).is_const()) continue;
    const int64_t c = as_int(value_of(mod.src(1)));
    if (c <= 0) continue;
    for (size_t j = 0; j < terms.n; ++j) {
      const UOp* div = terms.t[j].atom;
      const UOp* digit = nullptr;  // (x//c)%d
      if (div->op() == Ops::MOD && div->src(1).is_const()) digit = div, div = &div->src(0);
      int64_t ck = 0;
      if (i == j || div->op() != Ops::IDIV || !(div->src(1) == mod.src(1)) || __builtin_mul_overflow(c, k, &ck) ||
          terms.t[j].k != ck || !same_remainder(mod.src(0), div->src(0), c))
        continue;
      if (digit) {
        int64_t cd = 0;
        if (__builtin_mul_overflow(c, as_int(value_of(digit->src(1))), &cd) || cd <= 0) continue;
        made = div->src(0).mod(cd);
        terms.t[i].atom = &made;
      } else {
        terms.t[i].atom = &div->src(0);
      }
      terms.t[j] = terms.t[--terms.n];
      return true;
    }
  }
  return false;
}

// sum(..., (x%c)*k, ..., (x//c)*(c*k), ...) -> sum(..., x*k, ...), and the nested digit form above;
// the terms of constant-scaled sums take part ((g + x//c)*(c*k) holds (x//c)*(c*k)).
UOp fold_divmod_recombine(const Match& m) {
  const UOp& u = m[r0];
  if (!int_scalar(u)) return {};
  Terms terms;
  int64_t offset = 0;
  // every pair has its remainder term at the top: a sum without one is left at once (this rule
  // runs on every integer ADD)
  if (!split_sum(u, terms, offset)) return {};
  if (std::none_of(terms.begin(), terms.end(), [](const Term& t) { return t.atom->op() == Ops::MOD && t.atom->src(1).is_const(); }))
    return {};
  terms.n = 0, offset = 0;
  if (!split_sum_scaled(u, terms, offset)) return {};
  UOp made[kMaxTerms];
  size_t n_made = 0;
  while (n_made < kMaxTerms && recombine_once(terms, made[n_made])) ++n_made;
  if (n_made == 0) return {};
  return if_not_larger(build_sum(u.dtype(), terms, offset), u);
}

// x*c0 < c1 -> x < ceil(c1/c0) for c0 > 0;  x*c0 < c1 -> floor(-c1/-c0) < x ... for c0 < 0
UOp fold_mul_lt(const Match& m) {
  int64_t k = m.i(c0), c = m.i(c1);
  const UOp& v = m[x];
  if (!int_scalar(v) || k == 0 || !mul_fits(v, k)) return {};  // x*k must not wrap
  if (k > 0) return v.lt(v.const_like(floordiv(c + k - 1, k)));
  // k*v < c  <=>  v > c/k (k < 0)  <=>  v > floor((c)/k) when ... use: v*(-k) > -c  <=>  v > floor(-c/-k)
  int64_t nk = -k;
  return v.const_like(floordiv(-c, nk)).lt(v);
}

// sum(a_i * k_i) + rest < c with gcd d of the k_i and c, 0 <= rest < d  ->  sum(a_i*k_i/d) < c/d
UOp fold_lt_gcd(const Match& m) {
  const UOp& s = m[x];
  int64_t c = m.i(c0);
  if (!int_scalar(s)) return {};
  Terms terms;
  int64_t offset = 0;
  if (!split_sum(s, terms, offset)) return {};
  if (offset != 0) return {};
  // dividing the terms by d keeps the order only if the sum never wraps; bounds that may wrap
  // widen to the dtype's whole range (bounds.hpp)
  if (vmin(s) == s.dtype().imin() && vmax(s) == s.dtype().imax()) return {};
  Terms scaled, unit;
  for (const Term& t : terms) (t.k == 1 ? unit : scaled).push(t);
  if (scaled.empty()) return {};
  int64_t d = c;
  for (const Term& t : scaled) d = std::gcd(d, t.k);
  if (d <= 1) return {};
  UOp rest = build_sum(s.dtype(), unit, 0);
  auto [lo, hi] = bounds(rest);
  if (!unit.empty() && (lo < 0 || hi >= d)) return {};
  for (Term& t : scaled) t.k /= d;
  UOp lhs = build_sum(s.dtype(), scaled, 0);
  return lhs.lt(lhs.const_like(floordiv(c, d) + (mathmod(c, d) != 0)));
}

bool max_left_dominates(const Match& m) { return int_scalar(m[x]) && vmin(m[x]) >= vmax(m[y]); }
// (x / c0) / c1 is x / (c0 * c1) only while c0 * c1 is not wrapped in x's dtype
bool positive_pair(const Match& m) {
  int64_t p;
  return m.i(c0) > 0 && m.i(c1) > 0 && !__builtin_mul_overflow(m.i(c0), m.i(c1), &p) && p <= m[x].dtype().imax();
}
// (c1 = -1 divides everything, and INT64_MIN % -1 would trap)
bool c0_multiple_of_c1(const Match& m) { return m.i(c1) == -1 || (m.i(c1) != 0 && m.i(c0) % m.i(c1) == 0); }
// (x * c0) % c1 and (x * c0) / c1 with c1 | c0 fold only when x * c0 does not wrap: int32
// (2^30 * 4) / 2 is 0, not 2^31
bool product_divisible(const Match& m) { return c0_multiple_of_c1(m) && int_scalar(m[x]) && mul_fits(m[x], m.i(c0)); }
// Every operand the rule reads is a scalar integer: (x + c1) * c0 -> x*c0 + c0*c1 is exact in
// wrapping integer arithmetic (a ring), not in floats.
bool int_operands(const Match& m) { return int_scalar(m[x]) && int_scalar(m[c0]) && int_scalar(m[c1]); }
// (x + c0) < c1 -> x < c1 - c0 holds only where neither x + c0 nor c1 - c0 wraps (uint8: 250 + 10
// is 4, and 4 < 5, but 250 < 5 - 10 is not).
bool shift_without_wrap(const Match& m) {
  int64_t d;
  return int_operands(m) && add_fits(m[x], m.i(c0)) && !__builtin_sub_overflow(m.i(c1), m.i(c0), &d) &&
         d >= m[x].dtype().imin() && d <= m[x].dtype().imax();
}
bool nonzero(const Match& m) { return vmin(m[x]) > 0 || vmax(m[x]) < 0; }  // x / x is 1 only then (0 / 0 = 0)

const OpMask kFoldable = groups::ALU | OpMask{Ops::CAST};

}  // namespace

bool canonical_after(const UOp& a, const UOp& b) {
  if (b.is_const()) return false;
  if (a.is_const()) return true;
  return compare(a, b, 3) > 0;
}

const PatternMatcher& symbolic_simple() {
  static const PatternMatcher pm{
      // ** constant folding **
      rule(UPat::repeat(groups::ALU, UPat::any_const()).named(r0), fold_const_alu),
      rule(UPat::ops({Ops::CAST, Ops::BITCAST}, {c0}).named(r0), fold_const_cast),
      // ** self folding **
      rule(x + 0, x),
      rule(x * 1, x),
      rule(x / 1, x),
      rule(x / x, 1, nonzero),
      rule(x ^ 0, x),
      rule(x | 0, x),
      rule(x << 0, x),
      rule(x >> 0, x),
      rule((x ^ y) ^ y, x),
      rule((x % y).named(r0) % y, r0),
      rule(UPat::ops(groups::Idempotent, {x, x}), x),
      rule((x & 1).dtype(dts::boolean), x),
      rule((x | 1).dtype(dts::boolean), 1),
      rule(UPat(x).dtype(dts::boolean) != 0, x),
      rule(UPat(x).logical_not().logical_not(), x),
      rule(UPat(x).where(UPat::cbool(true), UPat::cbool(false)), x),
      rule(UPat(x).where(UPat::cbool(false), UPat::cbool(true)), UPat(x) != UPat::cbool(true)),
      // ** zero folding **
      rule(x < x, 0),
      rule(x % x, 0),
      rule(x % 1, 0),
      rule(x ^ x, 0),
      rule(x & 0, 0),
      rule((x * 0).dtype(dts::ints | dts::boolean), 0),
      rule(UPat(x).dtype(dts::ints | dts::boolean) != x, 0),
      rule(UPat(x).dtype(dts::ints | dts::boolean).eq(x), 1),
      // ** bool arithmetic is logic **
      rule((x * y).dtype(dts::boolean), UPat(x) & UPat(y)),
      rule((x + y).dtype(dts::boolean), UPat(x) | UPat(y)),
      rule(UPat(x).maximum(y).dtype(dts::boolean), UPat(x) | UPat(y)),
      // ** where **
      rule(UPat(y).where(x, x), x),
      rule(UPat(c0).where(x, y), fold_const_where),
      rule(UPat(x).logical_not().where(y, z), UPat(x).where(z, y)),
      rule(UPat(a).where(UPat(b).where(x, y), y), (UPat(a) & UPat(b)).where(x, y)),
      rule(UPat(a).where(x, UPat(b).where(x, y)), (UPat(a) | UPat(b)).where(x, y)),
      // a bool picked or false is an and: LLVM 15's instruction selection looped forever on the
      // select form of a gated bool load summed in vectors (fuzzer, seed 2036)
      rule(UPat(a).where(UPat(x).dtype(dts::boolean), UPat::cbool(false)), UPat(a) & UPat(x)),
      rule(UPat::op(Ops::INDEX, {x, y, UPat::cbool(true)}).named(r0), drop_true_gate),
      // ** casts **
      rule(UPat::ops({Ops::CAST, Ops::BITCAST}, {x}).named(r0), fold_noop_cast),
      rule(UPat::op(Ops::CAST, {UPat::op(Ops::CAST, {x}).named(r1)}).named(r0), fold_double_cast),
      rule(UPat::op(Ops::CAST, {x}).named(r0), cast_to_bool),
  };
  return pm;
}

const PatternMatcher& symbolic() {
  static const PatternMatcher pm = symbolic_simple() + PatternMatcher{
      // ** integer normal form: no NEG or SUB, negation is *-1 **
      rule(UPat::op(Ops::NEG, {x}).dtype(dts::ints), x * -1),
      rule((x - y).dtype(dts::ints), x + y * -1),
      // ** bounds: a value with one possible result is that constant **
      rule(UPat::ops(kFoldable).allow_any_len().named(r0), fold_by_bounds),
      rule(UPat(x).maximum(y), x, max_left_dominates),
      // ** canonical order: constants right, then structural **
      rule(UPat::ops(groups::Commutative, {y, z}).named(r0), canonical_swap),
      // ** reassociate constants **
      rule(((x + c0) + c1).dtype(dts::ints), x + (UPat(c0) + UPat(c1))),
      rule(((x * c0) * c1).dtype(dts::ints), x * (UPat(c0) * UPat(c1))),
      rule(((x + c0) + y).dtype(dts::ints), (UPat(x) + UPat(y)) + c0),
      rule((x + c1) * c0, x * c0 + UPat(c0) * UPat(c1), int_operands),
      // ** like terms **
      rule((x * c0 + x * c1).dtype(dts::ints), x * (UPat(c0) + UPat(c1))),
      rule(((y + x * c0) + x * c1).dtype(dts::ints), y + x * (UPat(c0) + UPat(c1))),
      rule((x + x * c0).dtype(dts::ints), x * (UPat(c0) + 1)),
      rule(((y + x) + x * c0).dtype(dts::ints), y + x * (UPat(c0) + 1)),
      rule(((y + x * c0) + x).dtype(dts::ints), y + x * (UPat(c0) + 1)),
      // ** division and modulo **
      rule((x / c0) / c1, x / (UPat(c0) * UPat(c1)), positive_pair),
      rule((x % c0) % c1, x % c1, c0_multiple_of_c1),
      rule((x * c0) % c1, 0, product_divisible),
      rule((x * c0) / c1, x * (UPat(c0) / UPat(c1)), product_divisible),
      rule(UPat::ops({Ops::IDIV, Ops::MOD}, {x, c0}).named(r0), fold_divmod),
      rule(UPat::op(Ops::ADD, {y, z}).named(r0), fold_divmod_recombine),
      // ** comparisons **
      rule((x + c0) < c1, x < (UPat(c1) - UPat(c0)), shift_without_wrap),
      rule((x * c0) < c1, fold_mul_lt),
      rule(UPat::op(Ops::ADD, {y, z}).named(x) < c0, fold_lt_gcd),
  };
  return pm;
}

namespace {
using SimplifyTable = std::unordered_map<UOp, UOp, UOpHash>;
thread_local SimplifyTable* t_simplified = nullptr;
}  // namespace

UOp simplify(const UOp& u) {
  if (!t_simplified) return graph_rewrite(u, symbolic(), nullptr, "simplify");
  if (auto it = t_simplified->find(u); it != t_simplified->end()) return it->second;
  UOp out = graph_rewrite(u, symbolic(), nullptr, "simplify");
  t_simplified->emplace(u, out);
  return out;
}

SimplifyMemo::SimplifyMemo() : owner_(t_simplified == nullptr) {
  if (owner_) t_simplified = new SimplifyTable();
}

SimplifyMemo::~SimplifyMemo() {
  if (!owner_) return;
  delete t_simplified;
  t_simplified = nullptr;
}

}  // namespace kiln
