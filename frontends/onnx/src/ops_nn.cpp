// ops_nn.cpp - ONNX operators: convolutions (DeformConv too), pooling, normalization, Dropout, DepthToSpace.
// (Resize, Upsample, GridSample and RoiAlign: ops_nn_sample.cpp.)
#include <cmath>
#include <numeric>

#include "ops.hpp"

namespace kiln::onnx::detail {
namespace {

using Opts = Tensor::ConvOptions;
using PoolOpts = Tensor::PoolOptions;
using Index = Tensor::Index;

std::string str(int64_t v) { return std::to_string(v); }

// A per-spatial-axis attribute (strides, dilations): absent gives `fallback` on every axis.
std::vector<int64_t> per_axis(const Node& n, const char* name, size_t k, int64_t fallback) {
  auto v = n.attr_ints(name, std::vector<int64_t>(k, fallback));
  if (v.size() != k) n.fail(std::string("attribute '") + name + "' has " + str(int64_t(v.size())) + " entries for " +
                                str(int64_t(k)) + " spatial axes", ErrorCode::invalid_argument);
  return v;
}

// The (begin, end) padding of each spatial axis as ONNX defines it for Conv and the pools:
// auto_pad NOTSET takes `pads` ([x1_begin, x2_begin, ..., x1_end, x2_end]); VALID pads nothing;
// SAME_UPPER/SAME_LOWER pad so that out = ceil(in / stride), the odd pixel at the end (UPPER) or
// the beginning (LOWER).
Pads spatial_pads(const Node& n, const Shape& in, const std::vector<int64_t>& kernel,
                  const std::vector<int64_t>& stride, const std::vector<int64_t>& dilation) {
  const size_t k = kernel.size();
  const std::string autopad = n.attr_string("auto_pad", "NOTSET");
  Pads p(k, {0, 0});
  if (autopad == "NOTSET") {
    auto pads = n.attr_ints("pads", std::vector<int64_t>(2 * k, 0));
    if (pads.size() != 2 * k) n.fail("attribute 'pads' has " + str(int64_t(pads.size())) + " entries, expected " +
                                     str(int64_t(2 * k)), ErrorCode::invalid_argument);
    for (size_t i = 0; i < k; ++i) p[i] = {pads[i], pads[i + k]};
  } else if (autopad == "SAME_UPPER" || autopad == "SAME_LOWER") {
    for (size_t i = 0; i < k; ++i) {
      const int64_t size = in[in.size() - k + i];
      const int64_t out = (size + stride[i] - 1) / stride[i];
      const int64_t total = std::max<int64_t>(0, (out - 1) * stride[i] + (kernel[i] - 1) * dilation[i] + 1 - size);
      const int64_t small = total / 2;
      p[i] = autopad == "SAME_UPPER" ? std::pair{small, total - small} : std::pair{total - small, small};
    }
  } else if (autopad != "VALID") {
    n.fail("auto_pad '" + autopad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", ErrorCode::invalid_argument);
  }
  return p;
}

// kernel_shape, when given, must agree with the weight's spatial sizes (the weight is what is used).
// The weight has the input's rank (two channel dims, then k1, ...): the kernel's spatial sizes are read from
// its dims past the second, one per spatial axis of the input.
void check_kernel_shape(const Node& n, const Tensor& x, const Tensor& w) {
  if (w.ndim() != x.ndim())
    n.fail("the weight must have the input's rank " + str(x.ndim()) + " (two channel dims, then one per spatial axis), got rank " +
               str(w.ndim()),
           ErrorCode::invalid_argument);
  const std::vector<int64_t> given = n.attr_ints("kernel_shape");
  if (!given.empty() && given != std::vector<int64_t>(w.shape().begin() + 2, w.shape().end()))
    n.fail("kernel_shape does not match the weight's spatial shape", ErrorCode::invalid_argument);
}

std::vector<Tensor> conv(const Node& n) {
  const Tensor& x = n.in(0);
  const Tensor& w = n.in(1);
  if (x.ndim() < 3) n.fail("input must be (N, C, D1, ...), got rank " + str(x.ndim()), ErrorCode::invalid_argument);
  const size_t k = size_t(x.ndim() - 2);
  check_kernel_shape(n, x, w);
  std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  Opts o;
  o.groups = int(n.attr_int("group", 1));
  o.stride = per_axis(n, "strides", k, 1);
  o.dilation = per_axis(n, "dilations", k, 1);
  o.padding = spatial_pads(n, x.shape(), kernel, o.stride, o.dilation);
  return {x.conv2d(w, n.opt(2), o)};
}

// ConvTranspose: the output size per axis is stride*(in-1) + output_padding + (k-1)*dilation + 1
// - pad_begin - pad_end. output_shape (or auto_pad SAME: in*stride) fixes the size instead and the
// padding follows from it, split as the spec says (SAME_UPPER: the odd pixel at the end).
std::vector<Tensor> conv_transpose(const Node& n) {
  const Tensor& x = n.in(0);
  const Tensor& w = n.in(1);
  if (x.ndim() < 3) n.fail("input must be (N, C, D1, ...), got rank " + str(x.ndim()), ErrorCode::invalid_argument);
  const size_t k = size_t(x.ndim() - 2);
  check_kernel_shape(n, x, w);
  Opts o;
  o.groups = int(n.attr_int("group", 1));
  o.stride = per_axis(n, "strides", k, 1);
  o.dilation = per_axis(n, "dilations", k, 1);
  std::vector<int64_t> outpad = per_axis(n, "output_padding", k, 0);
  std::vector<int64_t> out_shape = n.attr_ints("output_shape");
  if (out_shape.size() > k) out_shape.erase(out_shape.begin(), out_shape.end() - int64_t(k));  // (N, C, ...) given
  const std::string autopad = n.attr_string("auto_pad", "NOTSET");
  if (out_shape.empty() && (autopad == "SAME_UPPER" || autopad == "SAME_LOWER"))
    for (size_t i = 0; i < k; ++i) out_shape.push_back(x.shape()[2 + i] * o.stride[i]);
  if (!out_shape.empty()) {
    if (out_shape.size() != k) n.fail("output_shape has " + str(int64_t(out_shape.size())) + " entries for " +
                                      str(int64_t(k)) + " spatial axes", ErrorCode::invalid_argument);
    o.padding.assign(k, {0, 0});
    for (size_t i = 0; i < k; ++i) {
      const int64_t full = o.stride[i] * (x.shape()[2 + i] - 1) + outpad[i] + (w.shape()[2 + i] - 1) * o.dilation[i] + 1;
      const int64_t total = full - out_shape[i];
      const int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);  // floor(total / 2), as the spec's Python
      o.padding[i] = autopad == "SAME_UPPER" ? std::pair{half, total - half} : std::pair{total - half, half};
    }
  } else {
    o.padding = spatial_pads(n, x.shape(), std::vector<int64_t>(k, 1), std::vector<int64_t>(k, 1),
                             std::vector<int64_t>(k, 1));
  }
  // output_padding extends the end of each axis: carried as a smaller end padding, which also
  // lifts torch's limit (output_padding < stride) that ONNX does not have.
  for (size_t i = 0; i < k; ++i) o.padding[i].second -= outpad[i];
  o.output_padding = {0};
  // A negative padding asks for positions beyond the transposed convolution's reach: those hold
  // the bias alone, so the convolution runs unpadded there and its result is padded with zeros.
  Pads extend(k + 2, {0, 0});
  bool extended = false;
  for (size_t i = 0; i < k; ++i) {
    auto& [b, e] = o.padding[i];
    if (b < 0) extend[2 + i].first = -b, b = 0, extended = true;
    if (e < 0) extend[2 + i].second = -e, e = 0, extended = true;
  }
  if (!extended) return {x.conv_transpose2d(w, n.opt(2), o)};
  Tensor y = x.conv_transpose2d(w, std::nullopt, o).pad(extend);
  if (auto b = n.opt(2)) {
    Shape bs(size_t(y.ndim()), 1);
    bs[1] = b->shape()[0];
    y = y + b->reshape(bs);
  }
  return {y};
}

// Col2Im (opset 18): column blocks (N, C * prod(block), L) summed back into an image (N, C,
// *image_shape), torch's fold. That is the transposed convolution of the blocks with a one-hot
// weight (tap k of channel c's block feeds kernel position k of channel c), grouped per channel;
// image positions no block reaches stay 0.
std::vector<Tensor> col2im(const Node& n) {
  const Tensor& x = n.in(0);
  const std::vector<int64_t> image = n.ints(1), block = n.ints(2);
  const size_t k = image.size();
  if (x.ndim() != 3 || k == 0 || block.size() != k)
    n.fail("input must be (N, C * prod(block_shape), L) with image_shape and block_shape of one size", ErrorCode::invalid_argument);
  int64_t K = 1;
  for (int64_t b : block) K *= b;
  const int64_t N = x.shape()[0], C = x.shape()[1] / K;
  if (K < 1 || C * K != x.shape()[1]) n.fail("input channels are not a multiple of prod(block_shape)", ErrorCode::invalid_argument);
  Opts o;
  o.groups = int(C);
  o.stride = per_axis(n, "strides", k, 1);
  o.dilation = per_axis(n, "dilations", k, 1);
  o.padding = spatial_pads(n, Shape(k + 2, 1), block, o.stride, o.dilation);  // Col2Im has no auto_pad: the pads
  Shape blocks{N, C * K}, weight_shape{K, 1};
  int64_t L = 1;
  for (size_t i = 0; i < k; ++i) {
    const int64_t span = o.dilation[i] * (block[i] - 1) + 1;
    blocks.push_back((image[i] + o.padding[i].first + o.padding[i].second - span) / o.stride[i] + 1);
    L *= blocks.back();
    weight_shape.push_back(block[i]);
  }
  if (L != x.shape()[2]) n.fail("L is " + str(x.shape()[2]) + ", the image and block shapes give " + str(L), ErrorCode::invalid_argument);
  std::vector<int64_t> rep(k + 2, 1);
  rep[0] = C;
  const Tensor weight = Tensor::eye(K, std::nullopt, x.dtype(), x.device()).reshape(weight_shape).repeat(rep);
  Tensor y = x.reshape(blocks).conv_transpose2d(weight, std::nullopt, o);
  Pads rest(k + 2, {0, 0});
  for (size_t i = 0; i < k; ++i) rest[2 + i].second = image[i] - y.shape()[2 + i];
  return {y.pad(rest)};
}

// DeformConv (opset 19, 2-D): a convolution whose every kernel tap samples the input at its
// regular position plus a learned offset (bilinearly, 0 outside the input), scaled by an optional
// mask. The sampled columns (N, C, kH*kW, positions) are four weighted gathers per offset group;
// the convolution is then one grouped matmul with the weight.
std::vector<Tensor> deform_conv(const Node& n) {
  const Tensor& x = n.in(0);
  const Tensor& w = n.in(1);
  const Tensor& offset = n.in(2);
  if (x.ndim() != 4) n.fail("only the 2-D DeformConv (input rank 4) is supported, got rank " + str(x.ndim()));
  if (!x.dtype().is_float()) n.fail("DeformConv of " + x.dtype().name() + " input is not supported");
  check_kernel_shape(n, x, w);
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t OC = w.shape()[0], kh = w.shape()[2], kw = w.shape()[3], K = kh * kw;
  const int64_t group = n.attr_int("group", 1), G = n.attr_int("offset_group", 1);
  if (group < 1 || G < 1 || C % group != 0 || OC % group != 0 || w.shape()[1] * group != C || C % G != 0)
    n.fail("channels, group and offset_group do not agree", ErrorCode::invalid_argument);
  const auto stride = per_axis(n, "strides", 2, 1), dilation = per_axis(n, "dilations", 2, 1);
  const auto pads = n.attr_ints("pads", {0, 0, 0, 0});
  if (pads.size() != 4) n.fail("attribute 'pads' must have 4 entries", ErrorCode::invalid_argument);
  const int64_t oh = (H + pads[0] + pads[2] - ((kh - 1) * dilation[0] + 1)) / stride[0] + 1;
  const int64_t ow = (W + pads[1] + pads[3] - ((kw - 1) * dilation[1] + 1)) / stride[1] + 1;
  if (offset.shape() != Shape{N, G * 2 * K, oh, ow})
    n.fail("offset must be (N, offset_group * 2 * kH * kW, " + str(oh) + ", " + str(ow) + ")", ErrorCode::invalid_argument);
  const int64_t P = oh * ow;
  // the regular sampling grid of every (kernel tap, output position)
  std::vector<float> grid_h(size_t(K * P)), grid_w(size_t(K * P));
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t z = 0; z < ow; ++z) {
          const size_t at = size_t(((i * kw + j) * oh + y) * ow + z);
          grid_h[at] = float(y * stride[0] - pads[0] + i * dilation[0]);
          grid_w[at] = float(z * stride[1] - pads[1] + j * dilation[1]);
        }
  const DType t = x.dtype();
  const Tensor off = offset.cast(t).reshape({N, G, K, 2, P});
  const Tensor h = off.getitem({Index::ellipsis(), Index::integer(0), Index::slice()}) +
                   Tensor::from_vector(grid_h, {K, P}, x.device()).cast(t);
  const Tensor wc = off.getitem({Index::ellipsis(), Index::integer(1), Index::slice()}) +
                    Tensor::from_vector(grid_w, {K, P}, x.device()).cast(t);
  Tensor mask = n.has(4) ? n.in(4).cast(t).reshape({N, G, K, P}) : Tensor::ones({N, G, K, P}, t, x.device());
  const Tensor h0 = h.floor(), w0 = wc.floor(), lh = h - h0, lw = wc - w0;
  const Tensor planes = x.reshape({N, G, C / G, H * W});
  const Tensor zero = Tensor::zeros({}, t, x.device());
  Tensor cols = Tensor::zeros({N, G, C / G, K * P}, t, x.device());
  for (int dy = 0; dy < 2; ++dy)
    for (int dx = 0; dx < 2; ++dx) {
      const Tensor hy = h0 + double(dy), wx = w0 + double(dx);
      const Tensor valid = hy.ge(zero) & hy.le(Tensor::full({}, double(H - 1), t, x.device())) & wx.ge(zero) &
                           wx.le(Tensor::full({}, double(W - 1), t, x.device()));
      const Tensor weight = Tensor::where(valid, (dy ? lh : 1 - lh) * (dx ? lw : 1 - lw), zero) * mask;
      const Tensor flat = (hy.clip(zero, Tensor::full({}, double(H - 1), t, x.device())) * double(W) +
                           wx.clip(zero, Tensor::full({}, double(W - 1), t, x.device())))
                              .cast(dtypes::int64)
                              .reshape({N, G, 1, K * P})
                              .expand({N, G, C / G, K * P});
      cols = cols + planes.gather(3, flat) * weight.reshape({N, G, 1, K * P});
    }
  // (N, C, K, P) -> per convolution group (N, group, C/group * K, P), times (group, OC/group, C/group * K)
  const Tensor y = w.reshape({group, OC / group, (C / group) * K}).matmul(cols.reshape({N, group, (C / group) * K, P}));
  Tensor out = y.reshape({N, OC, oh, ow});
  if (auto b = n.opt(3)) out = out + b->reshape({1, OC, 1, 1});
  return {out};
}

// The pools' shared attributes: kernel_shape (required), strides, dilations, pads/auto_pad, ceil_mode.
PoolOpts pool_options(const Node& n, const Tensor& x) {
  PoolOpts o;
  o.kernel = n.attr_ints("kernel_shape");
  if (o.kernel.empty()) n.fail("attribute 'kernel_shape' is required", ErrorCode::invalid_argument);
  const size_t k = o.kernel.size();
  if (size_t(x.ndim()) != k + 2) n.fail("input rank " + str(x.ndim()) + " does not match a " + str(int64_t(k)) +
                                        "-d kernel_shape", ErrorCode::invalid_argument);
  o.stride = per_axis(n, "strides", k, 1);
  o.dilation = per_axis(n, "dilations", k, 1);
  o.padding = spatial_pads(n, x.shape(), o.kernel, o.stride, o.dilation);
  o.ceil_mode = n.attr_int("ceil_mode", 0) != 0;
  return o;
}

// MaxPool; its Indices output is int64 flat positions over the whole input (N*C*D1*...), row-major
// (storage_order 0) or with the spatial axes column-major (storage_order 1), padding not counted.
std::vector<Tensor> max_pool(const Node& n) {
  const Tensor& x = n.in(0);
  const PoolOpts o = pool_options(n, x);
  if (!n.wants(1)) return {x.max_pool2d(o)};
  auto [values, plane_index] = x.max_pool2d_with_indices(o);
  const Shape& s = x.shape();
  const size_t k = o.kernel.size();
  int64_t plane = 1;
  for (size_t i = 2; i < s.size(); ++i) plane *= s[i];
  Tensor idx = plane_index.cast(dtypes::int64);
  if (n.attr_int("storage_order", 0) == 1) {
    // row-major coordinates (d1, ..., dk) recombined with d1 varying fastest
    Tensor rest = idx, col = Tensor::zeros(idx.shape(), dtypes::int64, idx.device());
    int64_t stride_rm = plane, stride_cm = 1;
    for (size_t i = 0; i < k; ++i) {
      stride_rm /= s[2 + i];
      Tensor coord = rest.idiv(scalar_like(rest, stride_rm));
      rest = rest - coord * stride_rm;
      col = col + coord * stride_cm;
      stride_cm *= s[2 + i];
    }
    idx = col;
  }
  Shape nc(size_t(values.ndim()), 1);
  nc[0] = s[0];
  nc[1] = s[1];
  Tensor base = Tensor::arange(0, double(s[0] * s[1]), 1, dtypes::int64, x.device()).reshape(nc) * plane;
  return {values, idx + base};
}

std::vector<Tensor> average_pool(const Node& n) {
  const Tensor& x = n.in(0);
  PoolOpts o = pool_options(n, x);
  o.count_include_pad = n.attr_int("count_include_pad", 0) != 0;
  return {x.avg_pool2d(o)};
}

// LpPool: (sum over the window of |x|^p)^(1/p), the sum as an average over the full window.
std::vector<Tensor> lp_pool(const Node& n) {
  const Tensor& x = n.in(0);
  PoolOpts o = pool_options(n, x);
  if (o.ceil_mode) n.fail("ceil_mode 1 is not supported for LpPool (its partial windows would be averaged)");
  o.count_include_pad = true;
  const double p = n.attr_float("p", 2);
  const double window = double(std::accumulate(o.kernel.begin(), o.kernel.end(), int64_t(1), std::multiplies<>()));
  return {(x.abs().pow(p).avg_pool2d(o) * window).pow(1.0 / p)};
}

std::vector<int> spatial_axes(const Tensor& x) {
  std::vector<int> axes;
  for (int i = 2; i < x.ndim(); ++i) axes.push_back(i);
  return axes;
}

std::vector<Tensor> global_average_pool(const Node& n) { return {n.in(0).mean(spatial_axes(n.in(0)), true)}; }
std::vector<Tensor> global_max_pool(const Node& n) { return {n.in(0).max(spatial_axes(n.in(0)), true)}; }
std::vector<Tensor> global_lp_pool(const Node& n) {
  const double p = n.attr_float("p", 2);
  return {n.in(0).abs().pow(p).sum(spatial_axes(n.in(0)), true).pow(1.0 / p)};
}

// MaxUnpool: X and MaxPool's flat Indices over the unpooled tensor (N, C, *out); out is
// output_shape (input 2) or (in - 1) * stride + kernel - pads.
std::vector<Tensor> max_unpool(const Node& n) {
  const Tensor& x = n.in(0);
  PoolOpts o = pool_options(n, x);
  const size_t k = o.kernel.size();
  Shape out;
  if (n.has(2)) {
    out = n.ints(2);
    if (out.size() != k + 2) n.fail("output_shape must have rank " + str(int64_t(k + 2)), ErrorCode::invalid_argument);
  }
  // The indices address the shape the pooling arguments imply; an output_shape pads (or crops)
  // that shape at the end of each axis.
  Shape inferred{x.shape()[0], x.shape()[1]};
  for (size_t i = 0; i < k; ++i)
    inferred.push_back((x.shape()[2 + i] - 1) * o.stride[i] + o.kernel[i] - o.padding[i].first - o.padding[i].second);
  int64_t plane = 1;
  for (size_t i = 2; i < inferred.size(); ++i) plane *= inferred[i];
  Tensor plane_index = n.in(1).cast(dtypes::int64).mod(Tensor::full({}, double(plane), dtypes::int64, x.device()));
  o.padding = {};
  Tensor y = x.max_unpool2d(plane_index, o, inferred);
  if (out.empty() || out == inferred) return {y};
  Pads grow(out.size(), {0, 0});
  for (size_t i = 2; i < out.size(); ++i) grow[i].second = out[i] - inferred[i];
  return {y.pad(grow)};
}

// x's shape with every axis but `axis` set to 1: a per-channel vector broadcast along the others.
Tensor per_channel(const Tensor& v, const Tensor& x, int axis = 1) {
  Shape s(size_t(x.ndim()), 1);
  s[size_t(axis)] = v.numel();
  return v.reshape(s);
}

// BatchNormalization. Inference: (x - mean) / sqrt(var + eps) * scale + B with the given
// statistics. Training (opset 14+ training_mode): the batch's own mean and biased variance
// normalize, and running_mean/var = given * momentum + batch * (1 - momentum) are the outputs.
// The legacy attributes (spatial 0: statistics per channel and position; is_test) of opsets < 9.
std::vector<Tensor> batch_norm(const Node& n) {
  const Tensor& x = n.in(0);
  const double eps = n.attr_float("epsilon", 1e-5);
  const double momentum = n.attr_float("momentum", 0.9);
  const bool spatial = n.attr_int("spatial", 1) != 0;
  std::vector<int> stat_axes{1};  // the axes the statistics are shaped like
  if (!spatial)
    for (int i = 2; i < x.ndim(); ++i) stat_axes.push_back(i);
  std::vector<int> reduce_axes{0};
  if (spatial)
    for (int i = 2; i < x.ndim(); ++i) reduce_axes.push_back(i);
  const bool training = n.opset() >= 14 && n.attr_int("training_mode", 0) != 0;
  if (!training) {
    for (size_t i = 1; i < 5 && n.opset() < 14; ++i)
      if (n.wants(i)) n.fail("the training outputs of BatchNormalization before opset 14 are not supported; export "
                             "the model for inference (is_test / only Y)");
    Tensor invstd = (n.in(4) + eps).rsqrt();
    return {x.batchnorm(n.in(1), n.in(2), n.in(3), invstd, stat_axes)};
  }
  auto [var, mean] = widened(x).var_mean(reduce_axes, false, 0);
  Tensor y = x.batchnorm(n.in(1), n.in(2), mean.cast(x.dtype()), (var + eps).rsqrt().cast(x.dtype()), stat_axes);
  Tensor running_mean = n.in(3) * momentum + mean.reshape(n.in(3).shape()).cast(n.in(3).dtype()) * (1 - momentum);
  Tensor running_var = n.in(4) * momentum + var.reshape(n.in(4).shape()).cast(n.in(4).dtype()) * (1 - momentum);
  return {y, running_mean, running_var};
}

// InstanceNormalization: each (n, c) plane normalized over its spatial axes, then scale and B per channel.
std::vector<Tensor> instance_norm(const Node& n) {
  const Tensor& x = n.in(0);
  const DType t = widened(x).dtype();  // 16-bit floats normalize in float32
  Tensor y = x.cast(t).layernorm(spatial_axes(x), n.attr_float("epsilon", 1e-5));
  return {(y * per_channel(n.in(1).cast(t), x) + per_channel(n.in(2).cast(t), x)).cast(x.dtype())};
}

// The float dtype stash_type names (1: float32 is the default; 11: float64; ...).
DType stash_dtype(const Node& n) {
  switch (n.attr_int("stash_type", 1)) {
    case 1: return dtypes::float32;
    case 10: return dtypes::float16;
    case 11: return dtypes::float64;
    case 16: return dtypes::bfloat16;
    default: n.fail("stash_type " + str(n.attr_int("stash_type", 1)) + " is not a float type", ErrorCode::invalid_argument);
  }
}

// LayerNormalization (opset 17): normalized over the axes from `axis` on, computed in stash_type;
// Mean and InvStdDev keep the reduced axes as 1s.
std::vector<Tensor> layer_norm(const Node& n) {
  const Tensor& x = n.in(0);
  const int axis = n.axis(n.attr_int("axis", -1), x.ndim());
  std::vector<int> axes;
  for (int i = axis; i < x.ndim(); ++i) axes.push_back(i);
  const Tensor xs = x.cast(stash_dtype(n));
  Tensor mean = xs.mean(axes, true);
  Tensor d = xs - mean;
  Tensor invstd = ((d * d).mean(axes, true) + n.attr_float("epsilon", 1e-5)).rsqrt();
  Tensor y = d * invstd * n.in(1).cast(xs.dtype());
  if (auto b = n.opt(2)) y = y + b->cast(xs.dtype());
  return {y.cast(x.dtype()), mean, invstd};
}

// RMSNormalization (opset 23): x / sqrt(mean(x^2) + epsilon) * scale over the axes from `axis`
// on, computed in stash_type.
std::vector<Tensor> rms_norm(const Node& n) {
  const Tensor& x = n.in(0);
  const int axis = n.axis(n.attr_int("axis", -1), x.ndim());
  std::vector<int> axes;
  for (int i = axis; i < x.ndim(); ++i) axes.push_back(i);
  const Tensor xs = x.cast(stash_dtype(n));
  Tensor inv_rms = ((xs * xs).mean(axes, true) + n.attr_float("epsilon", 1e-5)).rsqrt();
  return {(xs * inv_rms * n.in(1).cast(xs.dtype())).cast(x.dtype())};
}

// GroupNormalization: channels split into num_groups groups, each normalized over its channels
// and spatial positions; scale/bias per group (opset 18) or per channel (opset 21).
std::vector<Tensor> group_norm(const Node& n) {
  const Tensor& x = n.in(0);
  const int64_t groups = n.attr_int("num_groups", 0);
  const int64_t c = x.shape()[1];
  if (groups <= 0 || c % groups != 0)
    n.fail("num_groups " + str(groups) + " must divide the " + str(c) + " channels", ErrorCode::invalid_argument);
  const DType stash = n.opset() >= 21 ? stash_dtype(n) : widened(x).dtype();
  Tensor g = x.cast(stash).reshape({x.shape()[0], groups, -1});
  Tensor y = g.layernorm({2}, n.attr_float("epsilon", 1e-5)).reshape(x.shape());
  Tensor scale = n.in(1).cast(stash), bias = n.in(2).cast(stash);
  if (scale.numel() == groups && groups != c) {  // opset 18: one value per group
    scale = scale.repeat_interleave(c / groups, 0);
    bias = bias.repeat_interleave(c / groups, 0);
  }
  return {(y * per_channel(scale, x) + per_channel(bias, x)).cast(x.dtype())};
}

// LRN: x / (bias + alpha / size * sum of x^2 over the channels [c - (size-1)/2, c + ceil((size-1)/2)])^beta
std::vector<Tensor> lrn(const Node& n) {
  const Tensor& x = n.in(0);
  const int64_t size = n.attr_int("size", 0);
  if (size < 1 || size > (1 << 16)) n.fail("attribute 'size' must be in 1 to 65536", ErrorCode::invalid_argument);  // (one term each)
  if (x.ndim() < 2) n.fail("input must be (N, C, ...), got rank " + str(x.ndim()), ErrorCode::invalid_argument);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  Pads pad(size_t(x.ndim()), {0, 0});
  pad[1] = {before, after};
  Tensor sq = (x * x).pad(pad);
  const int64_t c = x.shape()[1];
  Tensor sum = Tensor::zeros(x.shape(), x.dtype(), x.device());
  for (int64_t i = 0; i < size; ++i) {
    Pads window(size_t(x.ndim()));
    for (int a = 0; a < x.ndim(); ++a) window[size_t(a)] = {0, x.shape()[size_t(a)]};
    window[1] = {i, i + c};
    sum = sum + sq.shrink(window);
  }
  const double alpha = n.attr_float("alpha", 1e-4), beta = n.attr_float("beta", 0.75), bias = n.attr_float("bias", 1);
  return {x / (sum * (alpha / double(size)) + bias).pow(beta)};
}

// MeanVarianceNormalization: (x - mean) / (sqrt(E[x^2] - mean^2) + 1e-9) over `axes` (default N, H, W).
std::vector<Tensor> mean_variance_norm(const Node& n) {
  const Tensor& x = n.in(0);
  std::vector<int> axes;
  for (int64_t a : n.attr_ints("axes", {0, 2, 3})) axes.push_back(n.axis(a, x.ndim()));
  const Tensor xs = widened(x);
  Tensor mean = xs.mean(axes, true);
  Tensor std = ((xs * xs).mean(axes, true) - mean * mean).sqrt();
  return {((xs - mean) / (std + 1e-9)).cast(x.dtype())};
}

// LpNormalization: x / ||x||_p along axis (p 1 or 2); a zero norm gives 0.
std::vector<Tensor> lp_norm(const Node& n) {
  const Tensor& x = n.in(0);
  const int axis = n.axis(n.attr_int("axis", -1), x.ndim());
  const int64_t p = n.attr_int("p", 2);
  if (p != 1 && p != 2) n.fail("p " + str(p) + " is not supported (ONNX allows 1 and 2)", ErrorCode::invalid_argument);
  Tensor norm = p == 1 ? x.abs().sum({axis}, true) : (x * x).sum({axis}, true).sqrt();
  Tensor zero = Tensor::zeros({}, x.dtype(), x.device());
  return {Tensor::where(norm.eq(zero), zero, x / norm)};
}

// Dropout. Inference is the identity with an all-true mask (before opset 10 the mask has x's
// dtype). Only opset 12's training_mode input turns training on: then each element is kept with
// probability 1 - ratio (a uniform draw from kiln's random stream, manual_seed; the seed attribute
// does not reseed it, so the mask differs from any other runtime's) and scaled by 1 / (1 - ratio).
// The is_test attribute of opsets < 7 is ignored, as onnxruntime does: those models run for
// inference.
std::vector<Tensor> dropout(const Node& n) {
  const Tensor& x = n.in(0);
  double ratio = n.attr_float("ratio", 0.5);
  bool training = false;
  if (n.opset() >= 12) {
    if (n.has(1)) ratio = n.double_scalar(1);
    if (n.has(2)) training = n.int_scalar(2) != 0;
  }
  const DType mask_type = n.opset() >= 10 ? dtypes::bool_ : x.dtype();
  if (!training || ratio == 0) {
    if (!n.wants(1)) return {x};
    return {x, Tensor::ones(x.shape(), mask_type, x.device())};
  }
  if (ratio < 0 || ratio >= 1) n.fail("ratio " + std::to_string(ratio) + " is outside [0, 1)", ErrorCode::invalid_argument);
  const Tensor keep = Tensor::rand(x.shape(), dtypes::float32, x.device()).ge(Tensor::full({}, ratio, dtypes::float32, x.device()));
  const Tensor y = Tensor::where(keep, x * (1 / (1 - ratio)), Tensor::zeros({}, x.dtype(), x.device())).cast(x.dtype());
  return {y, keep.cast(mask_type)};
}

int64_t blocksize(const Node& n) {
  const int64_t b = n.attr_int("blocksize", 0);
  if (b < 1 || b > (1 << 20)) n.fail("attribute 'blocksize' must be in 1 to 2^20", ErrorCode::invalid_argument);
  return b;
}

Tensor rank4(const Node& n) {
  const Tensor& x = n.in(0);
  if (x.ndim() != 4) n.fail("input must be (N, C, H, W), got rank " + str(x.ndim()), ErrorCode::invalid_argument);
  return x;
}

// DepthToSpace: channels (DCR: block row, block column, channel; CRD: channel, block row, block
// column) moved into b x b blocks of space.
std::vector<Tensor> depth_to_space(const Node& n) {
  const Tensor x = rank4(n);
  const int64_t b = blocksize(n), N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  if (C % (b * b) != 0) n.fail("channels " + str(C) + " are not a multiple of blocksize^2", ErrorCode::invalid_argument);
  const std::string mode = n.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") n.fail("mode '" + mode + "' is not DCR or CRD", ErrorCode::invalid_argument);
  Tensor y = mode == "DCR" ? x.reshape({N, b, b, C / (b * b), H, W}).permute({0, 3, 4, 1, 5, 2})
                           : x.reshape({N, C / (b * b), b, b, H, W}).permute({0, 1, 4, 2, 5, 3});
  return {y.reshape({N, C / (b * b), H * b, W * b})};
}

std::vector<Tensor> space_to_depth(const Node& n) {
  const Tensor x = rank4(n);
  const int64_t b = blocksize(n), N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  if (H % b != 0 || W % b != 0) n.fail("spatial size is not a multiple of blocksize", ErrorCode::invalid_argument);
  return {x.reshape({N, C, H / b, b, W / b, b}).permute({0, 3, 5, 1, 2, 4}).reshape({N, C * b * b, H / b, W / b})};
}

}  // namespace

void nn_ops(std::vector<OpDef>& out) {
  const std::vector<std::string_view> pool_attrs{"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "strides"};
  auto with = [&](std::initializer_list<std::string_view> extra) {
    auto a = pool_attrs;
    a.insert(a.end(), extra);
    return a;
  };
  out.insert(out.end(), {
      {"Conv", 1, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}, conv},
      {"ConvTranspose", 1,
       {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"},
       conv_transpose},
      {"Col2Im", 18, {"dilations", "pads", "strides"}, col2im},
      {"DeformConv", 19, {"dilations", "group", "kernel_shape", "offset_group", "pads", "strides"}, deform_conv},
      {"MaxPool", 1, with({"storage_order"}), max_pool},
      {"AveragePool", 1, with({"count_include_pad"}), average_pool},
      {"LpPool", 1, with({"p"}), lp_pool},
      {"GlobalAveragePool", 1, {}, global_average_pool},
      {"GlobalMaxPool", 1, {}, global_max_pool},
      {"GlobalLpPool", 2, {"p"}, global_lp_pool},
      {"MaxUnpool", 9, {"kernel_shape", "pads", "strides"}, max_unpool},
      {"BatchNormalization", 1, {"epsilon", "momentum", "spatial", "is_test", "consumed_inputs", "training_mode"},
       batch_norm},
      {"InstanceNormalization", 1, {"epsilon", "consumed_inputs"}, instance_norm},
      {"LayerNormalization", 17, {"axis", "epsilon", "stash_type"}, layer_norm},
      {"RMSNormalization", 23, {"axis", "epsilon", "stash_type"}, rms_norm},
      {"GroupNormalization", 18, {"epsilon", "num_groups", "stash_type"}, group_norm},
      {"LRN", 1, {"alpha", "beta", "bias", "size"}, lrn},
      {"MeanVarianceNormalization", 9, {"axes"}, mean_variance_norm},
      {"LpNormalization", 1, {"axis", "p"}, lp_norm},
      {"Dropout", 1, {"ratio", "is_test", "consumed_inputs", "seed"}, dropout},
      {"DepthToSpace", 1, {"blocksize", "mode"}, depth_to_space},
      {"SpaceToDepth", 1, {"blocksize"}, space_to_depth},
  });
}

}  // namespace kiln::onnx::detail
