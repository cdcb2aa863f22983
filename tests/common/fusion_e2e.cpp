// tests/common/fusion_e2e.cpp - the checks of fusion_e2e.hpp.
#include "fusion_e2e.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "backend_e2e.hpp"

namespace kiln::testing {

namespace {

// Row statistics of a (rows, cols) array, in double: softmax, log_softmax and layernorm.
HostArray per_row(const HostArray& x, int which) {
  HostArray out = x;
  int64_t rows = x.shape[0], cols = x.shape[1];
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = &x.v[r * cols];
    double mx = *std::max_element(row, row + cols), s = 0, mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) s += std::exp(row[c] - mx), mean += row[c];
    mean /= static_cast<double>(cols);
    for (int64_t c = 0; c < cols; ++c) var += (row[c] - mean) * (row[c] - mean);
    var /= static_cast<double>(cols);
    for (int64_t c = 0; c < cols; ++c) {
      double& o = out.v[r * cols + c];
      if (which == 0) o = std::exp(row[c] - mx) / s;
      if (which == 1) o = row[c] - mx - std::log(s);
      if (which == 2) o = (row[c] - mean) / std::sqrt(var + 1e-5);
    }
  }
  return out;
}

Tensor layernorm(const Tensor& x) {
  Tensor mean = x.mean({-1}, true);
  Tensor dev = x - mean;
  return dev * ((dev * dev).mean({-1}, true) + 1e-5).rsqrt();
}

// A multi-output case in plain C++: the input arrays to one array per output.
using Reference = std::function<std::vector<HostArray>(const std::vector<HostArray>&)>;

// Realizes the outputs of `build` together on `device` (so they may share kernels) and compares
// each with plain C++ loops, not with the reference executor: that runs the same grouped kernels,
// so a wrong grouping would be wrong on both sides.
void expect_outputs_match(const std::string& name, const std::vector<HostArray>& inputs,
                          const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& build,
                          const Reference& reference, const std::string& device, double tol = 1e-5) {
  std::vector<Tensor> in;
  for (const HostArray& a : inputs) in.push_back(upload(a, device));
  std::vector<Tensor> outs = build(in);
  Tensor::realize_all(outs);
  std::vector<HostArray> want = reference(inputs);
  ASSERT_EQ(outs.size(), want.size()) << name;
  for (size_t i = 0; i < outs.size(); ++i)
    EXPECT_EQ(compare(download(outs[i]), want[i], tol, tol), "") << name << " output " << i << " on " << device;
}

double add(double p, double q) { return p + q; }
double max(double p, double q) { return std::max(p, q); }

// The first maximum of each row of a (rows, cols) array, as int32.
HostArray argmax_rows(const HostArray& x) {
  HostArray r{{x.shape[0]}, {}, dtypes::int32};
  for (int64_t i = 0; i < x.shape[0]; ++i) {
    int64_t best = 0;
    for (int64_t j = 1; j < x.shape[1]; ++j)
      if (x.at({i, j}) > x.at({i, best})) best = j;
    r.v.push_back(static_cast<double>(best));
  }
  return r;
}

}  // namespace

void check_fused_kernels(const std::string& device) {
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {17, 33}, {3, 257}, {4, 1000}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
    HostArray x = make_array({rows, cols}, dtypes::float32, 7, -4, 4);
    HostArray y = make_array({rows, cols}, dtypes::float32, 8);
    std::vector<OpCase> cases = {
        {"softmax", {x}, [](const std::vector<Tensor>& t) { return t[0].softmax(); }, [](const auto& a) { return per_row(a[0], 0); }},
        {"log_softmax", {x}, [](const std::vector<Tensor>& t) { return t[0].log_softmax(); },
         [](const auto& a) { return per_row(a[0], 1); }},
        {"layernorm", {x}, [](const std::vector<Tensor>& t) { return layernorm(t[0]); }, [](const auto& a) { return per_row(a[0], 2); },
         1e-4, 1e-4},
    };
    for (const OpCase& c : cases) {
      expect_matches_reference(c, device);
      EXPECT_EQ(compare(run_case(c, device), c.reference(c.inputs), c.rtol, 1e-5), "") << c.name << " vs C++ on " << device;
    }
    const DType f32 = dtypes::float32;
    expect_outputs_match("a reduce feeding two reshaped outputs", {x}, [&](const std::vector<Tensor>& t) {
      Tensor s = (t[0] * 2.0).sum({1});
      return std::vector<Tensor>{s.reshape({rows, 1}), s.reshape({1, rows})};
    }, [&](const std::vector<HostArray>& a) {
      HostArray s = reduce(map(a[0], [](double v) { return v * 2; }, f32), {1}, false, add, 0, f32);
      return std::vector<HostArray>{reshape(s, {rows, 1}), reshape(s, {1, rows})};
    }, device, 1e-4);
    expect_outputs_match("an elementwise tail", {x}, [](const std::vector<Tensor>& t) {
      Tensor a = (t[0] * 3.0).exp();
      return std::vector<Tensor>{a, a.sqrt() + 1.0};
    }, [&](const std::vector<HostArray>& a) {
      HostArray e = map(a[0], [](double v) { return std::exp(v * 3); }, f32);
      return std::vector<HostArray>{e, map(e, [](double v) { return std::sqrt(v) + 1; }, f32)};
    }, device);
    expect_outputs_match("sums of several reductions", {x, y}, [](const std::vector<Tensor>& t) {
      Tensor sx = t[0].sum({1}), my = t[1].max({1});
      return std::vector<Tensor>{sx + my, sx * my, (sx * 0.01).exp(), my};
    }, [&](const std::vector<HostArray>& a) {
      HostArray sx = reduce(a[0], {1}, false, add, 0, f32), my = reduce(a[1], {1}, false, max, -INFINITY, f32);
      return std::vector<HostArray>{zip(sx, my, add, f32), zip(sx, my, std::multiplies<double>(), f32),
                                    map(sx, [](double v) { return std::exp(v * 0.01); }, f32), my};
    }, device, 1e-4);
    expect_outputs_match("outputs of several dtypes", {x, y}, [](const std::vector<Tensor>& t) {
      return std::vector<Tensor>{t[0].max({1}), t[0].argmax(1), t[0].gt(t[1]), t[0] * 2.0, (t[0] * 2.0).cast(dtypes::float16)};
    }, [&](const std::vector<HostArray>& a) {
      HostArray x2 = map(a[0], [](double v) { return v * 2; }, f32);
      return std::vector<HostArray>{reduce(a[0], {1}, false, max, -INFINITY, f32), argmax_rows(a[0]),
                                    zip(a[0], a[1], std::greater<double>(), dtypes::bool_), x2, cast(x2, dtypes::float16)};
    }, device);
    expect_outputs_match("softmax and its row max", {x}, [](const std::vector<Tensor>& t) {
      return std::vector<Tensor>{t[0].softmax(), t[0].max({1}, true), t[0].log_softmax()};
    }, [&](const std::vector<HostArray>& a) {
      return std::vector<HostArray>{per_row(a[0], 0), reduce(a[0], {1}, true, max, -INFINITY, f32), per_row(a[0], 1)};
    }, device);
  }
  // two matmuls over one input combined elementwise (a gated FFN, odd sizes): one contraction per
  // kernel (schedule/kernelize.hpp), the second loading the first's result in its epilogue
  {
    const int64_t n = 37, k = 48, m = 67;
    HostArray x = make_array({n, k}, dtypes::float32, 10, -1, 1), w1 = make_array({k, m}, dtypes::float32, 11, -1, 1),
              w3 = make_array({k, m}, dtypes::float32, 12, -1, 1);
    expect_outputs_match("a gated FFN", {x, w1, w3}, [](const std::vector<Tensor>& t) {
      Tensor h = t[0].matmul(t[1]);
      return std::vector<Tensor>{h.silu() * t[0].matmul(t[2]), h};
    }, [&](const std::vector<HostArray>& a) {
      HostArray g{{n, m}, std::vector<double>(n * m), dtypes::float32}, h = g;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j) {
          double p = 0, q = 0;
          for (int64_t c = 0; c < k; ++c) p += a[0].v[i * k + c] * a[1].v[c * m + j], q += a[0].v[i * k + c] * a[2].v[c * m + j];
          h.v[i * m + j] = p;
          g.v[i * m + j] = p / (1 + std::exp(-p)) * q;
        }
      return std::vector<HostArray>{g, h};
    }, device, 1e-4);
  }
  // x @ w.T + b with a long reduce (2560: the panel of w a CPU stages is cut into blocks)
  {
    const int64_t n = 72, k = 2560, m = 48;
    HostArray x = make_array({n, k}, dtypes::float32, 13, -1, 1), w = make_array({m, k}, dtypes::float32, 14, -1, 1),
              b = make_array({m}, dtypes::float32, 15, -1, 1);
    expect_outputs_match("a linear layer with a long reduce", {x, w, b}, [](const std::vector<Tensor>& t) {
      return std::vector<Tensor>{t[0].linear(t[1], t[2]).gelu()};
    }, [&](const std::vector<HostArray>& a) {
      HostArray y{{n, m}, std::vector<double>(n * m), dtypes::float32};
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j) {
          double v = a[2].v[j];
          for (int64_t c = 0; c < k; ++c) v += a[0].v[i * k + c] * a[1].v[j * k + c];
          y.v[i * m + j] = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        }
      return std::vector<HostArray>{y};
    }, device, 1e-4);
  }
  // a row of 40000 is split into partial reductions (split_reduce.cpp) before the groups form
  HostArray x = make_array({2, 40000}, dtypes::float32, 9, -4, 4);
  OpCase c{"long softmax", {x}, [](const std::vector<Tensor>& t) { return t[0].softmax(); }, [](const auto& a) { return per_row(a[0], 0); }};
  EXPECT_EQ(compare(run_case(c, device), c.reference(c.inputs), 1e-4, 1e-7), "") << c.name << " vs C++ on " << device;
}

}  // namespace kiln::testing
