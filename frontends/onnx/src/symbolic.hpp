// symbolic.hpp - symbolic input dimensions in Model::run: the feeds' check and the taint rules.
//
// A feed may have symbolic dimensions (Tensor::shrink(axis, BoundVariable) of a max-sized buffer):
// the graph kiln builds then keeps the variable, so one compile serves every value, and a kiln::Jit
// around run() replays it with new values without calling run() again. Everything run() computes
// on the host from the bound value would stay fixed in that replay. So run() marks every value
// computed from a symbolic size ("tainted", run_state.hpp's Taint) and refuses (a kiln::Error
// naming the node, the dimension and the fix) where one would be fixed into the graph: a host read
// (node.hpp), a data-dependent operator, a graph output. The one use that is allowed is a shape
// argument made of exact sizes (Node::shape_ints), which the operators turn back into the variable.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "kiln/onnx.hpp"
#include "ops.hpp"
#include "run_state.hpp"

namespace onnx {
class NodeProto;
}

namespace kiln::onnx::detail {

// The feeds against the declared dimensions: a symbolic feed dimension where the model declares a
// fixed size is an error; a dimension name ("N") used by several inputs must have one size and, if
// symbolic anywhere, one variable everywhere (the error names both inputs, the name and both).
void check_feed_dims(const std::vector<ValueInfo>& inputs, const RunState& state, const std::string& model);

// Before node `n` runs: an operator that reads its data on the host to decide its output's shape
// (NonZero, Compress, Unique, NonMaxSuppression) must not read a symbolic size or a tensor of one;
// any other operator given a tensor with a symbolic dimension must be one whose implementation is
// known to keep it symbolic (symbolic.cpp lists them), else a kiln::Error naming the node.
void check_symbolic_inputs(const Node& n);

// After node `proto` ran (its outputs `outs`): the taints of its outputs in `state`.
void propagate_taint(const ::onnx::NodeProto& proto, int64_t opset, const OpDef& op, RunState& state,
                     const std::vector<Tensor>& outs);

// The graph outputs must not be tainted: their values would be fixed in a Jit's replay.
void check_outputs(const std::vector<ValueInfo>& outputs, const RunState& state, const std::string& model);

}  // namespace kiln::onnx::detail
