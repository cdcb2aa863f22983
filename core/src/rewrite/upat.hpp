// rewrite/upat.hpp - the pattern DSL: UPat values built with operator overloads.
//
// Patterns are data. Wildcards are fixed capture slots (pat::x, pat::y, ... and the constant-only
// pat::c0..c3), so a Match is a small array indexed by slot; a slot used twice must bind the same
// node. Operators build ALU patterns; commutative ops match either operand order (with full
// backtracking). In patterns `/` means IDIV and `%` means MOD (index math is integer math).
//
//   using namespace kiln::pat;
//   rule(x * 1, x)                          // template rewrite
//   rule(x / c0, x, [](const Match& m) { return m.i(c0) == 1; })   // guarded
//   rule(UPat::op(Ops::CAST, {x}).named(r0), fold_cast)            // callback
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <vector>

#include "kiln/uop.hpp"

namespace kiln {

inline constexpr int kMaxSlots = 16;

// A capture slot. `is_const` slots only match CONST nodes.
struct Var {
  int8_t slot;
  bool is_const;
};

// Scalar filters for UPat::dtype(). A mask over Scalar values.
using ScalarMask = uint32_t;
constexpr ScalarMask scalar_bit(Scalar s) { return ScalarMask{1} << static_cast<int>(s); }
namespace dts {
inline constexpr ScalarMask ints = scalar_bit(Scalar::int8) | scalar_bit(Scalar::int16) | scalar_bit(Scalar::int32) |
                                   scalar_bit(Scalar::int64) | scalar_bit(Scalar::uint8) | scalar_bit(Scalar::uint16) |
                                   scalar_bit(Scalar::uint32) | scalar_bit(Scalar::uint64) | scalar_bit(Scalar::index);
inline constexpr ScalarMask floats = scalar_bit(Scalar::float16) | scalar_bit(Scalar::bfloat16) |
                                     scalar_bit(Scalar::float32) | scalar_bit(Scalar::float64);
inline constexpr ScalarMask boolean = scalar_bit(Scalar::bool_);
inline constexpr ScalarMask index = scalar_bit(Scalar::index);
inline constexpr ScalarMask signed_ints = scalar_bit(Scalar::int8) | scalar_bit(Scalar::int16) |
                                          scalar_bit(Scalar::int32) | scalar_bit(Scalar::int64) | index;
}  // namespace dts

class UPat {
 public:
  enum class Src : uint8_t { any, ordered, commutative, repeat };

  UPat() = default;                 // matches anything, captures nothing
  UPat(Var v);                      // NOLINT: a wildcard (or constant wildcard) bound to a slot
  UPat(int v);                      // NOLINT: a CONST with this numeric value (any dtype)
  UPat(int64_t v);                  // NOLINT
  UPat(double v);                   // NOLINT

  static UPat op(Ops op, std::initializer_list<UPat> src = {}, bool any_len = false);
  static UPat op(Ops op, std::vector<UPat> src, bool any_len = false);
  static UPat ops(OpMask ops, std::initializer_list<UPat> src = {}, bool any_len = false);
  static UPat commutative(Ops op, UPat a, UPat b);
  static UPat repeat(OpMask ops, UPat each);  // every source matches `each`
  static UPat cvalue(double v);               // CONST with numeric value v
  static UPat cbool(bool v);
  static UPat any_const() { return op(Ops::CONST); }

  UPat named(Var v) const;                // also capture this node in slot v
  UPat dtype(ScalarMask m) const;         // restrict the scalar kind (any vector width)
  UPat arg(Arg a) const;                  // require this exact arg
  UPat allow_any_len() const;

  UPat where(UPat t, UPat f) const;
  UPat cast() const;                      // CAST to any dtype
  UPat maximum(UPat o) const;
  UPat lt(UPat o) const;
  UPat ne(UPat o) const;
  UPat eq(UPat o) const;
  UPat logical_not() const;               // CMPNE(x, True)

  // matching state (read by the matcher)
  OpMask ops_;                 // empty = any op
  ScalarMask scalars_ = 0;     // 0 = any dtype
  int8_t slot_ = -1;
  bool const_slot_ = false;    // slot only binds CONST nodes
  Src src_kind_ = Src::any;
  bool any_len_ = false;
  std::optional<double> value_;  // CONST numeric value
  // (behind a pointer: an inline Arg would push the fields the matcher reads on every node past
  // the first cache line)
  std::shared_ptr<const Arg> arg_;
  std::vector<UPat> src_;

  OpMask required_src_ops() const;  // ops every match has among its direct sources (early reject)
  int size() const;                 // number of pattern nodes
  // A root whose sources (if listed, in order) are unconstrained wildcards: it matches in one
  // step (match_flat), without the backtracking matcher. Most callback rules look like this.
  bool is_flat() const;

};

UPat operator+(const UPat& a, const UPat& b);
UPat operator-(const UPat& a, const UPat& b);  // ADD(a, NEG(b)) is never produced; matches SUB
UPat operator*(const UPat& a, const UPat& b);
UPat operator/(const UPat& a, const UPat& b);  // IDIV
UPat operator%(const UPat& a, const UPat& b);  // MOD
UPat operator&(const UPat& a, const UPat& b);
UPat operator|(const UPat& a, const UPat& b);
UPat operator^(const UPat& a, const UPat& b);
UPat operator<<(const UPat& a, const UPat& b);
UPat operator>>(const UPat& a, const UPat& b);
UPat operator<(const UPat& a, const UPat& b);   // CMPLT
UPat operator!=(const UPat& a, const UPat& b);  // CMPNE
UPat operator-(const UPat& a);                  // NEG

// The bindings of one successful match. Slots are valid where `bound_mask` says so; the array is
// not cleared, because a Match is made for every rule attempt on every node.
struct Match {
  uint32_t bound_mask = 0;
  const UOp* s[kMaxSlots];
  const UOp& operator[](Var v) const { return *s[v.slot]; }
  bool bound(Var v) const { return bound_mask >> v.slot & 1; }
  void bind(int slot, const UOp* u) {
    s[slot] = u;
    bound_mask |= 1u << slot;
  }
  int64_t i(Var v) const;     // integer value of a bound CONST
  double f(Var v) const;      // numeric value of a bound CONST (int, float or bool)
};

// The first match of p against u (bindings in m).
bool match(const UPat& p, const UOp& u, Match& m);
// Enumerates matches (commutative nodes give up to two per level) and calls accept on each until
// it returns true; returns whether one was accepted. Guards and callbacks that decline a match
// thereby let the matcher try the other operand order.
using MatchAccept = bool (*)(Match& m, void* ctx);
bool match_each(const UPat& p, const UOp& u, Match& m, MatchAccept accept, void* ctx);
// The match of a pattern with is_flat(), which has at most one.
bool match_flat(const UPat& p, const UOp& u, Match& m);

namespace pat {
inline constexpr Var x{0, false}, y{1, false}, z{2, false}, w{3, false}, a{4, false}, b{5, false}, d{6, false},
    e{7, false};
inline constexpr Var c0{8, true}, c1{9, true}, c2{10, true}, c3{11, true};
inline constexpr Var r0{12, false}, r1{13, false}, r2{14, false}, r3{15, false};
}  // namespace pat

}  // namespace kiln
