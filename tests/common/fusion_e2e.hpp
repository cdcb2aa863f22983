// tests/common/fusion_e2e.hpp - the multi-output and fused-reduce kernels (schedule/group.cpp) on
// a backend: softmax, log_softmax and a layernorm-like chain (the row statistics in one kernel),
// and outputs realized together that share a reduce or differ in an elementwise tail, over shapes
// that divide nothing, each compared with the reference executor and with plain C++ loops.
#pragma once
#include <string>

namespace kiln::testing {

void check_fused_kernels(const std::string& device);

}  // namespace kiln::testing
