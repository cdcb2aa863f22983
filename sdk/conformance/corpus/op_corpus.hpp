// sdk/conformance/corpus/op_corpus.hpp - every Tensor API op as a test case with a plain C++ reference.
//
// A case names its inputs (generated host arrays), builds the kiln graph from input tensors, and
// computes the expected result with the host_array loops. run_case uploads the inputs to a device,
// realizes the result there and reads it back, so the same corpus checks the reference executor
// (against the C++ loops) and every backend (against the reference executor).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "host_array.hpp"
#include "kiln/kiln.hpp"

namespace kiln::testing {

struct OpCase {
  std::string name;
  std::vector<HostArray> inputs;
  std::function<Tensor(const std::vector<Tensor>&)> build;
  std::function<HostArray(const std::vector<HostArray>&)> reference;
  double rtol = 1e-5, atol = 1e-6;  // for float results; integers and bools compare exactly
  // true: rtol/atol bound the distance to `reference` (float64 on the case's inputs: the float16
  // and bfloat16 cases), so every device is held to the reference, not to the reference executor
  bool bounded = false;
};

std::vector<OpCase> op_corpus();
// The float16 and bfloat16 variants of a representative set of `c`'s float32 cases, each with
// the per-op error bound that kiln's 16-bit semantics guarantee (half_corpus.cpp).
void add_half_cases(std::vector<OpCase>& c);

Tensor upload(const HostArray& a, const std::string& device);
HostArray download(const Tensor& t);
HostArray run_case(const OpCase& c, const std::string& device);
// What a device's result is compared with: the case's reference when it is bounded, else the
// reference executor's result.
HostArray expected(const OpCase& c);

// "" when equal within tolerance (NaN equals NaN, infinities must match), else the first mismatch.
std::string compare(const HostArray& got, const HostArray& want, double rtol, double atol);

}  // namespace kiln::testing
