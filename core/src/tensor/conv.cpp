// tensor/conv.cpp - convolutions and pools over any number of spatial axes, with tinygrad's and
// torch's arguments (per-axis stride, dilation and padding, asymmetric or negative padding,
// ceil_mode, count_include_pad, max-pool indices, unpooling, transposed convolution). All are
// compositions of sliding windows (windows.hpp's pool) with elementwise ops and reductions, so
// autograd differentiates them; the 2-D convolution with one stride and dilation for both axes
// stays on nn.cpp's tuned convolution (its own input gradient), and the int forms of the 2-D pools
// are these with the same graph as before.
#include <algorithm>
#include <limits>
#include <numeric>

#include "tensor/tensor_state.hpp"
#include "tensor/windows.hpp"

namespace kiln {

using namespace detail;

namespace {

// One entry per spatial axis: `v` has one for all `k` axes or one each.
std::vector<int64_t> per_axis(const std::vector<int64_t>& v, size_t k, const char* op, const char* what, const Shape& in) {
  if (v.size() == 1) return std::vector<int64_t>(k, v[0]);
  if (v.size() != k)
    fail(ErrorCode::invalid_argument, op, ": ", what, " ", shape_str(v), " needs 1 or ", k, " entries (one per spatial axis of input ",
         shape_str(in), ")");
  return v;
}

// At least `least` in every entry (what: the argument's name).
void check_at_least(const std::vector<int64_t>& v, int64_t least, const char* op, const char* what) {
  for (int64_t x : v)
    if (x < least) fail(ErrorCode::invalid_argument, op, ": ", what, " must be >= ", least, " on every axis, got ", shape_str(v));
}

// (before, after) per spatial axis: none (zeros), one pair for all `k` axes or one each.
Pads per_axis_pads(const Pads& p, size_t k, const char* op, const Shape& in) {
  if (p.empty()) return Pads(k, {0, 0});
  if (p.size() == 1) return Pads(k, p[0]);
  if (p.size() != k)
    fail(ErrorCode::invalid_argument, op, ": padding has ", p.size(), " (before, after) pairs, expected 1 or ", k,
         " (one per spatial axis of input ", shape_str(in), ")");
  return p;
}

std::string pads_str(const Pads& p) {
  std::string s = "(";
  for (size_t i = 0; i < p.size(); ++i) s += (i ? ", (" : "(") + std::to_string(p[i].first) + ", " + std::to_string(p[i].second) + ")";
  return s + ")";
}

// The last pads.size() dimensions of x padded with `value` (amounts > 0) or cut (< 0). No op at all
// where every amount is 0, one pad where none is negative: the graph the int forms always built.
Tensor pad_value(const Tensor& x, const Pads& pads, double value) {
  const size_t lead = x.shape().size() - pads.size();
  Pads grow(lead, {0, 0});
  bool grows = false, cuts = false;
  for (const auto& [before, after] : pads) {
    grow.push_back({std::max<int64_t>(0, before), std::max<int64_t>(0, after)});
    grows |= before > 0 || after > 0;
    cuts |= before < 0 || after < 0;
  }
  Tensor t = grows ? x.pad(grow, value) : x;
  if (!cuts) return t;
  Pads keep;
  for (size_t i = 0; i < t.shape().size(); ++i) {
    if (i < lead) {
      keep.push_back({0, t.shape()[i]});
      continue;
    }
    const auto& [before, after] = pads[i - lead];
    keep.push_back({std::max<int64_t>(0, -before), t.shape()[i] - std::max<int64_t>(0, -after)});
  }
  return t.shrink(keep);
}

std::vector<int> last_axes(size_t k) {
  std::vector<int> axes;
  for (size_t i = 0; i < k; ++i) axes.push_back(static_cast<int>(i) - static_cast<int>(k));
  return axes;
}

Shape last_dims(const Shape& s, size_t k) { return Shape(s.end() - static_cast<std::ptrdiff_t>(k), s.end()); }

// Each tap's row-major number within a window of the last k dimensions of `windows`, shaped to
// broadcast against them: (1, ..., 1, K1, K2, ...), int32.
Tensor tap_numbers(const Tensor& windows, size_t k) {
  const Shape ks = last_dims(windows.shape(), k);
  Shape s(windows.shape().size() - k, 1);
  s.insert(s.end(), ks.begin(), ks.end());
  return Tensor::arange(0, static_cast<double>(numel_of(ks)), 1, dtypes::int32, windows.device()).reshape(s);
}

// The tap of each window's first maximum in row-major order (torch's choice at ties), keeping
// the window axes as 1: (..., O1, O2, ..., 1, 1, ...), int32. The first maximum has the largest
// "taps after it" count among the maxima.
Tensor first_max(const Tensor& windows, size_t k) {
  const std::vector<int> axes = last_axes(k);
  const int64_t count = numel_of(last_dims(windows.shape(), k));
  Tensor taps = tap_numbers(windows, k);
  Tensor after = Tensor::where(windows.eq(windows.max(axes, true)), count - taps, scalar_like(taps, 0));
  return count - after.max(axes, true);
}

// The spatial geometry of a pool: kernel, stride, dilation per axis, the padding asked for and
// the padding applied (ceil_mode adds to the end what its last windows need).
struct PoolGeometry {
  std::vector<int64_t> k, s, d;
  Pads regular, applied;
};

PoolGeometry pool_geometry(const Tensor& x, const Tensor::PoolOptions& o, const char* op) {
  const size_t k = o.kernel.size();
  if (k == 0) fail(ErrorCode::invalid_argument, op, ": kernel_size needs at least one entry");
  if (x.shape().size() < k)
    fail(ErrorCode::invalid_argument, op, ": input ", shape_str(x.shape()), " has fewer dimensions than the kernel ", shape_str(o.kernel));
  PoolGeometry g;
  g.k = o.kernel;
  g.s = o.stride.empty() ? o.kernel : per_axis(o.stride, k, op, "stride", x.shape());
  g.d = per_axis(o.dilation, k, op, "dilation", x.shape());
  check_at_least(g.k, 1, op, "kernel_size");
  check_at_least(g.s, 1, op, "stride");
  check_at_least(g.d, 1, op, "dilation");
  g.regular = per_axis_pads(o.padding, k, op, x.shape());
  g.applied = g.regular;
  const Shape in = last_dims(x.shape(), k);
  for (size_t i = 0; i < k; ++i) {
    const auto [before, after] = g.regular[i];
    const int64_t span = g.d[i] * (g.k[i] - 1) + 1, padded = in[i] + before + after;
    if (padded < span)
      fail(ErrorCode::invalid_argument, op, ": kernel ", shape_str(g.k), " with dilation ", shape_str(g.d), " spans ", span,
           " on spatial axis ", i, ", larger than its padded size ", padded, " (input ", shape_str(x.shape()), ", padding ",
           pads_str(g.regular), ")");
    if (!o.ceil_mode) continue;
    // torch's output size: windows rounded up, less a last one that would start in the end padding
    int64_t out = (padded - span + g.s[i] - 1) / g.s[i] + 1;
    if ((out - 1) * g.s[i] >= in[i] + before) --out;
    g.applied[i].second += g.s[i] * (out - 1) + span - padded;  // the windows' reach: exactly `out` of them
  }
  return g;
}

double lowest(DType t) {
  if (t.is_float()) return -std::numeric_limits<double>::infinity();
  if (t.is_bool()) return 0;
  return static_cast<double>(t.imin());
}

// conv2d without bias over an input already padded: its windows (N, Cin, *O, *k) times the weight,
// summed over each window and the group's input channels.
// `acc`: the dtype the products are summed in (tinygrad's dtype=), if any.
Tensor convolve_nd(const Tensor& x, const Tensor& w, int64_t groups, const std::vector<int64_t>& s, const std::vector<int64_t>& d,
                   std::optional<DType> acc) {
  const size_t k = w.shape().size() - 2;
  const int64_t n = x.shape()[0], cin = x.shape()[1], cout = w.shape()[0], cg = cin / groups, og = cout / groups;
  const Shape ks = last_dims(w.shape(), k);
  Tensor win = pool(x, ks, s, d, "conv2d");
  const Shape os(win.shape().begin() + 2, win.shape().begin() + 2 + static_cast<std::ptrdiff_t>(k));
  Shape wins{n, groups, 1, cg}, weights{1, groups, og, cg}, out{n, cout};
  wins.insert(wins.end(), os.begin(), os.end());
  wins.insert(wins.end(), ks.begin(), ks.end());
  weights.insert(weights.end(), k, 1);
  weights.insert(weights.end(), ks.begin(), ks.end());
  out.insert(out.end(), os.begin(), os.end());
  std::vector<int> axes{3};
  for (size_t i = 0; i < k; ++i) axes.push_back(static_cast<int>(4 + k + i));
  const DType dt = least_upper_dtype(x.dtype(), w.dtype());
  if (!acc || *acc == dt) return sum_of_products(win.reshape(wins), w.reshape(weights), axes).reshape(out);
  return (win.reshape(wins) * w.reshape(weights)).cast(*acc).sum(axes).reshape(out);
}

// Ranks of a convolution's input and weight: (N, C, *spatial) and (O, I, *kernel), K >= 1.
size_t spatial_rank(const Tensor& x, const Tensor& w, const char* op) {
  if (x.shape().size() < 3 || w.shape().size() != x.shape().size())
    fail(ErrorCode::invalid_argument, op, ": input ", shape_str(x.shape()), " and weight ", shape_str(w.shape()),
         " must have the same rank, at least 3: (N, C, *spatial) and (out, in, *kernel)");
  return x.shape().size() - 2;
}

void check_bias(const std::optional<Tensor>& bias, int64_t cout, const char* op) {
  if (bias && (bias->shape().size() != 1 || bias->shape()[0] != cout))
    fail(ErrorCode::invalid_argument, op, ": bias must have shape (", cout, ",), got ", shape_str(bias->shape()));
}

void check_4d(const Tensor& x, const char* op) {
  if (x.ndim() != 4) fail(ErrorCode::invalid_argument, op, ": input must be NCHW (4 dimensions), got shape ", shape_str(x.shape()));
}

void check_pool_args(const Tensor& x, int kernel, int stride, int padding, const char* op) {
  if (kernel < 1 || stride < 0 || padding < 0)
    fail(ErrorCode::invalid_argument, op, ": invalid kernel ", kernel, ", stride ", stride, ", padding ", padding, " for input of shape ",
         shape_str(x.shape()), " (expected kernel >= 1, stride >= 0 (0 means the kernel size) and padding >= 0)");
}

}  // namespace

Tensor Tensor::conv2d(const Tensor& weight, const std::optional<Tensor>& bias, const ConvOptions& o) const {
  const size_t k = spatial_rank(*this, weight, "conv2d");
  const std::vector<int64_t> s = per_axis(o.stride, k, "conv2d", "stride", shape()), d = per_axis(o.dilation, k, "conv2d", "dilation", shape());
  check_at_least(s, 1, "conv2d", "stride");
  check_at_least(d, 1, "conv2d", "dilation");
  const Pads p = per_axis_pads(o.padding, k, "conv2d", shape());
  if (std::any_of(o.output_padding.begin(), o.output_padding.end(), [](int64_t v) { return v != 0; }))
    fail(ErrorCode::invalid_argument, "conv2d: output_padding ", shape_str(o.output_padding), " is conv_transpose2d's, not conv2d's");
  const int64_t groups = o.groups, cin = shape()[1], cout = weight.shape()[0];
  if (groups < 1) fail(ErrorCode::invalid_argument, "conv2d: groups must be >= 1, got ", groups);
  if (cin % groups || cout % groups || weight.shape()[1] * groups != cin)
    fail(ErrorCode::invalid_argument, "conv2d: input ", shape_str(shape()), " with ", groups, " group(s) needs a weight of (", cout, ", ",
         cin / groups, ", *kernel) with ", cout, " divisible by the groups, got ", shape_str(weight.shape()));
  check_at_least(last_dims(weight.shape(), k), 1, "conv2d", "the weight's kernel size");
  for (size_t i = 0; i < k; ++i) {
    const int64_t span = d[i] * (weight.shape()[2 + i] - 1) + 1, padded = shape()[2 + i] + p[i].first + p[i].second;
    if (padded < span)
      fail(ErrorCode::invalid_argument, "conv2d: kernel ", shape_str(last_dims(weight.shape(), k)), " with dilation ", shape_str(d),
           " spans ", span, " on spatial axis ", i, ", larger than the padded input's ", padded, " (input ", shape_str(shape()),
           ", padding ", pads_str(p), ")");
  }
  check_bias(bias, cout, "conv2d");
  if (k == 2 && s[0] == s[1] && d[0] == d[1] && !o.dtype) {
    // kiln's tuned 2-D convolution (the int form's graph); other padding is applied before it
    const auto [top, bottom] = p[0];
    const bool one_amount = top >= 0 && top == bottom && p[1].first == top && p[1].second == top;
    const Tensor x = one_amount ? *this : pad_value(*this, p, 0.0);
    return x.conv2d(weight, bias, static_cast<int>(s[0]), one_amount ? static_cast<int>(top) : 0, static_cast<int>(d[0]),
                    static_cast<int>(groups));
  }
  Tensor y = convolve_nd(pad_value(*this, p, 0.0), weight, groups, s, d, o.dtype);
  if (!bias) return y;
  Shape b(k + 2, 1);
  b[1] = cout;
  return y + bias->reshape(b);
}

namespace {

// One spatial axis of a strided transposed convolution split by output phase: the outputs
// o = q s + r (q = 0 .. n - 1) take the taps t with t d = r + pad_before (mod s), the input
// element i = q + (r + pad_before - t d) / s for each. Those taps are every `step`-th from `first`
// (count of them), and on the input they are `dilation` apart: a stride-1 correlation of the input
// (cropped or padded by `before`/`after`) with the phase's taps in reverse order.
struct Phase {
  int64_t n = 0;                           // outputs of this phase
  int64_t first = 0, count = 0, step = 1;  // its taps
  int64_t dilation = 1, before = 0, after = 0;
};

Phase phase_of(int64_t r, int64_t out, int64_t in, int64_t s, int64_t d, int64_t k, int64_t pad_before) {
  Phase ph;
  ph.n = r < out ? (out - r + s - 1) / s : 0;
  const int64_t g = std::gcd(s, d);
  ph.step = s / g;
  ph.dilation = d / g;
  auto reaches = [&](int64_t t) { return ((r + pad_before - t * d) % s + s) % s == 0; };
  ph.first = -1;
  for (int64_t t = 0; t < std::min(k, ph.step) && ph.first < 0; ++t)
    if (reaches(t)) ph.first = t;
  if (ph.first < 0 || ph.n == 0) return ph;
  ph.count = (k - 1 - ph.first) / ph.step + 1;
  const int64_t last = ph.first + (ph.count - 1) * ph.step;
  const int64_t lowest = (r + pad_before - last * d) / s;  // the input offset of the last tap (exact)
  ph.before = -lowest;
  ph.after = ph.n + (ph.count - 1) * ph.dilation - (in + ph.before);
  return ph;
}

// The transposed convolution with a stride as one stride-1 convolution per output phase (prod of
// the strides of them) over the input as it is, interleaved. Spreading the input with stride - 1
// zeros between elements and convolving that did stride^k times the multiply-adds, all but one in
// stride^k on zeros (8 x 64 x 28 x 28 by 4 x 4, stride 2: 7.5 ms, torch 1.7).
Tensor conv_transpose_by_phase(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, int64_t groups,
                               const std::vector<int64_t>& s, const std::vector<int64_t>& d, const Pads& p,
                               const std::vector<int64_t>& out) {
  const size_t k = s.size();
  const Shape& ks = w.shape();  // (Cout, Cin/g, *kernel): the taps in conv2d's layout, not turned around
  const int64_t batch = x.shape()[0], cout = ks[0];
  std::vector<int64_t> q(k);  // outputs per phase, padded up to the longest
  for (size_t i = 0; i < k; ++i) q[i] = (out[i] + s[i] - 1) / s[i];
  std::vector<int64_t> r(k, 0);
  std::vector<Tensor> phases;
  for (;;) {
    std::vector<Phase> ph(k);
    bool any_tap = true, any_output = true;
    for (size_t i = 0; i < k; ++i) {
      ph[i] = phase_of(r[i], out[i], x.shape()[2 + i], s[i], d[i], ks[2 + i], p[i].first);
      any_tap &= ph[i].count > 0;
      any_output &= ph[i].n > 0;
    }
    Shape full{batch, cout};
    for (size_t i = 0; i < k; ++i) full.push_back(q[i]);
    if (!any_tap || !any_output) {
      phases.push_back(Tensor::zeros(full, x.dtype(), x.device()));
    } else {
      std::vector<Tensor::Index> taps{Tensor::Index::slice(), Tensor::Index::slice()};
      Pads crop{{0, 0}, {0, 0}}, fill{{0, 0}, {0, 0}};
      std::vector<int> spatial;
      std::vector<int64_t> dil;
      for (size_t i = 0; i < k; ++i) {
        taps.push_back(Tensor::Index::slice(ph[i].first, ph[i].first + (ph[i].count - 1) * ph[i].step + 1, ph[i].step));
        crop.push_back({ph[i].before, ph[i].after});
        fill.push_back({0, q[i] - ph[i].n});
        spatial.push_back(static_cast<int>(2 + i));
        dil.push_back(ph[i].dilation);
      }
      Tensor part = x.pad(crop, "constant").conv2d(w.getitem(taps).flip(spatial), std::nullopt,
                                                    Tensor::ConvOptions{.groups = static_cast<int>(groups), .stride = {1}, .dilation = dil});
      phases.push_back(part.contiguous().pad(fill));  // (its own kernel: fused into the interleave it ran at the output's size, masked)
    }
    size_t i = k;  // the next phase, the last axis fastest
    while (i > 0 && ++r[i - 1] == s[i - 1]) r[--i] = 0;
    if (i == 0) break;
  }
  // (s_0, ..., s_k-1, N, C, q_0, ...) -> (N, C, q_0, s_0, q_1, s_1, ...) -> the output
  Shape grid(s.begin(), s.end());
  grid.push_back(batch);
  grid.push_back(cout);
  grid.insert(grid.end(), q.begin(), q.end());
  std::vector<int> order{static_cast<int>(k), static_cast<int>(k + 1)};
  Shape joined{batch, cout};
  Pads keep{{0, batch}, {0, cout}};
  for (size_t i = 0; i < k; ++i) {
    order.push_back(static_cast<int>(k + 2 + i));
    order.push_back(static_cast<int>(i));
    joined.push_back(q[i] * s[i]);
    keep.push_back({0, out[i]});
  }
  Tensor y = Tensor::stack(phases, 0).reshape(grid).permute(order).reshape(joined).shrink(keep);
  if (bias) {
    Shape b{1, cout};
    b.insert(b.end(), k, 1);
    y = y + bias->reshape(b);
  }
  return y;
}

}  // namespace

Tensor Tensor::conv_transpose2d(const Tensor& weight, const std::optional<Tensor>& bias, const ConvOptions& o) const {
  const char* op = "conv_transpose2d";
  const size_t k = spatial_rank(*this, weight, op);
  const std::vector<int64_t> s = per_axis(o.stride, k, op, "stride", shape()), d = per_axis(o.dilation, k, op, "dilation", shape());
  const std::vector<int64_t> extra = per_axis(o.output_padding, k, op, "output_padding", shape());
  check_at_least(s, 1, op, "stride");
  check_at_least(d, 1, op, "dilation");
  check_at_least(extra, 0, op, "output_padding");
  const Pads p = per_axis_pads(o.padding, k, op, shape());
  if (o.dtype) fail(ErrorCode::invalid_argument, op, ": dtype is conv2d's, not conv_transpose2d's (cast the operands instead)");
  const int64_t groups = o.groups, cin = shape()[1];
  if (groups < 1) fail(ErrorCode::invalid_argument, op, ": groups must be >= 1, got ", groups);
  if (weight.shape()[0] != cin || cin % groups)
    fail(ErrorCode::invalid_argument, op, ": input ", shape_str(shape()), " with ", groups, " group(s) needs a weight of (", cin,
         ", out_channels / groups, *kernel) with ", cin, " divisible by the groups, got ", shape_str(weight.shape()));
  const int64_t cg = cin / groups, og = weight.shape()[1], cout = og * groups;
  check_bias(bias, cout, op);
  const Shape ks = last_dims(weight.shape(), k);
  check_at_least(ks, 1, op, "the weight's kernel size");
  Pads reach;  // the convolution's padding: the kernel's reach less the padding, output_padding at the end
  std::vector<int64_t> outs;
  for (size_t i = 0; i < k; ++i) {
    const int64_t in = shape()[2 + i], span = d[i] * (ks[i] - 1);
    if (extra[i] >= std::max(s[i], d[i]))
      fail(ErrorCode::invalid_argument, op, ": output_padding ", shape_str(extra), " must be smaller than the stride ", shape_str(s),
           " or the dilation ", shape_str(d), " on every axis");
    const int64_t out = (in - 1) * s[i] - p[i].first - p[i].second + span + extra[i] + 1;
    if (in < 1 || out < 1)
      fail(ErrorCode::invalid_argument, op, ": input ", shape_str(shape()), " with weight ", shape_str(weight.shape()), ", stride ",
           shape_str(s), ", dilation ", shape_str(d), " and padding ", pads_str(p), " gives an empty output on spatial axis ", i);
    reach.push_back({span - p[i].first, span - p[i].second + extra[i]});
    outs.push_back(out);
  }
  // (Cin, Cout/g, *k) -> (Cout, Cin/g, *k) within each group, the kernel turned around
  Shape split{groups, cg, og}, turned{cout, cg};
  split.insert(split.end(), ks.begin(), ks.end());
  turned.insert(turned.end(), ks.begin(), ks.end());
  std::vector<int> spatial;  // the kernel's axes in (Cout, Cin/g, *k)
  for (size_t i = 0; i < k; ++i) spatial.push_back(static_cast<int>(2 + i));
  Tensor taps = weight.reshape(split).transpose(1, 2).reshape(turned);
  if (std::any_of(s.begin(), s.end(), [](int64_t v) { return v > 1; }))
    return conv_transpose_by_phase(*this, taps, bias, groups, s, d, p, outs);
  return conv2d(taps.flip(spatial), bias,
                ConvOptions{.groups = o.groups, .stride = {1}, .dilation = d, .padding = reach, .output_padding = {0}});
}

Tensor Tensor::max_pool2d(const PoolOptions& o) const {
  const PoolGeometry g = pool_geometry(*this, o, "max_pool2d");
  const size_t k = g.k.size();
  const Tensor windows = pool(pad_value(*this, g.applied, lowest(dtype())), g.k, g.s, g.d, "max_pool2d");
  Tensor top = windows.max(last_axes(k));
  if (!dtype().is_float()) return top;
  // torch's gradient: each window's to its first maximum only (max's own rule shares it among
  // ties). Given to the windows, whose own gradient (pool's) puts every tap back in one kernel.
  // (the function holds the windows, not `top`: the table's entry would keep its own node alive)
  set_gradient(top, {windows}, [windows, k](const Tensor& grad) {
    Tensor first = first_max(windows, k);
    Tensor g = grad.reshape(first.shape());
    return std::vector<Tensor>{Tensor::where(tap_numbers(windows, k).eq(first), g, const_like(g, 0)).expand(windows.shape())};
  });
  return top;
}

std::pair<Tensor, Tensor> Tensor::max_pool2d_with_indices(const PoolOptions& o) const {
  Tensor values = max_pool2d(o);
  const PoolGeometry g = pool_geometry(*this, o, "max_pool2d");
  const size_t k = g.k.size();
  const Tensor windows = pool(pad_value(*this, g.applied, lowest(dtype())), g.k, g.s, g.d, "max_pool2d");
  // each position's flat index in its plane, windowed like the values (padding reads -1, never picked)
  const Shape plane = last_dims(shape(), k);
  Tensor index = Tensor::arange(0, static_cast<double>(numel_of(plane)), 1, dtypes::int32, device()).reshape(plane);
  Tensor index_windows = pool(pad_value(index, g.applied, -1), g.k, g.s, g.d, "max_pool2d");
  Tensor first = first_max(windows, k);
  Tensor picked = Tensor::where(tap_numbers(windows, k).eq(first), index_windows, scalar_like(index_windows, 0)).sum(last_axes(k));
  return {values, picked.cast(dtypes::int32)};
}

Tensor Tensor::avg_pool2d(const PoolOptions& o) const {
  const PoolGeometry g = pool_geometry(*this, o, "avg_pool2d");
  const size_t k = g.k.size();
  const std::vector<int> axes = last_axes(k);
  Tensor windows = pool(pad_value(*this, g.applied, 0.0), g.k, g.s, g.d, "avg_pool2d");
  const bool pads = std::any_of(g.regular.begin(), g.regular.end(), [](const auto& ba) { return ba.first > 0 || ba.second > 0; });
  if (g.applied == g.regular && (o.count_include_pad || !pads)) return windows.mean(axes);
  // divided by how many of each window's elements count: the input's, the padding's where
  // count_include_pad, never the end padding ceil_mode added
  const Shape plane = last_dims(shape(), k);
  DType ct = dtype().is_float() ? dtype() : dtypes::float32;
  Tensor counted = pad_value(const_tensor(1.0, ct, plane, device()), g.regular, o.count_include_pad ? 1.0 : 0.0);
  Pads end(k, {0, 0});
  for (size_t i = 0; i < k; ++i) end[i].second = g.applied[i].second - g.regular[i].second;
  Tensor count = pool(pad_value(counted, end, 0.0), g.k, g.s, g.d, "avg_pool2d").sum(axes);
  return windows.sum(axes) / count;
}

Tensor Tensor::max_unpool2d(const Tensor& indices, const PoolOptions& o, const Shape& output_size) const {
  const char* op = "max_unpool2d";
  if (shape().size() < 3)
    fail(ErrorCode::invalid_argument, op, ": input must be (N, C, *spatial) with at least one spatial axis, got ", shape_str(shape()));
  if (indices.shape() != shape())
    fail(ErrorCode::invalid_argument, op, ": indices ", shape_str(indices.shape()), " must have the input's shape ", shape_str(shape()));
  if (!indices.dtype().is_int()) fail(ErrorCode::invalid_argument, op, ": indices must be integers, got ", indices.dtype().name());
  const size_t k = shape().size() - 2;
  Shape out;
  if (output_size.empty()) {
    const std::vector<int64_t> ks = per_axis(o.kernel, k, op, "kernel_size", shape());
    const std::vector<int64_t> s = o.stride.empty() ? ks : per_axis(o.stride, k, op, "stride", shape());
    const std::vector<int64_t> d = per_axis(o.dilation, k, op, "dilation", shape());
    const Pads p = per_axis_pads(o.padding, k, op, shape());
    for (size_t i = 0; i < k; ++i) out.push_back((shape()[2 + i] - 1) * s[i] - p[i].first - p[i].second + d[i] * (ks[i] - 1) + 1);
  } else {
    if (output_size.size() < k)
      fail(ErrorCode::invalid_argument, op, ": output_size ", shape_str(output_size), " needs at least the ", k, " spatial sizes");
    out = last_dims(output_size, k);
  }
  for (int64_t v : out)
    if (v < 1) fail(ErrorCode::invalid_argument, op, ": output size ", shape_str(out), " must be positive on every spatial axis");
  const int64_t n = shape()[0], c = shape()[1], m = numel_of(last_dims(shape(), k)), positions = numel_of(out);
  // every value compared with every position of its plane: where it matches, it is written there.
  // Overlapping windows can give one maximum twice (the same value): the sum over the matches is
  // divided by their count.
  Tensor at = Tensor::arange(0, static_cast<double>(positions), 1, indices.dtype(), device()).reshape({1, 1, 1, positions});
  Tensor values = reshape({n, c, m, 1});
  Tensor hit = indices.reshape({n, c, m, 1}).eq(at);
  Tensor sum = Tensor::where(hit, values, const_like(values, 0)).sum({2});
  Tensor count = hit.cast(sum.dtype()).sum({2}).maximum(const_like(sum, 1));
  Shape full{n, c};
  full.insert(full.end(), out.begin(), out.end());
  Tensor y = (dtype().is_float() ? sum / count : sum.idiv(count)).cast(dtype()).reshape(full);
  if (!dtype().is_float()) return y;
  // torch's gradient: every input element the output's gradient at its index (duplicates each
  // take all of it; an index outside the output none)
  set_gradient(y, {*this}, [indices, n, c, m, positions, in = shape()](const Tensor& g) {
    return std::vector<Tensor>{g.reshape({n, c, positions}).gather(2, indices.reshape({n, c, m})).reshape(in)};
  });
  return y;
}

Tensor Tensor::max_pool2d(int kernel, int stride, int padding) const {
  check_4d(*this, "max_pool2d");
  check_pool_args(*this, kernel, stride, padding, "max_pool2d");
  return max_pool2d(PoolOptions{.kernel = {kernel, kernel}, .stride = {stride ? stride : kernel}, .padding = Pads(1, {padding, padding})});
}

Tensor Tensor::avg_pool2d(int kernel, int stride, int padding) const {
  check_4d(*this, "avg_pool2d");
  check_pool_args(*this, kernel, stride, padding, "avg_pool2d");
  return avg_pool2d(PoolOptions{.kernel = {kernel, kernel}, .stride = {stride ? stride : kernel}, .padding = Pads(1, {padding, padding})});
}

}  // namespace kiln
