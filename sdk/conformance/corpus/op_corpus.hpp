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
};

std::vector<OpCase> op_corpus();

Tensor upload(const HostArray& a, const std::string& device);
HostArray download(const Tensor& t);
HostArray run_case(const OpCase& c, const std::string& device);

// "" when equal within tolerance (NaN equals NaN, infinities must match), else the first mismatch.
std::string compare(const HostArray& got, const HostArray& want, double rtol, double atol);

}  // namespace kiln::testing
