// codegen/onehot.cpp - a one-hot sum is a load.
//
// Tensor::gather (and so an embedding lookup or a cross-entropy's pick) has no indexed load at the
// tensor level: it compares the index with an arange and sums the matches,
//   REDUCE(ADD, WHERE(CAST(r) == v, x(r), 0), r)            v does not depend on r
// which reads all N rows of x for every output element (a 32000-row embedding table, 1024 tokens
// of 512: 1.4 s). Exactly one r matches when 0 <= v < N, none otherwise, so the sum is
//   WHERE(inside, x(v), 0)                                  inside = 0 <= v < N
// with every load in x(v) gated by `inside` (a gated load reads nothing), so an index outside the
// table reads no memory, as the sum did not. (One difference: a sum of +0.0 and -0.0 is +0.0, the
// load gives the -0.0 it reads.) Runs before the optimisation actions, which then see a kernel
// without the reduce.
#include "codegen/passes.hpp"
#include "ir/traverse.hpp"
#include "rewrite/graph_rewrite.hpp"
#include "rewrite/pattern_matcher.hpp"

namespace kiln {

namespace {

using namespace pat;

bool depends_on(const UOp& u, const UOp& r) {
  for (const UOp& n : toposort(u))
    if (n == r) return true;
  return false;
}

UOp fold_onehot(const Match& m) {
  const UOp& red = m[r0];
  const UOp& r = m[z];
  if (red.nsrc() != 2 || red.arg_ints().empty() || red.arg_ints()[0] != static_cast<int64_t>(Ops::ADD)) return {};
  if (depends_on(m[y], r)) return {};
  const UOp at = m[y].dtype() == r.dtype() ? m[y] : m[y].cast(r.dtype());
  const UOp inside = at.lt(UOp::cint(r.dtype(), 0)).logical_not() & at.lt(r.src(0));
  // (clamped into the table, so the index math keeps the range's bounds: int32 where the
  // table's does)
  const UOp row = at.maximum(UOp::cint(r.dtype(), 0)).minimum(r.src(0) - 1);
  UOp body = substitute(m[x], {{r, row}});
  // every load that moved with r reads only inside the table
  std::vector<std::pair<UOp, UOp>> gated;
  for (const UOp& u : toposort(body)) {
    if (u.op() != Ops::INDEX || !depends_on(u, row)) continue;
    std::vector<UOp> src(u.src().begin(), u.src().end());
    if (src.size() == 2) src.push_back(inside);
    else src[2] = src[2] & inside;
    gated.push_back({u, u.replace_src(src)});
  }
  body = substitute(body, gated);
  return inside.where(body, UOp::cvalue(red.dtype(), 0));
}

}  // namespace

UOp fold_onehot_reduces(const UOp& ast) {
  static const PatternMatcher pm{
      rule(UPat::op(Ops::REDUCE, {UPat(z).cast().eq(y).where(x, UPat::cvalue(0)), z}).named(r0), fold_onehot),
      rule(UPat::op(Ops::REDUCE, {UPat(z).eq(y).where(x, UPat::cvalue(0)), z}).named(r0), fold_onehot),
  };
  return graph_rewrite(ast, pm, nullptr, "onehot");
}

}  // namespace kiln
