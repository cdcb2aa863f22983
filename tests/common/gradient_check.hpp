// tests/common/gradient_check.hpp - every gradient rule checked on a device: the analytic gradient
// in float64 on the reference executor against central finite differences, and in float32 on
// `device` against that (elementwise ops and broadcasting; reductions, movement, matmul, conv2d,
// pooling, softmax, var/std, cat/stack, gather).
#pragma once
#include <string>

#include "kiln/kiln.hpp"

namespace kiln::testing {
void check_elementwise_gradients(const std::string& device);
void check_composite_gradients(const std::string& device);
}  // namespace kiln::testing
