// tensor/nn.cpp - matmul, convolution and pooling (movement ops + reduce), cat, stack, gather.
#include <algorithm>
#include <limits>

#include "support/env.hpp"
#include "tensor/multi.hpp"
#include "tensor/tensor_state.hpp"
#include "tensor/windows.hpp"

namespace kiln {

using namespace detail;

namespace {

// Tiles x `reps[i]` times along each of its last reps.size() dimensions.
Tensor tile(const Tensor& x, const std::vector<int64_t>& reps) {
  const Shape& s = x.shape();
  size_t lead = s.size() - reps.size();
  Shape split(s.begin(), s.begin() + lead), expanded(s.begin(), s.begin() + lead), merged(s.begin(), s.begin() + lead);
  for (size_t i = 0; i < reps.size(); ++i) {
    int64_t d = s[lead + i];
    split.push_back(1), split.push_back(d);
    expanded.push_back(reps[i]), expanded.push_back(d);
    merged.push_back(reps[i] * d);
  }
  return x.reshape(split).expand(expanded).reshape(merged);
}

// Windows that do not overlap (each no longer than the stride, no dilation): every dimension cut
// to O*stride (padded where the last window's gap runs past the input, with values no window
// reads), split into (O, stride), each stride's first K kept, the K axes moved last. Movement ops
// only, so the gradient is a scatter without sums: a 2x2 max pool's backward indexes its input as
// (y // 2, y % 2) instead of summing the tiled copies below (8 x 64 x 56 x 56: 69 -> 1.5 ms).
Tensor disjoint_windows(const Tensor& x, const std::vector<int64_t>& k, const std::vector<int64_t>& out, const std::vector<int64_t>& stride) {
  const Shape& s = x.shape();
  const size_t n = k.size(), lead = s.size() - n;
  Pads grow, cut, keep;
  Shape split(s.begin(), s.begin() + lead);
  std::vector<int> order;
  for (size_t i = 0; i < lead; ++i) {
    grow.push_back({0, 0}), cut.push_back({0, s[i]}), keep.push_back({0, s[i]});
    order.push_back(static_cast<int>(i));
  }
  for (size_t i = 0; i < n; ++i) {
    const int64_t need = out[i] * stride[i];
    grow.push_back({0, std::max<int64_t>(0, need - s[lead + i])}), cut.push_back({0, need});
    split.push_back(out[i]), split.push_back(stride[i]);
    keep.push_back({0, out[i]}), keep.push_back({0, k[i]});
    order.push_back(static_cast<int>(lead + 2 * i));
  }
  for (size_t i = 0; i < n; ++i) order.push_back(static_cast<int>(lead + 2 * i + 1));
  return x.pad(grow).shrink(cut).reshape(split).shrink(keep).permute(order);
}

}  // namespace

namespace detail {

Tensor pad_or_cut(const Tensor& x, const Pads& amounts) {
  const Shape& s = x.shape();
  const size_t lead = s.size() - amounts.size();
  Pads grow, keep;
  for (size_t i = 0; i < lead; ++i) grow.push_back({0, 0});
  for (const auto& [before, after] : amounts) grow.push_back({std::max<int64_t>(0, before), std::max<int64_t>(0, after)});
  Tensor t = x.pad(grow);
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t before = i < lead ? 0 : std::max<int64_t>(0, -amounts[i - lead].first);
    const int64_t after = i < lead ? 0 : std::max<int64_t>(0, -amounts[i - lead].second);
    keep.push_back({before, t.shape()[i] - after});
  }
  return t.shrink(keep);
}

}  // namespace detail

namespace {

// Calls f(tap) for every tap of a k[0] x k[1] x ... window, and sums what it returns.
template <typename F>
Tensor sum_over_taps(const std::vector<int64_t>& k, F&& f) {
  std::optional<Tensor> sum;
  std::vector<int64_t> tap(k.size(), 0);
  for (bool more = true; more;) {
    Tensor part = f(tap);
    sum = sum ? *sum + part : part;
    more = false;
    for (size_t i = k.size(); i-- > 0 && !more;) {
      more = ++tap[i] < k[i];
      if (!more) tap[i] = 0;
    }
  }
  return *sum;
}

// What one tap of sliding windows read, (..., O1, O2) with one value per window, put back where it
// read it in the input (shape `in`), zeros elsewhere. Window o's tap sits at o*stride + tap*dilation
// = (o + q)*stride + r (r < stride): each dimension is split into (rows of `stride`, position in
// the row), the tap's values padded to row o + q and position r, and the rows merged back and cut
// to the input's size. Padding the split digits, not the merged dimension, keeps the index a
// digit split of the position (y // stride, y % stride) with no offset carried across digits,
// which the index simplifier could not undo.
}  // namespace

namespace detail {

Tensor place_tap(const Tensor& part, const Shape& in, const std::vector<int64_t>& tap, const std::vector<int64_t>& stride,
                 const std::vector<int64_t>& dilation) {
  const size_t n = tap.size(), lead = in.size() - n;
  const Shape& ps = part.shape();
  Shape split(ps.begin(), ps.begin() + static_cast<std::ptrdiff_t>(lead)), merged = split;
  Pads spread(lead, {0, 0}), keep;
  for (size_t i = 0; i < lead; ++i) keep.push_back({0, ps[i]});
  for (size_t i = 0; i < n; ++i) {
    const int64_t s = stride[i], o = ps[lead + i], q = tap[i] * dilation[i] / s, r = tap[i] * dilation[i] % s;
    const int64_t rows = (in[lead + i] + s - 1) / s;  // o + q <= rows for a window inside the input
    split.push_back(o), split.push_back(1), merged.push_back(rows * s), keep.push_back({0, in[lead + i]});
    spread.push_back({q, rows - o - q}), spread.push_back({r, s - 1 - r});
  }
  return part.reshape(split).pad(spread).reshape(merged).shrink(keep);
}

}  // namespace detail

namespace {

// place_tap with one stride and dilation for every axis.
Tensor place_tap(const Tensor& part, const Shape& in, const std::vector<int64_t>& tap, int64_t stride, int64_t dilation) {
  return detail::place_tap(part, in, tap, std::vector<int64_t>(tap.size(), stride), std::vector<int64_t>(tap.size(), dilation));
}

// The gradient of sliding windows (pool) from the windows' gradient g (..., O1, O2, K1, K2): each
// tap's part placed back (place_tap) and summed over the taps, one elementwise kernel. Op by op
// instead, the tiling's expand sums its copies through masks and divisions per element.
Tensor unpool(const Tensor& g, const Shape& in, const std::vector<int64_t>& k, const std::vector<int64_t>& stride,
              const std::vector<int64_t>& dilation) {
  const Shape& gs = g.shape();
  const size_t n = k.size(), lead = in.size() - n;
  const Shape windows(gs.begin(), gs.begin() + static_cast<std::ptrdiff_t>(lead + n));
  return sum_over_taps(k, [&](const std::vector<int64_t>& tap) {
    Pads pick;
    for (size_t i = 0; i < lead + n; ++i) pick.push_back({0, gs[i]});
    for (int64_t t : tap) pick.push_back({t, t + 1});
    return detail::place_tap(g.shrink(pick).reshape(windows), in, tap, stride, dilation);
  });
}

// Sliding windows over the last k.size() dimensions: (..., I1, I2) -> (..., O1, O2, K1, K2) with
// element [o, k] = x[o*stride + k*dilation]. Disjoint windows are cut apart (disjoint_windows);
// overlapping ones take a tiling: each dimension is tiled so that reshaping it into rows of length
// L = I*f + D starts row k at offset k*D (k*L = k*D mod I); taking every stride-th column of those
// rows gives the windows without any gather.
}  // namespace

namespace detail {

Tensor pool(const Tensor& x, const std::vector<int64_t>& k, const std::vector<int64_t>& stride, const std::vector<int64_t>& dilation,
            const char* op) {
  const Shape& s = x.shape();
  size_t n = k.size(), lead = s.size() - n;
  std::vector<int64_t> in(n), out(n), len(n), reps(n);
  for (size_t i = 0; i < n; ++i) {
    in[i] = s[lead + i];
    int64_t span = dilation[i] * (k[i] - 1) + 1;
    if (span > in[i])
      fail(ErrorCode::invalid_argument, op, ": window ", k[i], " (dilation ", dilation[i], ") is larger than the input size ", in[i],
           " of dimension ", lead + i);
    out[i] = (in[i] - span) / stride[i] + 1;
  }
  bool disjoint = true;
  for (size_t i = 0; i < n; ++i) disjoint &= dilation[i] == 1 && k[i] <= stride[i];
  if (disjoint) return disjoint_windows(x, k, out, stride);
  for (size_t i = 0; i < n; ++i) {
    int64_t f = std::max<int64_t>(1, (out[i] * stride[i] - dilation[i] + in[i] - 1) / in[i]);
    len[i] = in[i] * f + dilation[i];
    reps[i] = (k[i] * len[i] + in[i] - 1) / in[i];
  }
  Tensor t = tile(x, reps);
  Pads keep;  // shrink ranges of the leading dimensions: whole
  for (size_t i = 0; i < lead; ++i) keep.push_back({0, s[i]});
  Pads cut = keep;
  Shape rows(s.begin(), s.begin() + lead);
  for (size_t i = 0; i < n; ++i) cut.push_back({0, k[i] * len[i]}), rows.push_back(k[i]), rows.push_back(len[i]);
  t = t.shrink(cut).reshape(rows);
  Pads cols = keep;
  Shape strided(s.begin(), s.begin() + lead);
  for (size_t i = 0; i < n; ++i) {
    cols.push_back({0, k[i]}), cols.push_back({0, out[i] * stride[i]});
    strided.push_back(k[i]), strided.push_back(out[i]), strided.push_back(stride[i]);
  }
  t = t.shrink(cols).reshape(strided);
  Pads first = keep;
  Shape windows(s.begin(), s.begin() + lead);
  for (size_t i = 0; i < n; ++i) {
    first.push_back({0, k[i]}), first.push_back({0, out[i]}), first.push_back({0, 1});
    windows.push_back(k[i]), windows.push_back(out[i]);
  }
  t = t.shrink(first).reshape(windows);
  std::vector<int> order;
  for (size_t i = 0; i < lead; ++i) order.push_back(static_cast<int>(i));
  for (size_t i = 0; i < n; ++i) order.push_back(static_cast<int>(lead + 2 * i + 1));
  for (size_t i = 0; i < n; ++i) order.push_back(static_cast<int>(lead + 2 * i));
  Tensor out_windows = t.permute(order);
  set_gradient(out_windows, {x}, [=, in = x.shape()](const Tensor& g) { return std::vector<Tensor>{unpool(g, in, k, stride, dilation)}; });
  return out_windows;
}

}  // namespace detail

namespace {

// pool with one stride and dilation for every axis.
Tensor pool(const Tensor& x, const std::vector<int64_t>& k, int64_t stride, int64_t dilation, const char* op) {
  return detail::pool(x, k, std::vector<int64_t>(k.size(), stride), std::vector<int64_t>(k.size(), dilation), op);
}

Tensor convolve(const Tensor& input, const Tensor& weight, int64_t stride, int64_t padding, int64_t dilation, int64_t groups);

// Every stride-th element of x's last two dimensions, from (first_h, first_w), `count` of each.
Tensor every_stride(const Tensor& x, int64_t first_h, int64_t count_h, int64_t first_w, int64_t count_w, int64_t stride) {
  const Shape& s = x.shape();
  Tensor t = pad_or_cut(x, {{-first_h, first_h + count_h * stride - s[2]}, {-first_w, first_w + count_w * stride - s[3]}});
  t = t.reshape({s[0], s[1], count_h, stride, count_w, stride}).shrink({{0, s[0]}, {0, s[1]}, {0, count_h}, {0, 1}, {0, count_w}, {0, 1}});
  return t.reshape({s[0], s[1], count_h, count_w});
}

// A strided convolution's input gradient (no dilation) by phases: the input's positions y = u*s + a
// of one phase a take only the taps kh = a + padding (mod s), each from the output gradient's row
// u + (a + padding - kh)/s, so each phase is a plain convolution of the output gradient with its
// taps of the weight (turned around), and the phases are interleaved back (place_tap). The same
// multiply-adds as the forward convolution; spreading the gradient by the stride instead multiplies
// s*s - 1 zeros for each value (8 x 64 x 56 x 56 to 128 channels, stride 2: 31 -> 15 ms).
// `swapped`: the weight with its channels swapped within each group, (Cin, Cout/groups, KH, KW).
Tensor strided_input_gradient(const Tensor& g, const Tensor& swapped, const Shape& in, int64_t stride, int64_t padding,
                              int64_t groups) {
  const int64_t kh = swapped.shape()[2], kw = swapped.shape()[3];
  auto taps = [&](int64_t a, int64_t k) {  // the phase's first tap and how many
    const int64_t first = ((a + padding) % stride + stride) % stride;
    return std::pair<int64_t, int64_t>{first, first < k ? (k - 1 - first) / stride + 1 : 0};
  };
  std::optional<Tensor> dx;
  for (int64_t a = 0; a < stride; ++a)
    for (int64_t b = 0; b < stride; ++b) {
      const auto [first_h, taps_h] = taps(a, kh);
      const auto [first_w, taps_w] = taps(b, kw);
      const int64_t rows = (in[2] - a + stride - 1) / stride, cols = (in[3] - b + stride - 1) / stride;
      if (taps_h == 0 || taps_w == 0 || rows <= 0 || cols <= 0) continue;  // a phase no tap reads: zeros
      Tensor sub = every_stride(swapped, first_h, taps_h, first_w, taps_w, stride).flip({2, 3}).contiguous();
      // the last tap reads the earliest row of the output gradient
      const int64_t from_h = (a + padding - (first_h + (taps_h - 1) * stride)) / stride;
      const int64_t from_w = (b + padding - (first_w + (taps_w - 1) * stride)) / stride;
      Tensor window = pad_or_cut(g, {{-from_h, rows + taps_h - 1 + from_h - g.shape()[2]}, {-from_w, cols + taps_w - 1 + from_w - g.shape()[3]}});
      // (each phase its own kernel: fused into the interleaving, every element would run all of
      // the phases' sums under masks)
      Tensor phase = convolve(window, sub, 1, 0, 1, groups).contiguous();
      Tensor part = place_tap(phase, {g.shape()[0], in[1], in[2], in[3]}, {a, b}, stride, 1);
      dx = dx ? *dx + part : part;
    }
  // (no phase reads anything only where padding covers every window: the input is never read)
  return dx ? *dx : const_tensor(0.0, g.dtype(), {g.shape()[0], in[1], in[2], in[3]}, g.device());
}

// conv2d without its bias: the input's windows (pool) times the weight, summed over each window
// and the group's input channels. Its input's gradient is a convolution too (below).
Tensor convolve(const Tensor& input, const Tensor& weight, int64_t stride, int64_t padding, int64_t dilation, int64_t groups) {
  const int64_t n = input.shape()[0], cin = input.shape()[1], cout = weight.shape()[0];
  const int64_t kh = weight.shape()[2], kw = weight.shape()[3], cg = cin / groups, og = cout / groups;
  Tensor x = padding ? input.pad({{0, 0}, {0, 0}, {padding, padding}, {padding, padding}}) : input;
  Tensor win = pool(x, {kh, kw}, stride, dilation, "conv2d");  // (N, Cin, OH, OW, KH, KW)
  const int64_t oh = win.shape()[2], ow = win.shape()[3];
  win = win.reshape({n, groups, 1, cg, oh, ow, kh, kw});
  Tensor y = sum_of_products(win, weight.reshape({1, groups, og, cg, 1, 1, kh, kw}), {3, 6, 7}).reshape({n, cout, oh, ow});
  // Differentiated op by op, the input's gradient goes back through the windows' tiling: every
  // window's product with the weight is written out (KH*KW times the input's size) and then summed
  // back in place by a masked fold (8 x 64 x 28 x 28 by 64 3x3 filters: 25 ms, 3x torch). It is the
  // transposed convolution: the output's gradient padded by the window's reach less the padding,
  // convolved with the weight turned around (flipped, input and output channels swapped within
  // each group; copied, so the kernel reads a weight laid out as any convolution's: read through
  // the view, a phase below ran 5-8x slower), one direct convolution kernel. Strided: by phases
  // (strided_input_gradient), or with a dilation the gradient spread out by the stride, zeros
  // between. 8 x 64 x 56 x 56 to 128 channels, stride 2, both gradients: 55 -> 22-31 ms (torch
  // 31-50). The weight's gradient is op by op.
  const int64_t reach_h = dilation * (kh - 1) - padding, reach_w = dilation * (kw - 1) - padding;
  if (stride > 1 && dilation > 1 && (reach_h < 0 || reach_w < 0)) return y;  // padding past the reach: op by op
  const Shape in = input.shape(), spread{n, cout, in[2] + dilation * (kh - 1), in[3] + dilation * (kw - 1)};
  auto weight_gradient = [=, shape = weight.shape()](const Tensor& g) {
    return sum_of_products(win, g.reshape({n, groups, og, 1, oh, ow, 1, 1}), {0, 4, 5}).reshape(shape);
  };
  set_gradient(y, {input, weight}, [=](const Tensor& g) {
    Tensor swapped = weight.reshape({groups, og, cg, kh, kw}).permute({0, 2, 1, 3, 4}).reshape({cin, og, kh, kw});
    if (stride > 1 && dilation == 1) return std::vector<Tensor>{strided_input_gradient(g, swapped, in, stride, padding, groups), weight_gradient(g)};
    Tensor spread_g = stride == 1 ? pad_or_cut(g, {{reach_h, reach_h}, {reach_w, reach_w}}) : place_tap(g, spread, {reach_h, reach_w}, stride, 1);
    return std::vector<Tensor>{convolve(spread_g, swapped.flip({2, 3}).contiguous(), 1, 0, dilation, groups), weight_gradient(g)};
  });
  return y;
}

void check_4d(const Tensor& x, const char* op) {
  if (x.ndim() != 4)
    fail(ErrorCode::invalid_argument, op, ": input must be NCHW (4 dimensions), got shape ", shape_str(x.shape()));
}

// KILN_CHECK_BOUNDS=1: realizes the index on the host and names the first index outside [-n, n).
void check_gather_bounds(const Tensor& index, int axis, int64_t n) {
  // unsigned indices are read as such: a uint64 above INT64_MAX is no negative index
  bool u = index.dtype().is_unsigned();
  std::vector<uint64_t> uv = u ? index.cast(dtypes::uint64).to_vector<uint64_t>() : std::vector<uint64_t>{};
  std::vector<int64_t> sv = u ? std::vector<int64_t>{} : index.cast(dtypes::int64).to_vector<int64_t>();
  for (size_t k = 0; k < static_cast<size_t>(index.numel()); ++k) {
    if (u ? uv[k] < static_cast<uint64_t>(n) : sv[k] >= -n && sv[k] < n) continue;
    std::vector<int64_t> pos(index.shape().size());
    for (size_t i = pos.size(), rest = k; i-- > 0; rest /= static_cast<size_t>(index.shape()[i]))
      pos[i] = static_cast<int64_t>(rest % static_cast<size_t>(index.shape()[i]));
    fail(ErrorCode::out_of_range, "gather: index ", u ? std::to_string(uv[k]) : std::to_string(sv[k]), " at position ", shape_str(pos), " is out of range for axis ", axis,
         " of size ", n, " (valid: ", -n, " to ", n - 1, "; KILN_CHECK_BOUNDS=1)");
  }
}

}  // namespace

Tensor detail::sum_of_products(const Tensor& a, const Tensor& b, const std::vector<int>& axes) {
  const DType dt = least_upper_dtype(a.dtype(), b.dtype());
  if (!is_half_float(dt)) return (a * b).sum(axes);
  // each operand takes the product's dtype first (an int16 becomes the half value `*` would use)
  return (a.cast(dt).cast(dtypes::float32) * b.cast(dt).cast(dtypes::float32)).sum(axes).cast(dt);
}

Tensor Tensor::matmul(const Tensor& w) const {
  int an = ndim(), bn = w.ndim();
  if (an == 0 || bn == 0)
    fail(ErrorCode::invalid_argument, "matmul: operands must have at least one dimension, got ", shape_str(shape()), " @ ",
         shape_str(w.shape()));
  Tensor a = an == 1 ? reshape({1, shape()[0]}) : *this;
  Tensor b = bn == 1 ? w.reshape({w.shape()[0], 1}) : w;
  int64_t k = a.shape().back(), kb = b.shape()[b.ndim() - 2];
  if (k != kb)
    fail(ErrorCode::invalid_argument, "matmul: inner dimensions do not match: ", shape_str(shape()), " @ ", shape_str(w.shape()),
         " (", k, " != ", kb, ")");
  // batch dimensions broadcast (numpy): checked here so the error names matmul and the user's
  // shapes, not the internal elementwise multiply
  {
    Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
    for (size_t i = 1; i <= std::min(ba.size(), bb.size()); ++i) {
      int64_t x = ba[ba.size() - i], y = bb[bb.size() - i];
      if (x != y && x != 1 && y != 1)
        fail(ErrorCode::invalid_argument, "matmul: batch dimensions do not broadcast: ", shape_str(shape()), " @ ",
             shape_str(w.shape()), " has batch shapes ", shape_str(ba), " and ", shape_str(bb), " (", x, " != ", y,
             "); each batch dimension must match or be 1");
    }
  }
  // (..., M, 1, K) * (..., 1, N, K) summed over K
  Tensor bt = b.transpose(-1, -2);
  Shape sa = a.shape(), sb = bt.shape();
  sa.insert(sa.end() - 1, 1);
  sb.insert(sb.end() - 2, 1);
  Tensor r = sum_of_products(a.reshape(sa), bt.reshape(sb), {-1});
  if (an == 1) r = r.squeeze(-2);
  if (bn == 1) r = r.squeeze(-1);
  return r;
}

Tensor Tensor::dot(const Tensor& w) const { return matmul(w); }

Tensor Tensor::linear(const Tensor& weight, const std::optional<Tensor>& bias) const {
  Tensor y = matmul(weight.transpose(-1, -2));
  return bias ? y + *bias : y;
}

Tensor Tensor::conv2d(const Tensor& weight, const std::optional<Tensor>& bias, int stride, int padding, int dilation,
                      int groups) const {
  check_4d(*this, "conv2d");
  if (weight.ndim() != 4)
    fail(ErrorCode::invalid_argument, "conv2d: weight must be OIHW (4 dimensions), got shape ", shape_str(weight.shape()));
  if (stride < 1 || dilation < 1 || groups < 1 || padding < 0)
    fail(ErrorCode::invalid_argument, "conv2d: stride, dilation and groups must be >= 1 and padding >= 0 (got stride ", stride,
         ", padding ", padding, ", dilation ", dilation, ", groups ", groups, ")");
  const int64_t cin = shape()[1], cout = weight.shape()[0];
  if (cin % groups || cout % groups || weight.shape()[1] * groups != cin)
    fail(ErrorCode::invalid_argument, "conv2d: input ", shape_str(shape()), " with ", groups, " group(s) needs weight (", cout, ", ",
         cin / std::max(1, groups), ", kh, kw), got ", shape_str(weight.shape()));
  Tensor y = convolve(*this, weight, stride, padding, dilation, groups);
  if (bias) {
    if (bias->ndim() != 1 || bias->shape()[0] != cout)
      fail(ErrorCode::invalid_argument, "conv2d: bias must have shape (", cout, ",), got ", shape_str(bias->shape()));
    y = y + bias->reshape({1, cout, 1, 1});
  }
  return y;
}

Tensor Tensor::cat(const std::vector<Tensor>& ts, int axis) {
  if (ts.empty()) fail(ErrorCode::invalid_argument, "cat: needs at least one tensor");
  int a = norm_axis(axis, ts[0].shape(), "cat");
  int64_t total = 0;
  DType d = ts[0].dtype();
  for (const Tensor& t : ts) {
    if (t.ndim() != ts[0].ndim())
      fail(ErrorCode::invalid_argument, "cat: shapes ", shape_str(ts[0].shape()), " and ", shape_str(t.shape()), " differ in rank");
    for (int i = 0; i < t.ndim(); ++i)
      if (i != a && t.shape()[i] != ts[0].shape()[i])
        fail(ErrorCode::invalid_argument, "cat: shapes ", shape_str(ts[0].shape()), " and ", shape_str(t.shape()),
             " differ in dimension ", i, " (only the cat axis ", a, " may differ)");
    total = checked_add(total, t.shape()[a], "cat");
    d = least_upper_dtype(d, t.dtype());
  }
  if (ts.size() == 1) return ts[0].cast(d);
  if (const Multi* m = multi_of(ts[0]); m && m->axis == a) {
    // along the shard axis the pieces would land on other devices than their rows: gather on the
    // first device, concatenate, shard the result the same way
    std::vector<Tensor> whole;
    for (const Tensor& t : ts) whole.push_back(t.to(m->devices[0]));
    return cat(whole, a).shard(m->devices, a);
  }
  std::optional<Tensor> out;
  int64_t offset = 0;
  for (const Tensor& t : ts) {
    Pads p(t.ndim(), {0, 0});
    p[a] = {offset, total - offset - t.shape()[a]};
    Tensor part = t.cast(d).pad(p);
    out = out ? *out + part : part;
    offset += t.shape()[a];
  }
  return *out;
}

Tensor Tensor::stack(const std::vector<Tensor>& ts, int axis) {
  if (ts.empty()) fail(ErrorCode::invalid_argument, "stack: needs at least one tensor");
  int a = norm_axis(axis, ts[0].shape(), "stack", true);
  std::vector<Tensor> parts;
  for (const Tensor& t : ts) {
    if (t.shape() != ts[0].shape())
      fail(ErrorCode::invalid_argument, "stack: all tensors must have the same shape, got ", shape_str(ts[0].shape()), " and ",
           shape_str(t.shape()));
    parts.push_back(t.unsqueeze(a));
  }
  return cat(parts, a);
}

Tensor Tensor::gather(int axis, const Tensor& index) const {
  int a = norm_axis(axis, shape(), "gather");
  if (index.ndim() != ndim())
    fail(ErrorCode::invalid_argument, "gather: index shape ", shape_str(index.shape()), " must have the rank of ", shape_str(shape()));
  if (!index.dtype().is_int()) fail(ErrorCode::invalid_argument, "gather: index must be an integer tensor, got ", index.dtype().name());
  Pads cut;
  for (int i = 0; i < ndim(); ++i) {
    if (i != a && index.shape()[i] > shape()[i])
      fail(ErrorCode::invalid_argument, "gather: index shape ", shape_str(index.shape()), " exceeds ", shape_str(shape()),
           " in dimension ", i);
    cut.push_back({0, i == a ? shape()[i] : index.shape()[i]});
  }
  int64_t n = shape()[a];
  if (knob(Knob::check_bounds)) check_gather_bounds(index, a, n);
  Tensor x = shrink(cut).transpose(a, -1);                          // (..., N)
  // compared in the index's own type (at least 32 bits): narrowing an int64 index could wrap an
  // out-of-range one into range
  DType it = index.dtype().scalar_size() >= 4 ? index.dtype() : dtypes::int32;
  Tensor idx = index.cast(it).transpose(a, -1);                     // (..., M)
  if (!it.is_unsigned()) idx = where(idx.lt(const_like(idx, 0)), idx + scalar_like(idx, n), idx);  // numpy: negative counts from the end
  Shape ar(idx.ndim() + 1, 1);
  ar.back() = n;
  Tensor onehot = idx.unsqueeze(-1).eq(Tensor::arange(0, static_cast<double>(n), 1, it, device()).reshape(ar));
  Tensor picked = where(onehot, x.unsqueeze(-2), const_like(x.unsqueeze(-2), 0)).sum({-1});
  return picked.cast(dtype()).transpose(a, -1);
}

}  // namespace kiln
