// codegen/decompose.cpp - ops and dtypes the target lacks become ops it has.
//
// What a target supports comes from its kiln_target (LIR op and dtype bitmaps). THREEFRY has no
// LIR form and is always decomposed into 32-bit adds, rotates and xors. float16/bfloat16 on a
// target that does not compute in them are computed in float32: loads widen, stores round to
// nearest even (NaN stays NaN), and every op that can leave the narrow type's values (arithmetic,
// math, casts) rounds its float32 result back to it, so a fused kernel computes what storing each
// intermediate would (f16 65504 * 2 is inf, as when realized). Where the target lists the dtype
// in storage_dtypes, the conversions are its own (LOAD of the dtype + CAST to float32; a rounding
// is CAST to the dtype and back: F16C's two instructions); elsewhere the dtype is stored as
// 16-bit integers and converted with integer arithmetic. A value is rounded once where it is
// stored (a store of a cast or an arithmetic result narrows the float32 value itself; a store of a
// value the type already holds writes its bits).
#include <cmath>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "codegen/lir.hpp"
#include "codegen/passes.hpp"
#include "codegen/transcendental.hpp"
#include "ir/alu.hpp"
#include "ir/traverse.hpp"
#include "codegen/target.hpp"
#include "rewrite/graph_rewrite.hpp"
#include "symbolic/bounds.hpp"
#include "symbolic/symbolic.hpp"

namespace kiln {

namespace {

constexpr Var x_ = pat::x, y_ = pat::y, z_ = pat::z, r0 = pat::r0;

struct Ctx {
  const Target& t;
  bool has(Ops op) const { return t.supports_op(lir_op(op)); }
  bool has_dtype(Scalar s) const { return t.supports_dtype(lir_dtype(s)); }
  bool stores_dtype(Scalar s) const { return t.stores_dtype(lir_dtype(s)); }
  // What the rewrite made and must not convert again when it revisits it: the native
  // conversions' LOADs and CASTs of a half type, and the STOREs and BITCASTs whose values were
  // converted; kept alive so their addresses stay unique for the pass. (A made node may be an
  // original one, the same node by interning: LOAD(idx) made again, or a user's CAST to half
  // rounded by the same CAST. Each original is visited once, so marking it only stops the
  // revisit; what reads it is decided by its own node, never by whether a source is marked.)
  std::unordered_set<const UOpNode*> made;
  std::vector<UOp> keep;
  std::unordered_map<const UOpNode*, bool> representable;  // memo of holds_own_value
  UOp mark(UOp u) {
    made.insert(u.node());
    keep.push_back(u);
    return u;
  }
};

UOp cu(DType d, uint64_t v) { return UOp::make(Ops::CONST, d, {}, Arg{static_cast<int64_t>(v)}); }

UOp threefry(const Match& m, Ctx&) {
  const UOp &x = m[x_], &k = m[y_];
  int n = x.dtype().count();
  DType u32 = dtypes::uint32.vec(n), u64 = dtypes::uint64.vec(n);
  auto lo = [&](const UOp& v) { return v.cast(u32); };
  auto hi = [&](const UOp& v) { return UOp::alu(Ops::SHR, {v, cu(u64, 32)}).cast(u32); };
  auto rotl = [&](const UOp& v, int r) {
    return UOp::alu(Ops::SHL, {v, cu(u32, r)}) | UOp::alu(Ops::SHR, {v, cu(u32, 32 - r)});
  };
  UOp ks[3] = {lo(k), hi(k), UOp()};
  ks[2] = ks[0] ^ ks[1] ^ cu(u32, 0x1BD11BDA);
  UOp x0 = lo(x) + ks[0], x1 = hi(x) + ks[1];
  static const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  for (int i = 0; i < 5; ++i) {
    for (int r : rot[i % 2]) {
      x0 = x0 + x1;
      x1 = rotl(x1, r) ^ x0;
    }
    x0 = x0 + ks[(i + 1) % 3];
    x1 = x1 + ks[(i + 2) % 3] + cu(u32, static_cast<uint64_t>(i + 1));
  }
  return UOp::alu(Ops::SHL, {x1.cast(u64), cu(u64, 32)}) | x0.cast(u64);
}

// Float math only for float operands; half types were widened before this runs.
bool fl(const UOp& u) { return u.dtype().is_float(); }

// The polynomials are built on float32/float64 bits (exponent fields, int32 bitcasts). A half
// operand is left only where the target computes in the half type (HIP's float16); there the
// function is computed in float32 and rounded once, as everywhere else (a float16 operand
// once reached exp2_poly and rendered a 2-byte value bitcast to int).
template <typename F>
UOp in_float32(const UOp& x, F poly) {
  Scalar s = x.dtype().scalar();
  if (s != Scalar::float16 && s != Scalar::bfloat16) return poly(x);
  return poly(x.cast(DType(Scalar::float32, x.dtype().count()))).cast(x.dtype());
}
UOp do_exp2(const Match& m, Ctx& c) {
  return c.has(Ops::EXP2) || !fl(m[x_]) ? UOp() : in_float32(m[x_], [](const UOp& x) { return exp2_poly(x); });
}
UOp do_log2(const Match& m, Ctx& c) {
  return c.has(Ops::LOG2) || !fl(m[x_]) ? UOp() : in_float32(m[x_], [](const UOp& x) { return log2_poly(x); });
}
UOp do_sin(const Match& m, Ctx& c) {
  bool f64 = c.has_dtype(Scalar::float64);
  return c.has(Ops::SIN) || !fl(m[x_]) ? UOp() : in_float32(m[x_], [f64](const UOp& x) { return sin_poly(x, f64); });
}
UOp do_pow(const Match& m, Ctx& c) {
  if (c.has(Ops::POW)) return {};
  const bool native = c.has(Ops::EXP2) && c.has(Ops::LOG2);
  // on float32 bits too: a float16 pow on HIP bitcast a 2-byte value to int (found by the corpus's
  // pow_f16 on the offline HIP targets)
  Scalar s = m[x_].dtype().scalar();
  if (s != Scalar::float16 && s != Scalar::bfloat16) return pow_decomposed(m[x_], m[y_], native);
  DType f32(Scalar::float32, m[x_].dtype().count());
  return pow_decomposed(m[x_].cast(f32), m[y_].cast(f32), native).cast(m[x_].dtype());
}
UOp do_mulacc(const Match& m, Ctx& c) { return c.has(Ops::MULACC) ? UOp() : m[x_] * m[y_] + m[z_]; }
// a*b+c in floats is one fused multiply-add where the target has one (twice the FLOPs per
// instruction in matmul and conv inner loops; the single rounding is at least as accurate).
UOp fuse_mulacc(const Match& m, Ctx& c) {
  if (!fl(m[z_]) || !c.has(Ops::MULACC) || !c.t.has(KILN_TARGET_HAS_FMA)) return {};
  return UOp::alu(Ops::MULACC, {m[x_], m[y_], m[z_]});
}
// acc + DOT2(a, b, 0) (a reduce's update) is DOT2(a, b, acc): vdpbf16ps accumulates itself.
UOp fold_dot2(const Match& m, Ctx&) {
  const UOp& dot = m[x_];
  if (!(m[y_].dtype() == dot.dtype())) return {};
  return UOp::make(Ops::DOT2, dot.dtype(), {dot.src(0), dot.src(1), m[y_]});
}
UOp do_sub(const Match& m, Ctx& c) {
  if (c.has(Ops::SUB)) return {};
  return m[x_] + (fl(m[y_]) ? m[y_].neg() : m[y_] * m[y_].const_like(-1));
}
UOp do_fdiv(const Match& m, Ctx& c) { return c.has(Ops::FDIV) ? UOp() : m[x_] * UOp::alu(Ops::RECIPROCAL, {m[y_]}); }
UOp do_recip(const Match& m, Ctx& c) { return c.has(Ops::RECIPROCAL) ? UOp() : UOp::alu(Ops::FDIV, {m[x_].const_like_f(1), m[x_]}); }
UOp do_cmpeq(const Match& m, Ctx& c) { return c.has(Ops::CMPEQ) ? UOp() : m[x_].ne(m[y_]).logical_not(); }
// The larger by CMPLT; for floats NaN-propagating like the LIR's MAX: a NaN in x survives the
// comparison (x < y is false), a NaN in y is put back by the y != y test.
UOp do_max(const Match& m, Ctx& c) {
  if (c.has(Ops::MAX)) return {};
  const UOp &x = m[x_], &y = m[y_];
  UOp larger = x.lt(y).where(y, x);
  return fl(y) ? y.ne(y).where(y, larger) : larger;
}
UOp do_neg(const Match& m, Ctx& c) { return c.has(Ops::NEG) ? UOp() : m[x_] * m[x_].const_like_f(-1); }
UOp do_trunc(const Match& m, Ctx& c) {
  if (c.has(Ops::TRUNC) || !fl(m[x_])) return {};
  const UOp& x = m[x_];
  bool dbl = x.dtype().scalar_size() == 8;
  DType it = DType(dbl ? Scalar::int64 : Scalar::int32, x.dtype().count());
  double big = dbl ? std::ldexp(1.0, 52) : std::ldexp(1.0, 23);  // beyond this every float is an integer
  UOp ax = x.lt(x.const_like_f(0)).where(x.neg(), x);
  return ax.lt(x.const_like_f(big)).where(x.cast(it).cast(x.dtype()), x);
}

// Integer division is total (Tensor::idiv): x / 0 = 0, x % 0 = x, MIN / -1 = MIN, MIN % -1 = 0,
// where hardware traps and C and LLVM leave it undefined. A divisor that may be 0 (or -1 with a
// dividend that may be MIN) is replaced by 1 first, so the division itself is always defined,
// and the result is selected; x / 1 is already the answer for MIN / -1 and MIN % -1.
// The rewrite runs to a fixed point, so it revisits the divisions it made: it knows them by node
// (a divisor's shape cannot tell: a user's where(c, 1, y) looks like a guard and may not be one).
struct DivGuards {
  std::unordered_set<const UOpNode*> made;
  std::vector<UOp> keep;  // the nodes in `made` stay alive (and their addresses unique) for the pass
};
UOp guard_divmod(const Match& m, DivGuards& g) {
  const UOp &x = m[x_], &y = m[y_], &r = m[r0];
  DType d = x.dtype();
  if (!d.is_int() || g.made.count(r.node())) return {};
  auto [lo, hi] = bounds(y);
  bool zero = lo <= 0 && hi >= 0;
  bool overflow = !d.is_unsigned() && lo <= -1 && hi >= -1 && vmin(x) <= d.imin();
  if (!zero && !overflow) return {};
  UOp is_zero = y.eq(y.const_like(0));
  UOp bad = zero ? is_zero : UOp();
  if (overflow) {
    UOp min_by_neg1 = x.eq(x.const_like(d.imin())) & y.eq(y.const_like(-1));
    bad = zero ? (bad | min_by_neg1) : min_by_neg1;
  }
  UOp q = UOp::alu(r.op(), {x, bad.where(y.const_like(1), y)});
  g.made.insert(q.node());
  g.keep.push_back(q);
  if (!zero) return q;
  return is_zero.where(r.op() == Ops::IDIV ? x.const_like(0) : x, q);
}

// ---- float16 / bfloat16 computed in float32 ----
// A half type the target does not compute in: converted at loads, stores and roundings.
bool narrow(DType d, const Ctx& c) {
  Scalar s = d.scalar();
  return (s == Scalar::float16 || s == Scalar::bfloat16) && !c.has_dtype(s);
}
// ... and stored as 16-bit integers, converted with integer arithmetic (no native conversions).
bool emulated(DType d, const Ctx& c) { return narrow(d, c) && !c.stores_dtype(d.scalar()); }
DType bits_of(DType d) { return DType(Scalar::uint16, d.count()); }
DType widened(DType d) { return DType(Scalar::float32, d.count()); }

UOp half_bits_to_float(const UOp& h, Scalar s) {
  int n = h.dtype().count();
  DType u32 = dtypes::uint32.vec(n), f32 = dtypes::float32.vec(n);
  UOp w = h.cast(u32);
  if (s == Scalar::bfloat16) return UOp::alu(Ops::SHL, {w, cu(u32, 16)}).bitcast(f32);
  // magnitude bits moved under float32's exponent and rescaled by 2^112: exact for normals and
  // subnormals; the all-ones exponent (inf/NaN) is restored separately
  UOp sign = UOp::alu(Ops::SHL, {w & cu(u32, 0x8000), cu(u32, 16)});
  UOp mag = UOp::alu(Ops::SHL, {w & cu(u32, 0x7fff), cu(u32, 13)});
  UOp v = mag.bitcast(f32) * UOp::cvalue(f32, std::ldexp(1.0, 112));
  UOp special = (w & cu(u32, 0x7c00)).eq(cu(u32, 0x7c00));
  UOp inf_nan = (mag | cu(u32, 0x7f800000)).bitcast(f32);
  UOp r = special.where(inf_nan, v);
  return (r.bitcast(u32) | sign).bitcast(f32);
}

UOp float_to_half_bits(const UOp& f, Scalar s) {
  int n = f.dtype().count();
  DType u32 = dtypes::uint32.vec(n), u16 = dtypes::uint16.vec(n);
  UOp b = f.bitcast(u32);
  UOp nan = f.ne(f);
  if (s == Scalar::bfloat16) {
    UOp rounded = UOp::alu(Ops::SHR, {b + cu(u32, 0x7fff) + (UOp::alu(Ops::SHR, {b, cu(u32, 16)}) & cu(u32, 1)), cu(u32, 16)});
    return nan.where(UOp::alu(Ops::SHR, {b, cu(u32, 16)}) | cu(u32, 0x40), rounded).cast(u16);
  }
  UOp sign = UOp::alu(Ops::SHR, {b, cu(u32, 16)}) & cu(u32, 0x8000);
  UOp a = b & cu(u32, 0x7fffffff);
  // normal range: rebias the exponent and round the 13 dropped mantissa bits to nearest even
  UOp rebased = a - cu(u32, (127 - 15) << 23);
  UOp normal = UOp::alu(Ops::SHR, {rebased + cu(u32, 0xfff) + (UOp::alu(Ops::SHR, {a, cu(u32, 13)}) & cu(u32, 1)), cu(u32, 13)});
  // subnormal range: let float addition do the rounding (adding 0.5 aligns the bits)
  DType f32 = dtypes::float32.vec(n);
  UOp sub = ((a.bitcast(f32) + UOp::cvalue(f32, 0.5)).bitcast(u32)) - cu(u32, 0x3f000000);
  UOp r = a.lt(cu(u32, 113u << 23)).where(sub, normal);
  r = a.lt(cu(u32, 143u << 23)).logical_not().where(cu(u32, 0x7c00), r);  // overflow: inf
  r = nan.where(cu(u32, 0x7e00), r);
  return (r | sign).cast(u16);
}

// float32 -> the half type d's values and back, natively (a CAST each way) or with integers.
UOp to_half(const UOp& f, DType d, Ctx& c) {
  return emulated(d, c) ? float_to_half_bits(f, d.scalar()) : c.mark(UOp::make(Ops::CAST, d, {f}));
}
UOp from_half(const UOp& h, DType d, Ctx& c) {
  return emulated(d, c) ? half_bits_to_float(h, d.scalar()) : h.cast(widened(d));
}
// bfloat16 is float32's top half: rounding a float32 to it in place is float_to_half_bits without
// the narrowing and widening around it (same bits: the rounded top half, NaN quieted), about half
// the vector instructions of a rounding in an elementwise chain.
UOp bf16_rounded(const UOp& f) {
  int n = f.dtype().count();
  DType u32 = dtypes::uint32.vec(n);
  UOp b = f.bitcast(u32);
  UOp lsb = UOp::alu(Ops::SHR, {b, cu(u32, 16)}) & cu(u32, 1);
  UOp rounded = (b + cu(u32, 0x7fff) + lsb) & cu(u32, 0xffff0000u);
  UOp quiet = (b & cu(u32, 0xffff0000u)) | cu(u32, 0x400000);
  return f.ne(f).where(quiet, rounded).bitcast(f.dtype());
}
UOp round_to(const UOp& f, DType d, Ctx& c) {
  if (emulated(d, c) && d.scalar() == Scalar::bfloat16) return bf16_rounded(f);
  return from_half(to_half(f, d, c), d, c);
}

// WHERE, MAX and NEG of half values are half values: the float32 op needs no rounding.
bool keeps_half_values(Ops op) { return op == Ops::WHERE || op == Ops::MAX || op == Ops::NEG; }

// The float32 value an original node of a half type is the rounding of: a cast's operand (the
// rounding is part of the cast's meaning), the arithmetic done in float32; none for other nodes.
UOp before_rounding(const UOp& u) {
  DType w = widened(u.dtype());
  if (u.op() == Ops::CAST) return u.src(0).dtype() == w ? u.src(0) : u.src(0).cast(w);
  if (groups::ALU.has(u.op()) && !keeps_half_values(u.op())) return UOp::make(u.op(), w, u.src(), u.arg());
  return {};
}

// Whether an original node of a half type computes, once emulated, a value its type holds
// exactly: loads and casts do, and the arithmetic this pass rounds; constants do when their value
// is one of the type's; WHERE, MAX, NEG, VECTORIZE and GEP of such values do. Anything else is
// assumed not to (a store then rounds as usual).
bool holds_own_value(const UOp& v, Ctx& c) {
  if (auto it = c.representable.find(v.node()); it != c.representable.end()) return it->second;
  auto all_srcs = [&](size_t from) {
    for (size_t i = from; i < v.src().size(); ++i)
      if (!holds_own_value(v.src(i), c)) return false;
    return true;
  };
  bool r = false;
  if (!narrow(v.dtype(), c)) r = false;
  else if (v.op() == Ops::CONST) {
    Value x = value_of(v);
    r = as_double(normalize(v.dtype(), x)) == as_double(x);  // NaN: false, rounded as before
  } else if (v.op() == Ops::WHERE) r = all_srcs(1);
  else if (keeps_half_values(v.op()) || v.op() == Ops::VECTORIZE || v.op() == Ops::GEP) r = all_srcs(0);
  else r = v.op() == Ops::LOAD || v.op() == Ops::CAST || v.op() == Ops::BITCAST || groups::ALU.has(v.op());
  c.representable.emplace(v.node(), r);
  return r;
}

// A store of a value its half type holds exactly: bfloat16's bits are the float32's top half (the
// rounding adds nothing to a value whose low half is zero; NaN quieted as float_to_half_bits does).
UOp store_bits(const UOp& f, const UOp& original, DType h, Ctx& c) {
  if (!(emulated(h, c) && h.scalar() == Scalar::bfloat16 && holds_own_value(original, c))) return to_half(f, h, c);
  int n = f.dtype().count();
  DType u32 = dtypes::uint32.vec(n);
  UOp top = UOp::alu(Ops::SHR, {f.bitcast(u32), cu(u32, 16)});
  return f.ne(f).where(top | cu(u32, 0x40), top).cast(dtypes::uint16.vec(n));
}

constexpr int32_t kStoreNarrowing = 1;  // the tag of a store's own native narrowing
constexpr int32_t kMovedBits = 2;       // the tag of natively stored half bits only moved (a node of its own)

// A half value that only moves: loaded, a 16-bit integer's bits, lanes of those or a vector of
// them (a copy's value). Its 16-bit patterns as they are, with no conversion (where the target
// stores the type, its loads bitcast: never widened); none for anything computed.
UOp moved_bits(const UOp& v, Ctx& c) {
  if (!narrow(v.dtype(), c)) return {};
  const DType d = bits_of(v.dtype());
  if (v.op() == Ops::LOAD)
    return emulated(v.dtype(), c) ? c.mark(UOp::make(Ops::LOAD, d, v.src(), v.arg()))
                                  : c.mark(c.mark(UOp::make(Ops::LOAD, v.dtype(), v.src(), v.arg(), kMovedBits)).bitcast(d));
  if (const UOp& x = v.src().empty() ? v : v.src(0); v.op() == Ops::BITCAST && x.dtype().is_int() && x.dtype().scalar_size() == 2)
    return x.dtype() == d ? x : c.mark(x.bitcast(d));
  if (v.op() != Ops::GEP && v.op() != Ops::VECTORIZE) return {};
  std::vector<UOp> src;
  for (const UOp& x : v.src()) {
    src.push_back(moved_bits(x, c));
    if (!src.back().node()) return {};
  }
  return c.mark(UOp::make(v.op(), d, src, v.arg()));
}

UOp emulate(const Match& m, Ctx& c) {
  const UOp& u = m[r0];
  DType d = u.dtype();
  if (c.made.count(u.node())) return {};
  // pointers to emulated types become pointers to their bits (natively stored: stay as they are)
  if (d.is_ptr() && emulated(d.base(), c))
    return UOp::make(u.op(), bits_of(d.base()).ptr(d.ptr_size(), d.addrspace()), u.src(), u.arg(), u.tag());
  if (d.is_ptr()) return {};
  if (u.op() == Ops::LOAD && narrow(d, c)) {
    DType raw = emulated(d, c) ? bits_of(d) : d;
    return from_half(c.mark(UOp::make(Ops::LOAD, raw, u.src(), u.arg())), d, c);
  }
  if (u.op() == Ops::STORE && u.src(0).dtype().is_ptr() && narrow(u.src(0).dtype().base(), c)) {
    std::vector<UOp> src(u.src().begin(), u.src().end());
    DType h = u.src(0).dtype().base().scalar_type().vec(src[1].dtype().count());
    // a stored cast or arithmetic result is rounded once, by the store (not rounded, widened
    // and narrowed again: three F16C conversions where one does). The native narrowing is a node of
    // its own (tagged): it can equal the stored CAST, whose other readers get its float32 rounding.
    if (UOp f = narrow(src[1].dtype(), c) && src[1].dtype().scalar() == h.scalar() ? before_rounding(src[1]) : UOp(); f.node()) {
      src[1] = emulated(h, c) ? to_half(f, h, c) : c.mark(UOp::make(Ops::CAST, h, {f}, {}, kStoreNarrowing));
      return c.mark(u.replace_src(src));
    }
    // a copy moves the bits (a STAGE panel, a contiguous copy): no conversion, NaNs untouched
    // The native type's view of them is a node of its own (tagged): bits.bitcast(h) can be an
    // original node another reader converts to float32 (a scalar parameter's BITCAST also added
    // elsewhere), and the store would then write that float32 into the 16-bit element.
    if (UOp bits = src[1].dtype().scalar() == h.scalar() ? moved_bits(src[1], c) : UOp(); bits.node()) {
      src[1] = emulated(h, c) ? bits : c.mark(UOp::make(Ops::BITCAST, h, {bits}, {}, kMovedBits));
      return c.mark(u.replace_src(src));
    }
    UOp v = src[1].dtype().scalar() == Scalar::float32 ? src[1] : src[1].cast(widened(src[1].dtype()));
    src[1] = store_bits(v, u.src(1), h, c);
    return c.mark(u.replace_src(src));
  }
  // the bits of a half value as a 16-bit integer: the value rounded to its bits first (the source
  // computes in float32)
  if (u.op() == Ops::BITCAST && narrow(u.src(0).dtype(), c) && !narrow(d, c)) {
    const UOp& h = u.src(0);
    // a loaded value's bits are the loaded bits (DOT2's operands: pair_products.cpp)
    if (UOp bits = d == bits_of(h.dtype()) && emulated(h.dtype(), c) ? moved_bits(h, c) : UOp(); bits.node()) return bits;
    return c.mark(UOp::make(Ops::BITCAST, d, {to_half(h.cast(widened(h.dtype())), h.dtype(), c)}));
  }
  if (!narrow(d, c)) return {};
  DType w = widened(d);
  if (u.op() == Ops::CONST) return UOp::make(Ops::CONST, w, {}, u.arg());
  if (u.op() == Ops::BITCAST) {
    UOp bits = u.src(0).bitcast(bits_of(d));
    return from_half(emulated(d, c) ? bits : c.mark(bits.bitcast(d)), d, c);
  }
  if (UOp f = before_rounding(u); f.node()) return round_to(f, d, c);
  return UOp::make(u.op(), w, u.src(), u.arg());  // WHERE, MAX, NEG, VECTORIZE, ... of half values
}

// kiln's int32/int64 arithmetic wraps (ir/alu), but signed overflow is undefined in C and
// OpenCL C and poison under LLVM's nsw, so a compiler may compute (a + b).cast(int64) without the
// wrap (INT32_MAX + INT32_MAX gave 4294967294 fused, -2 realized). The unsigned type of the same
// width has the same bits and a defined wrap. int8/int16 need nothing: C computes them in int and
// truncates at the cast or store, and the cpu renderer gives them no nsw.
UOp wrap_signed(const Match& m) {
  const UOp& r = m[r0];
  DType d = r.dtype();
  Scalar u = d.scalar() == Scalar::int32 ? Scalar::uint32 : d.scalar() == Scalar::int64 ? Scalar::uint64 : Scalar::void_;
  if (u == Scalar::void_) return {};
  DType ud(u, d.count());
  return UOp::alu(r.op(), {r.src(0).cast(ud), r.src(1).cast(ud)}).cast(d);
}

}  // namespace

UOp wrap_signed_arith(const UOp& ast) {
  static const PatternMatcher pm{rule(UPat::ops({Ops::ADD, Ops::SUB, Ops::MUL}, {x_, y_}).named(r0), wrap_signed)};
  return graph_rewrite(ast, pm, nullptr, "wrap signed arithmetic");
}

UOp emulated_param(const UOp& param, const Target& target) {
  Ctx ctx{target, {}, {}, {}};
  DType d = param.dtype();
  if (!d.is_ptr() || !emulated(d.base(), ctx)) return param;
  return UOp::make(param.op(), bits_of(d.base()).ptr(d.ptr_size(), d.addrspace()), param.src(), param.arg(), param.tag());
}

UOp decompose(const UOp& ast, const Target& target) {
  Ctx ctx{target, {}, {}, {}};
  // half emulation first: everything after sees float32 math
  static const PatternMatcher pm_emulate{
      rule(UPat::ops(groups::All).allow_any_len().named(r0), emulate),
  };
  bool any_emulated = false;
  for (const UOpNode* n : toposort_nodes(ast)) any_emulated |= narrow(n->dtype.is_ptr() ? n->dtype.base() : n->dtype, ctx);
  UOp out = any_emulated ? graph_rewrite_topdown(ast, pm_emulate, ctx, "emulate half types") : ast;
  static const PatternMatcher pm{
      rule(UPat::op(Ops::THREEFRY, {x_, y_}), threefry),
      rule(UPat::op(Ops::EXP2, {x_}), do_exp2),
      rule(UPat::op(Ops::LOG2, {x_}), do_log2),
      rule(UPat::op(Ops::SIN, {x_}), do_sin),
      rule(UPat::op(Ops::POW, {x_, y_}), do_pow),
      rule(UPat::op(Ops::MULACC, {x_, y_, z_}), do_mulacc),
      rule(x_ * y_ + z_, fuse_mulacc),
      rule(UPat::op(Ops::DOT2, {UPat(), UPat(), UPat::cvalue(0.0)}).named(x_) + y_, fold_dot2),
      rule(UPat::op(Ops::SUB, {x_, y_}), do_sub),
      rule(UPat::op(Ops::FDIV, {x_, y_}), do_fdiv),
      rule(UPat::op(Ops::RECIPROCAL, {x_}), do_recip),
      rule(UPat::op(Ops::CMPEQ, {x_, y_}), do_cmpeq),
      rule(UPat::op(Ops::MAX, {x_, y_}), do_max),
      rule(UPat::op(Ops::NEG, {x_}), do_neg),
      rule(UPat::op(Ops::TRUNC, {x_}), do_trunc),
  };
  // on its own, before the decompositions: they rewrite the guard's compares (CMPEQ on targets
  // without it), which would make a guarded division a node the guard has not seen
  static const PatternMatcher pm_guard{rule(UPat::ops({Ops::IDIV, Ops::MOD}, {x_, y_}).named(r0), guard_divmod)};
  DivGuards guards;
  out = graph_rewrite(out, pm_guard, guards, "total integer division");
  return graph_rewrite(out, pm, ctx, "decompositions");
}

}  // namespace kiln
