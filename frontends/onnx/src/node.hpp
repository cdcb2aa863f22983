// node.hpp - what an operator's implementation sees of one ONNX node while run() builds the graph.
//
// Each operator is a function `std::vector<Tensor> f(const Node&)` registered in a table row
// (ops.hpp) with the attributes it understands. It reads its inputs, attributes and opset through
// Node and returns its outputs in order (trailing optional outputs the model does not name may be
// returned or left out). Anything it cannot do is node.fail(...): a kiln::Error that names the
// model, the node, its op type and opset - never a wrong result.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/tensor.hpp"

namespace onnx {
class NodeProto;
class AttributeProto;
}  // namespace onnx

namespace kiln::onnx::detail {

class RunState;

class Node {
 public:
  Node(const ::onnx::NodeProto& proto, int64_t opset, RunState& run) : proto_(proto), opset_(opset), run_(run) {}

  const std::string& op_type() const;
  const std::string& name() const;  // the node's name, or its first output's when unnamed
  int64_t opset() const { return opset_; }  // the default domain's version the model imports
  const std::string& device() const;

  // inputs: a position past the end or an empty name is an absent (optional) input
  size_t num_inputs() const;
  bool has(size_t i) const;
  const Tensor& in(size_t i) const;  // fails naming the input when absent
  std::optional<Tensor> opt(size_t i) const;
  // An input read on the host (realized when it is not already): integers as int64, any number
  // as double. Shapes, axes, pads and the like; fails when absent.
  std::vector<int64_t> ints(size_t i) const;
  std::vector<double> doubles(size_t i) const;
  int64_t int_scalar(size_t i) const;  // an input of exactly one element
  double double_scalar(size_t i) const;
  // These host reads fail (naming the node, the symbolic dimension and the fix) for an input whose
  // value is computed from a feed's symbolic dimension or whose own shape has one: the number read
  // would be fixed into the graph and a kiln::Jit replay with another size silently wrong.
  // The one exception, for a shape argument that the graph re-symbolizes (Reshape's and Expand's
  // shape, ConstantOfShape's input): the values with, per element, the variable it is exactly the
  // size of (nullopt for a fixed size). An element computed otherwise from a symbolic size (N * 16)
  // is the same error.
  struct ShapeInts {
    std::vector<int64_t> values;
    std::vector<std::optional<BoundVariable>> vars;
  };
  ShapeInts shape_ints(size_t i) const;
  // The checks of ints(i) without the read: for operators that read an input's data on the host
  // through the Tensor API (NonZero, Unique, ...).
  void check_untainted(size_t i) const;
  size_t num_outputs() const;  // as the model names them (trailing optional outputs may be absent)
  bool wants(size_t i) const;  // output i is named by the model

  // attributes (the registry checked at load that every name is one this op declares)
  bool has_attr(const char* name) const;
  int64_t attr_int(const char* name, int64_t fallback) const;
  double attr_float(const char* name, double fallback) const;
  std::string attr_string(const char* name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const char* name, std::vector<int64_t> fallback = {}) const;
  std::vector<double> attr_floats(const char* name, std::vector<double> fallback = {}) const;
  std::vector<std::string> attr_strings(const char* name, std::vector<std::string> fallback = {}) const;
  std::optional<Tensor> attr_tensor(const char* name) const;  // a TENSOR attribute, realized on device()

  // "model.onnx: node 'n' (Op, opset 13): <what>" as a kiln::Error (unimplemented unless given).
  [[noreturn]] void fail(const std::string& what, ErrorCode code = ErrorCode::unimplemented) const;
  // Normalises a possibly negative axis against rank, failing when it is out of range.
  int axis(int64_t axis, int rank) const;

 private:
  const ::onnx::AttributeProto* attr(const char* name) const;
  void check_host_read(size_t i) const;
  const ::onnx::NodeProto& proto_;
  int64_t opset_;
  RunState& run_;
};

}  // namespace kiln::onnx::detail
