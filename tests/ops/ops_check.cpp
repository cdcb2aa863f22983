// tests/ops/ops_check.cpp - see ops_check.hpp.
#include "ops_check.hpp"

#include <cmath>
#include <sstream>

namespace kiln::testing {

Tensor host_tensor(const std::vector<double>& values, const Shape& shape, DType dtype) {
  return Tensor::from_vector<double>(values, shape, kOpsDevice).cast(dtype);
}

std::vector<double> sample(const Shape& shape, uint64_t seed, double lo, double hi) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> out(static_cast<size_t>(n));
  uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (double& v : out) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    v = lo + (hi - lo) * static_cast<double>(s >> 11) / 9007199254740992.0;
  }
  return out;
}

std::string compare(const Tensor& got, const Shape& shape, const std::vector<double>& want, double rtol, double atol) {
  std::ostringstream os;
  if (got.shape() != shape) {
    os << "shape (";
    for (int64_t d : got.shape()) os << d << ",";
    os << ") where (";
    for (int64_t d : shape) os << d << ",";
    os << ") was expected";
    return os.str();
  }
  std::vector<double> g = got.cast(dtypes::float64).to_vector<double>();
  if (g.size() != want.size()) return "element count " + std::to_string(g.size()) + " vs " + std::to_string(want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    bool both_nan = std::isnan(g[i]) && std::isnan(want[i]);
    bool same_inf = std::isinf(g[i]) && g[i] == want[i];
    if (both_nan || same_inf) continue;
    if (!(std::abs(g[i] - want[i]) <= atol + rtol * std::abs(want[i]))) {
      os << "element " << i << ": got " << g[i] << ", want " << want[i];
      return os.str();
    }
  }
  return "";
}

std::string check_gradient(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                           const std::vector<std::pair<std::vector<double>, Shape>>& inputs, double rtol, double atol) {
  auto make = [&](size_t which, size_t elem, double delta) {
    std::vector<Tensor> ts;
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::vector<double> v = inputs[i].first;
      if (i == which) v[elem] += delta;
      ts.push_back(Tensor::from_vector<double>(v, inputs[i].second, kOpsDevice));
    }
    return ts;
  };
  std::vector<Tensor> xs = make(0, 0, 0.0);
  std::vector<Tensor> grads = f(xs).sum().gradient(xs);
  const double h = 1e-6;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<double> g = grads[i].cast(dtypes::float64).to_vector<double>();
    for (size_t e = 0; e < inputs[i].first.size(); ++e) {
      double up = f(make(i, e, h)).sum().cast(dtypes::float64).item<double>();
      double down = f(make(i, e, -h)).sum().cast(dtypes::float64).item<double>();
      double fd = (up - down) / (2 * h);
      if (!(std::abs(g[e] - fd) <= atol + rtol * std::abs(fd)) && !(std::isnan(g[e]) && std::isnan(fd))) {
        std::ostringstream os;
        os << "input " << i << " element " << e << ": gradient " << g[e] << ", finite differences " << fd;
        return os.str();
      }
    }
  }
  return "";
}

}  // namespace kiln::testing
