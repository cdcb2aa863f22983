// symbolic/bounds.cpp - interval rules per op. Overflow anywhere widens to the dtype's range.
#include "symbolic/bounds.hpp"

#include <algorithm>

#include "ir/alu.hpp"
#include "ir/uop_access.hpp"

namespace kiln {

namespace {

using Range = std::pair<int64_t, int64_t>;

Range full(DType d) { return {d.imin(), d.imax()}; }

Range cached(const UOpNode* n) { return {n->vmin, n->vmax}; }

bool add_ok(int64_t a, int64_t b, int64_t& r) { return !__builtin_add_overflow(a, b, &r); }
bool mul_ok(int64_t a, int64_t b, int64_t& r) { return !__builtin_mul_overflow(a, b, &r); }

// Clamps to the dtype; a result that does not fit (wrapping) becomes the full range.
Range fit(DType d, Range r) {
  if (r.first < d.imin() || r.second > d.imax() || r.first > r.second) return full(d);
  return r;
}

int64_t tdiv(int64_t a, int64_t b) { return a / b; }  // C truncation

Range compute(const UOpNode* n) {
  DType d = n->dtype;
  if (d.is_ptr() || d.is_float() || d.is_void() || d.count() != 1) return full(d.scalar_type());
  auto s = [&](int i) { return cached(n->srcs()[i].node()); };
  switch (n->op) {
    case Ops::CONST: {
      if (d.scalar() == Scalar::uint64) return full(d);
      if (const auto* i = std::get_if<int64_t>(&n->arg)) return Range{*i, *i};
      if (const auto* b = std::get_if<bool>(&n->arg)) return {*b, *b};
      return full(d);
    }
    case Ops::DEFINE_VAR: {
      const auto& v = std::get<NamedInts>(n->arg).ints;
      return {v[0], v[1]};
    }
    case Ops::RANGE:
    case Ops::SPECIAL: {
      int64_t hi = s(0).second;
      return {0, std::max<int64_t>(0, hi - 1)};
    }
    case Ops::BIND: return s(1);
    default: break;
  }
  if (n->nsrc == 0) return full(d);
  // uint64 values above INT64_MAX have no int64 interval: give up on anything that reads one
  for (uint32_t i = 0; i < n->nsrc; ++i)
    if (n->srcs()[i].node()->dtype.scalar() == Scalar::uint64) return full(d);
  if (d.is_unsigned() && n->op != Ops::CMPLT) {
    // keep unsigned reasoning simple and sound: only non-negative results we can prove
    for (uint32_t i = 0; i < n->nsrc; ++i)
      if (s(i).first < 0) return full(d);
  }
  switch (n->op) {
    case Ops::ADD: {
      int64_t lo, hi;
      if (!add_ok(s(0).first, s(1).first, lo) || !add_ok(s(0).second, s(1).second, hi)) return full(d);
      return fit(d, {lo, hi});
    }
    case Ops::SUB: {
      int64_t lo, hi;
      if (__builtin_sub_overflow(s(0).first, s(1).second, &lo) || __builtin_sub_overflow(s(0).second, s(1).first, &hi)) return full(d);
      return fit(d, {lo, hi});
    }
    case Ops::NEG: {
      if (s(0).first == INT64_MIN) return full(d);
      return fit(d, {-s(0).second, -s(0).first});
    }
    case Ops::MUL: {
      auto [a0, a1] = s(0);
      auto [b0, b1] = s(1);
      int64_t p[4];
      if (!mul_ok(a0, b0, p[0]) || !mul_ok(a0, b1, p[1]) || !mul_ok(a1, b0, p[2]) || !mul_ok(a1, b1, p[3])) return full(d);
      return fit(d, {*std::min_element(p, p + 4), *std::max_element(p, p + 4)});
    }
    case Ops::IDIV: {
      auto [a0, a1] = s(0);
      auto [b0, b1] = s(1);
      if (b0 <= 0 && b1 >= 0) return full(d);  // divisor may be zero or change sign
      if (a0 == INT64_MIN) return full(d);
      int64_t p[4] = {tdiv(a0, b0), tdiv(a0, b1), tdiv(a1, b0), tdiv(a1, b1)};
      return fit(d, {*std::min_element(p, p + 4), *std::max_element(p, p + 4)});
    }
    case Ops::MOD: {
      auto [a0, a1] = s(0);
      auto [b0, b1] = s(1);
      if (b0 <= 0 && b1 >= 0) return full(d);
      if (b0 == INT64_MIN) return full(d);
      int64_t m = std::max(std::abs(b0), std::abs(b1)) - 1;  // |result| <= |b| - 1
      if (b0 == b1 && a0 >= 0) {
        int64_t c = std::abs(b0);
        if (a1 / c == a0 / c) return {a0 % c, a1 % c};  // no wrap inside the range
      }
      int64_t lo = a0 >= 0 ? 0 : std::max(-m, a0);
      int64_t hi = a1 <= 0 ? 0 : std::min(m, a1);
      return {lo, hi};
    }
    case Ops::MAX: return {std::max(s(0).first, s(1).first), std::max(s(0).second, s(1).second)};
    case Ops::CMPLT: {
      if (s(0).second < s(1).first) return {1, 1};
      if (s(0).first >= s(1).second) return {0, 0};
      return {0, 1};
    }
    case Ops::CMPNE:
    case Ops::CMPEQ: {
      bool disjoint = s(0).second < s(1).first || s(0).first > s(1).second;
      bool same_point = s(0).first == s(0).second && s(1).first == s(1).second && s(0).first == s(1).first;
      int64_t ne = disjoint ? 1 : same_point ? 0 : -1;
      if (ne < 0) return {0, 1};
      return n->op == Ops::CMPNE ? Range{ne, ne} : Range{1 - ne, 1 - ne};
    }
    case Ops::WHERE: {
      Range c = s(0);
      if (c.first == c.second) return c.first ? s(1) : s(2);
      return {std::min(s(1).first, s(2).first), std::max(s(1).second, s(2).second)};
    }
    case Ops::AND: {
      if (d.is_bool()) return {s(0).first && s(1).first, s(0).second && s(1).second};
      if (s(0).first >= 0 && s(1).first >= 0) return {0, std::min(s(0).second, s(1).second)};
      return full(d);
    }
    case Ops::OR: {
      if (d.is_bool()) return {s(0).first || s(1).first, s(0).second || s(1).second};
      return full(d);
    }
    case Ops::XOR: {
      if (d.is_bool()) {
        Range a = s(0), b = s(1);
        if (a.first == a.second && b.first == b.second) return {a.first != b.first, a.first != b.first};
        return {0, 1};
      }
      return full(d);
    }
    case Ops::SHL: {
      auto [b0, b1] = s(1);
      if (b0 < 0 || b1 > 62 || s(0).first < 0) return full(d);
      int64_t hi;
      if (!mul_ok(s(0).second, int64_t{1} << b1, hi)) return full(d);
      return fit(d, {s(0).first << b0, hi});
    }
    case Ops::SHR: {
      auto [b0, b1] = s(1);
      if (b0 < 0 || b1 > 63 || s(0).first < 0) return full(d);
      return {s(0).first >> b1, s(0).second >> b0};
    }
    case Ops::CAST: {
      const UOpNode* src = n->srcs()[0].node();
      if (src->dtype.is_float() || src->dtype.is_ptr() || src->dtype.count() != 1) return full(d);
      return fit(d, s(0));
    }
    default: return full(d);
  }
}

}  // namespace

std::pair<int64_t, int64_t> bounds(const UOp& root) {
  fill_cache(root.node(), kBoundsCached, [](const UOpNode* n) {
    Range b = compute(n);
    n->vmin = b.first;
    n->vmax = b.second;
  });
  return cached(root.node());
}

}  // namespace kiln

