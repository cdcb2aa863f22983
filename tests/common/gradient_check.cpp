// tests/common/gradient_check.cpp - gradients against central finite differences in float64 on the
// reference executor (so the check trusts no backend), and the same gradients on a device in
// float32 against the float64 ones.
#include "gradient_check.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace kiln::testing {

namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

std::vector<double> values(const Shape& s, int seed) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = 0.37 * std::sin(1.3 * static_cast<double>(i + 1) * (seed + 1)) + 0.05 * (seed + 1);
  return v;
}

// d f / d input_k by central differences in float64 on `dev`, element by element.
std::vector<double> numeric(const Fn& f, const std::vector<Shape>& shapes, const std::vector<std::vector<double>>& in, size_t k,
                            const std::string& dev) {
  auto eval = [&](const std::vector<std::vector<double>>& v) {
    std::vector<Tensor> t;
    for (size_t i = 0; i < v.size(); ++i) t.push_back(Tensor::from_vector<double>(v[i], shapes[i], dev));
    return f(t).item<double>();
  };
  std::vector<double> out;
  const double h = 1e-6;
  for (size_t e = 0; e < in[k].size(); ++e) {
    auto up = in, down = in;
    up[k][e] += h, down[k][e] -= h;
    out.push_back((eval(up) - eval(down)) / (2 * h));
  }
  return out;
}

void check_grad(const std::string& device, const char* name, const Fn& f, const std::vector<Shape>& shapes, double tol = 1e-5) {
  SCOPED_TRACE(name);
  std::vector<std::vector<double>> in;
  for (size_t i = 0; i < shapes.size(); ++i) in.push_back(values(shapes[i], static_cast<int>(i)));
  // analytic, float64, on the reference executor, against finite differences
  std::vector<Tensor> ref;
  for (size_t i = 0; i < shapes.size(); ++i) ref.push_back(Tensor::from_vector<double>(in[i], shapes[i], "ref"));
  std::vector<Tensor> g = f(ref).gradient(ref);
  // the same on the device in float32
  std::vector<Tensor> cpu;
  for (size_t i = 0; i < shapes.size(); ++i) cpu.push_back(Tensor::from_vector<double>(in[i], shapes[i], device).cast(dtypes::float32));
  std::vector<Tensor> gc = f(cpu).gradient(cpu);
  for (size_t k = 0; k < shapes.size(); ++k) {
    std::vector<double> want = numeric(f, shapes, in, k, "ref"), got = g[k].to_vector<double>();
    std::vector<double> got32 = gc[k].cast(dtypes::float64).to_vector<double>();
    ASSERT_EQ(got.size(), want.size()) << "input " << k;
    EXPECT_EQ(g[k].shape(), shapes[k]);
    for (size_t e = 0; e < want.size(); ++e) {
      EXPECT_NEAR(got[e], want[e], tol * (1 + std::fabs(want[e]))) << "input " << k << " element " << e << " (float64, ref)";
      EXPECT_NEAR(got32[e], got[e], 2e-4 * (1 + std::fabs(got[e]))) << "input " << k << " element " << e << " (float32, " << device << ")";
    }
  }
}

}  // namespace


void check_elementwise_gradients(const std::string& device) {
  Shape s{3, 4};
  check_grad(device, "add mul sub", [](const auto& t) { return (t[0] * t[1] + t[0] - t[1] * 3.0).sum(); }, {s, s});
  check_grad(device, "div", [](const auto& t) { return (t[0] / (t[1] + 2.0)).sum(); }, {s, s});
  check_grad(device, "exp log", [](const auto& t) { return ((t[0] * 2.0).exp() + (t[0] + 1.0).log()).sum(); }, {s});
  check_grad(device, "sqrt reciprocal", [](const auto& t) { return ((t[0] + 1.0).sqrt() + (t[0] + 2.0).reciprocal()).sum(); }, {s});
  check_grad(device, "sin cos tan", [](const auto& t) { return (t[0].sin() * t[0].cos() + t[0].tan()).sum(); }, {s});
  check_grad(device, "pow", [](const auto& t) { return ((t[0] + 1.0).pow(t[1] + 1.5)).sum(); }, {s, s});
  check_grad(device, "maximum minimum", [](const auto& t) { return (t[0].maximum(t[1]) * 2.0 + t[0].minimum(t[1] * 0.5)).sum(); }, {s, s});
  check_grad(device, "where", [](const auto& t) { return Tensor::where(t[0].gt(t[1]), t[0] * t[1], t[1] * 3.0).sum(); }, {s, s});
  check_grad(device, "activations", [](const auto& t) {
    return (t[0].relu() + t[0].sigmoid() * 2.0 + t[0].tanh() + t[0].gelu() + t[0].silu() + t[0].abs()).sum();
  }, {s});
  check_grad(device, "broadcast", [](const auto& t) { return (t[0] * t[1] + t[2]).sum(); }, {{3, 4}, {4}, {3, 1}});
}

void check_composite_gradients(const std::string& device) {
  check_grad(device, "sum mean max min prod", [](const auto& t) {
    return t[0].sum({1}).sum() + t[0].mean({0}).sum() * 2.0 + t[0].max({1}).sum() + t[0].min({0}).sum() + t[0].prod({1}).sum();
  }, {{3, 4}});
  check_grad(device, "var std", [](const auto& t) { return t[0].var({1}).sum() + t[0].std({0}).sum(); }, {{3, 4}});
  check_grad(device, "softmax log_softmax", [](const auto& t) {
    return (t[0].softmax(1) * t[1]).sum() + (t[0].log_softmax(0) * t[1]).sum();
  }, {{3, 4}, {3, 4}});
  check_grad(device, "movement", [](const auto& t) {
    Tensor x = t[0].reshape({2, 6}).permute({1, 0}).pad({{1, 2}, {0, 1}}).shrink({{1, 5}, {0, 2}}).flip({0});
    return (x * x).sum() + t[0].transpose(0, 1).expand({2, 4, 3}).sum() * 0.5;
  }, {{3, 4}});
  check_grad(device, "matmul", [](const auto& t) { return (t[0].matmul(t[1]) * t[2]).sum(); }, {{3, 5}, {5, 2}, {3, 2}});
  check_grad(device, "conv2d", [](const auto& t) { return (t[0].conv2d(t[1], t[2], 2, 1) * 0.5).sum(); }, {{1, 2, 5, 5}, {3, 2, 3, 3}, {3}}, 1e-4);
  check_grad(device, "conv2d dilated grouped", [](const auto& t) { return t[0].conv2d(t[1], std::nullopt, 1, 0, 2, 2).pow(2.0).sum(); },
             {{1, 2, 5, 5}, {2, 1, 2, 2}}, 1e-4);
  // stride 1: the input's gradient is a transposed convolution (tensor/nn.cpp convolve); padding
  // past the window's reach cuts the output's gradient instead of padding it; groups and dilation
  // turn the weight within each group
  check_grad(device, "conv2d transposed gradient", [](const auto& t) { return (t[0].conv2d(t[1], t[2], 1, 1) * t[3]).sum(); },
             {{2, 2, 5, 4}, {3, 2, 3, 2}, {3}, {2, 3, 5, 5}}, 1e-4);
  check_grad(device, "conv2d padding past the window", [](const auto& t) { return t[0].conv2d(t[1], std::nullopt, 1, 2).pow(2.0).sum(); },
             {{1, 2, 4, 3}, {2, 2, 2, 2}}, 1e-4);
  check_grad(device, "conv2d grouped dilated padded", [](const auto& t) {
    return t[0].conv2d(t[1], std::nullopt, 1, 1, 2, 2).pow(2.0).sum();
  }, {{1, 4, 5, 6}, {6, 2, 3, 3}}, 1e-4);
  check_grad(device, "pooling", [](const auto& t) { return t[0].max_pool2d(2).sum() + t[0].avg_pool2d(2).sum(); }, {{1, 1, 4, 4}});
  // windows that do not overlap are cut apart (tensor/nn.cpp disjoint_windows): gaps between
  // them, a last gap past the input, a cut-off remainder, and a patch convolution
  check_grad(device, "pooling with gaps", [](const auto& t) {
    return t[0].max_pool2d(2, 3).sum() + t[0].avg_pool2d(2).pow(2.0).sum();
  }, {{1, 2, 8, 7}});
  // overlapping windows: the composites' own gradients (tensor/nn.cpp unpool, max_pool2d)
  check_grad(device, "overlapping pools", [](const auto& t) {
    return t[0].max_pool2d(3, 2, 1).pow(2.0).sum() + t[0].avg_pool2d(3, 2).pow(2.0).sum();
  }, {{1, 2, 7, 6}});
  check_grad(device, "conv2d strided, padding past the window", [](const auto& t) {
    return t[0].conv2d(t[1], std::nullopt, 2, 2).pow(2.0).sum() + t[0].conv2d(t[2], std::nullopt, 3, 1, 2).pow(2.0).sum();
  }, {{1, 2, 7, 6}, {2, 2, 2, 2}, {2, 2, 2, 3}}, 1e-4);
  // strided, by phases: a 1x1 stride 2 (phases no tap reads), stride 3 with padding, and an input
  // that only padding windows cover (its gradient is zeros)
  check_grad(device, "conv2d strided phases", [](const auto& t) {
    return t[0].conv2d(t[1], std::nullopt, 2).pow(2.0).sum() + t[0].conv2d(t[2], std::nullopt, 3, 2).pow(2.0).sum() +
           t[0].shrink({{0, 1}, {0, 2}, {0, 1}, {0, 1}}).conv2d(t[1], std::nullopt, 2, 1).pow(2.0).sum();
  }, {{1, 2, 7, 6}, {3, 2, 1, 1}, {2, 2, 3, 2}}, 1e-4);
  check_grad(device, "conv2d patches", [](const auto& t) { return t[0].conv2d(t[1], std::nullopt, 2).pow(2.0).sum(); },
             {{1, 2, 5, 6}, {3, 2, 2, 2}}, 1e-4);
  check_grad(device, "cat stack", [](const auto& t) {
    return (Tensor::cat({t[0], t[1]}, 1) * 2.0).sum() + Tensor::stack({t[0], t[0] * 3.0}, 0).pow(2.0).sum();
  }, {{2, 3}, {2, 2}});
  Tensor idx = Tensor::from_vector<int32_t>({2, 0, 1, 1, 3, 0}, {2, 3}, "ref");
  check_grad(device, "gather", [idx](const auto& t) {
    return (t[0].gather(1, t[0].device() == "ref" ? idx : idx.to(t[0].device())) * 3.0).sum();
  }, {{2, 4}});
}


}  // namespace kiln::testing
