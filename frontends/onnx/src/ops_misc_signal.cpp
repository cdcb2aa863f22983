// ops_misc_signal.cpp - ONNX operators: signal processing (HannWindow, HammingWindow, BlackmanWindow,
// MelWeightMatrix, DFT, STFT).
//
// The DFT is real tensor math: a matmul of the real and imaginary parts with cos/sin matrices
// (O(n^2) per transform, which is what the fused matmul does best; no FFT). The angles are built
// from (n * k) mod L in integers so large lengths keep their precision.
#include <cmath>
#include <numbers>

#include "ops.hpp"
#include "tensor_proto.hpp"

namespace kiln::onnx::detail {
namespace {

// The output_datatype attribute (default float32).
DType output_datatype(const Node& n) {
  const auto t = static_cast<int32_t>(n.attr_int("output_datatype", 1));
  auto dt = dtype_of(t);
  if (!dt || dt->is_bool()) n.fail(std::string("output_datatype ") + onnx_type_name(t) + " is not supported");
  return *dt;
}

// A generalized cosine window sum_i (-1)^i a_i cos(2 pi i n / N) of `size` points; N is the size
// (periodic, the default) or size - 1 (symmetric). Computed in float64, then cast.
Tensor cosine_window(const Node& n, const std::vector<double>& a) {
  const int64_t size = n.int_scalar(0);
  if (size < 0) n.fail("the window size must not be negative", ErrorCode::invalid_argument);
  const bool periodic = n.attr_int("periodic", 1) != 0;
  const double denom = static_cast<double>(periodic ? size : size - 1);
  Tensor idx = Tensor::arange(0, static_cast<double>(size), 1, dtypes::float64, n.device());
  Tensor w = Tensor::full({size}, a[0], dtypes::float64, n.device());
  for (size_t i = 1; i < a.size(); ++i) {
    // a symmetric window of one point has N = 0: its only angle is 0
    Tensor angle = denom > 0 ? idx * (2.0 * std::numbers::pi * static_cast<double>(i) / denom) : idx * 0.0;
    w = w + angle.cos() * (i % 2 ? -a[i] : a[i]);
  }
  return w.cast(output_datatype(n));
}

std::vector<Tensor> hann_window(const Node& n) { return {cosine_window(n, {0.5, 0.5})}; }
std::vector<Tensor> hamming_window(const Node& n) { return {cosine_window(n, {25.0 / 46, 21.0 / 46})}; }
std::vector<Tensor> blackman_window(const Node& n) { return {cosine_window(n, {0.42, 0.5, 0.08})}; }

// MelWeightMatrix: (dft_length / 2 + 1, num_mel_bins) triangular filters. Every input is a scalar
// that also fixes the output's shape, so the matrix is built on the host, as the spec's steps:
// num_mel_bins + 2 points evenly spaced in mel (step (high - low) / (num_mel_bins + 2)), each
// mapped to the spectrogram bin floor((dft_length + 1) * hz / sample_rate); filter i rises from
// point i to point i + 1 and falls to point i + 2.
std::vector<Tensor> mel_weight_matrix(const Node& n) {
  const int64_t mels = n.int_scalar(0), dft_length = n.int_scalar(1), sample_rate = n.int_scalar(2);
  const double low = n.double_scalar(3), high = n.double_scalar(4);
  if (mels <= 0 || dft_length <= 0 || sample_rate <= 0)
    n.fail("num_mel_bins, dft_length and sample_rate must be positive", ErrorCode::invalid_argument);
  const int64_t bins = dft_length / 2 + 1;
  auto to_mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double low_mel = to_mel(low), step = (to_mel(high) - low_mel) / static_cast<double>(mels + 2);
  std::vector<int64_t> point(static_cast<size_t>(mels + 2));
  for (int64_t i = 0; i < mels + 2; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + low_mel) / 2595.0) - 1.0);
    point[static_cast<size_t>(i)] = static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate)));
  }
  std::vector<double> m(static_cast<size_t>(bins * mels), 0.0);
  auto at = [&](int64_t bin, int64_t mel) -> double& {
    if (bin < 0 || bin >= bins) n.fail("a mel filter edge falls outside the spectrogram's bins (check the edge frequencies)", ErrorCode::invalid_argument);
    return m[static_cast<size_t>(bin * mels + mel)];
  };
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t left = point[static_cast<size_t>(i)], center = point[static_cast<size_t>(i + 1)], right = point[static_cast<size_t>(i + 2)];
    if (center == left) at(center, i) = 1;
    for (int64_t j = left; center > left && j <= center; ++j) at(j, i) = static_cast<double>(j - left) / static_cast<double>(center - left);
    for (int64_t j = center; j < right; ++j) at(j, i) = static_cast<double>(right - j) / static_cast<double>(right - center);
  }
  return {Tensor::from_vector(m, {bins, mels}, n.device()).cast(output_datatype(n))};
}

// t zero-padded or truncated to `length` along its last axis.
Tensor fit_last_axis(const Tensor& t, int64_t length) {
  const int64_t n = t.shape().back();
  if (n == length) return t;
  if (n > length) {
    Pads keep;
    for (int64_t d : t.shape()) keep.push_back({0, d});
    keep.back() = {0, length};
    return t.shrink(keep);
  }
  Pads zeros(static_cast<size_t>(t.ndim()), {0, 0});
  zeros.back() = {0, length - n};
  return t.pad(zeros);
}

// 2 pi (n * k mod length) / length for n < rows, k < cols: the angles of the DFT matrix (the
// product is reduced in integers, so long transforms keep their precision), in float64.
Tensor dft_angles(int64_t rows, int64_t cols, int64_t length, const std::string& dev) {
  Tensor n = Tensor::arange(0, static_cast<double>(rows), 1, dtypes::int64, dev).reshape({rows, 1});
  Tensor k = Tensor::arange(0, static_cast<double>(cols), 1, dtypes::int64, dev).reshape({1, cols});
  return (n * k).mod(Tensor::full({}, static_cast<double>(length), dtypes::int64, dev)).cast(dtypes::float64) *
         (2.0 * std::numbers::pi / static_cast<double>(length));
}

// The discrete Fourier transform along the last axis of (re, im) (im absent: a real signal),
// zero-padded or truncated to `length` points; `bins` of the outputs kept (all: length; one-sided:
// length / 2 + 1). inverse: e^{+i...} and divided by length. Returns (re, im).
std::pair<Tensor, Tensor> dft_last_axis(const Tensor& re_in, const std::optional<Tensor>& im_in, int64_t length,
                                        int64_t bins, bool inverse) {
  Tensor angle = dft_angles(length, bins, length, re_in.device());
  const DType dt = re_in.dtype();
  Tensor c = angle.cos().cast(dt), s = angle.sin().cast(dt);
  if (inverse) s = -s;
  Tensor re = fit_last_axis(re_in, length);
  // (a + ib)(cos - i sin) = (a cos + b sin) + i(b cos - a sin)
  Tensor out_re = re.matmul(c), out_im = -(re.matmul(s));
  if (im_in) {
    Tensor im = fit_last_axis(*im_in, length);
    out_re = out_re + im.matmul(s);
    out_im = out_im + im.matmul(c);
  }
  if (inverse) {
    out_re = out_re / static_cast<double>(length);
    out_im = out_im / static_cast<double>(length);
  }
  return {out_re.cast(dt), out_im.cast(dt)};
}

// The inverse of a one-sided spectrum (re, im) of a real signal (IRFFT) along the last axis: the
// `length` real samples. The spectrum's first length / 2 + 1 bins are used (zero-padded or
// truncated); the bins past them are their conjugate mirror images, so each bin between the first
// and the Nyquist one counts twice, and the sum is real:
//   y[n] = (1 / length) sum_k w_k (re[k] cos(2 pi k n / length) - im[k] sin(2 pi k n / length)).
Tensor irfft_last_axis(const Tensor& re_in, const std::optional<Tensor>& im_in, int64_t length) {
  const int64_t bins = length / 2 + 1;
  Tensor angle = dft_angles(bins, length, length, re_in.device());  // (bins, length)
  std::vector<double> w(static_cast<size_t>(bins), 2.0 / static_cast<double>(length));
  w[0] = 1.0 / static_cast<double>(length);
  if (length % 2 == 0) w.back() = 1.0 / static_cast<double>(length);  // the Nyquist bin is its own mirror
  Tensor weight = Tensor::from_vector(w, {bins, 1}, re_in.device());
  const DType dt = re_in.dtype();
  Tensor y = fit_last_axis(re_in, bins).matmul((angle.cos() * weight).cast(dt));
  if (im_in) y = y - fit_last_axis(*im_in, bins).matmul((angle.sin() * weight).cast(dt));
  return y.cast(dt);
}

// The real and imaginary parts of a (..., 1 or 2) signal tensor.
std::pair<Tensor, std::optional<Tensor>> complex_parts(const Node& n, const Tensor& x) {
  const int64_t c = x.shape().empty() ? 0 : x.shape().back();
  if (c == 1) return {x.squeeze(-1), std::nullopt};
  if (c != 2) n.fail("the signal's last axis must be 1 (real) or 2 (real, imaginary)", ErrorCode::invalid_argument);
  auto parts = x.split({1, 1}, -1);
  return {parts[0].squeeze(-1), parts[1].squeeze(-1)};
}

// DFT (opset 17: axis attribute; opset 20: axis input, default -2) over a (..., 1 or 2) signal:
// forward or inverse, full or one-sided (forward: the first half of the bins; inverse: IRFFT,
// a one-sided spectrum back to its real (..., length, 1) signal).
std::vector<Tensor> dft(const Node& n) {
  const Tensor& x = n.in(0);
  const int r = x.ndim();
  if (r < 2) n.fail("the input must have a signal axis and the complex axis", ErrorCode::invalid_argument);
  int64_t axis = n.opset() >= 20 ? (n.has(2) ? n.int_scalar(2) : -2) : n.attr_int("axis", 1);
  const int a = n.axis(axis, r);
  if (a == r - 1) n.fail("the axis must not be the last (complex) axis", ErrorCode::invalid_argument);
  const bool inverse = n.attr_int("inverse", 0) != 0, onesided = n.attr_int("onesided", 0) != 0;
  const bool irfft = inverse && onesided;  // a one-sided spectrum back to its real signal
  const int64_t size = x.shape()[static_cast<size_t>(a)];
  const int64_t length = n.has(1) ? n.int_scalar(1) : irfft ? 2 * (size - 1) : size;
  if (length <= 0) n.fail("dft_length must be positive", ErrorCode::invalid_argument);
  auto [re, im] = complex_parts(n, x);
  // move the signal axis last, transform, and move it back
  std::vector<int> to_last;
  for (int i = 0; i < r - 1; ++i)
    if (i != a) to_last.push_back(i);
  to_last.push_back(a);
  std::vector<int> back(static_cast<size_t>(r - 1));
  for (int i = 0; i < r - 1; ++i) back[static_cast<size_t>(to_last[static_cast<size_t>(i)])] = i;
  std::optional<Tensor> im_last = im ? std::optional(im->permute(to_last)) : std::nullopt;
  if (irfft) return {irfft_last_axis(re.permute(to_last), im_last, length).permute(back).unsqueeze(-1)};
  auto [ore, oim] = dft_last_axis(re.permute(to_last), im_last, length, onesided ? length / 2 + 1 : length, inverse);
  return {Tensor::stack({ore.permute(back), oim.permute(back)}, -1)};
}

// STFT: frames of frame_length taken every frame_step along the signal (batch, length, 1 or 2),
// multiplied by the window, each transformed: (batch, frames, bins, 2).
std::vector<Tensor> stft(const Node& n) {
  const Tensor& x = n.in(0);
  if (x.ndim() != 3) n.fail("the signal must be (batch, length, 1 or 2)", ErrorCode::invalid_argument);
  const int64_t step = n.int_scalar(1);
  std::optional<Tensor> window = n.opt(2);
  if (window && window->ndim() != 1) n.fail("the window must be 1-d", ErrorCode::invalid_argument);
  const int64_t frame = n.has(3) ? n.int_scalar(3) : window ? window->shape()[0] : x.shape()[1];
  if (window && window->shape()[0] != frame) n.fail("the window's length differs from frame_length", ErrorCode::invalid_argument);
  if (step <= 0 || frame <= 0 || frame > x.shape()[1])
    n.fail("frame_step must be positive and frame_length within the signal", ErrorCode::invalid_argument);
  const bool onesided = n.attr_int("onesided", 1) != 0;
  auto [re, im] = complex_parts(n, x);
  auto frames = [&](const Tensor& t) {
    Tensor f = t.unfold(1, frame, step);  // (batch, frames, frame)
    return window ? f * window->cast(t.dtype()) : f;
  };
  auto [ore, oim] = dft_last_axis(frames(re), im ? std::optional(frames(*im)) : std::nullopt, frame,
                                  onesided ? frame / 2 + 1 : frame, false);
  return {Tensor::stack({ore, oim}, -1)};
}

}  // namespace

void misc_signal_ops(std::vector<OpDef>& out) {
  out.insert(out.end(), {
      {"HannWindow", 17, {"output_datatype", "periodic"}, hann_window},
      {"HammingWindow", 17, {"output_datatype", "periodic"}, hamming_window},
      {"BlackmanWindow", 17, {"output_datatype", "periodic"}, blackman_window},
      {"MelWeightMatrix", 17, {"output_datatype"}, mel_weight_matrix},
      {"DFT", 17, {"axis", "inverse", "onesided"}, dft},
      {"STFT", 17, {"onesided"}, stft},
  });
}

}  // namespace kiln::onnx::detail
