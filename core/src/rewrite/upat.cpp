// rewrite/upat.cpp - pattern construction and the backtracking matcher.
//
// match() is allocation-free: it works through a fixed-size stack of (pattern, node) goals and
// branches only at commutative nodes, copying that stack to backtrack.
#include "rewrite/upat.hpp"

#include <algorithm>

#include "support/check.hpp"

namespace kiln {

UPat::UPat(Var v) : slot_(v.slot), const_slot_(v.is_const) {
  if (v.is_const) ops_ = OpMask{Ops::CONST};
}
UPat::UPat(int v) : UPat(static_cast<double>(v)) {}
UPat::UPat(int64_t v) : UPat(static_cast<double>(v)) {}
UPat::UPat(double v) : ops_{Ops::CONST}, value_(v) {}

UPat UPat::op(Ops op, std::vector<UPat> src, bool any_len) {
  UPat p;
  p.ops_ = OpMask{op};
  p.src_kind_ = src.empty() && !any_len ? Src::any : Src::ordered;
  p.any_len_ = any_len;
  p.src_ = std::move(src);
  if (p.src_.empty() && !any_len) p.src_kind_ = Src::any;
  return p;
}
UPat UPat::op(Ops op, std::initializer_list<UPat> src, bool any_len) { return UPat::op(op, std::vector<UPat>(src), any_len); }
UPat UPat::ops(OpMask ops, std::initializer_list<UPat> src, bool any_len) {
  UPat p;
  p.ops_ = ops;
  p.src_ = std::vector<UPat>(src);
  p.any_len_ = any_len;
  p.src_kind_ = p.src_.empty() ? Src::any : Src::ordered;
  return p;
}
UPat UPat::commutative(Ops op, UPat a, UPat b) {
  UPat p;
  p.ops_ = OpMask{op};
  p.src_kind_ = Src::commutative;
  p.src_ = {std::move(a), std::move(b)};
  return p;
}
UPat UPat::repeat(OpMask ops, UPat each) {
  UPat p;
  p.ops_ = ops;
  p.src_kind_ = Src::repeat;
  p.src_ = {std::move(each)};
  return p;
}
UPat UPat::cvalue(double v) { return UPat(v); }
UPat UPat::cbool(bool v) {
  UPat p = UPat(v ? 1.0 : 0.0);
  p.scalars_ = dts::boolean;
  return p;
}

UPat UPat::named(Var v) const {
  UPat p = *this;
  KILN_CHECK(p.slot_ < 0, "pattern already captures a slot");
  p.slot_ = v.slot;
  return p;
}
UPat UPat::dtype(ScalarMask m) const {
  UPat p = *this;
  p.scalars_ = m;
  return p;
}
UPat UPat::arg(Arg a) const {
  UPat p = *this;
  p.arg_ = std::make_shared<const Arg>(std::move(a));
  return p;
}
UPat UPat::allow_any_len() const {
  UPat p = *this;
  p.any_len_ = true;
  if (p.src_kind_ == Src::any) p.src_kind_ = Src::ordered;
  return p;
}

static UPat binary(Ops op, const UPat& a, const UPat& b) {
  return groups::Commutative.has(op) ? UPat::commutative(op, a, b) : UPat::op(op, {a, b});
}
UPat UPat::where(UPat t, UPat f) const { return UPat::op(Ops::WHERE, {*this, std::move(t), std::move(f)}); }
UPat UPat::cast() const { return UPat::op(Ops::CAST, {*this}); }
UPat UPat::maximum(UPat o) const { return binary(Ops::MAX, *this, o); }
UPat UPat::lt(UPat o) const { return binary(Ops::CMPLT, *this, o); }
UPat UPat::ne(UPat o) const { return binary(Ops::CMPNE, *this, o); }
UPat UPat::eq(UPat o) const { return binary(Ops::CMPEQ, *this, o); }
UPat UPat::logical_not() const { return UPat::op(Ops::CMPNE, {*this, UPat::cbool(true)}); }

UPat operator+(const UPat& a, const UPat& b) { return binary(Ops::ADD, a, b); }
UPat operator-(const UPat& a, const UPat& b) { return binary(Ops::SUB, a, b); }
UPat operator*(const UPat& a, const UPat& b) { return binary(Ops::MUL, a, b); }
UPat operator/(const UPat& a, const UPat& b) { return binary(Ops::IDIV, a, b); }
UPat operator%(const UPat& a, const UPat& b) { return binary(Ops::MOD, a, b); }
UPat operator&(const UPat& a, const UPat& b) { return binary(Ops::AND, a, b); }
UPat operator|(const UPat& a, const UPat& b) { return binary(Ops::OR, a, b); }
UPat operator^(const UPat& a, const UPat& b) { return binary(Ops::XOR, a, b); }
UPat operator<<(const UPat& a, const UPat& b) { return binary(Ops::SHL, a, b); }
UPat operator>>(const UPat& a, const UPat& b) { return binary(Ops::SHR, a, b); }
UPat operator<(const UPat& a, const UPat& b) { return binary(Ops::CMPLT, a, b); }
UPat operator!=(const UPat& a, const UPat& b) { return binary(Ops::CMPNE, a, b); }
UPat operator-(const UPat& a) { return UPat::op(Ops::NEG, {a}); }

OpMask UPat::required_src_ops() const {
  OpMask m;
  if (src_kind_ == Src::ordered || src_kind_ == Src::commutative || src_kind_ == Src::repeat)
    for (const UPat& s : src_)
      if (s.ops_.size() == 1) m = m | s.ops_;
  return m;
}

int UPat::size() const {
  int n = 1;
  for (const UPat& s : src_) n += s.size();
  return n;
}

bool UPat::is_flat() const {
  if (src_kind_ == Src::any) return true;
  if (src_kind_ != Src::ordered) return false;
  uint32_t slots = slot_ >= 0 ? 1u << slot_ : 0;
  for (const UPat& s : src_) {
    bool wildcard = s.ops_.empty() && !s.scalars_ && !s.value_ && !s.arg_ && s.src_kind_ == Src::any;
    if (!wildcard || (s.slot_ >= 0 && (slots >> s.slot_ & 1))) return false;  // a repeated slot must match twice
    if (s.slot_ >= 0) slots |= 1u << s.slot_;
  }
  return true;
}

static double const_number(const UOp& u) {
  const Arg& a = u.arg();
  if (const auto* i = std::get_if<int64_t>(&a)) return static_cast<double>(*i);
  if (const auto* f = std::get_if<Float>(&a)) return f->v;
  if (const auto* b = std::get_if<bool>(&a)) return *b ? 1.0 : 0.0;
  return 0.0;
}

int64_t Match::i(Var v) const {
  const UOp& u = *s[v.slot];
  if (const auto* i = std::get_if<int64_t>(&u.arg())) return *i;
  if (const auto* b = std::get_if<bool>(&u.arg())) return *b;
  return static_cast<int64_t>(const_number(u));
}
double Match::f(Var v) const { return const_number(*s[v.slot]); }

namespace {

constexpr int kMaxGoals = 48;
struct Goal {
  const UPat* p;
  const UOp* u;
};

[[gnu::always_inline]] inline bool node_ok(const UPat& p, const UOp& u) {
  if (!p.ops_.empty() && !p.ops_.has(u.op())) return false;
  if (!p.scalars_ && !p.value_ && !p.arg_) return true;  // the common case: op or nothing to check
  if (p.scalars_ && !(p.scalars_ & scalar_bit(u.dtype().scalar()))) return false;
  if (p.value_ && (u.op() != Ops::CONST || const_number(u) != *p.value_ ||
                   std::holds_alternative<std::monostate>(u.arg())))
    return false;
  if (p.arg_ && !(*p.arg_ == u.arg())) return false;
  return true;
}

struct Accept {
  MatchAccept fn;
  void* ctx;
};

// Satisfies the goals on `stack` (the top, stack[n-1], first), depth-first and left to right, and
// calls acc on the complete set of bindings. Runs as a loop; only commutative nodes recurse, on a
// copy of the stack, so the other operand order can be tried when the first fails.
bool solve(Goal* stack, int n, Match& m, const Accept& acc) {
  while (n > 0) {
    const UPat& p = *stack[n - 1].p;
    const UOp& u = *stack[n - 1].u;
    --n;
    if (!node_ok(p, u)) return false;
    if (p.slot_ >= 0) {
      if (m.bound_mask >> p.slot_ & 1) {
        if (m.s[p.slot_]->node() != u.node()) return false;
        continue;  // already matched this exact node
      }
      m.bind(p.slot_, &u);
    }
    switch (p.src_kind_) {
      case UPat::Src::any: break;
      case UPat::Src::repeat: {
        if (n + static_cast<int>(u.nsrc()) > kMaxGoals) return false;
        for (size_t i = u.nsrc(); i-- > 0;) stack[n++] = {&p.src_[0], &u.src(i)};
        break;
      }
      case UPat::Src::ordered: {
        size_t np = p.src_.size();
        if (u.nsrc() < np || (!p.any_len_ && u.nsrc() != np)) return false;
        for (size_t i = np; i-- > 0;) stack[n++] = {&p.src_[i], &u.src(i)};
        break;
      }
      case UPat::Src::commutative: {
        if (u.nsrc() != 2) return false;
        Goal alt[kMaxGoals];
        std::copy(stack, stack + n, alt);
        alt[n] = {&p.src_[1], &u.src(1)};
        alt[n + 1] = {&p.src_[0], &u.src(0)};
        // backtracking only needs the mask: slots bound by the failed branch become unbound again
        uint32_t saved = m.bound_mask;
        if (solve(alt, n + 2, m, acc)) return true;
        m.bound_mask = saved;
        stack[n++] = {&p.src_[1], &u.src(0)};
        stack[n++] = {&p.src_[0], &u.src(1)};
        break;
      }
    }
  }
  return acc.fn(m, acc.ctx);
}

}  // namespace

bool match_each(const UPat& p, const UOp& u, Match& m, MatchAccept accept, void* ctx) {
  Goal stack[kMaxGoals];
  stack[0] = {&p, &u};
  return solve(stack, 1, m, Accept{accept, ctx});
}

bool match_flat(const UPat& p, const UOp& u, Match& m) {
  if (!node_ok(p, u)) return false;
  if (p.src_kind_ == UPat::Src::ordered) {
    size_t np = p.src_.size();
    if (u.nsrc() < np || (!p.any_len_ && u.nsrc() != np)) return false;
    for (size_t i = 0; i < np; ++i)
      if (p.src_[i].slot_ >= 0) m.bind(p.src_[i].slot_, &u.src(i));
  }
  if (p.slot_ >= 0) m.bind(p.slot_, &u);
  return true;
}

bool match(const UPat& p, const UOp& u, Match& m) {
  return match_each(p, u, m, [](Match&, void*) { return true; }, nullptr);
}

}  // namespace kiln
