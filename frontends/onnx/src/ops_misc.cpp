// ops_misc.cpp - ONNX operators: quantization (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// the integer and QLinear matmul/conv), NonMaxSuppression, Bernoulli and RandomUniformLike.
//
// Integer arithmetic is exact: quantized operands are widened to int32 and their zero points
// subtracted there, so products and sums never pass through a float. Requantization follows the
// spec: scale in float32, round half to even, add the zero point, saturate to the output type.
#include <algorithm>
#include <cmath>

#include "ops.hpp"
#include "tensor_proto.hpp"

namespace kiln::onnx::detail {
namespace {

Tensor scalar(double v, DType dt, const std::string& device) { return Tensor::full({}, v, dt, device); }

// The 8-bit (and, since opset 21, 16-bit and int32) integer types quantized tensors may have.
// float8 and int4 have no kiln dtype: dtype_of refuses them before they reach here.
void check_quantized_type(const Node& n, DType dt, const char* what) {
  if (dt != dtypes::uint8 && dt != dtypes::int8 && dt != dtypes::uint16 && dt != dtypes::int16 && dt != dtypes::int32)
    n.fail(std::string(what) + " has type " + dt.name() + "; only uint8, int8, uint16, int16 and int32 are supported");
}

// A per-axis scale or zero point (1-d, one entry per slice along `axis` of x) reshaped so it
// broadcasts against x; a scalar (or one-element) one is returned as it is (per-tensor).
Tensor along_axis(const Node& n, const Tensor& p, const Tensor& x, int64_t axis_attr) {
  if (p.ndim() == 0 || (p.ndim() == 1 && p.numel() == 1)) return p;
  if (p.ndim() != 1) n.fail("a scale or zero point of rank " + std::to_string(p.ndim()) + " (blocked quantization) is not supported");
  const int ax = n.axis(axis_attr, x.ndim());
  if (p.shape()[0] != x.shape()[static_cast<size_t>(ax)])
    n.fail("the per-axis scale/zero point has " + std::to_string(p.shape()[0]) + " entries, axis " + std::to_string(ax) +
               " of the input has " + std::to_string(x.shape()[static_cast<size_t>(ax)]),
           ErrorCode::invalid_argument);
  Shape s(static_cast<size_t>(x.ndim()), 1);
  s[static_cast<size_t>(ax)] = p.shape()[0];
  return p.reshape(s);
}

// round(v) + zero_point, saturated to `dt`'s range and cast: the quantization step shared by
// QuantizeLinear, DynamicQuantizeLinear and the QLinear ops. v is float32; round is half to even.
Tensor saturate_cast(const Tensor& v, const Tensor& zero_point, DType dt) {
  Tensor q = v.round() + zero_point.cast(dtypes::float32);
  const std::string& dev = v.device();
  q = q.clip(scalar(static_cast<double>(dt.imin()), dtypes::float32, dev),
             scalar(static_cast<double>(dt.imax()), dtypes::float32, dev));
  return q.cast(dt);
}

void check_block_size(const Node& n) {
  if (n.attr_int("block_size", 0) != 0) n.fail("blocked quantization (block_size != 0) is not supported");
}

// y = saturate(round(x / scale) + zero_point); the output type is the zero point's, else
// output_dtype's, else uint8.
std::vector<Tensor> quantize_linear(const Node& n) {
  check_block_size(n);
  const Tensor& x = n.in(0);
  const int64_t axis = n.attr_int("axis", 1);
  std::optional<Tensor> zp = n.opt(2);
  DType out = dtypes::uint8;
  if (zp) {
    out = zp->dtype();
  } else if (n.has_attr("output_dtype") && n.attr_int("output_dtype", 0) != 0) {
    const int64_t t = n.attr_int("output_dtype", 0);
    auto dt = dtype_of(static_cast<int32_t>(t));
    if (!dt) n.fail(std::string("output_dtype ") + onnx_type_name(static_cast<int32_t>(t)) + " is not supported (float8 and int4 have no kiln type)");
    out = *dt;
  }
  check_quantized_type(n, out, "the quantized output");
  Tensor scale = along_axis(n, n.in(1), x, axis).cast(dtypes::float32);
  Tensor z = zp ? along_axis(n, *zp, x, axis) : scalar(0, out, x.device());
  return {saturate_cast(x.cast(dtypes::float32) / scale, z, out)};
}

// y = (x - zero_point) * scale, in the scale's type; the subtraction is done in int32 (exact).
std::vector<Tensor> dequantize_linear(const Node& n) {
  check_block_size(n);
  const Tensor& x = n.in(0);
  check_quantized_type(n, x.dtype(), "the quantized input");
  const int64_t axis = n.attr_int("axis", 1);
  Tensor scale = along_axis(n, n.in(1), x, axis);
  DType out = scale.dtype();
  if (n.has_attr("output_dtype") && n.attr_int("output_dtype", 0) != 0) {
    auto dt = dtype_of(static_cast<int32_t>(n.attr_int("output_dtype", 0)));
    if (!dt || !dt->is_float()) n.fail("output_dtype must be a float type kiln has");
    out = *dt;
  }
  Tensor centered = x.cast(dtypes::int32);
  if (auto zp = n.opt(2)) centered = centered - along_axis(n, *zp, x, axis).cast(dtypes::int32);
  return {(centered.cast(dtypes::float32) * scale.cast(dtypes::float32)).cast(out)};
}

// uint8 quantization of x over the range [min(x, 0), max(x, 0)]: (y, y_scale, y_zero_point).
std::vector<Tensor> dynamic_quantize_linear(const Node& n) {
  const Tensor x = n.in(0).cast(dtypes::float32);
  const std::string& dev = x.device();
  Tensor zero = scalar(0, dtypes::float32, dev);
  Tensor lo = x.min().minimum(zero), hi = x.max().maximum(zero);
  // an all-zero input has an empty range: scale 1 / 255 keeps everything finite (zero point 0)
  Tensor scale = Tensor::where(hi.eq(lo), scalar(1, dtypes::float32, dev), hi - lo) / 255.0;
  // the zero point is clipped to [0, 255] before rounding (the spec's order)
  Tensor zp = (zero - lo / scale).clip(zero, scalar(255, dtypes::float32, dev)).round().cast(dtypes::uint8);
  return {saturate_cast(x / scale, zp, dtypes::uint8), scale, zp};
}

// x - zero_point, widened to int32; the zero point may be per-tensor or, at `axis` of x, per slice.
Tensor centered(const Node& n, const Tensor& x, const std::optional<Tensor>& zp, int axis) {
  check_quantized_type(n, x.dtype(), "an integer operand");
  Tensor c = x.cast(dtypes::int32);
  if (!zp) return c;
  Tensor z = zp->cast(dtypes::int32);
  if (z.ndim() == 1 && z.numel() > 1) {
    Shape s(static_cast<size_t>(x.ndim()), 1);
    s[static_cast<size_t>(n.axis(axis, x.ndim()))] = z.shape()[0];
    z = z.reshape(s);
  }
  return c - z;
}

// (A - a_zero_point) @ (B - b_zero_point) in int32. A's zero point may be one per row (M), B's one
// per column (N), as the spec allows (numpy's matmul: 1-d operands take per-tensor zero points).
Tensor integer_matmul(const Node& n, const Tensor& a, const std::optional<Tensor>& azp, const Tensor& b,
                      const std::optional<Tensor>& bzp) {
  return centered(n, a, azp, -2).matmul(centered(n, b, bzp, -1));
}

std::vector<Tensor> matmul_integer(const Node& n) {
  return {integer_matmul(n, n.in(0), n.opt(2), n.in(1), n.opt(3))};
}

// QLinearMatMul: the int32 product requantized with a_scale * b_scale / y_scale (the scales and
// zero points per tensor, or A's per row and B's per column).
std::vector<Tensor> qlinear_matmul(const Node& n) {
  Tensor acc = integer_matmul(n, n.in(0), n.in(2), n.in(3), n.in(5));
  Tensor a_scale = n.in(1).cast(dtypes::float32), b_scale = n.in(4).cast(dtypes::float32);
  if (a_scale.numel() > 1) a_scale = a_scale.reshape({-1, 1});  // one per row of A (b_scale: per column)
  Tensor y_scale = n.in(6).cast(dtypes::float32);
  const Tensor& yzp = n.in(7);
  check_quantized_type(n, yzp.dtype(), "y_zero_point");
  return {saturate_cast(acc.cast(dtypes::float32) * (a_scale * b_scale) / y_scale, yzp, yzp.dtype())};
}

// Conv's attributes (auto_pad, dilations, group, kernel_shape, pads, strides) as ConvOptions for
// an input of spatial shape `in` and a kernel of spatial shape `k`.
Tensor::ConvOptions conv_options(const Node& n, const Shape& in, const Shape& k) {
  const size_t sp = k.size();
  Tensor::ConvOptions o;
  o.groups = static_cast<int>(n.attr_int("group", 1));
  o.stride = n.attr_ints("strides", std::vector<int64_t>(sp, 1));
  o.dilation = n.attr_ints("dilations", std::vector<int64_t>(sp, 1));
  if (o.stride.size() != sp || o.dilation.size() != sp) n.fail("strides/dilations need one entry per spatial axis", ErrorCode::invalid_argument);
  auto ks = n.attr_ints("kernel_shape", k);
  if (ks != k) n.fail("kernel_shape does not match the weight's spatial shape", ErrorCode::invalid_argument);
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  o.padding.assign(sp, {0, 0});
  if (auto_pad == "NOTSET") {
    auto pads = n.attr_ints("pads", std::vector<int64_t>(2 * sp, 0));
    if (pads.size() != 2 * sp) n.fail("pads needs two entries per spatial axis", ErrorCode::invalid_argument);
    for (size_t i = 0; i < sp; ++i) o.padding[i] = {pads[i], pads[i + sp]};
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < sp; ++i) {
      const int64_t out = (in[i] + o.stride[i] - 1) / o.stride[i];
      const int64_t total = std::max<int64_t>(0, (out - 1) * o.stride[i] + (k[i] - 1) * o.dilation[i] + 1 - in[i]);
      const int64_t small = total / 2;  // the odd pixel goes after (UPPER) or before (LOWER)
      o.padding[i] = auto_pad == "SAME_UPPER" ? std::pair{small, total - small} : std::pair{total - small, small};
    }
  } else if (auto_pad != "VALID") {
    n.fail("auto_pad '" + auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", ErrorCode::invalid_argument);
  }
  return o;
}

// (x - x_zero_point) conv (w - w_zero_point) in int32; w's zero point may be one per output channel.
// Padding pads the centered input with 0, i.e. the original with its zero point (the spec).
Tensor integer_conv(const Node& n, const Tensor& x, const std::optional<Tensor>& xzp, const Tensor& w,
                    const std::optional<Tensor>& wzp) {
  if (x.ndim() < 3 || w.ndim() != x.ndim()) n.fail("the input and weight must be (N, C, *spatial) and (M, C/group, *k)", ErrorCode::invalid_argument);
  if (xzp && xzp->numel() != 1) n.fail("x_zero_point must be per-tensor (one value)", ErrorCode::invalid_argument);
  const Shape in(x.shape().begin() + 2, x.shape().end()), k(w.shape().begin() + 2, w.shape().end());
  Tensor::ConvOptions o = conv_options(n, in, k);
  o.dtype = dtypes::int32;
  Tensor xc = centered(n, x, xzp ? std::optional<Tensor>(xzp->reshape({})) : std::nullopt, 0);
  return xc.conv2d(centered(n, w, wzp, 0), std::nullopt, o);
}

std::vector<Tensor> conv_integer(const Node& n) { return {integer_conv(n, n.in(0), n.opt(2), n.in(1), n.opt(3))}; }

// QLinearConv: the int32 convolution plus the int32 bias, requantized with x_scale * w_scale / y_scale
// (w_scale may be one per output channel).
std::vector<Tensor> qlinear_conv(const Node& n) {
  const Tensor& x = n.in(0);
  Tensor acc = integer_conv(n, x, n.in(2), n.in(3), n.in(5));
  Shape per_channel(static_cast<size_t>(acc.ndim()), 1);  // (1, M, 1, ...): one value per output channel
  per_channel[1] = acc.shape()[1];
  if (auto b = n.opt(8)) acc = acc + b->cast(dtypes::int32).reshape(per_channel);
  Tensor w_scale = n.in(4).cast(dtypes::float32);
  if (w_scale.numel() > 1) w_scale = w_scale.reshape(per_channel);
  Tensor multiplier = n.in(1).cast(dtypes::float32) * w_scale / n.in(6).cast(dtypes::float32);
  const Tensor& yzp = n.in(7);
  check_quantized_type(n, yzp.dtype(), "y_zero_point");
  return {saturate_cast(acc.cast(dtypes::float32) * multiplier, yzp, yzp.dtype())};
}

// NonMaxSuppression's output has a data-dependent length, so it is computed on the host over the
// realized boxes and scores (the greedy selection is sequential anyway) and returned as a new
// int64 (selected, 3) tensor of (batch, class, box) rows. The rest of the graph stays lazy.
struct Box {
  float y0, x0, y1, x1;  // sorted corners
};

Box box_at(const std::vector<float>& b, size_t i, bool center) {
  const float* p = &b[4 * i];
  if (center) {  // [x_center, y_center, width, height]
    return {p[1] - p[3] / 2, p[0] - p[2] / 2, p[1] + p[3] / 2, p[0] + p[2] / 2};
  }
  return {std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]), std::max(p[1], p[3])};
}

// Whether b suppresses a: their intersection over union is above the threshold (empty or
// degenerate boxes suppress nothing).
bool suppresses(const Box& a, const Box& b, float iou_threshold) {
  const float ix = std::min(a.x1, b.x1) - std::max(a.x0, b.x0), iy = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
  if (ix <= 0 || iy <= 0) return false;
  const float inter = ix * iy;
  const float area_a = (a.x1 - a.x0) * (a.y1 - a.y0), area_b = (b.x1 - b.x0) * (b.y1 - b.y0);
  const float uni = area_a + area_b - inter;
  if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > iou_threshold;
}

std::vector<Tensor> non_max_suppression(const Node& n) {
  const Tensor& boxes = n.in(0);
  const Tensor& scores = n.in(1);
  if (boxes.ndim() != 3 || boxes.shape()[2] != 4 || scores.ndim() != 3 || scores.shape()[0] != boxes.shape()[0] ||
      scores.shape()[2] != boxes.shape()[1])
    n.fail("boxes must be (batches, boxes, 4) and scores (batches, classes, boxes)", ErrorCode::invalid_argument);
  const int64_t center_box = n.attr_int("center_point_box", 0);
  if (center_box != 0 && center_box != 1) n.fail("center_point_box must be 0 or 1", ErrorCode::invalid_argument);
  const int64_t max_per_class = n.has(2) && n.in(2).numel() > 0 ? n.int_scalar(2) : 0;
  const float iou = n.has(3) && n.in(3).numel() > 0 ? static_cast<float>(n.double_scalar(3)) : 0.0f;
  const bool by_score = n.has(4) && n.in(4).numel() > 0;
  const float score_min = by_score ? static_cast<float>(n.double_scalar(4)) : 0.0f;
  const auto bv = boxes.cast(dtypes::float32).to_vector<float>();
  const auto sv = scores.cast(dtypes::float32).to_vector<float>();
  const int64_t batches = boxes.shape()[0], count = boxes.shape()[1], classes = scores.shape()[1];
  std::vector<int64_t> out;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t c = 0; c < classes; ++c) {
      const float* s = &sv[static_cast<size_t>((b * classes + c) * count)];
      std::vector<int64_t> order;
      for (int64_t i = 0; i < count; ++i)
        if (!by_score || s[i] > score_min) order.push_back(i);
      // highest score first; among equal scores the lower box index first
      std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return s[i] > s[j]; });
      std::vector<Box> kept;
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
        const Box bx = box_at(bv, static_cast<size_t>(b * count + i), center_box == 1);
        if (std::any_of(kept.begin(), kept.end(), [&](const Box& k) { return suppresses(bx, k, iou); })) continue;
        kept.push_back(bx);
        out.insert(out.end(), {b, c, i});
      }
    }
  }
  const int64_t selected = static_cast<int64_t>(out.size() / 3);
  return {Tensor::from_vector(out, {selected, 3}, n.device())};
}

// The random operators draw from kiln's random stream (manual_seed): its generator is not numpy's
// or onnxruntime's, so the values differ from any other runtime's, with or without the seed
// attribute (which does not reseed kiln's global stream); their distribution, shape and type match.

// The dtype attribute (an ONNX type code), or `fallback` when absent.
DType dtype_attr(const Node& n, DType fallback) {
  if (!n.has_attr("dtype")) return fallback;
  const auto t = static_cast<int32_t>(n.attr_int("dtype", 0));
  auto dt = dtype_of(t);
  if (!dt) n.fail(std::string("dtype ") + onnx_type_name(t) + " is not supported");
  return *dt;
}

// Bernoulli: 1 where a uniform draw over [0, 1) is below the probability.
std::vector<Tensor> bernoulli(const Node& n) {
  const Tensor& p = n.in(0);
  Tensor u = Tensor::rand(p.shape(), dtypes::float32, p.device());
  return {u.lt(p.cast(dtypes::float32)).cast(dtype_attr(n, p.dtype()))};
}

// RandomUniformLike: uniform over [low, high) with the input's shape (and type, unless dtype).
std::vector<Tensor> random_uniform_like(const Node& n) {
  const Tensor& x = n.in(0);
  const DType dt = dtype_attr(n, x.dtype());
  if (!dt.is_float()) n.fail("dtype must be a float type, it is " + dt.name(), ErrorCode::invalid_argument);
  const double low = n.attr_float("low", 0), high = n.attr_float("high", 1);
  if (!(low < high)) n.fail("low must be below high", ErrorCode::invalid_argument);
  return {Tensor::uniform(x.shape(), low, high, dtypes::float32, x.device()).cast(dt)};
}

}  // namespace

void misc_ops(std::vector<OpDef>& out) {
  out.insert(out.end(), {
      {"QuantizeLinear", 10, {"axis", "saturate", "block_size", "output_dtype"}, quantize_linear},
      {"DequantizeLinear", 10, {"axis", "block_size", "output_dtype"}, dequantize_linear},
      {"DynamicQuantizeLinear", 11, {}, dynamic_quantize_linear},
      {"MatMulInteger", 10, {}, matmul_integer},
      {"QLinearMatMul", 10, {}, qlinear_matmul},
      {"ConvInteger", 10, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}, conv_integer},
      {"QLinearConv", 10, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}, qlinear_conv},
      {"NonMaxSuppression", 10, {"center_point_box"}, non_max_suppression},
      {"Bernoulli", 15, {"dtype", "seed"}, bernoulli},
      {"RandomUniformLike", 1, {"dtype", "high", "low", "seed"}, random_uniform_like},
  });
}

}  // namespace kiln::onnx::detail
