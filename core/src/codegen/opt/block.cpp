// codegen/opt/block.cpp - BLOCK: a reduce axis cut into blocks, the loop over blocks outermost.
//
// BLOCK(axis, amount) on a kernel that stores one ADD reduce, C[i] = sum_k body(i, k):
//   C[i] = (kb == 0 ? 0 : C[i]) + sum_{k' < amount} body(i, kb * amount + k')
// inside END(..., kb, the output loops...): kb (a BLOCK range, new id) runs outside every output
// loop and each block adds its partial sums into the output (the first writes them). The inner
// reduce keeps the axis id, so later actions (UNROLL, ...) split it as before. Why: with K rows
// of B, a matmul's column panel (K x tile width) may not fit the cache, and with few rows its
// tiles walk B down its columns (one cache line per row, rows a leading dimension apart); a
// block's panel fits, and consecutive panels continue the same rows.
//
// An epilogue (what the kernel computes from the sum before it stores it: a bias, an activation, a
// mean's scale) runs in the last block only, on the whole sum:
//   C[i] = kb == last ? epilogue(partial) : partial         partial = (kb == 0 ? 0 : C[i]) + block sum
// Only where this is exact: an ADD (0 is its identity), one reduce in the stored value, and
// nothing else in the kernel reads the output. A sum stored in its own dtype keeps its partial sums
// in the output; one stored narrower (a bfloat16 GEMV sums in float32 and rounds once) keeps them
// in a float32 array on the running thread's stack, indexed like the output (DEFINE_REG, at most
// kMaxStageBytes), and only the last block stores the output:
//   P[i] = (kb == 0 ? 0 : P[i]) + block sum;   if (kb == last) C[i] = epilogue(P[i])
// (rounding the partial sums into a bfloat16 output would change the answer).
#include <algorithm>

#include "codegen/ids.hpp"
#include "codegen/opt/opt.hpp"
#include "ir/traverse.hpp"
#include "support/check.hpp"

namespace kiln {

namespace {

struct Blocking {
  UOp store, end;  // the kernel's one STORE and the END that closes its loops
  UOp sum;         // the reduce over the blocked axis: the stored value, or under its epilogue
  bool narrow = false;  // stored in a narrower dtype: the partial sums go to a float32 array
};

std::string find_blocking(const UOp& ast, const UOp& r, Blocking& b) {
  std::vector<UOp> stores;
  for (const UOp& u : toposort(ast)) {
    if (u.op() == Ops::RANGE && range_type(u) == AxisType::BLOCK) return "the kernel has a BLOCK already (one per kernel)";
    if (u.op() == Ops::STORE) stores.push_back(u);
    if (u.op() == Ops::END && u.src(0).op() == Ops::STORE) b.end = u;
  }
  if (stores.size() != 1 || !b.end || !(b.end.src(0) == stores[0])) return "BLOCK needs a kernel with one store";
  b.store = stores[0];
  std::vector<UOp> reduces;
  for (const UOp& u : toposort(b.store.src(1)))
    if (u.op() == Ops::REDUCE) reduces.push_back(u);
  if (reduces.size() != 1 || std::find(reduces[0].src().begin() + 1, reduces[0].src().end(), r) == reduces[0].src().end())
    return cat("the kernel does not store one reduce, over axis ", range_axis(r));
  b.sum = reduces[0];
  if (static_cast<Ops>(b.sum.arg_ints()[0]) != Ops::ADD) return "BLOCK adds blocks' partial sums: the reduce must be a sum";
  const UOp& out = b.store.src(0).src(0);
  if (b.sum.dtype() != b.store.src(0).dtype().base()) {
    if (b.sum.dtype() != dtypes::float32 || out.op() != Ops::PARAM ||
        out.dtype().ptr_size() * 4 > kMaxStageBytes)
      return "the reduce's dtype is not the output's, and its float32 partial sums would not fit a stack array";
    b.narrow = true;
  }
  for (const UOp& u : toposort(ast))
    if (u.op() == Ops::LOAD && u.src(0).op() == Ops::INDEX && u.src(0).src(0) == out) return "the kernel reads its output";
  return {};
}

}  // namespace

std::string block_problem(const UOp& ast, const UOp& r, const Opt&) {
  Blocking b;
  return find_blocking(ast, r, b);
}

UOp block_reduce(const UOp& ast, const UOp& r, const Opt& opt, int64_t block_axis) {
  Blocking b;
  std::string why = find_blocking(ast, r, b);
  KILN_CHECK(why.empty(), "block_reduce: ", why);
  const int64_t amt = opt.amount;
  UOp kb = UOp::make(Ops::RANGE, dtypes::index, {UOp::cindex(const_size(r) / amt)},
                     Arg{std::vector<int64_t>{block_axis, static_cast<int64_t>(AxisType::BLOCK)}});
  UOp inner = UOp::make(Ops::RANGE, dtypes::index, {UOp::cindex(amt)}, r.arg());
  const UOp& red = b.sum;
  std::vector<UOp> red_src{substitute(red.src(0), {{r, kb * amt + inner}})};
  for (size_t i = 1; i < red.nsrc(); ++i) red_src.push_back(red.src(i) == r ? inner : red.src(i));
  UOp partial = red.replace_src(red_src);
  // the sums so far: a load gated off in the first block (a gated load gives 0), from the output
  // or from the float32 array beside a narrower one
  const UOp& at = b.store.src(0);
  const UOp first = kb.ne(UOp::cindex(0)), last = kb.eq(UOp::cindex(const_size(r) / amt - 1));
  UOp sums = at.src(0);
  if (b.narrow)
    sums = UOp::make(Ops::DEFINE_REG, red.dtype().ptr(at.src(0).dtype().ptr_size(), AddrSpace::reg), {},
                     Arg{ids::kBlockPartialRegs.first});
  auto sums_at = [&](const UOp& gate) {
    std::vector<UOp> src{sums, at.src(1)};
    if (at.nsrc() > 2 || gate) src.push_back(at.nsrc() > 2 && gate ? at.src(2) & gate : gate ? gate : at.src(2));
    return UOp::make(Ops::INDEX, sums.dtype(), src);
  };
  UOp prev = UOp::make(Ops::LOAD, red.dtype(), {sums_at(first)});
  std::vector<UOp> store_src(b.store.src().begin(), b.store.src().end());
  UOp sum = prev + partial;
  const UOp& value = b.store.src(1);
  UOp stored;
  if (b.narrow) {
    std::vector<UOp> out_at{at.src(0), at.src(1), at.nsrc() > 2 ? at.src(2) & last : last};
    store_src[0] = UOp::make(Ops::INDEX, at.dtype(), out_at);
    store_src[1] = substitute(value, {{red, sum}});
    UOp keep = UOp::make(Ops::STORE, dtypes::void_, {sums_at(UOp()), sum});
    stored = UOp::make(Ops::GROUP, dtypes::void_, {keep, b.store.replace_src(store_src)});
  } else {
    store_src[1] = value == red ? sum : last.where(substitute(value, {{red, sum}}), sum);
    stored = b.store.replace_src(store_src);
  }
  std::vector<UOp> end_src{stored, kb};
  end_src.insert(end_src.end(), b.end.src().begin() + 1, b.end.src().end());
  return substitute(ast, {{b.end, b.end.replace_src(end_src)}});
}

}  // namespace kiln
