// tests/common/fusion_e2e.hpp - the multi-output and fused-reduce kernels (schedule/group.cpp) on
// a backend: softmax, log_softmax and a layernorm-like chain (the row statistics in one kernel),
// each compared with the reference executor and with plain C++ loops, and outputs realized
// together that share a reduce or differ in an elementwise tail, compared with plain C++ loops
// only (the reference executor runs the same grouped kernels), over shapes that divide nothing.
#pragma once
#include <string>

namespace kiln::testing {

void check_fused_kernels(const std::string& device);

}  // namespace kiln::testing
