// schedule/split_reduce.cpp - long reductions become a tree of bounded-length partial reductions.
//
// One accumulator summing n float32 values loses precision linearly in n and stops growing at all
// once the sum reaches 2^24 (ones(20000003).sum() was 16777216), and one accumulator per output is
// little parallelism. So a REDUCE_AXIS that reduces at least kSplitReduceAt elements per output is
// rewritten as a tree: the reduced axes move to the end and flatten to one axis of length R,
// which is padded with the reduce's identity to P*L (L <= kChunk) and reduced over L into P
// partials per output (a CONTIGUOUS buffer, a kernel of its own); the partials are reduced the
// same way until at most kChunk remain. Every accumulator then combines at most kChunk values and
// the error grows like L * log_L(n), as in pairwise summation, on every backend alike.
//
// The partials keep the reduce's dtype (sum already accumulates half floats in float32). Reduces
// over symbolic dimensions are left alone: their length is not known when scheduling; so is a
// gather's one-hot sum, which selects one term.
#include <algorithm>

#include "ir/alu.hpp"
#include "ir/traverse.hpp"
#include "schedule/kernelize.hpp"

namespace kiln {

namespace {

constexpr int64_t kChunk = 4096;     // the most values one accumulator combines in a split reduce

// (a PARAM's dtype is its pointer type: nodes built over one take the reduce's value dtype)
UOp mop(Ops op, DType d, const UOp& x, std::vector<int64_t> arg) { return UOp::make(op, d, {x}, Arg{std::move(arg)}); }

// A tensor-level constant of `shape` on device `dev` (CONST, RESHAPE to ones, EXPAND).
UOp full(const Value& v, DType d, const std::vector<int64_t>& shape, const std::string& dev) {
  UOp c = UOp::make(Ops::CONST, d, {UOp::make(Ops::DEVICE, dtypes::void_, {}, Arg{dev})}, const_of(d, v).arg());
  return mop(Ops::EXPAND, d, mop(Ops::RESHAPE, d, c, std::vector<int64_t>(shape.size(), 1)), shape);
}

// x (dtype d, shape (..., R)) padded at the end of its last axis to R + pad with op's identity. PAD fills
// zeros, which is the identity of ADD (and of MAX for bools and unsigned integers); otherwise the
// padded region is selected by a mask.
UOp pad_with_identity(const UOp& x, DType d, std::vector<int64_t> shape, int64_t pad, Ops op, const std::string& dev) {
  std::vector<int64_t> arg(2 * shape.size(), 0);
  arg.back() = pad;
  UOp padded = mop(Ops::PAD, d, x, arg);
  Value ident = reduce_identity(op, d);
  if (ident == normalize(d, Value{int64_t{0}})) return padded;
  UOp inside = mop(Ops::PAD, dtypes::bool_, full(Value{true}, dtypes::bool_, shape, dev), arg);
  shape.back() += pad;
  return UOp::make(Ops::WHERE, d, {inside, padded, full(ident, d, shape, dev)});
}

// Whether chunks of `len` consecutive elements of a reduce over `dims` (outermost first) end on
// its digits: len is the product of the innermost dimensions and a divisor of the next, so a
// chunk's position splits into whole digits (no division in the kernel's index; a chunk of 3584
// over (32, 56, 56) would divide every position by 3136, while 3136 is one plane).
bool on_digits(int64_t len, const std::vector<int64_t>& dims) {
  int64_t inner = 1;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    if (len % (inner * *it) != 0) return len % inner == 0 && *it % (len / inner) == 0;
    inner *= *it;
  }
  return len == inner;
}

// Reduces x (dtype d, concrete shape (kept..., R)) over its last axis into shape (kept..., 1), through
// partial buffers of at most kChunk elements per accumulator. `dims`: the reduced dimensions R
// merges (outermost first).
UOp reduce_last(UOp x, DType d, std::vector<int64_t> shape, Ops op, const std::string& dev, const std::vector<int64_t>& dims) {
  const int64_t r = shape.back();
  const int64_t last = static_cast<int64_t>(shape.size()) - 1;
  if (r <= kChunk) return mop(Ops::REDUCE_AXIS, d, x, {static_cast<int64_t>(op), last});
  // P partials of L elements: an exact divisor when one is near (chunks on the digits first), else
  // pad fewer than P elements
  int64_t p = (r + kChunk - 1) / kChunk, parts = 0;
  for (int64_t q = p; q < 2 * p && !parts; ++q)
    if (r % q == 0 && on_digits(r / q, dims)) parts = q;
  for (int64_t q = p; q < 2 * p && !parts; ++q)
    if (r % q == 0) parts = q;
  if (!parts) {
    parts = p;
    x = pad_with_identity(x, d, shape, parts * ((r + p - 1) / p) - r, op, dev);
  }
  shape.back() = parts;
  std::vector<int64_t> split = shape;
  split.push_back((r + parts - 1) / parts);
  UOp partial = mop(Ops::REDUCE_AXIS, d, mop(Ops::RESHAPE, d, x, split), {static_cast<int64_t>(op), last + 1});
  UOp stage = UOp::make(Ops::CONTIGUOUS, d, {partial});
  return reduce_last(mop(Ops::RESHAPE, d, stage, shape), d, shape, op, dev, {shape.back()});
}

// A gather's one-hot sum, WHERE(index == arange, x, 0): it selects one term (nothing to bound),
// and the codegen folds it into a load of that term (codegen/onehot.cpp). The arange is an IOTA
// under movement ops and casts; a masked sum of data (where(x == y, z, 0)) is no such sum.
// The comparison may itself sit under movement ops (indexing compares (N, V) and expands the
// result over the row's other axes: an embedding's x[idx]).
bool one_hot(const UOp& u) {
  auto through_movement = [](const UOp& v) {
    const UOp* x = &v;
    while (groups::Movement.has(x->op()) || x->op() == Ops::CAST) x = &x->src(0);
    return x;
  };
  if (u.op() != Ops::WHERE) return false;
  const UOp* eq = through_movement(u.src(0));
  if (eq->op() != Ops::CMPEQ) return false;
  for (const UOp& side : eq->src())
    if (through_movement(side)->op() == Ops::IOTA) return true;
  return false;
}

}  // namespace

UOp split_reduce(const UOp& sink) {
  GraphInfo g = analyze(sink);
  std::vector<std::pair<UOp, UOp>> repl;
  for (const UOp& n : g.order) {
    if (n.op() != Ops::REDUCE_AXIS) continue;
    const std::vector<UOp>& in = *g.shape.find(n.src(0).node());
    if (!std::all_of(in.begin(), in.end(), [](const UOp& d) { return d.is_const(); })) continue;
    const auto& arg = n.arg_ints();
    std::vector<int64_t> in_shape, perm, kept, out_shape;
    int64_t r = 1;
    for (const UOp& d : in) in_shape.push_back(d.arg_int());
    std::vector<int64_t> dims;
    for (size_t k = 1; k < arg.size(); ++k) r *= in_shape[arg[k]], dims.push_back(in_shape[arg[k]]);
    if (r < kSplitReduceAt || one_hot(n.src(0))) continue;
    for (size_t i = 0; i < in_shape.size(); ++i) {
      bool reduced = std::find(arg.begin() + 1, arg.end(), static_cast<int64_t>(i)) != arg.end();
      if (!reduced) perm.push_back(static_cast<int64_t>(i)), kept.push_back(in_shape[i]);
      out_shape.push_back(reduced ? 1 : in_shape[i]);
    }
    for (size_t k = 1; k < arg.size(); ++k) perm.push_back(arg[k]);
    const DType d = n.dtype();
    // (an earlier long reduce inside this one's source is split too: softmax's max inside its sum)
    UOp x = repl.empty() ? n.src(0) : substitute(n.src(0), repl);
    if (!std::is_sorted(perm.begin(), perm.end())) x = mop(Ops::PERMUTE, d, x, perm);
    kept.push_back(r);
    x = mop(Ops::RESHAPE, d, x, kept);
    UOp total = reduce_last(x, d, kept, static_cast<Ops>(arg[0]), *g.device.find(n.node()), dims);
    repl.push_back({n, mop(Ops::RESHAPE, d, total, out_shape)});
  }
  return repl.empty() ? sink : substitute(sink, repl);
}

}  // namespace kiln
