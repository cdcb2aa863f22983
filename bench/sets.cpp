// bench/sets.cpp - the shared workload builders and the `sizes` and `extra` sets of `kiln bench`.
//
// bench/peers.py runs the same programs, shapes and counts in numpy, torch and tinygrad; a change
// here is made there too (its workload names are matched with these).
#include <algorithm>
#include <cmath>

#include "sets.hpp"

namespace kiln::bench {

Tensor centered(const Shape& shape, const std::string& device) { return Tensor::rand(shape, dtypes::float32, device) - 0.5; }

// The host copy of a rows x cols matrix, transposed, in float64.
static std::vector<double> transposed(const std::vector<float>& x, int64_t rows, int64_t cols) {
  std::vector<double> t(x.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[j * rows + i] = x[i * cols + j];
  return t;
}

Workload matmul_workload(const std::string& name, int64_t n, int64_t k, int64_t m, bool a_t, bool b_t) {
  return {name, Roof::fma, 2.0 * double(n) * double(k) * double(m),
          [=](const std::string& d) {
            return std::vector<Tensor>{centered(a_t ? Shape{k, n} : Shape{n, k}, d), centered(b_t ? Shape{m, k} : Shape{k, m}, d)};
          },
          [=](const std::vector<Tensor>& in) { return (a_t ? in[0].transpose() : in[0]).matmul(b_t ? in[1].transpose() : in[1]); },
          [=](const Host& h) {
            return ref::matmul(a_t ? transposed(h[0], k, n) : ref::widen(h[0]), b_t ? transposed(h[1], m, k) : ref::widen(h[1]), n, k, m);
          },
          {},
          // in 16 bits the same program: products exact in float32, summed there, rounded once
          [=](const std::vector<Tensor>& in) { return (a_t ? in[0].transpose() : in[0]).matmul(b_t ? in[1].transpose() : in[1]); }};
}

Workload square_matmul(int64_t n) { return matmul_workload("matmul" + std::to_string(n), n, n, n); }

Workload conv2d_workload(const std::string& name, const ref::ConvShape& s) {
  return {name, Roof::fma, s.flops(),
          [s](const std::string& d) {
            return std::vector<Tensor>{centered({s.batch, s.channels, s.height, s.width}, d),
                                       centered({s.filters, s.channels / s.groups, s.kernel, s.kernel}, d)};
          },
          [s](const std::vector<Tensor>& in) {
            return in[0].conv2d(in[1], std::nullopt, static_cast<int>(s.stride), static_cast<int>(s.pad), 1,
                                static_cast<int>(s.groups));
          },
          [s](const Host& h) { return ref::conv2d(h[0], h[1], s); }};
}

std::vector<Workload> sizes_set() {
  std::vector<Workload> out;
  for (int64_t n : kSweepSizes) out.push_back(square_matmul(n));
  return out;
}

namespace {

// x.sum(0) over 4096x4096: the reduce runs over the leading (non-contiguous) axis.
Workload sum_axis0() {
  constexpr int64_t R = 4096, C = 4096;
  return {"sum_axis0", Roof::read, double(R * C * 4),
          [](const std::string& d) { return std::vector<Tensor>{Tensor::rand({R, C}, dtypes::float32, d)}; },
          [](const std::vector<Tensor>& in) { return in[0].sum({0}); },
          [](const Host& h) {
            std::vector<double> out(C, 0.0);
            for (int64_t r = 0; r < R; r++)
              for (int64_t c = 0; c < C; c++) out[c] += h[0][r * C + c];
            return out;
          }};
}

// x.sum(1) over 256x256x256: the reduced axis has a stride of 256 elements, the kept ones 1 and 65536.
Workload sum_strided() {
  constexpr int64_t N = 256;
  return {"sum_strided", Roof::read, double(N * N * N * 4),
          [](const std::string& d) { return std::vector<Tensor>{Tensor::rand({N, N, N}, dtypes::float32, d)}; },
          [](const std::vector<Tensor>& in) { return in[0].sum({1}); },
          [](const Host& h) {
            std::vector<double> out(N * N, 0.0);
            for (int64_t a = 0; a < N; a++)
              for (int64_t b = 0; b < N; b++)
                for (int64_t c = 0; c < N; c++) out[a * N + c] += h[0][(a * N + b) * N + c];
            return out;
          }};
}

}  // namespace

// LayerNorm over the last axis of R x 1024 with a gain and a bias (eps 1e-5, biased variance).
Workload layernorm(const std::string& name, int64_t R) {
  constexpr int64_t C = 1024;
  return {name, Roof::copy, 2.0 * double(R) * C * 4,
          [R](const std::string& d) {
            return std::vector<Tensor>{Tensor::randn({R, C}, dtypes::float32, d), Tensor::rand({C}, dtypes::float32, d) + 0.5,
                                       centered({C}, d)};
          },
          [](const std::vector<Tensor>& in) {
            const Tensor& x = in[0];
            return (x - x.mean({-1}, true)) * (x.var({-1}, true, 0) + 1e-5).rsqrt() * in[1] + in[2];
          },
          [R](const Host& h) {
            std::vector<double> out(R * C);
            for (int64_t r = 0; r < R; r++) {
              const float* x = &h[0][r * C];
              double mean = 0, var = 0;
              for (int64_t c = 0; c < C; c++) mean += x[c];
              mean /= C;
              for (int64_t c = 0; c < C; c++) var += (x[c] - mean) * (x[c] - mean);
              double inv = 1 / std::sqrt(var / C + 1e-5);
              for (int64_t c = 0; c < C; c++) out[r * C + c] = (x[c] - mean) * inv * h[1][c] + h[2][c];
            }
            return out;
          },
          {},
          // in 16 bits the composite a torch user calls (F.layer_norm): computed in float32, rounded
          // once, then the gain and bias
          [](const std::vector<Tensor>& in) { return in[0].layernorm({-1}, 1e-5) * in[1] + in[2]; }};
}

namespace {

// softmax(q @ k^T / sqrt(d)) @ v over 1x8 heads of 256 tokens, head size 64.
Workload attention() {
  constexpr int64_t H = 8, S = 256, D = 64;
  return {"attention", Roof::fma, 4.0 * H * S * S * D,
          [](const std::string& d) {
            return std::vector<Tensor>{Tensor::randn({1, H, S, D}, dtypes::float32, d), Tensor::randn({1, H, S, D}, dtypes::float32, d),
                                       Tensor::randn({1, H, S, D}, dtypes::float32, d)};
          },
          [](const std::vector<Tensor>& in) {
            return (in[0].matmul(in[1].transpose(-2, -1)) / std::sqrt(double(D))).softmax(-1).matmul(in[2]);
          },
          [](const Host& h) {
            std::vector<double> out;
            out.reserve(H * S * D);
            for (int64_t head = 0; head < H; head++) {
              auto slice = [&](int i) {
                return std::vector<float>(h[i].begin() + head * S * D, h[i].begin() + (head + 1) * S * D);
              };
              std::vector<double> q = ref::widen(slice(0)), kt = ref::transposed(slice(1), S, D);
              std::vector<double> scores = ref::matmul(q, kt, S, D, S);
              for (double& v : scores) v /= std::sqrt(double(D));
              std::vector<double> o = ref::matmul(ref::softmax_rows(scores, S, S), ref::widen(slice(2)), S, S, D);
              out.insert(out.end(), o.begin(), o.end());
            }
            return out;
          }};
}

// Multi-head attention as a transformer block runs it: q, k, v of (2, 256, 768) split into 12
// heads of 64 (a reshape and a transpose), softmax(q @ k^T / 8) @ v, and the heads merged back
// into (2, 256, 768): the merge stores the last matmul through a transpose and a reshape.
Workload attention_heads() {
  constexpr int64_t B = 2, S = 256, H = 12, D = 64, E = H * D;
  return {"attention_heads", Roof::fma, 4.0 * B * H * S * S * D,
          [](const std::string& d) {
            return std::vector<Tensor>{Tensor::randn({B, S, E}, dtypes::float32, d), Tensor::randn({B, S, E}, dtypes::float32, d),
                                       Tensor::randn({B, S, E}, dtypes::float32, d)};
          },
          [](const std::vector<Tensor>& in) {
            auto heads = [](const Tensor& x) { return x.reshape({B, S, H, D}).transpose(1, 2); };
            Tensor p = (heads(in[0]).matmul(heads(in[1]).transpose(-2, -1)) / std::sqrt(double(D))).softmax(-1);
            return p.matmul(heads(in[2])).transpose(1, 2).reshape({B, S, E});
          },
          [](const Host& h) {
            std::vector<double> out(B * S * E);
            for (int64_t b = 0; b < B; b++)
              for (int64_t head = 0; head < H; head++) {
                auto slice = [&](int i) {  // (S, D) of this batch and head
                  std::vector<float> m(S * D);
                  for (int64_t s = 0; s < S; s++)
                    for (int64_t e = 0; e < D; e++) m[s * D + e] = h[i][(b * S + s) * E + head * D + e];
                  return m;
                };
                std::vector<double> q = ref::widen(slice(0)), kt = ref::transposed(slice(1), S, D);
                std::vector<double> scores = ref::matmul(q, kt, S, D, S);
                for (double& v : scores) v /= std::sqrt(double(D));
                std::vector<double> o = ref::matmul(ref::softmax_rows(scores, S, S), ref::widen(slice(2)), S, S, D);
                for (int64_t s = 0; s < S; s++)
                  for (int64_t e = 0; e < D; e++) out[(b * S + s) * E + head * D + e] = o[s * D + e];
              }
            return out;
          }};
}

// A transformer block's MLP through `linear` (x @ W^T + b): T tokens, E -> F (tanh gelu) -> E.
Workload gelu_mlp(const std::string& name, int64_t T, int64_t E, int64_t F) {
  return {name, Roof::fma, 2.0 * 2 * T * E * F,
          [=](const std::string& d) {
            auto scaled = [&](const Shape& s, int64_t in) { return centered(s, d) * (2 / std::sqrt(double(in))); };
            return std::vector<Tensor>{centered({T, E}, d), scaled({F, E}, E), scaled({F}, E), scaled({E, F}, F), scaled({E}, F)};
          },
          [](const std::vector<Tensor>& in) { return in[0].linear(in[1], in[2]).gelu().linear(in[3], in[4]); },
          [=](const Host& h) {
            std::vector<double> x = ref::linear(ref::widen(h[0]), h[1], h[2], T, E, F, false);
            for (double& v : x) v = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
            return ref::linear(x, h[3], h[4], T, F, E, false);
          }};
}

// One training step of the MLP workload (784-512-512-10, batch 256; its inputs, forward and
// reference, then one-hot labels and the learning rate): forward, cross-entropy, backward, SGD
// update of every parameter, in one schedule. The learning rate is an input, 0 here, so every call
// sees the same weights and its loss can be checked (the kernels are those of any learning rate:
// it is a buffer, not a constant the compiler could fold).
Workload train_step() {
  constexpr int64_t B = 256, D3 = 10;
  static const auto mlp = [] {
    for (const Workload& w : workloads())
      if (w.name == "mlp") return &w;
    return static_cast<const Workload*>(nullptr);
  };
  auto loss = [](const std::vector<Tensor>& in) { return -(mlp()->fn(in).log_softmax(1) * in[7]).sum() / double(B); };
  // forward and backward: three times the forward's FLOPs (the sets are built before `mlp` exists)
  return {"train_step", Roof::fma, 3 * 2.0 * B * (784 * 512 + 512 * 512 + 512 * D3),
          [](const std::string& d) {
            std::vector<Tensor> in = mlp()->inputs(d);  // x, w1, b1, w2, b2, w3, b3
            Tensor labels = (Tensor::rand({B, 1}, dtypes::float32, d) * double(D3)).cast(dtypes::int32);
            in.push_back(labels.eq(Tensor::arange(0, double(D3), 1, dtypes::int32, d).reshape({1, D3})).cast(dtypes::float32));
            in.push_back(Tensor::zeros({1}, dtypes::float32, d));
            return in;
          },
          loss,
          [](const Host& h) {
            std::vector<double> x = mlp()->reference(h), loss(1, 0.0);
            for (int64_t r = 0; r < B; ++r) {
              double mx = -INFINITY, sum = 0;
              for (int64_t c = 0; c < D3; ++c) mx = std::max(mx, x[r * D3 + c]);
              for (int64_t c = 0; c < D3; ++c) sum += std::exp(x[r * D3 + c] - mx);
              for (int64_t c = 0; c < D3; ++c) loss[0] -= h[7][r * D3 + c] * (x[r * D3 + c] - mx - std::log(sum));
            }
            loss[0] /= double(B);
            return loss;
          },
          [loss](const std::vector<Tensor>& in) {
            std::vector<Tensor> params(in.begin() + 1, in.begin() + 7);
            std::vector<Tensor> grads = loss(in).gradient(params);
            for (size_t i = 0; i < params.size(); ++i)
              params[i].assign(params[i] - grads[i] * in[8].reshape(Shape(params[i].ndim(), 1)).expand(params[i].shape()));
            return params;
          }};
}

// ViT-B/16's attention scores: q @ k^T over 4 x 12 heads of 197 tokens (196 patches and the class
// token), head size 64. The sequence length is odd, so neither matmul axis fills whole vectors.
Workload attn_scores197() {
  constexpr int64_t B = 4, H = 12, S = 197, D = 64;
  return {"attn_scores197", Roof::fma, 2.0 * B * H * S * S * D,
          [](const std::string& d) {
            return std::vector<Tensor>{Tensor::randn({B, H, S, D}, dtypes::float32, d), Tensor::randn({B, H, S, D}, dtypes::float32, d)};
          },
          [](const std::vector<Tensor>& in) { return in[0].matmul(in[1].transpose(-1, -2)); },
          [](const Host& h) {
            std::vector<double> out;
            out.reserve(B * H * S * S);
            for (int64_t bh = 0; bh < B * H; bh++) {
              auto slice = [&](int i) { return std::vector<float>(h[i].begin() + bh * S * D, h[i].begin() + (bh + 1) * S * D); };
              std::vector<double> s = ref::matmul(ref::widen(slice(0)), ref::transposed(slice(1), S, D), S, D, S);
              out.insert(out.end(), s.begin(), s.end());
            }
            return out;
          }};
}

// A gated FFN (SwiGLU's first half): silu(x @ W1) * (x @ W3), two matmuls over the same input
// combined elementwise, with an odd hidden size (256 tokens, 768 -> 2047).
Workload gated_ffn() {
  constexpr int64_t T = 256, E = 768, F = 2047;
  return {"gated_ffn", Roof::fma, 2.0 * 2 * T * E * F,
          [](const std::string& d) {
            auto scaled = [&](const Shape& s) { return centered(s, d) * (2 / std::sqrt(double(E))); };
            return std::vector<Tensor>{centered({T, E}, d), scaled({E, F}), scaled({E, F})};
          },
          [](const std::vector<Tensor>& in) { return in[0].matmul(in[1]).silu() * in[0].matmul(in[2]); },
          [](const Host& h) {
            std::vector<double> x = ref::widen(h[0]), a = ref::matmul(x, ref::widen(h[1]), T, E, F),
                                b = ref::matmul(x, ref::widen(h[2]), T, E, F);
            for (size_t i = 0; i < a.size(); ++i) a[i] = a[i] / (1 + std::exp(-a[i])) * b[i];
            return a;
          }};
}


}  // namespace

std::vector<Workload> extra_set() {
  return {sum_axis0(),
          sum_strided(),
          layernorm("layernorm", 4096),
          attention(),
          attention_heads(),
          gelu_mlp("mlp_gelu", 512, 512, 2048),
          // batch-1 ResNet stage: 64 -> 64 channels at 56x56, 3x3, padding 1
          conv2d_workload("conv_resnet", {.batch = 1, .channels = 64, .height = 56, .width = 56, .filters = 64, .kernel = 3, .pad = 1}),
          // depthwise 3x3 (MobileNet-style): one filter per channel
          conv2d_workload("conv_depthwise",
                          {.batch = 1, .channels = 256, .height = 56, .width = 56, .filters = 256, .kernel = 3, .pad = 1, .groups = 256}),
          // a downsampling 3x3 with stride 2: 64 -> 128 channels, 56x56 -> 28x28
          conv2d_workload("conv_stride2",
                          {.batch = 1, .channels = 64, .height = 56, .width = 56, .filters = 128, .kernel = 3, .stride = 2, .pad = 1}),
          // ResNet's last stage at batch 1: 3x3 on a 7x7 map (narrower than a vector), and the
          // pointwise convolution of its bottleneck
          conv2d_workload("conv_late", {.batch = 1, .channels = 512, .height = 7, .width = 7, .filters = 512, .kernel = 3, .pad = 1}),
          conv2d_workload("conv_pointwise", {.batch = 1, .channels = 2048, .height = 7, .width = 7, .filters = 512, .kernel = 1}),
          matmul_workload("matmul_odd", 1000, 999, 1001),
          // a weight gradient's form, X.T @ dY: A read down its columns
          matmul_workload("matmul_at", 1024, 1024, 1024, true, false),
          // a linear layer on few rows, x @ W.T with W (4096 x 1024) larger than the L2
          matmul_workload("linear_64", 64, 1024, 4096, false, true),
          // a vector times a matrix larger than the L2 (one decoding step's projection): bound by
          // reading the matrix, so its rate is GB/s of it
          [] {
            Workload w = matmul_workload("vecmat", 1, 4096, 4096);
            w.roof = Roof::read, w.amount = 4.0 * 4096 * 4096;
            return w;
          }(),
          train_step(),
          // a 5x5 convolution with padding 2 over a batch of 64 small images (LeNet/CIFAR-style)
          conv2d_workload("conv5x5_b64", {.batch = 64, .channels = 32, .height = 28, .width = 28, .filters = 64, .kernel = 5, .pad = 2}),
          attn_scores197(),
          gated_ffn(),
          gelu_mlp("mlp_gelu128", 128, 768, 3072),  // BERT-base's sizes at batch 128
          // few rows against a weight matrix past the L2 (small-batch inference): x @ W and x @ W.T
          matmul_workload("skinny64_4096", 64, 4096, 4096),
          matmul_workload("linear_t128_4096", 128, 4096, 4096, false, true)};
}

std::vector<Workload> gpu_set() {
  return {elementwise("elementwise_128M", 128 * M), sum("sum_128M", 128 * M), softmax("softmax_32768", 32768),
          layernorm("layernorm_32768", 32768), square_matmul(4096)};
}

}  // namespace kiln::bench
