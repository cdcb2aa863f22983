// tests/ops/ops_check.hpp - what the op tests share: a tensor from host values, a comparison
// with a plain C++ reference that names the first element off, and a gradient check of any
// function of tensors against central finite differences (float64 on cpu:0).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"

namespace kiln::testing {

inline constexpr const char* kOpsDevice = "cpu:0";

// A float32 (or `dtype`) tensor of `values` in `shape` on cpu:0.
Tensor host_tensor(const std::vector<double>& values, const Shape& shape, DType dtype = dtypes::float32);
// Deterministic values in [lo, hi) (a fixed LCG seeded by `seed`): numel(shape) of them.
std::vector<double> sample(const Shape& shape, uint64_t seed, double lo = -2, double hi = 2);

// "" when `got` (realized, read as float64) has `shape` and every element is within
// atol + rtol * |want|; otherwise the shape or the first element off, with both values.
std::string compare(const Tensor& got, const Shape& shape, const std::vector<double>& want, double rtol = 1e-5,
                    double atol = 1e-6);

// "" when the gradient of f(inputs).sum() with respect to each input, computed by kiln in
// float64, matches central finite differences of f in float64 (step 1e-6) within rtol/atol.
// `inputs` are float64 values with their shapes; f builds its result from the tensors given.
std::string check_gradient(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                           const std::vector<std::pair<std::vector<double>, Shape>>& inputs, double rtol = 1e-4,
                           double atol = 1e-6);

}  // namespace kiln::testing
