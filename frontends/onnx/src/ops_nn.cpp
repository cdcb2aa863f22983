// ops_nn.cpp - ONNX operators: nn.
#include "ops.hpp"

namespace kiln::onnx::detail {
namespace {
}  // namespace

void nn_ops(std::vector<OpDef>& out) {
  (void)out;
}

}  // namespace kiln::onnx::detail
