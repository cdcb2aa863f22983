// ops.cpp - the operator table of contents: each concept file's rows, gathered and sorted once.
#include "ops.hpp"

#include <algorithm>

namespace kiln::onnx::detail {

const std::vector<OpDef>& op_table() {
  static const std::vector<OpDef> table = [] {
    std::vector<OpDef> t;
    elementwise_ops(t);  // ops_elementwise.cpp
    reduce_ops(t);       // ops_reduce.cpp
    linalg_ops(t);       // ops_reduce_linalg.cpp
    nn_ops(t);           // ops_nn.cpp
    nn_sample_ops(t);    // ops_nn_sample.cpp
    shape_ops(t);        // ops_shape.cpp
    shape_index_ops(t);  // ops_shape_index.cpp
    misc_ops(t);         // ops_misc.cpp
    misc_signal_ops(t);  // ops_misc_signal.cpp
    misc_rnn_ops(t);     // ops_misc_rnn.cpp
    std::sort(t.begin(), t.end(), [](const OpDef& a, const OpDef& b) { return a.op < b.op; });
    for (size_t i = 1; i < t.size(); ++i)
      if (t[i].op == t[i - 1].op) throw Error(ErrorCode::internal, "onnx: operator " + std::string(t[i].op) + " has two rows");
    return t;
  }();
  return table;
}

const OpDef* find_op(std::string_view op) {
  const auto& t = op_table();
  auto it = std::lower_bound(t.begin(), t.end(), op, [](const OpDef& d, std::string_view o) { return d.op < o; });
  return it != t.end() && it->op == op ? &*it : nullptr;
}

}  // namespace kiln::onnx::detail
