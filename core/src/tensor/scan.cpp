// tensor/scan.cpp - running reductions (cumsum, cumprod, cummax, cummin, logcumsumexp), argmin,
// and the comparison sorts (sort, argsort, topk).
//
// Every op here is a composition of the core ops, so autograd needs no rule of its own. A running
// reduction along an axis of length n views each row as an n x n matrix [i, j] = x[j] and reduces
// its lower triangle (j <= i) (cumsum and cumprod cut long rows into blocks: ~128 operations per
// element at any length); a sort counts, for each element, the elements that go before it
// (its rank) and inverts the ranks with a one-hot. Both are O(n^2) work and memory per row: fine
// for the rows models and tests use (up to a few thousand), not for sorting millions of values.
// Where an op picks elements (cummax, cummin, sort, topk) the values are read back with gather at
// the picked indices, so the gradient goes to exactly those elements (torch's rule).
#include <limits>

#include "tensor/tensor_state.hpp"

namespace kiln {

using namespace detail;

namespace {

// The axis of a running op: a 0-d tensor takes 0 or -1 (torch), others any valid axis.
int scan_axis(const Tensor& x, int axis, const char* op) {
  if (x.ndim() == 0) {
    if (axis != 0 && axis != -1)
      fail(ErrorCode::out_of_range, op, ": axis ", axis, " is out of range for a 0-d tensor (expected 0 or -1)");
    return 0;
  }
  return norm_axis(axis, x.shape(), op);
}

// x with a new axis before its last: (..., n) -> (..., n, n), element [i, j] = x[j].
Tensor rows(const Tensor& x) {
  Shape s = x.shape();
  int64_t n = s.back();
  s.insert(s.end() - 1, n);
  return x.unsqueeze(-2).expand(s);
}

// The int32 positions 0..n-1 along one axis of a tensor of `rank` dimensions (`at` counted from the end).
Tensor positions(int64_t n, int rank, int at, const std::string& device) {
  Shape s(rank, 1);
  s[rank + at] = n;
  return Tensor::arange(0, static_cast<double>(n), 1, dtypes::int32, device).reshape(s);
}

// (n, n) bool: [i, j] = j <= i (the prefix each running value covers).
Tensor prefix_mask(int64_t n, const std::string& device) {
  return positions(n, 2, -1, device).le(positions(n, 2, -2, device));
}

// The lowest value of a dtype (the identity of max): -inf, the integer minimum, false.
double lowest(DType d) {
  if (d.is_float()) return -std::numeric_limits<double>::infinity();
  return static_cast<double>(d.imin());
}

// An order-reversing map that is exact for every value of the dtype (min through max).
Tensor reversed_order(const Tensor& x) {
  if (x.dtype().is_float()) return -x;
  if (x.dtype().is_bool()) return x.logical_not();
  return x ^ const_like(x, -1);
}

// The running max of x (transposed so the axis is last) and, per position, the last index j <= i
// holding it (torch's choice among ties; a NaN is the max from where it appears on).
Tensor running_max_index(const Tensor& xl) {
  const int64_t n = xl.shape().back();
  Tensor mask = prefix_mask(n, xl.device()), xs = rows(xl);
  Tensor run = Tensor::where(mask, xs, const_like(xs, lowest(xs.dtype()))).max({-1});
  Tensor r = run.unsqueeze(-1), hit = xs.eq(r);
  if (xs.dtype().is_float()) hit = hit | (xs.ne(xs) & r.ne(r));
  Tensor j = positions(n, xs.ndim(), -1, xs.device());
  return Tensor::where(mask & hit, j, const_like(j, -1)).max({-1});
}

// cummax (reverse = false) or cummin (true): the indices from the (order-reversed) values, the
// values gathered from x itself so the gradient routes to the picked elements.
std::pair<Tensor, Tensor> running_pick(const Tensor& x, int axis, bool reverse, const char* op) {
  int a = scan_axis(x, axis, op);
  if (x.ndim() == 0) return {x, const_like(x, 0, dtypes::int32)};
  Tensor xl = x.transpose(a, -1);
  Tensor idx = running_max_index(reverse ? reversed_order(xl) : xl);
  return {xl.gather(-1, idx).transpose(a, -1), idx.transpose(a, -1)};
}

// NaN-aware orders for sorting floats: NaN is the largest value and equal to itself (torch).
Tensor before(const Tensor& a, const Tensor& b) {
  if (!a.dtype().is_float()) return a.lt(b);
  return a.lt(b) | (b.ne(b) & a.eq(a));
}
Tensor same(const Tensor& a, const Tensor& b) {
  if (!a.dtype().is_float()) return a.eq(b);
  return a.eq(b) | (a.ne(a) & b.ne(b));
}

}  // namespace

namespace {

// A running sum or product along the last axis. Up to kDirectScan elements: the masked n x n
// reduction (n^2 work per row). Longer rows are cut into blocks of kScanBlock: each block's own
// running values (direct), plus the running total of the blocks before it (the same scan over the
// block totals, recursively), so the work is ~kScanBlock per element at any length (a cumsum of
// 10^6 floats would otherwise be 10^12 multiply-adds).
constexpr int64_t kDirectScan = 256, kScanBlock = 128;

Tensor scan_last(const Tensor& xl, bool product) {
  const int64_t n = xl.shape().back();
  const double identity = product ? 1 : 0;
  if (n <= kDirectScan) {
    Tensor xs = rows(xl);
    Tensor masked = Tensor::where(prefix_mask(n, xl.device()), xs, const_like(xs, identity));
    return product ? masked.prod({-1}) : masked.sum({-1});
  }
  const int64_t blocks = (n + kScanBlock - 1) / kScanBlock;
  Pads tail(xl.ndim(), {0, 0});
  tail.back() = {0, blocks * kScanBlock - n};
  Shape split = xl.shape();
  split.back() = blocks;
  split.push_back(kScanBlock);
  Tensor inner = scan_last(xl.pad(tail, identity).reshape(split), product);  // (..., blocks, B)
  Pads last(inner.ndim(), {0, 0});
  for (int d = 0; d < inner.ndim(); ++d) last[d] = {0, inner.shape()[d]};
  last.back() = {kScanBlock - 1, kScanBlock};
  Tensor totals = inner.shrink(last).squeeze(-1);  // (..., blocks)
  Tensor through = scan_last(totals, product);
  // the blocks before each block: `through` shifted by one, the identity first
  Pads shift(through.ndim(), {0, 0});
  shift.back() = {1, 0};
  Pads drop(through.ndim(), {0, 0});
  for (int d = 0; d < through.ndim(); ++d) drop[d] = {0, through.shape()[d]};
  drop.back() = {0, blocks - 1};
  Tensor before = through.shrink(drop).pad(shift, identity).unsqueeze(-1);
  Tensor out = (product ? inner * before : inner + before);
  Shape flat = xl.shape();
  flat.back() = blocks * kScanBlock;
  Pads keep(xl.ndim(), {0, 0});
  for (int d = 0; d < xl.ndim(); ++d) keep[d] = {0, xl.shape()[d]};
  return out.reshape(flat).shrink(keep);
}

}  // namespace

Tensor Tensor::cumsum(int axis) const {
  int a = scan_axis(*this, axis, "cumsum");
  if (ndim() == 0) return *this;
  return scan_last(transpose(a, -1), false).transpose(a, -1);
}

Tensor Tensor::cumprod(int axis) const {
  int a = scan_axis(*this, axis, "cumprod");
  if (ndim() == 0) return *this;
  return scan_last(transpose(a, -1), true).transpose(a, -1);
}

std::pair<Tensor, Tensor> Tensor::cummax(int axis) const { return running_pick(*this, axis, false, "cummax"); }

std::pair<Tensor, Tensor> Tensor::cummin(int axis) const { return running_pick(*this, axis, true, "cummin"); }

Tensor Tensor::logcumsumexp(int axis) const {
  int a = scan_axis(*this, axis, "logcumsumexp");
  Tensor x = dtype().is_float() ? *this : cast(dtypes::default_float);
  if (ndim() == 0) return x;
  Tensor xl = x.transpose(a, -1), xs = rows(xl);
  const int64_t n = xl.shape().back();
  Tensor mask = prefix_mask(n, device());
  // log sum_{j<=i} exp(x_j) = c_i + log sum exp(x_j - c_i) with c_i the running max: no term
  // overflows and the largest is exp(0). The shift is a constant to autograd (it cancels), and an
  // infinite shift (all -inf so far, or +inf) is replaced by 0 so that inf - inf never appears.
  Tensor c = running_max_index(xl.detach());
  Tensor run = xl.detach().gather(-1, c);
  Tensor finite = run.eq(run) & run.abs().ne(const_like(run, std::numeric_limits<double>::infinity()));
  Tensor shift = where(finite, run, const_like(run, 0));
  Tensor shifted = where(mask, xs - shift.unsqueeze(-1), const_like(xs, -std::numeric_limits<double>::infinity()));
  return (shifted.exp().sum({-1}).log() + shift).transpose(a, -1);
}

Tensor Tensor::argmin(int axis, bool keepdim) const {
  norm_axis(axis, shape(), "argmin");
  // the first minimum is the first maximum of an order-reversed copy (exact for integers: ~x)
  return reversed_order(*this).argmax(axis, keepdim);
}

std::pair<Tensor, Tensor> Tensor::sort(int axis, bool descending) const {
  int a = scan_axis(*this, axis, "sort");
  if (ndim() == 0) return {*this, const_like(*this, 0, dtypes::int32)};
  Tensor xl = transpose(a, -1);
  const int64_t n = xl.shape().back();
  const int r = xl.ndim() + 1;
  // rank of element i: the elements that go before it, ties broken by position (a stable sort)
  Tensor xi = xl.unsqueeze(-1), xj = xl.unsqueeze(-2);
  Tensor goes_first = descending ? before(xi, xj) : before(xj, xi);
  Tensor tie_first = same(xi, xj) & positions(n, r, -1, device()).lt(positions(n, r, -2, device()));
  Tensor rank = (goes_first | tie_first).sum({-1});  // int32, a permutation of 0..n-1 per row
  // the element of rank q: sum over i of i where rank[i] == q (exactly one i matches)
  Tensor i = positions(n, r, -1, device());
  Tensor idx = where(rank.unsqueeze(-2).eq(positions(n, r, -2, device())), i, const_like(i, 0)).sum({-1});
  return {xl.gather(-1, idx).transpose(a, -1), idx.transpose(a, -1)};
}

Tensor Tensor::argsort(int axis, bool descending) const { return sort(axis, descending).second; }

namespace {

// topk with few k (k <= kSelectTopK, rows longer than kSelectFrom): k rounds, each picking among
// the elements after the previous pick in sort's order (NaN largest, ties to the lower position)
// the one that comes first, so the result is sort's, bit for bit. O(k n) work a row where the
// sort's ranks are O(n^2) (5 of 1000 in 64 rows: 3.6 -> 0.38 ms). A round reads only the
// previous pick (realized), so its kernels stay the same size whatever the round: a mask of
// everything picked so far made round r read r picks, and let the scheduler fuse all the rounds
// into one kernel of 2k reduces.
constexpr int64_t kSelectTopK = 16, kSelectFrom = 64;

Tensor select_topk_indices(const Tensor& xl, int64_t k, bool largest) {
  const int64_t n = xl.shape().back();
  const Tensor x = xl.detach();
  const DType d = x.dtype();
  const Tensor pos = positions(n, x.ndim(), -1, x.device());
  const bool floats = d.is_float();
  const Tensor nan = floats ? x.ne(x) : Tensor::zeros(x.shape(), dtypes::bool_, x.device());
  // what a NaN or an element already picked holds for the max (min): the dtype's lowest (highest)
  // value, which never wins over an element still in the running (it only ties, and ties need
  // `numbers`)
  const double highest = floats ? std::numeric_limits<double>::infinity() : static_cast<double>(d.imax());
  const Tensor out = d.is_bool() ? const_like(x, largest ? 0 : 1) : const_like(x, largest ? lowest(d) : highest);
  std::vector<Tensor> picked;
  Tensor avail = Tensor::ones(x.shape(), dtypes::bool_, x.device());
  for (int64_t round = 0; round < k; ++round) {
    if (round > 0) {
      // after the previous pick (value pv at position pi) in the order
      const Tensor& pi = picked.back();
      Tensor pv = x.gather(-1, pi), later = pos.gt(pi);
      Tensor pv_nan = floats ? pv.ne(pv) : Tensor::zeros(pv.shape(), dtypes::bool_, x.device());
      Tensor beyond = largest ? x.lt(pv) : x.gt(pv);
      Tensor tied = x.eq(pv) & later;
      if (!floats) avail = beyond | tied;
      else if (largest)  // NaNs first: after a NaN come the later NaNs and every number
        avail = Tensor::where(pv_nan, nan.logical_not() | (nan & later), nan.logical_not() & (beyond | tied));
      else  // NaNs last: after a NaN only the later NaNs
        avail = Tensor::where(pv_nan, nan & later, nan | beyond | tied);
    }
    Tensor numbers = avail & nan.logical_not(), nans = avail & nan;
    Tensor held = Tensor::where(numbers, x, out);
    Tensor best = largest ? held.max({-1}, true) : held.min({-1}, true);
    Tensor use_nans = largest ? nans.any({-1}, true) : numbers.any({-1}, true).logical_not();
    Tensor candidates = Tensor::where(use_nans, nans, numbers & x.eq(best));
    picked.push_back(Tensor::where(candidates, pos, const_like(pos, n)).min({-1}, true).contiguous());
  }
  return Tensor::cat(picked, -1);
}

}  // namespace

std::pair<Tensor, Tensor> Tensor::topk(int64_t k, int axis, bool largest, bool sorted) const {
  (void)sorted;  // the k values always come sorted (allowed for sorted=false too)
  int a = scan_axis(*this, axis, "topk");
  const int64_t n = ndim() == 0 ? 1 : shape()[a];
  if (k < 0 || k > n)
    fail(ErrorCode::invalid_argument, "topk: k = ", k, " is out of range for dimension ", a, " of size ", n, " in a tensor of shape ",
         shape_str(shape()), " (expected 0 <= k <= ", n, ")");
  if (ndim() > 0 && k > 0 && k <= kSelectTopK && n > kSelectFrom) {
    Tensor xl = transpose(a, -1);
    Tensor idx = select_topk_indices(xl, k, largest);
    return {xl.gather(-1, idx).transpose(a, -1), idx.transpose(a, -1)};
  }
  auto [v, i] = sort(axis, largest);
  if (ndim() == 0) return {v, i};
  Pads keep;
  for (int d = 0; d < ndim(); ++d) keep.push_back({0, d == a ? k : shape()[d]});
  return {v.shrink(keep), i.shrink(keep)};
}

}  // namespace kiln
