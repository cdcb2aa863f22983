// ops_misc.cpp - ONNX operators: misc.
#include "ops.hpp"

namespace kiln::onnx::detail {
namespace {
}  // namespace

void misc_ops(std::vector<OpDef>& out) {
  (void)out;
}

}  // namespace kiln::onnx::detail
