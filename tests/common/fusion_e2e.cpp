// tests/common/fusion_e2e.cpp - the checks of fusion_e2e.hpp.
#include "fusion_e2e.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

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

// Realizes the outputs of `build` together on `device` and on the reference executor.
void expect_outputs_match(const std::string& name, const std::vector<HostArray>& inputs,
                          const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& build,
                          const std::string& device) {
  auto run = [&](const std::string& dev) {
    std::vector<Tensor> in;
    for (const HostArray& a : inputs) in.push_back(upload(a, dev));
    std::vector<Tensor> outs = build(in);
    Tensor::realize_all(outs);
    std::vector<HostArray> got;
    for (const Tensor& t : outs) got.push_back(download(t));
    return got;
  };
  std::vector<HostArray> got = run(device), want = run("ref");
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(compare(got[i], want[i], 1e-5, 1e-5), "") << name << " output " << i << " on " << device;
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
    expect_outputs_match("a reduce feeding two reshaped outputs", {x}, [&](const std::vector<Tensor>& t) {
      Tensor s = (t[0] * 2.0).sum({1});
      return std::vector<Tensor>{s.reshape({rows, 1}), s.reshape({1, rows})};
    }, device);
    expect_outputs_match("an elementwise tail", {x}, [](const std::vector<Tensor>& t) {
      Tensor a = (t[0] * 3.0).exp();
      return std::vector<Tensor>{a, a.sqrt() + 1.0};
    }, device);
    expect_outputs_match("sums of several reductions", {x, y}, [](const std::vector<Tensor>& t) {
      Tensor sx = t[0].sum({1}), my = t[1].max({1});
      return std::vector<Tensor>{sx + my, sx * my, (sx * 0.01).exp(), my};
    }, device);
    expect_outputs_match("outputs of several dtypes", {x, y}, [](const std::vector<Tensor>& t) {
      return std::vector<Tensor>{t[0].max({1}), t[0].argmax(1), t[0].gt(t[1]), t[0] * 2.0, (t[0] * 2.0).cast(dtypes::float16)};
    }, device);
    expect_outputs_match("softmax and its row max", {x}, [](const std::vector<Tensor>& t) {
      return std::vector<Tensor>{t[0].softmax(), t[0].max({1}, true), t[0].log_softmax()};
    }, device);
  }
  // a row of 40000 is split into partial reductions (split_reduce.cpp) before the groups form
  HostArray x = make_array({2, 40000}, dtypes::float32, 9, -4, 4);
  OpCase c{"long softmax", {x}, [](const std::vector<Tensor>& t) { return t[0].softmax(); }, [](const auto& a) { return per_row(a[0], 0); }};
  EXPECT_EQ(compare(run_case(c, device), c.reference(c.inputs), 1e-4, 1e-7), "") << c.name << " vs C++ on " << device;
}

}  // namespace kiln::testing
