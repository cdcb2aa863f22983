// ops_elementwise.cpp - ONNX operators: arithmetic, comparisons, logic, activations, math.
#include "ops.hpp"

namespace kiln::onnx::detail {
namespace {

std::vector<Tensor> add(const Node& n) { return {n.in(0) + n.in(1)}; }
std::vector<Tensor> sub(const Node& n) { return {n.in(0) - n.in(1)}; }
std::vector<Tensor> mul(const Node& n) { return {n.in(0) * n.in(1)}; }
std::vector<Tensor> relu(const Node& n) { return {n.in(0).relu()}; }

}  // namespace

void elementwise_ops(std::vector<OpDef>& out) {
  out.insert(out.end(), {
      {"Add", 1, {"broadcast", "axis", "consumed_inputs"}, add},
      {"Sub", 1, {"broadcast", "axis", "consumed_inputs"}, sub},
      {"Mul", 1, {"broadcast", "axis", "consumed_inputs"}, mul},
      {"Relu", 1, {"consumed_inputs"}, relu},
  });
}

}  // namespace kiln::onnx::detail
