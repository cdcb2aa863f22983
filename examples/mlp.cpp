// examples/mlp.cpp - a three-layer perceptron forward pass, checked against plain C++.
//
//   build/examples/mlp [device]      (default: kiln's default device)
//
// Prints the class scores of the first images, the largest difference from a float64 reference
// computed on the host, and the time of every kernel kiln launched.
#include <kiln/kiln.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace {

constexpr int64_t kBatch = 64, kIn = 784, kHidden = 256, kOut = 10;

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
  kiln::Tensor x = kiln::Tensor::rand({kBatch, kIn}, kiln::dtypes::float32, device);
  std::vector<kiln::Tensor> params = {x, l1.weight, l1.bias, l2.weight, l2.bias, l3.weight, l3.bias};
  kiln::Tensor::realize_all(params);

  kiln::Profile profile;
  kiln::Tensor logits = l3(l2(l1(x).relu()).relu());
  std::vector<float> got = logits.to_vector<float>();
  std::vector<int32_t> classes = logits.argmax(-1).to_vector<int32_t>();

  std::vector<float> xs = x.to_vector<float>();
  std::vector<double> h(xs.begin(), xs.end());
  h = linear_ref(h, l1.weight.to_vector<float>(), l1.bias.to_vector<float>(), kBatch, kIn, kHidden, true);
  h = linear_ref(h, l2.weight.to_vector<float>(), l2.bias.to_vector<float>(), kBatch, kHidden, kHidden, true);
  h = linear_ref(h, l3.weight.to_vector<float>(), l3.bias.to_vector<float>(), kBatch, kHidden, kOut, false);
  double err = 0;
  for (size_t i = 0; i < got.size(); i++) err = std::max(err, std::fabs(got[i] - h[i]));

  std::printf("mlp %lld-%lld-%lld-%lld, batch %lld on %s\n", (long long)kIn, (long long)kHidden, (long long)kHidden,
              (long long)kOut, (long long)kBatch, device.c_str());
  for (int n = 0; n < 3; n++) {
    std::printf("  image %d: class %d, scores", n, classes[n]);
    for (int64_t o = 0; o < kOut; o++) std::printf(" %+.3f", got[n * kOut + o]);
    std::printf("\n");
  }
  bool ok = err < 1e-4;
  std::printf("  max |kiln - reference| = %.2e  %s\n", err, ok ? "ok" : "MISMATCH");
  std::printf("kernels:\n%s", profile.table().c_str());
  return ok ? 0 : 1;
} catch (const kiln::Error& e) {
  std::fprintf(stderr, "mlp: %s\n", e.what());
  return 1;
}
