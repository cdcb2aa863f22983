// examples/mlp.cpp - a three-layer perceptron classifying batches of images in a loop, checked
// against plain C++.
//
//   build/examples/mlp [device]      (default: kiln's default device)
//
// The forward pass runs through a kiln::Jit, as a loop should: the first two batches run it (the
// second captures its kernels), the later ones replay them on the new batch. Prints the class
// scores of the first images of each batch, the largest difference from a float64 reference
// computed on the host, and the time of every kernel kiln launched.
#include <kiln/kiln.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace {

constexpr int64_t kBatch = 64, kIn = 784, kHidden = 256, kOut = 10;
constexpr int kBatches = 5;

struct Linear {
  kiln::Tensor weight, bias;  // weight is [out, in], like torch.nn.Linear
  Linear(int64_t in, int64_t out, const std::string& device)
      : weight((kiln::Tensor::rand({out, in}, kiln::dtypes::float32, device) - 0.5) * (2 / std::sqrt(double(in)))),
        bias(kiln::Tensor::zeros({out}, kiln::dtypes::float32, device)) {}
  kiln::Tensor operator()(const kiln::Tensor& x) const { return x.linear(weight, bias); }
};

// y = x @ w.T + b on host vectors, in double.
std::vector<double> linear_ref(const std::vector<double>& x, const std::vector<float>& w, const std::vector<float>& b,
                               int64_t batch, int64_t in, int64_t out, bool relu) {
  std::vector<double> y(batch * out);
  for (int64_t n = 0; n < batch; n++)
    for (int64_t o = 0; o < out; o++) {
      double acc = b[o];
      for (int64_t i = 0; i < in; i++) acc += x[n * in + i] * w[o * in + i];
      y[n * out + o] = relu ? std::max(acc, 0.0) : acc;
    }
  return y;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string device = argc > 1 ? argv[1] : kiln::default_device();
  kiln::manual_seed(42);
  Linear l1(kIn, kHidden, device), l2(kHidden, kHidden, device), l3(kHidden, kOut, device);
  std::vector<kiln::Tensor> params = {l1.weight, l1.bias, l2.weight, l2.bias, l3.weight, l3.bias};
  kiln::Tensor::realize_all(params);
  std::vector<float> w1 = l1.weight.to_vector<float>(), b1 = l1.bias.to_vector<float>();
  std::vector<float> w2 = l2.weight.to_vector<float>(), b2 = l2.bias.to_vector<float>();
  std::vector<float> w3 = l3.weight.to_vector<float>(), b3 = l3.bias.to_vector<float>();

  // the weights are read by reference: the function is given only the batch
  kiln::Jit forward([&](const std::vector<kiln::Tensor>& in, const std::vector<kiln::BoundVariable>&) {
    return std::vector<kiln::Tensor>{l3(l2(l1(in[0]).relu()).relu())};
  });

  std::printf("mlp %lld-%lld-%lld-%lld, %d batches of %lld on %s\n", (long long)kIn, (long long)kHidden, (long long)kHidden,
              (long long)kOut, kBatches, (long long)kBatch, device.c_str());
  kiln::Profile profile;
  double err = 0;
  for (int batch = 0; batch < kBatches; batch++) {
    kiln::Tensor x = kiln::Tensor::rand({kBatch, kIn}, kiln::dtypes::float32, device).realize();
    kiln::Tensor logits = forward({x})[0];
    std::vector<float> got = logits.to_vector<float>();
    std::vector<int32_t> classes = logits.argmax(-1).to_vector<int32_t>();

    std::vector<float> xs = x.to_vector<float>();
    std::vector<double> h(xs.begin(), xs.end());
    h = linear_ref(h, w1, b1, kBatch, kIn, kHidden, true);
    h = linear_ref(h, w2, b2, kBatch, kHidden, kHidden, true);
    h = linear_ref(h, w3, b3, kBatch, kHidden, kOut, false);
    for (size_t i = 0; i < got.size(); i++) err = std::max(err, std::fabs(got[i] - h[i]));

    std::printf("batch %d (%s):\n", batch, batch == 0 ? "run" : batch == 1 ? "run and captured" : "replayed");
    for (int n = 0; n < 2; n++) {
      std::printf("  image %d: class %d, scores", n, classes[n]);
      for (int64_t o = 0; o < kOut; o++) std::printf(" %+.3f", got[n * kOut + o]);
      std::printf("\n");
    }
  }
  std::printf("  the jit replays %zu kernels per batch\n", forward.kernel_count());
  bool ok = err < 1e-4;
  std::printf("  max |kiln - reference| = %.2e  %s\n", err, ok ? "ok" : "MISMATCH");
  std::printf("kernels:\n%s", profile.table().c_str());
  return ok ? 0 : 1;
} catch (const kiln::Error& e) {
  std::fprintf(stderr, "mlp: %s\n", e.what());
  return 1;
}
