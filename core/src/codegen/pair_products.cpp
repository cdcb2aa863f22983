// codegen/pair_products.cpp - a bfloat16 matmul's products summed in K pairs by DOT2.
//
// On a target with DOT2 (AVX512-BF16's vdpbf16ps: 2n bfloat16 products summed pairwise into n
// float32 lanes, twice the products of a float32 multiply-add per instruction), the heuristic
// unrolls a bfloat16 matmul's K by 2 and stages B in pairs (opt/heuristic.cpp in_pairs,
// opt/stage.cpp): after the expander a REDUCE over K's pairs sums, per accumulator,
//   a(k) * b(k) + a(k+1) * b(k+1)
// with a(k) one A element broadcast to the lanes and b(k) lane l = panel[base + 2l] (k's element of
// column l, its pair beside it). Both are float32 views (CASTs) of bfloat16 loads. Where the lanes'
// addresses prove that shape, the sum is one DOT2 of A's pair (broadcast) and the panel's 2n
// elements from base (one vector load); decompose folds the accumulator's add into it. A
// convolution paired along its input channels has A's two elements a plane apart: they are loaded
// apart and joined into one 32-bit word, broadcast. Anything else is left as it is: the same
// values, one multiply-add per product.
#include "codegen/passes.hpp"

#include <optional>

#include "codegen/lir.hpp"
#include "codegen/target.hpp"
#include "ir/traverse.hpp"
#include "ir/uop_access.hpp"
#include "symbolic/symbolic.hpp"

namespace kiln {

namespace {

// Where a bfloat16 element comes from: a buffer and an element index (+ a constant: a lane of a
// vector load, kept apart so that proving the lanes' addresses builds no new index math).
struct Element {
  UOp ptr, index;
  int64_t plus = 0;
};

// The element lane l of bfloat16 value v was loaded from, if it was loaded ungated.
std::optional<Element> element_of(const UOp& v, int64_t l) {
  if (v.op() == Ops::GEP) return element_of(v.src(0), v.arg_ints()[static_cast<size_t>(l)]);
  if (v.op() == Ops::VECTORIZE) return v.dtype().count() == 1 ? element_of(v.src(0), 0) : element_of(v.src(static_cast<size_t>(l)), 0);
  if (v.op() != Ops::LOAD || v.nsrc() != 1 || v.src(0).op() != Ops::INDEX || v.src(0).nsrc() != 2) return std::nullopt;
  const UOp& index = v.src(0);
  return Element{index.src(0), index.src(1), v.dtype().count() == 1 ? 0 : l};
}

// The bfloat16 element behind lane l of a float32 operand (a CAST of bfloat16, or lanes of such).
std::optional<Element> operand_element(const UOp& x, int64_t l) {
  if (x.op() == Ops::CAST && x.src(0).dtype().scalar() == Scalar::bfloat16) return element_of(x.src(0), x.dtype().count() == 1 ? 0 : l);
  if (x.op() == Ops::VECTORIZE) return operand_element(x.src(static_cast<size_t>(l)), 0);
  if (x.op() == Ops::GEP) return operand_element(x.src(0), x.arg_ints()[static_cast<size_t>(l)]);
  return std::nullopt;
}

// An index as x + c (c constant; x null for a constant index).
std::pair<UOp, int64_t> split_constant(const UOp& idx) {
  if (idx.is_const()) return {UOp(), idx.arg_int()};
  if (idx.op() == Ops::ADD && idx.src(1).is_const()) {
    auto [x, c] = split_constant(idx.src(0));
    return {x, c + idx.src(1).arg_int()};
  }
  return {idx, 0};
}

// d = b - a when it is a constant.
std::optional<int64_t> offset(const Element& a, const Element& b) {
  if (a.ptr != b.ptr) return std::nullopt;
  if (a.index == b.index) return b.plus - a.plus;
  auto [xa, ca] = split_constant(a.index);
  auto [xb, cb] = split_constant(b.index);
  if (xa == xb) return cb + b.plus - ca - a.plus;
  UOp d = simplify(b.index - a.index);
  if (!d.is_const()) return std::nullopt;
  return d.arg_int() + b.plus - a.plus;
}

// One product's operands: A broadcast (every lane one element) and B (lane l at B's lane 0 + step*l).
struct Product {
  Element a, b;
};
std::optional<Product> product(const UOp& mul, int64_t n) {
  if (mul.op() != Ops::MUL) return std::nullopt;
  for (int first = 0; first < 2; ++first) {
    const UOp &x = mul.src(first), &y = mul.src(1 - first);
    std::optional<Element> a0 = operand_element(x, 0), b0 = operand_element(y, 0);
    if (!a0 || !b0) return std::nullopt;
    bool ok = true;
    for (int64_t l = 1; l < n && ok; ++l) {
      std::optional<Element> al = operand_element(x, l), bl = operand_element(y, l);
      std::optional<int64_t> da = al ? offset(*a0, *al) : std::nullopt, db = bl ? offset(*b0, *bl) : std::nullopt;
      ok = da == 0 && db == 2 * l;
    }
    if (ok) return Product{*a0, *b0};
  }
  return std::nullopt;
}

UOp load(const Element& e, int64_t count) {
  DType p = e.ptr.dtype();
  DType vp = p.base().vec(static_cast<int>(count)).ptr(p.ptr_size(), p.addrspace());
  UOp at = e.plus ? simplify(e.index + UOp::cindex(e.plus)) : e.index;
  return UOp::make(Ops::LOAD, dtypes::bfloat16.vec(static_cast<int>(count)), {UOp::make(Ops::INDEX, vp, {e.ptr, at})});
}

// DOT2 of A's pair (one 2-element load, or two loads where the pair's elements are apart: a
// convolution's image, paired along its input channels), broadcast to every lane, and B's 2n elements.
UOp dot2_of(const Product& even, const Product& odd, int64_t n) {
  const DType u16 = dtypes::uint16.vec(static_cast<int>(2 * n)), f32 = dtypes::float32.vec(static_cast<int>(n));
  UOp a;
  if (offset(even.a, odd.a) == 1) {
    std::vector<int64_t> pairs;
    for (int64_t l = 0; l < n; ++l) pairs.insert(pairs.end(), {0, 1});
    a = UOp::make(Ops::GEP, u16, {load(even.a, 2).bitcast(dtypes::uint16.vec(2))}, Arg{std::move(pairs)});
  } else {  // the pair's two elements as one 32-bit word (even in the low half), broadcast
    auto bits = [](const UOp& h) { return h.bitcast(dtypes::uint16).cast(dtypes::uint32); };
    UOp word = bits(load(even.a, 1)) | UOp::alu(Ops::SHL, {bits(load(odd.a, 1)), UOp::cvalue(dtypes::uint32, 16)});
    a = UOp::make(Ops::VECTORIZE, dtypes::uint32.vec(static_cast<int>(n)), std::vector<UOp>(static_cast<size_t>(n), word)).bitcast(u16);
  }
  return UOp::make(Ops::DOT2, f32, {a, load(even.b, 2 * n).bitcast(u16), UOp::cvalue(f32, 0)});
}

// a(k) * b(k) + a(k+1) * b(k+1) over n lanes as DOT2, or nothing.
UOp paired(const UOp& sum) {
  const int64_t n = sum.dtype().count();
  if (sum.op() != Ops::ADD || !(sum.dtype().scalar() == Scalar::float32) || (n != 8 && n != 16)) return {};
  std::optional<Product> p = product(sum.src(0), n), q = product(sum.src(1), n);
  if (!p || !q) return {};
  if (offset(q->b, p->b) == 1) std::swap(p, q);
  if (offset(p->b, q->b) != 1) return {};
  return dot2_of(*p, *q, n);
}

}  // namespace

UOp pair_products(const UOp& ast, const Target& target) {
  if (!target.supports_op(KILN_LIR_OP_DOT2)) return ast;
  std::vector<std::pair<UOp, UOp>> repl;
  for (const UOp& u : toposort(ast)) {
    if (u.op() != Ops::REDUCE || static_cast<Ops>(u.arg_ints()[0]) != Ops::ADD) continue;
    if (UOp dot = paired(u.src(0))) {
      std::vector<UOp> src(u.src().begin(), u.src().end());
      src[0] = dot;
      repl.push_back({u, u.replace_src(src)});
    }
  }
  return repl.empty() ? ast : substitute(ast, repl);
}

}  // namespace kiln
