// ops_shape.cpp - ONNX operators: shape.
#include "ops.hpp"

namespace kiln::onnx::detail {
namespace {
}  // namespace

void shape_ops(std::vector<OpDef>& out) {
  (void)out;
}

}  // namespace kiln::onnx::detail
