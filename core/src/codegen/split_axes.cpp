// codegen/split_axes.cpp - an output axis that the kernel reads as two digits becomes two axes.
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
#include <algorithm>

#include "codegen/opt/opt.hpp"
#include "codegen/passes.hpp"
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

}  // namespace

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
