// ops_reduce.cpp - ONNX operators: reduce.
#include "ops.hpp"

namespace kiln::onnx::detail {
namespace {
}  // namespace

void reduce_ops(std::vector<OpDef>& out) {
  (void)out;
}

}  // namespace kiln::onnx::detail
