// ops_nn_sample.cpp - ONNX operators that resample: Resize, Upsample, AffineGrid, GridSample, RoiAlign,
// MaxRoiPool.
//
// Resize is separable: each resized axis is one gather of T taps per output position (nearest 1,
// linear 2, cubic 4, more for antialias) and a weighted sum of them. The taps and weights depend only on shapes and
// attributes, so they are computed on the host (as ONNX defines them, in double) and become small
// constant tensors; the data path is gathers, multiplies and sums that fuse like any other graph.
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "ops.hpp"

namespace kiln::onnx::detail {
namespace {

using Index = Tensor::Index;

// One axis of a resize: its sizes, the scale its coordinates map by and its crop (tf_crop_and_resize).
struct AxisResample {
  int64_t in = 0, out = 0;
  double scale = 1;        // output / input as the coordinate transform uses it
  double roi_start = 0, roi_end = 1;
};

struct ResizeAttrs {
  std::string mode = "nearest", transform = "half_pixel", nearest = "round_prefer_floor";
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false, antialias = false;
};

// x_resized -> x_original (ONNX's coordinate_transformation_mode). The "width" checks use the
// scaled length in_size * scale, as ONNX's definition does (not the rounded output size).
double source_coordinate(const Node& n, const ResizeAttrs& a, const AxisResample& ax, int64_t y) {
  const double x = double(y), length = ax.scale * double(ax.in);
  const std::string& m = a.transform;
  if (m == "half_pixel") return (x + 0.5) / ax.scale - 0.5;
  if (m == "asymmetric") return x / ax.scale;
  if (m == "pytorch_half_pixel") return length == 1 ? -0.5 : (x + 0.5) / ax.scale - 0.5;
  if (m == "align_corners") return length == 1 ? 0 : x * double(ax.in - 1) / (length - 1);
  if (m == "tf_half_pixel_for_nn") return (x + 0.5) / ax.scale;
  if (m == "half_pixel_symmetric") {
    const double offset = double(ax.in) / 2 * (1 - double(ax.out) / length);
    return offset + (x + 0.5) / ax.scale - 0.5;
  }
  if (m == "tf_crop_and_resize") {
    const double span = (ax.roi_end - ax.roi_start) * double(ax.in - 1);
    return ax.roi_start * double(ax.in - 1) + (length == 1 ? span / 2 : x * span / (length - 1));
  }
  n.fail("coordinate_transformation_mode '" + m + "' is not supported", ErrorCode::invalid_argument);
}

// The cubic convolution kernel (Keys, parameter A) at distance d >= 0 (0 from 2 on).
double keys(double d, double A) {
  if (d <= 1) return ((A + 2) * d - (A + 3)) * d * d + 1;
  if (d < 2) return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
  return 0;
}

// The weights of the taps floor(x)-1 .. floor(x)+2 at fraction r = x - floor(x).
std::array<double, 4> cubic_weights(double r, double A) { return {keys(1 + r, A), keys(r, A), keys(1 - r, A), keys(2 - r, A)}; }

// Resizes `x` along `axis` as described; x is already in the compute dtype.
Tensor resize_axis(const Node& n, const Tensor& x, int axis, const ResizeAttrs& a, const AxisResample& ax) {
  int taps = a.mode == "nearest" ? 1 : a.mode == "linear" ? 2 : 4;
  // antialias (opset 18) when downsampling: the linear or cubic kernel stretched by 1/scale, so
  // every input position inside it contributes; `first` is its first tap relative to ceil(x) - 1
  const bool wide = a.antialias && taps > 1 && ax.scale < 1;
  int64_t first = 0;
  if (wide) {
    first = int64_t(std::floor(-(taps == 2 ? 1.0 : 2.0) / ax.scale)) + 1;
    taps = int(2 - 2 * first);
  }
  std::vector<int64_t> index(size_t(ax.out * taps));
  std::vector<double> weight(size_t(ax.out * taps), 0.0);
  std::vector<bool> outside(size_t(ax.out), false);
  bool any_outside = false;
  for (int64_t y = 0; y < ax.out; ++y) {
    const double src = source_coordinate(n, a, ax, y);
    if (a.transform == "tf_crop_and_resize" && (src < 0 || src > double(ax.in - 1))) {
      outside[size_t(y)] = any_outside = true;
    }
    const double fl = std::floor(src), r = src - fl;
    const int64_t base = int64_t(fl);
    int64_t* idx = &index[size_t(y * taps)];
    double* w = &weight[size_t(y * taps)];
    if (wide) {
      const int64_t p = int64_t(std::ceil(src)) - 1;
      double sum = 0;
      for (int t = 0; t < taps; ++t) {
        idx[t] = p + first + t;
        const double d = std::abs(double(idx[t]) - src) * ax.scale;
        w[t] = a.mode == "linear" ? std::max(0.0, 1 - d) : keys(d, a.cubic_a);
        sum += w[t];
      }
      for (int t = 0; t < taps; ++t) w[t] /= sum;
    } else if (taps == 1) {
      int64_t pick = base;
      if (r != 0) {
        const std::string& m = a.nearest;
        if (m == "round_prefer_floor") pick = r <= 0.5 ? base : base + 1;
        else if (m == "round_prefer_ceil") pick = r < 0.5 ? base : base + 1;
        else if (m == "floor") pick = base;
        else if (m == "ceil") pick = base + 1;
        else n.fail("nearest_mode '" + m + "' is not supported", ErrorCode::invalid_argument);
      }
      idx[0] = pick;
      w[0] = 1;
    } else if (taps == 2) {
      idx[0] = base, idx[1] = base + 1;
      w[0] = 1 - r, w[1] = r;
    } else {
      auto c = cubic_weights(r, a.cubic_a);
      for (int t = 0; t < 4; ++t) idx[t] = base - 1 + t, w[t] = c[size_t(t)];
    }
    if (a.exclude_outside && taps > 1) {  // taps outside the input drop out; the rest renormalize
      double sum = 0;
      for (int t = 0; t < taps; ++t) {
        if (idx[t] < 0 || idx[t] >= ax.in) w[t] = 0;
        sum += w[t];
      }
      if (sum != 0)
        for (int t = 0; t < taps; ++t) w[t] /= sum;
    }
    for (int t = 0; t < taps; ++t) idx[t] = std::clamp<int64_t>(idx[t], 0, ax.in - 1);  // edge padding
  }
  std::vector<Index> sel(size_t(axis), Index::slice());
  sel.push_back(Index::tensor(Tensor::from_vector(index, {ax.out, taps}, x.device())));
  Tensor g = x.getitem(sel);  // axis -> (out, taps)
  Shape ws(size_t(g.ndim()), 1);
  ws[size_t(axis)] = ax.out;
  ws[size_t(axis) + 1] = taps;
  Tensor y = taps == 1 ? g.squeeze(axis + 1)
                       : (g * Tensor::from_vector(weight, ws, x.device()).cast(x.dtype())).sum({axis + 1});
  if (any_outside) {
    Shape ms(size_t(y.ndim()), 1);
    ms[size_t(axis)] = ax.out;
    Tensor mask = Tensor::from_vector(std::vector<uint8_t>(outside.begin(), outside.end()), ms, x.device()).cast(dtypes::bool_);
    y = Tensor::where(mask, Tensor::full({}, a.extrapolation, y.dtype(), y.device()), y);
  }
  return y;
}

// Resamples every axis whose plan changes it; integers interpolate in float32 and come back
// rounded and saturated (nearest keeps the dtype: it only gathers).
Tensor resample(const Node& n, const Tensor& x, const ResizeAttrs& a, const std::vector<AxisResample>& axes) {
  if (a.mode != "nearest" && a.mode != "linear" && a.mode != "cubic")
    n.fail("mode '" + a.mode + "' is not one of nearest, linear, cubic", ErrorCode::invalid_argument);
  const bool via_float = a.mode != "nearest" && !x.dtype().is_float();
  Tensor y = via_float ? x.cast(dtypes::float32) : x;
  for (size_t i = 0; i < axes.size(); ++i) {
    const AxisResample& ax = axes[i];
    const bool cropped = a.transform == "tf_crop_and_resize" && (ax.roi_start != 0 || ax.roi_end != 1);
    if (ax.out == ax.in && std::abs(ax.scale - 1) < 1e-9 && !cropped) continue;  // unchanged axis
    if (ax.in == 0 || ax.out == 0) n.fail("resizing an empty axis is not supported");
    y = resize_axis(n, y, int(i), a, ax);
  }
  if (!via_float) return y;
  const DType t = x.dtype();
  return y.round().clip(Tensor::full({}, double(t.imin()), y.dtype(), y.device()),
                        Tensor::full({}, double(t.imax()), y.dtype(), y.device())).cast(t);
}

// Resize (opsets 10 .. 19): X, roi, scales, sizes (opset 10: X, scales).
std::vector<Tensor> resize(const Node& n) {
  const Tensor& x = n.in(0);
  const int r = x.ndim();
  ResizeAttrs a;
  a.mode = n.attr_string("mode", "nearest");
  a.antialias = n.attr_int("antialias", 0) != 0;
  if (a.antialias && a.mode == "nearest") n.fail("antialias applies to the linear and cubic modes, not nearest",
                                                 ErrorCode::invalid_argument);
  if (n.opset() < 11) {  // Resize-10: Upsample's coordinates (x / scale, nearest rounds down)
    a.transform = "asymmetric";
    a.nearest = "floor";
  } else {
    a.transform = n.attr_string("coordinate_transformation_mode", "half_pixel");
    a.nearest = n.attr_string("nearest_mode", "round_prefer_floor");
    a.cubic_a = n.attr_float("cubic_coeff_a", -0.75);
    a.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
    a.extrapolation = n.attr_float("extrapolation_value", 0);
  }
  std::vector<int> axes;
  for (int64_t ax : n.attr_ints("axes")) axes.push_back(n.axis(ax, r));
  if (axes.empty())
    for (int i = 0; i < r; ++i) axes.push_back(i);

  const size_t scales_at = n.opset() < 11 ? 1 : 2;
  std::vector<double> scales;
  if (n.has(scales_at)) scales = n.doubles(scales_at);
  std::vector<int64_t> sizes;
  if (n.opset() >= 11 && n.has(3)) sizes = n.ints(3);
  if (scales.empty() == sizes.empty()) n.fail("exactly one of scales and sizes must be given", ErrorCode::invalid_argument);
  const size_t given = scales.empty() ? sizes.size() : scales.size();
  if (given != axes.size())
    n.fail((scales.empty() ? "sizes" : "scales") + std::string(" has ") + std::to_string(given) + " entries for " +
           std::to_string(axes.size()) + " axes", ErrorCode::invalid_argument);

  std::vector<AxisResample> plan(static_cast<size_t>(r));
  for (int i = 0; i < r; ++i) plan[size_t(i)].in = plan[size_t(i)].out = x.shape()[size_t(i)];
  if (!scales.empty()) {
    for (size_t i = 0; i < axes.size(); ++i) {
      auto& p = plan[size_t(axes[i])];
      if (scales[i] <= 0) n.fail("scales must be positive", ErrorCode::invalid_argument);
      p.scale = scales[i];
      p.out = int64_t(scales[i] * double(p.in));
    }
  } else {
    const std::string policy = n.attr_string("keep_aspect_ratio_policy", "stretch");
    double common = 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      const double s = double(sizes[i]) / double(x.shape()[size_t(axes[i])]);
      if (policy == "not_larger") common = i == 0 ? s : std::min(common, s);
      else if (policy == "not_smaller") common = i == 0 ? s : std::max(common, s);
      else if (policy != "stretch") n.fail("keep_aspect_ratio_policy '" + policy + "' is not supported", ErrorCode::invalid_argument);
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      auto& p = plan[size_t(axes[i])];
      if (policy == "stretch") {
        p.out = sizes[i];
        p.scale = double(p.out) / double(p.in);
      } else {  // one scale for all axes; sizes rounded half up
        p.scale = common;
        p.out = int64_t(common * double(p.in) + 0.5);
      }
    }
  }
  if (a.transform == "tf_crop_and_resize") {
    if (!n.has(1)) n.fail("tf_crop_and_resize needs the roi input", ErrorCode::invalid_argument);
    auto roi = n.doubles(1);
    if (roi.size() != 2 * axes.size()) n.fail("roi must have 2 entries per resized axis", ErrorCode::invalid_argument);
    for (size_t i = 0; i < axes.size(); ++i) {
      plan[size_t(axes[i])].roi_start = roi[i];
      plan[size_t(axes[i])].roi_end = roi[axes.size() + i];
    }
  }
  return {resample(n, x, a, plan)};
}

// Upsample (opsets 7 and 9; deprecated by Resize): output = floor(in * scale), sampled at x / scale.
std::vector<Tensor> upsample(const Node& n) {
  const Tensor& x = n.in(0);
  ResizeAttrs a;
  a.mode = n.attr_string("mode", "nearest");
  if (a.mode == "bilinear") a.mode = "linear";
  a.transform = "asymmetric";
  a.nearest = "floor";
  std::vector<double> scales = n.opset() >= 9 ? n.doubles(1) : n.attr_floats("scales");
  if (scales.size() != size_t(x.ndim()))
    n.fail("scales must have one entry per axis (" + std::to_string(x.ndim()) + ")", ErrorCode::invalid_argument);
  std::vector<AxisResample> plan(scales.size());
  for (size_t i = 0; i < scales.size(); ++i) {
    if (scales[i] < 1) n.fail("Upsample scales must be >= 1", ErrorCode::invalid_argument);
    plan[i].in = x.shape()[i];
    plan[i].scale = scales[i];
    plan[i].out = int64_t(double(plan[i].in) * scales[i]);
  }
  return {resample(n, x, a, plan)};
}

// AffineGrid (opset 20): the sampling grid (N, [D,] H, W, k) of theta (N, k, k+1) applied to the
// evenly spaced positions of `size` in [-1, 1] (pixel centres at the ends with align_corners,
// else half a pixel in), x the last axis. Positions are built on the host; one matmul applies theta.
std::vector<Tensor> affine_grid(const Node& n) {
  const Tensor& theta = n.in(0);
  const std::vector<int64_t> size = n.ints(1);
  const size_t k = size.size() - 2;
  if ((size.size() != 4 && size.size() != 5) || theta.ndim() != 3 || theta.shape()[1] != int64_t(k) ||
      theta.shape()[2] != int64_t(k + 1))
    n.fail("theta must be (N, 2, 3) with a size of rank 4, or (N, 3, 4) with a size of rank 5", ErrorCode::invalid_argument);
  const bool align = n.attr_int("align_corners", 0) != 0;
  auto position = [align](int64_t i, int64_t len) {
    if (len == 1) return align ? -1.0 : 0.0;  // linspace(-1, 1, 1), scaled by (len - 1) / len without align
    const double p = -1 + 2.0 * double(i) / double(len - 1);
    return align ? p : p * double(len - 1) / double(len);
  };
  std::vector<int64_t> spatial(size.begin() + 2, size.end());  // (D,) H, W
  int64_t P = 1;
  for (int64_t d : spatial) P *= d;
  std::vector<double> base(size_t(P) * (k + 1));
  for (int64_t at = 0; at < P; ++at) {
    int64_t rest = at;
    for (size_t a = k; a-- > 0;) {  // the last spatial axis is x, the first coordinate
      base[size_t(at) * (k + 1) + (k - 1 - a)] = position(rest % spatial[a], spatial[a]);
      rest /= spatial[a];
    }
    base[size_t(at) * (k + 1) + k] = 1;
  }
  const Tensor positions = Tensor::from_vector(base, {1, P, int64_t(k + 1)}, theta.device()).cast(theta.dtype());
  Shape out{theta.shape()[0]};
  out.insert(out.end(), spatial.begin(), spatial.end());
  out.push_back(int64_t(k));
  return {positions.matmul(theta.transpose(1, 2)).reshape(out)};
}

// GridSample's reflection of coordinates into [lo, hi]: mirrored at the borders as many times as
// it takes (a coordinate inside is kept).
Tensor reflect(const Tensor& v, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return Tensor::full(v.shape(), lo, v.dtype(), v.device());
  Tensor below = v.lt(Tensor::full({}, lo, v.dtype(), v.device()));
  Tensor above = v.gt(Tensor::full({}, hi, v.dtype(), v.device()));
  Tensor dx = Tensor::where(below, lo - v, v - hi);
  Tensor flips = (dx / range).floor();
  Tensor r = dx - flips * range;
  Tensor even = (flips - (flips / 2).floor() * 2).eq(Tensor::zeros({}, v.dtype(), v.device()));
  Tensor from_lo = lo + r, from_hi = hi - r;
  return Tensor::where(below, Tensor::where(even, from_lo, from_hi),
                       Tensor::where(above, Tensor::where(even, from_hi, from_lo), v));
}

// GridSample (opsets 16 and 20): X (N, C, D1..Dk) sampled at grid (N, O1..Ok, k), whose last axis
// holds normalized coordinates in [-1, 1], the last spatial axis first. Each tap combination is one
// gather from X's flattened planes, weighted by the product of its per-axis weights; a tap outside
// the input reads 0 (zeros), the nearest edge (border) or its mirror image (reflection).
std::vector<Tensor> grid_sample(const Node& n) {
  const Tensor& x = n.in(0);
  if (!x.dtype().is_float()) n.fail("GridSample of " + x.dtype().name() + " input is not supported");
  const Tensor grid = n.in(1).cast(x.dtype());
  const int k = x.ndim() - 2;
  if (k < 1 || grid.ndim() != k + 2 || grid.shape().back() != k || grid.shape()[0] != x.shape()[0])
    n.fail("grid must be (N, O1..Ok, k) for an input (N, C, D1..Dk)", ErrorCode::invalid_argument);
  std::string mode = n.attr_string("mode", n.opset() >= 20 ? "linear" : "bilinear");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    n.fail("mode '" + mode + "' is not supported", ErrorCode::invalid_argument);
  const std::string padding = n.attr_string("padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    n.fail("padding_mode '" + padding + "' is not supported", ErrorCode::invalid_argument);
  const bool align = n.attr_int("align_corners", 0) != 0;
  const int64_t N = x.shape()[0], C = x.shape()[1];
  int64_t Q = 1, P = 1;
  for (int i = 1; i <= k; ++i) Q *= grid.shape()[size_t(i)];
  for (int i = 0; i < k; ++i) P *= x.shape()[size_t(2 + i)];
  const Tensor g = grid.reshape({N, Q, k});

  // per spatial axis: tap indices (N, Q) and weights, each list of length T
  const int T = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  std::vector<std::vector<Tensor>> tap_index(static_cast<size_t>(k)), tap_weight(tap_index), tap_valid(tap_index);
  for (int i = 0; i < k; ++i) {
    const double d = double(x.shape()[size_t(2 + i)]);
    const double lo = align ? 0 : -0.5, hi = align ? d - 1 : d - 0.5;
    Tensor gi = g.getitem({Index::slice(), Index::slice(), Index::integer(k - 1 - i)});
    Tensor c = align ? (gi + 1) / 2 * (d - 1) : ((gi + 1) * d - 1) / 2;
    if (mode == "nearest") c = c.round();  // half to even, as rint
    if (padding == "border") c = c.clip(Tensor::zeros({}, c.dtype(), c.device()), Tensor::full({}, d - 1, c.dtype(), c.device()));
    if (padding == "reflection") c = reflect(c, lo, hi);
    Tensor base = c.floor(), r = c - base;
    for (int t = 0; t < T; ++t) {
      Tensor pos = T == 1 ? c : base + double(t - (T == 4 ? 1 : 0));
      const double A = -0.75;  // the cubic convolution's constant (Keys), fixed for GridSample
      auto far = [A](const Tensor& s) { return ((A * s - 5 * A) * s + 8 * A) * s - 4 * A; };
      auto near = [A](const Tensor& s) { return ((A + 2) * s - (A + 3)) * s * s + 1; };
      Tensor w = T == 1   ? Tensor::ones({}, c.dtype(), c.device())
                 : T == 2 ? (t == 0 ? 1 - r : r)
                          : (t == 0 ? far(r + 1) : t == 1 ? near(r) : t == 2 ? near(1 - r) : far(2 - r));
      if (padding == "reflection") pos = reflect(pos, lo, hi).trunc();
      Tensor valid = pos.ge(Tensor::zeros({}, c.dtype(), c.device())) & pos.le(Tensor::full({}, d - 1, c.dtype(), c.device()));
      pos = pos.clip(Tensor::zeros({}, c.dtype(), c.device()), Tensor::full({}, d - 1, c.dtype(), c.device()));
      tap_index[size_t(i)].push_back(pos.cast(dtypes::int64));
      tap_weight[size_t(i)].push_back(w);
      tap_valid[size_t(i)].push_back(valid);
    }
  }
  // every combination of one tap per axis
  const Tensor planes = x.reshape({N, C, P});
  Tensor out = Tensor::zeros({N, C, Q}, x.dtype(), x.device());
  int64_t combos = 1;
  for (int i = 0; i < k; ++i) combos *= T;
  for (int64_t combo = 0; combo < combos; ++combo) {
    Tensor flat = Tensor::zeros({N, Q}, dtypes::int64, x.device());
    Tensor weight = Tensor::ones({N, Q}, x.dtype(), x.device());
    std::optional<Tensor> valid;
    int64_t rest = combo, stride = P;
    for (int i = 0; i < k; ++i) {
      const size_t t = size_t(rest % T);
      rest /= T;
      stride /= x.shape()[size_t(2 + i)];
      flat = flat + tap_index[size_t(i)][t] * stride;
      weight = weight * tap_weight[size_t(i)][t];
      valid = valid ? (*valid & tap_valid[size_t(i)][t]) : tap_valid[size_t(i)][t];
    }
    if (padding == "zeros") weight = Tensor::where(*valid, weight, Tensor::zeros({}, x.dtype(), x.device()));
    Tensor picked = planes.gather(2, flat.reshape({N, 1, Q}).expand({N, C, Q}));
    out = out + picked * weight.reshape({N, 1, Q});
  }
  Shape ys{N, C};
  for (int i = 1; i <= k; ++i) ys.push_back(grid.shape()[size_t(i)]);
  return {out.reshape(ys)};
}

// RoiAlign (opsets 10, 16): for each region of interest (x1, y1, x2, y2 scaled by spatial_scale),
// an output_height x output_width grid of bins, each the average (or max) of sampling_ratio^2
// bilinear samples (sampling_ratio 0: ceil(bin size) per axis, which depends on the rois' values:
// they are read on the host). The samples' four corner positions and weights are computed on the
// host as ONNX defines them; the data path is one gather per image plane and a weighted reduction.
std::vector<Tensor> roi_align(const Node& n) {
  const Tensor& x = n.in(0);
  if (x.ndim() != 4) n.fail("input must be (N, C, H, W)", ErrorCode::invalid_argument);
  if (!x.dtype().is_float()) n.fail("RoiAlign of " + x.dtype().name() + " input is not supported");
  const std::vector<double> rois = n.doubles(1);
  const int64_t R = int64_t(rois.size() / 4), C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  if (rois.size() % 4 != 0 || n.in(1).ndim() != 2) n.fail("rois must be (num_rois, 4)", ErrorCode::invalid_argument);
  const std::string mode = n.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") n.fail("mode '" + mode + "' is not avg or max", ErrorCode::invalid_argument);
  const std::string transform = n.attr_string("coordinate_transformation_mode", n.opset() >= 16 ? "half_pixel" : "output_half_pixel");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    n.fail("coordinate_transformation_mode '" + transform + "' is not supported", ErrorCode::invalid_argument);
  const bool half_pixel = transform == "half_pixel";
  const int64_t PH = n.attr_int("output_height", 1), PW = n.attr_int("output_width", 1);
  const int64_t ratio = n.attr_int("sampling_ratio", 0);
  const double scale = n.attr_float("spatial_scale", 1.0);
  // (the samples are listed on the host: sizes past these are a corrupt model, not a workload)
  if (PH < 1 || PW < 1 || PH > (1 << 16) || PW > (1 << 16) || ratio < 0 || ratio > (1 << 10))
    n.fail("output_height, output_width (1 to 65536) or sampling_ratio (0 to 1024) out of range", ErrorCode::invalid_argument);

  struct Sample { int64_t pos[4]; double w[4]; };
  std::vector<std::vector<Sample>> per_roi(static_cast<size_t>(R));  // PH * PW bins x grid samples, bin-major
  std::vector<int64_t> grid_count(static_cast<size_t>(R));
  int64_t most = 1;
  double listed = 0;  // samples listed so far, bounded before any is
  for (int64_t r = 0; r < R; ++r) {
    const double* b = &rois[size_t(4 * r)];
    const double off = half_pixel ? 0.5 : 0.0;
    const double sw = b[0] * scale - off, sh = b[1] * scale - off;
    double rw = b[2] * scale - off - sw, rh = b[3] * scale - off - sh;
    if (!half_pixel) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
    const double bh = rh / double(PH), bw = rw / double(PW);
    const double grid_h = ratio > 0 ? double(ratio) : std::ceil(rh / double(PH));
    const double grid_w = ratio > 0 ? double(ratio) : std::ceil(rw / double(PW));
    listed += double(PH * PW) * grid_h * grid_w;  // (NaN-safe: the test fails on NaN)
    if (!(listed <= double(int64_t{1} << 28)))
      n.fail("the rois ask for more than 2^28 bilinear samples (rois far larger than the input, or not finite?)",
             ErrorCode::invalid_argument);
    const auto gh = int64_t(grid_h), gw = int64_t(grid_w);
    grid_count[size_t(r)] = std::max<int64_t>(gh * gw, 1);
    most = std::max(most, gh * gw);
    auto& samples = per_roi[size_t(r)];
    for (int64_t ph = 0; ph < PH; ++ph)
      for (int64_t pw = 0; pw < PW; ++pw)
        for (int64_t iy = 0; iy < gh; ++iy)
          for (int64_t ix = 0; ix < gw; ++ix) {
            double y = sh + double(ph) * bh + (double(iy) + 0.5) * bh / double(gh);
            double xx = sw + double(pw) * bw + (double(ix) + 0.5) * bw / double(gw);
            Sample s{{0, 0, 0, 0}, {0, 0, 0, 0}};
            if (!(y < -1.0 || y > double(H) || xx < -1.0 || xx > double(W))) {  // outside: contributes 0
              y = std::max(y, 0.0), xx = std::max(xx, 0.0);
              int64_t y0 = int64_t(y), x0 = int64_t(xx), y1, x1;
              if (y0 >= H - 1) y1 = y0 = H - 1, y = double(y0);
              else y1 = y0 + 1;
              if (x0 >= W - 1) x1 = x0 = W - 1, xx = double(x0);
              else x1 = x0 + 1;
              const double ly = y - double(y0), lx = xx - double(x0), hy = 1 - ly, hx = 1 - lx;
              s = {{y0 * W + x0, y0 * W + x1, y1 * W + x0, y1 * W + x1}, {hy * hx, hy * lx, ly * hx, ly * lx}};
            }
            samples.push_back(s);
          }
  }
  // (R, PH*PW, most samples, 4 corners), rois with fewer samples padded with weight 0 (and, for
  // max, excluded by a mask)
  if (double(R) * double(PH * PW) * double(most) * 4 > double(int64_t{1} << 30))  // (padded to the largest roi's count)
    n.fail("the rois ask for more than 2^30 bilinear sample corners (rois of very different sizes?)", ErrorCode::invalid_argument);
  const int64_t S = PH * PW * most * 4;
  std::vector<int64_t> index(size_t(R * S), 0);
  std::vector<double> weight(size_t(R * S), 0.0);
  std::vector<uint8_t> present(size_t(R * PH * PW * most), 0);
  for (int64_t r = 0; r < R; ++r) {
    const auto& samples = per_roi[size_t(r)];
    const int64_t g = int64_t(samples.size()) / (PH * PW);
    for (int64_t bin = 0; bin < PH * PW; ++bin)
      for (int64_t j = 0; j < g; ++j) {
        const Sample& s = samples[size_t(bin * g + j)];
        present[size_t((r * PH * PW + bin) * most + j)] = 1;
        for (int c = 0; c < 4; ++c) {
          const size_t at = size_t(((r * PH * PW + bin) * most + j) * 4 + c);
          index[at] = s.pos[c];
          weight[at] = mode == "avg" ? s.w[c] / double(grid_count[size_t(r)]) : s.w[c];
        }
      }
  }
  const std::string& dev = x.device();
  Tensor planes = x.reshape({x.shape()[0], C, H * W}).getitem({Index::tensor(n.in(2).cast(dtypes::int64))});  // (R, C, HW)
  Tensor idx = Tensor::from_vector(index, {R, 1, S}, dev).expand({R, C, S});
  Tensor v = planes.gather(2, idx) * Tensor::from_vector(weight, {R, 1, S}, dev).cast(x.dtype());
  v = v.reshape({R, C, PH * PW, most, 4});
  Tensor y = mode == "avg" ? v.sum({3, 4}) : [&] {
    Tensor per_sample = v.max({4});  // ONNX's max mode: the largest weighted corner of each sample
    Tensor mask = Tensor::from_vector(present, {R, 1, PH * PW, most}, dev).cast(dtypes::bool_);
    return Tensor::where(mask, per_sample, Tensor::full({}, -INFINITY, x.dtype(), dev)).max({3});
  }();
  return {y.reshape({R, C, PH, PW})};
}

// MaxRoiPool (opset 1): each region [batch, x1, y1, x2, y2] (scaled by spatial_scale and rounded,
// both ends included) split into pooled_shape bins, each the max of the input inside it (0 for an
// empty bin), as Caffe's ROIPooling that the operator comes from. The rois are read on the host;
// each bin is a mask over its image plane and the max a masked reduction.
std::vector<Tensor> max_roi_pool(const Node& n) {
  const Tensor& x = n.in(0);
  if (x.ndim() != 4) n.fail("input must be (N, C, H, W)", ErrorCode::invalid_argument);
  if (!x.dtype().is_float()) n.fail("MaxRoiPool of " + x.dtype().name() + " input is not supported");
  const std::vector<double> rois = n.doubles(1);
  if (n.in(1).ndim() != 2 || n.in(1).shape()[1] != 5) n.fail("rois must be (num_rois, 5)", ErrorCode::invalid_argument);
  const std::vector<int64_t> pooled = n.attr_ints("pooled_shape");
  if (pooled.size() != 2 || pooled[0] < 1 || pooled[1] < 1) n.fail("pooled_shape must be two sizes >= 1", ErrorCode::invalid_argument);
  const double scale = n.attr_float("spatial_scale", 1.0);
  const int64_t R = n.in(1).shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t PH = pooled[0], PW = pooled[1], B = PH * PW;
  std::vector<uint8_t> inside(size_t(R * B * H * W), 0), nonempty(size_t(R * B), 0);
  std::vector<int64_t> batch(static_cast<size_t>(R));
  for (int64_t r = 0; r < R; ++r) {
    const double* roi = &rois[size_t(5 * r)];
    batch[size_t(r)] = int64_t(roi[0]);
    const int64_t x1 = int64_t(std::round(roi[1] * scale)), y1 = int64_t(std::round(roi[2] * scale));
    const int64_t x2 = int64_t(std::round(roi[3] * scale)), y2 = int64_t(std::round(roi[4] * scale));
    const double bin_h = double(std::max<int64_t>(y2 - y1 + 1, 1)) / double(PH);
    const double bin_w = double(std::max<int64_t>(x2 - x1 + 1, 1)) / double(PW);
    for (int64_t ph = 0; ph < PH; ++ph)
      for (int64_t pw = 0; pw < PW; ++pw) {
        const int64_t hs = std::clamp<int64_t>(int64_t(std::floor(double(ph) * bin_h)) + y1, 0, H);
        const int64_t he = std::clamp<int64_t>(int64_t(std::ceil(double(ph + 1) * bin_h)) + y1, 0, H);
        const int64_t ws = std::clamp<int64_t>(int64_t(std::floor(double(pw) * bin_w)) + x1, 0, W);
        const int64_t we = std::clamp<int64_t>(int64_t(std::ceil(double(pw + 1) * bin_w)) + x1, 0, W);
        const int64_t bin = r * B + ph * PW + pw;
        nonempty[size_t(bin)] = he > hs && we > ws;
        for (int64_t h = hs; h < he; ++h)
          for (int64_t w = ws; w < we; ++w) inside[size_t((bin * H + h) * W + w)] = 1;
      }
  }
  const std::string& dev = x.device();
  const Tensor planes = x.reshape({x.shape()[0], C, H * W})
                            .getitem({Index::tensor(Tensor::from_vector(batch, {R}, dev))})
                            .reshape({R, C, 1, H * W});
  const Tensor mask = Tensor::from_vector(inside, {R, 1, B, H * W}, dev).cast(dtypes::bool_);
  const Tensor lowest = Tensor::full({}, -INFINITY, x.dtype(), dev);
  const Tensor best = Tensor::where(mask, planes, lowest).max({3});  // (R, C, B)
  const Tensor some = Tensor::from_vector(nonempty, {R, 1, B}, dev).cast(dtypes::bool_);
  return {Tensor::where(some, best, Tensor::zeros({}, x.dtype(), dev)).reshape({R, C, PH, PW})};
}

}  // namespace

void nn_sample_ops(std::vector<OpDef>& out) {
  out.insert(out.end(), {
      {"Resize", 10,
       {"mode", "coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside", "extrapolation_value",
        "nearest_mode", "antialias", "axes", "keep_aspect_ratio_policy"},
       resize},
      {"Upsample", 7, {"mode", "scales"}, upsample},
      {"AffineGrid", 20, {"align_corners"}, affine_grid},
      {"GridSample", 16, {"align_corners", "mode", "padding_mode"}, grid_sample},
      {"MaxRoiPool", 1, {"pooled_shape", "spatial_scale"}, max_roi_pool},
      {"RoiAlign", 10,
       {"coordinate_transformation_mode", "mode", "output_height", "output_width", "sampling_ratio", "spatial_scale"},
       roi_align},
  });
}

}  // namespace kiln::onnx::detail
