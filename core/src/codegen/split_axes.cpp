// codegen/split_axes.cpp - an output axis that the kernel reads as two digits becomes two axes;
// two adjacent axes that it reads as one number become one axis.
//
// A kernel's output axes are its output buffer's: a matmul whose result is stored through a
// transpose and a reshape, (p @ v).transpose(1, 2).reshape(B, S, H*D) (attention's heads merged
// back), loops over H*D = 768 columns, and its inputs read them as the head r // 64 and the
// position in it r % 64. An index with a division is linear along no axis, so no vector and no
// register tile applied: the kernel ran scalar, 59x slower than torch. Where the kernel divides an
// output range r by a c that divides its size, r becomes two ranges, r = outer * c + inner
// (outer a new axis, inner keeps r's id and its place inside), and the digits are the ranges
// themselves. Kept only where it removes divisions; repeated while one does (an axis may hold
// several digits). Runs before the optimisation actions, which then see plain axes.
//
// The other way round: the scheduler keeps a tensor's dimensions as axes, so an NCHW kernel on
// 7 x 7 maps loops over 7 columns inside 7 rows although every access walks the 49 positions as
// one run. Its vectors then pad 7 to 8 (a masked lane in every eight) and its register tiles stop
// at 7 columns. Where two adjacent axes (outer, inner: closed next to each other by every END or
// REDUCE that closes either) are accessed only as outer * n + inner, they become one axis of the
// product's size: substituting m // n and m % n leaves no new division after simplification.
#include <algorithm>

#include "codegen/opt/opt.hpp"
#include "codegen/passes.hpp"
#include "codegen/target.hpp"
#include "ir/traverse.hpp"
#include "symbolic/symbolic.hpp"

namespace kiln {

namespace {

size_t divisions(const UOp& ast) {
  size_t n = 0;
  for (const UOp& u : toposort(ast)) n += u.op() == Ops::IDIV || u.op() == Ops::MOD;
  return n;
}

// A divisor c of r's size that the kernel divides r itself by (r // c or r % c), or 0.
int64_t digit_of(const UOp& ast, const UOp& r) {
  const int64_t n = const_size(r);
  for (const UOp& u : toposort(ast))
    if ((u.op() == Ops::IDIV || u.op() == Ops::MOD) && u.src(0) == r && u.src(1).is_const()) {
      const int64_t c = u.src(1).arg_int();
      if (c > 1 && c < n && n % c == 0) return c;
    }
  return 0;
}

// Adjacent pairs (outer, inner) of one axis type with constant sizes that every END and REDUCE
// closes together (both or neither, next to each other in that order), innermost first.
std::vector<std::pair<UOp, UOp>> adjacent_pairs(const UOp& ast) {
  std::vector<std::pair<UOp, UOp>> pairs;
  std::vector<UOp> closers;
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::END || u.op() == Ops::REDUCE) closers.push_back(u);
  auto closes = [](const UOp& c, const UOp& r) {
    for (size_t i = 1; i < c.nsrc(); ++i)
      if (c.src(i) == r) return i;
    return size_t{0};
  };
  for (const UOp& c : closers)
    for (size_t i = 1; i + 1 < c.nsrc(); ++i) {
      const UOp &outer = c.src(i), &inner = c.src(i + 1);
      if (outer.op() != Ops::RANGE || inner.op() != Ops::RANGE || range_type(outer) != range_type(inner) ||
          !const_size(outer) || !const_size(inner))
        continue;
      const bool together = std::all_of(closers.begin(), closers.end(), [&](const UOp& d) {
        const size_t a = closes(d, outer), b = closes(d, inner);
        return (!a && !b) || (a && b == a + 1);
      });
      if (together && std::find(pairs.begin(), pairs.end(), std::pair{outer, inner}) == pairs.end()) pairs.push_back({outer, inner});
    }
  std::reverse(pairs.begin(), pairs.end());  // innermost first (a GPU may not take them all)
  return pairs;
}

}  // namespace

UOp merge_adjacent_axes(const UOp& ast, const Target& target) {
  // A GPU's output axes are launch dimensions: a merged one stays within the smallest. And it
  // takes whole vectors: a GPU has no masked vectors and no peel for its output axes, so 7 x 7
  // merged into 49 (padded to 56) clamps each vector's lanes at run time where a row of 7 padded
  // to 8 clamps the same lane of every vector (PoCL, a 1 x 1 convolution on 7 x 7 maps: 3.5 ->
  // 4.3 ms).
  int64_t most = INT64_MAX, whole = 1;
  if (target.has(KILN_TARGET_HAS_LOCAL)) {
    for (uint32_t g : target.global_max) most = std::min<int64_t>(most, g);
    whole = std::max<int64_t>(1, target.max_vector_width);
  }
  UOp cur = ast;
  for (bool merged = true; merged;) {
    merged = false;
    for (const auto& [outer, inner] : adjacent_pairs(cur)) {
      const int64_t n = const_size(inner);
      int64_t size = 0;
      if (__builtin_mul_overflow(const_size(outer), n, &size) || (range_type(outer) == AxisType::LOOP && (size > most || size % whole)))
        continue;
      const UOp m = UOp::range(size, range_axis(outer), range_type(outer));
      UOp cut = replace_range(replace_range(cur, outer, m.idiv(n), {m}), inner, m.mod(n), {});
      cut = simplify(cut);
      if (divisions(cut) > divisions(cur)) continue;
      cur = cut;
      merged = true;
      break;
    }
  }
  return cur;
}

UOp split_digit_axes(const UOp& ast) {
  UOp cur = ast;
  for (bool split = true; split;) {
    split = false;
    const std::vector<UOp> ranges = ranges_of(cur);
    int64_t next = 0;
    for (const UOp& r : ranges) next = std::max(next, range_axis(r) + 1);
    for (const UOp& r : ranges) {
      if (range_type(r) != AxisType::LOOP) continue;
      const int64_t c = digit_of(cur, r);
      if (!c) continue;
      const UOp outer = UOp::range(const_size(r) / c, next), inner = UOp::range(c, range_axis(r));
      UOp cut = simplify(replace_range(cur, r, outer * c + inner, {outer, inner}));
      if (divisions(cut) >= divisions(cur)) continue;
      cur = cut;
      split = true;
      break;
    }
  }
  return cur;
}

}  // namespace kiln
