// tensor/indexing.cpp - numpy/torch indexing: getitem (x[...]) and setitem (x[...] = v).
//
// Basic indices (ints, slices, None, ...) are movement ops: one shrink to the selected ranges, a
// flip for negative steps, pad + reshape + shrink for steps above 1, and one reshape that drops the
// int axes and inserts the new ones. Advanced (tensor) indices then select along the remaining
// axes: the indexed axes are moved to the front and merged into one, the index tensors become one
// linear index into it, and a one-hot comparison picks the rows (where + sum, as gather), so the
// gradient flows back through ordinary ops. setitem builds the whole new value of the tensor (the
// value scattered to the indexed positions, the old contents elsewhere) and assigns it.
#include <algorithm>
#include <numeric>

#include "support/env.hpp"
#include "tensor/tensor_state.hpp"

namespace kiln {

using namespace detail;

Tensor::Index Tensor::Index::integer(int64_t i) {
  Index r;
  r.kind = Kind::integer;
  r.value = i;
  return r;
}

Tensor::Index Tensor::Index::slice(std::optional<int64_t> start, std::optional<int64_t> stop, std::optional<int64_t> step) {
  Index r;
  r.kind = Kind::slice;
  r.start = start;
  r.stop = stop;
  r.step = step;
  return r;
}

Tensor::Index Tensor::Index::none() {
  Index r;
  r.kind = Kind::none;
  return r;
}

Tensor::Index Tensor::Index::ellipsis() { return Index(); }

Tensor::Index Tensor::Index::tensor(const Tensor& index) {
  Index r;
  r.kind = Kind::tensor;
  r.index = index.state();
  return r;
}

namespace {

using Kind = Tensor::Index::Kind;

// One entry of the subscript after the ellipsis is expanded. For an axis of the input (`axis` >= 0):
// the selected positions are lo, lo + step, ... (len of them) when step > 0, and hi - 1, hi - 1 +
// step, ... when step < 0; an int is lo = i, len 1 (collapsed); a tensor keeps the whole axis.
struct Entry {
  Kind kind = Kind::slice;
  int axis = -1;  // the input axis it consumes; -1 for a new axis
  int64_t lo = 0, hi = 0, step = 1, len = 0;
  std::optional<Tensor> index;
};

// numpy's slice normalisation (PySlice_AdjustIndices): the selected count and its [lo, hi) block.
void resolve_slice(Entry& e, const Tensor::Index& ix, int64_t n) {
  int64_t step = ix.step.value_or(1);
  if (step == 0)
    fail(ErrorCode::invalid_argument, "getitem: slice step cannot be zero (axis ", e.axis, " of size ", n, ")");
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt, int64_t low, int64_t high) {
    if (!v) return dflt;
    int64_t x = *v < 0 ? *v + n : *v;
    return std::clamp(x, low, high);
  };
  int64_t start, stop, len;
  if (step > 0) {
    start = clamp(ix.start, 0, 0, n);
    stop = clamp(ix.stop, n, 0, n);
    len = stop > start ? (stop - start + step - 1) / step : 0;
    e.lo = start;
    e.hi = len ? start + (len - 1) * step + 1 : start;
  } else {
    start = clamp(ix.start, n - 1, -1, n - 1);
    stop = clamp(ix.stop, -1, -1, n - 1);
    len = start > stop ? (start - stop + (-step) - 1) / (-step) : 0;
    e.hi = len ? start + 1 : 0;
    e.lo = len ? start + 1 - ((len - 1) * (-step) + 1) : 0;
  }
  e.step = step;
  e.len = len;
}

// An index on a symbolic axis must select the same positions for every value of the variable (a
// Jit replays the graph with other values): only the whole axis (start 0 or none, stop none or at
// least the variable's max, step 1 or none). Anything resolved from the bound value (a negative
// index, a stop inside the range, a reversal, which at 1 is no flip at all) would keep that value.
void check_symbolic_index(const Tensor::Index& ix, const BoundVariable& v, int axis, const char* op) {
  const bool whole = ix.kind == Kind::slice && ix.start.value_or(0) == 0 && (!ix.stop || *ix.stop >= v.max()) &&
                     ix.step.value_or(1) == 1;
  if (!whole)
    fail(ErrorCode::invalid_argument, op, ": axis ", axis, " is the symbolic '", v.name(), "' (bound to ", v.value(), ", range [",
         v.min(), ", ", v.max(), "]): only the whole axis (:) selects the same positions for every value");
}

// Checks the subscript and expands the ellipsis: one Entry per index, full slices for the axes
// the subscript leaves out.
std::vector<Entry> parse(const Tensor& x, const std::vector<Tensor::Index>& indices, const char* op) {
  const Shape& shape = x.shape();
  int ndim = x.ndim();
  int consumed = 0, ellipses = 0;
  for (const auto& ix : indices) {
    if (ix.kind == Kind::ellipsis) ++ellipses;
    else if (ix.kind != Kind::none) ++consumed;
  }
  if (ellipses > 1)
    fail(ErrorCode::out_of_range, op, ": an index can only have a single ellipsis ('...'), got ", ellipses);
  if (consumed > ndim)
    fail(ErrorCode::out_of_range, op, ": too many indices for a tensor of dimension ", ndim, " (shape ", shape_str(shape), "): ",
         consumed, " were indexed");
  std::vector<Tensor::Index> full;
  for (const auto& ix : indices) {
    if (ix.kind == Kind::ellipsis) full.insert(full.end(), static_cast<size_t>(ndim - consumed), Tensor::Index::slice());
    else full.push_back(ix);
  }
  if (!ellipses) full.insert(full.end(), static_cast<size_t>(ndim - consumed), Tensor::Index::slice());

  std::vector<Entry> out;
  int axis = 0;
  for (const auto& ix : full) {
    Entry e;
    e.kind = ix.kind;
    if (ix.kind == Kind::none) {
      out.push_back(e);
      continue;
    }
    e.axis = axis++;
    int64_t n = shape[e.axis];
    if (auto v = x.symbolic_dim(e.axis)) check_symbolic_index(ix, *v, e.axis, op);
    if (ix.kind == Kind::integer) {
      int64_t i = ix.value < 0 ? ix.value + n : ix.value;
      if (i < 0 || i >= n)
        fail(ErrorCode::out_of_range, op, ": index ", ix.value, " is out of bounds for axis ", e.axis, " with size ", n, " (shape ",
             shape_str(shape), ")");
      e.lo = i, e.hi = i + 1, e.len = 1;
    } else if (ix.kind == Kind::slice) {
      resolve_slice(e, ix, n);
    } else {  // tensor
      if (!ix.index) fail(ErrorCode::invalid_argument, op, ": a tensor index without a tensor");
      Tensor t(ix.index);
      if (!t.dtype().is_int() || t.dtype().is_bool())
        fail(ErrorCode::invalid_argument, op, ": index tensors must have an integer dtype, got ", t.dtype().name(), " (shape ",
             shape_str(t.shape()), ")");
      if (t.device() != x.device())
        fail(ErrorCode::invalid_argument, op, ": the index tensor is on ", t.device(), ", the indexed tensor on ", x.device());
      e.lo = 0, e.hi = n, e.len = n;
      e.index = t;
    }
    out.push_back(e);
  }
  return out;
}

// The basic part: shrink, flip, stride, then drop the int axes and insert the new ones.
Tensor apply_basic(const Tensor& x, const std::vector<Entry>& entries) {
  Pads cut;
  std::vector<int> flips;
  for (const Entry& e : entries) {
    if (e.axis < 0) continue;
    cut.push_back({e.lo, e.hi});
    if (e.step < 0 && e.len > 1) flips.push_back(e.axis);
  }
  Tensor r = x.shrink(cut).flip(flips);
  for (const Entry& e : entries) {
    int64_t s = e.step < 0 ? -e.step : e.step;
    if (e.axis < 0 || s == 1 || e.len <= 1) continue;
    // (len - 1) * s + 1 positions: pad to len * s, view as (len, s), keep column 0
    Shape sh = r.shape();
    Pads pads(sh.size(), {0, 0});
    pads[e.axis].second = s - 1;
    r = r.pad(pads);
    Shape split(sh.begin(), sh.begin() + e.axis);
    split.push_back(e.len);
    split.push_back(s);
    split.insert(split.end(), sh.begin() + e.axis + 1, sh.end());
    r = r.reshape(split);
    Pads keep;
    for (size_t i = 0; i < split.size(); ++i) keep.push_back({0, static_cast<int>(i) == e.axis + 1 ? 1 : split[i]});
    sh[e.axis] = e.len;
    r = r.shrink(keep).reshape(sh);
  }
  Shape out;
  for (const Entry& e : entries)
    if (e.kind != Kind::integer) out.push_back(e.axis < 0 ? 1 : e.len);
  return r.reshape(out);
}

Shape broadcast_shapes(const std::vector<Tensor>& ts, const char* op) {
  size_t nd = 0;
  for (const Tensor& t : ts) nd = std::max(nd, t.shape().size());
  Shape out(nd, 1);
  for (const Tensor& t : ts) {
    const Shape& s = t.shape();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[nd - s.size() + i];
      if (s[i] == o || s[i] == 1) continue;
      if (o != 1) {
        std::string all;
        for (const Tensor& u : ts) all += (all.empty() ? "" : ", ") + shape_str(u.shape());
        fail(ErrorCode::invalid_argument, op, ": index tensors of shapes ", all, " cannot be broadcast together");
      }
      o = s[i];
    }
  }
  return out;
}

// The advanced part on the basic result `x`: dims are the axes of x indexed by `idx` (in order).
Tensor apply_advanced(const Tensor& x, const std::vector<int>& dims, const std::vector<Tensor>& idx, const char* op) {
  Shape b = broadcast_shapes(idx, op);
  const Shape& xs = x.shape();
  int64_t n = 1;
  for (int d : dims) n *= xs[d];
  DType it = n >= (int64_t{1} << 31) ? dtypes::int64 : dtypes::int32;
  // one linear index into the merged indexed axes; -1 (matches nothing, so selects 0) where any
  // index is out of range
  std::optional<Tensor> lin, valid;
  int64_t stride = n;
  for (size_t k = 0; k < dims.size(); ++k) {
    int64_t size = xs[dims[k]];
    stride /= std::max<int64_t>(size, 1);
    Tensor i = idx[k];
    if (knob(Knob::check_bounds)) {  // as gather: realize the index and name the first bad entry
      std::vector<int64_t> v = i.cast(dtypes::int64).to_vector<int64_t>();
      for (int64_t e : v)
        if (e < -size || e >= size)
          fail(ErrorCode::out_of_range, op, ": index ", e, " is out of bounds for axis ", dims[k], " with size ", size,
               " (KILN_CHECK_BOUNDS=1)");
    }
    DType wide = i.dtype().scalar_size() >= it.scalar_size() ? i.dtype() : it;
    i = i.cast(wide);
    if (!wide.is_unsigned()) i = Tensor::where(i.lt(const_like(i, 0)), i + scalar_like(i, size), i);
    Tensor ok = i.ge(const_like(i, 0)) & i.lt(scalar_like(i, size));
    Tensor term = i.cast(it) * scalar_like(i.cast(it), stride);
    lin = lin ? *lin + term : term;
    valid = valid ? *valid & ok : ok;
  }
  Tensor l = Tensor::where(*valid, *lin, const_like(*lin, -1)).expand(b);
  // the indexed axes first, merged: (n, rest...)
  std::vector<int> order = dims;
  Shape rest;
  for (int i = 0; i < x.ndim(); ++i)
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) order.push_back(i), rest.push_back(xs[i]);
  Shape merged{n};
  merged.insert(merged.end(), rest.begin(), rest.end());
  Tensor xp = x.permute(order).reshape(merged);
  int64_t m = numel_of(b);
  Shape oh_shape{m, n};
  oh_shape.insert(oh_shape.end(), rest.size(), 1);
  Tensor onehot = l.reshape({m, 1}).eq(Tensor::arange(0, static_cast<double>(n), 1, it, x.device()).reshape({1, n})).reshape(oh_shape);
  Tensor src = xp.unsqueeze(0);
  Tensor picked = Tensor::where(onehot, src, const_like(src, 0)).sum({1}).cast(x.dtype());  // (m, rest...)
  Shape res = b;
  res.insert(res.end(), rest.begin(), rest.end());
  picked = picked.reshape(res);
  // adjacent indexed axes keep their place (torch/numpy); separated ones lead
  bool adjacent = dims.back() - dims.front() + 1 == static_cast<int>(dims.size());
  if (!adjacent || dims.front() == 0) return picked;
  int nb = static_cast<int>(b.size()), lead = dims.front();
  std::vector<int> perm;
  for (int i = 0; i < lead; ++i) perm.push_back(nb + i);
  for (int i = 0; i < nb; ++i) perm.push_back(i);
  for (int i = nb + lead; i < picked.ndim(); ++i) perm.push_back(i);
  return picked.permute(perm);
}

Tensor getitem_impl(const Tensor& x, const std::vector<Tensor::Index>& indices, const char* op) {
  std::vector<Entry> entries = parse(x, indices, op);
  Tensor r = apply_basic(x, entries);
  std::vector<int> dims;
  std::vector<Tensor> idx;
  int pos = 0;
  for (const Entry& e : entries) {
    if (e.kind == Kind::integer) continue;
    if (e.index) dims.push_back(pos), idx.push_back(*e.index);
    ++pos;
  }
  return dims.empty() ? r : apply_advanced(r, dims, idx, op);
}

}  // namespace

Tensor Tensor::getitem(const std::vector<Index>& indices) const { return getitem_impl(*this, indices, "getitem"); }

Tensor& Tensor::setitem(const std::vector<Index>& indices, const Tensor& value) {
  std::vector<Entry> entries = parse(*this, indices, "setitem");
  bool advanced = std::any_of(entries.begin(), entries.end(), [](const Entry& e) { return e.index.has_value(); });
  Shape view = advanced ? getitem_impl(*this, indices, "setitem").shape() : apply_basic(*this, entries).shape();
  if (value.ndim() > static_cast<int>(view.size()))
    fail(ErrorCode::invalid_argument, "setitem: value of shape ", shape_str(value.shape()), " cannot be broadcast to the indexed shape ",
         shape_str(view));
  for (size_t i = 0; i < value.shape().size(); ++i) {
    int64_t v = value.shape()[value.ndim() - 1 - i], w = view[view.size() - 1 - i];
    if (v != w && v != 1)
      fail(ErrorCode::invalid_argument, "setitem: value of shape ", shape_str(value.shape()), " cannot be broadcast to the indexed shape ",
           shape_str(view));
  }
  Tensor v = value.cast(dtype()).expand(view);
  const Shape& sh = shape();

  if (!advanced) {
    // undo the view: back to one entry per axis (ints as size 1, no new axes), un-stride, un-flip,
    // pad to the full shape; a mask marks the written positions
    Shape per_axis;
    for (const Entry& e : entries)
      if (e.axis >= 0) per_axis.push_back(e.len);
    v = v.reshape(per_axis);
    std::vector<int> flips;
    Pads pads;
    std::optional<Tensor> mask;
    for (const Entry& e : entries) {
      if (e.axis < 0) continue;
      int64_t s = e.step < 0 ? -e.step : e.step;
      if (s != 1 && e.len > 1) {
        Shape cur = v.shape();
        Tensor u = v.unsqueeze(e.axis + 1);
        Pads p(u.shape().size(), {0, 0});
        p[e.axis + 1].second = s - 1;
        cur[e.axis] = e.len * s;
        u = u.pad(p).reshape(cur);
        Pads keep;
        for (size_t i = 0; i < cur.size(); ++i) keep.push_back({0, static_cast<int>(i) == e.axis ? e.hi - e.lo : cur[i]});
        v = u.shrink(keep);
      }
      if (e.step < 0 && e.len > 1) flips.push_back(e.axis);
      pads.push_back({e.lo, sh[e.axis] - e.hi});
      // the written positions along this axis: lo, lo + s, ... (from hi - 1 down for a negative step)
      std::vector<uint8_t> m(static_cast<size_t>(sh[e.axis]), 0);
      for (int64_t k = 0; k < e.len; ++k) m[static_cast<size_t>(e.step > 0 ? e.lo + k * s : e.hi - 1 - k * s)] = 1;
      Shape ms(sh.size(), 1);
      ms[e.axis] = sh[e.axis];
      Tensor mt = Tensor::from_bytes(m.data(), m.size(), dtypes::bool_, {sh[e.axis]}, device()).reshape(ms);
      mask = mask ? *mask & mt : mt;
    }
    v = v.flip(flips).pad(pads);
    Tensor m = mask ? mask->expand(sh) : const_like(*this, 1, dtypes::bool_).expand(sh);
    return assign(where(m, v, *this));
  }

  // advanced: which flat position each element of the view writes (1-based; 0 where an index is
  // out of range), then for each position of this tensor the last element that writes it. That is
  // numel() x (indexed count) comparisons in one fused reduce: fine for the index sets setitem
  // takes in practice; a scatter would make it linear.
  int64_t n = numel();
  DType it = n + 1 >= (int64_t{1} << 31) ? dtypes::int64 : dtypes::int32;
  Tensor pos = Tensor::arange(1, static_cast<double>(n) + 1, 1, it, device()).reshape(sh).getitem(indices).flatten();
  int64_t k = pos.numel();
  Tensor j1 = Tensor::arange(1, static_cast<double>(k) + 1, 1, it, device()).reshape({1, k});
  Tensor target = Tensor::arange(1, static_cast<double>(n) + 1, 1, it, device()).reshape({n, 1});
  Tensor hits = pos.reshape({1, k}).eq(target);                                          // (n, k)
  Tensor last = Tensor::where(hits, j1.expand({n, k}), const_like(hits, 0, it)).max({1}, true);  // (n, 1): 0 = not written
  Tensor vf = v.flatten().reshape({1, k});
  Tensor chosen = Tensor::where(j1.eq(last), vf, const_like(vf, 0)).sum({1}).cast(dtype());        // (n,)
  Tensor written = last.reshape({n}).gt(const_like(last.reshape({n}), 0));
  return assign(where(written, chosen, flatten()).reshape(sh));
}

}  // namespace kiln
