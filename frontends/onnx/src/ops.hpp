// ops.hpp - the operator table: one row per ONNX operator kiln implements.
//
// A row names the operator, the opset it first exists in (a model importing an older opset is
// refused for it), the attributes it understands (any other attribute on a node is an error at
// load) and its implementation. Rows live beside their implementations, one file per concept
// (ops_<concept>.cpp); ops.cpp gathers them. Domains other than the default one are not supported.
#pragma once
#include <initializer_list>
#include <string_view>
#include <utility>
#include <vector>

#include "node.hpp"

namespace kiln::onnx::detail {

using OpFn = std::vector<Tensor> (*)(const Node&);

struct OpDef {
  std::string_view op;
  int since;                              // the first opset that defines this operator
  std::vector<std::string_view> attrs;    // the attributes it understands
  OpFn fn;
};

// Every row, sorted by name (built once); nullptr when `op` is not implemented.
const OpDef* find_op(std::string_view op);
const std::vector<OpDef>& op_table();

// The concept files' rows (ops_<concept>.cpp), appended to `out`.
void elementwise_ops(std::vector<OpDef>& out);  // arithmetic, comparisons, logic, activations, math, bits, Cast
void reduce_ops(std::vector<OpDef>& out);       // Reduce*, ArgMax/Min, softmax family, CumSum, TopK
void linalg_ops(std::vector<OpDef>& out);       // MatMul, Gemm, Einsum, Det, the losses (ops_reduce_linalg.cpp)

// The dimensions [start, end) of its input that Shape reports (its start/end attributes, clamped).
std::pair<int64_t, int64_t> shape_range(const Node& n, int64_t rank);

// x in float32 when it is float16 or bfloat16, else x itself: where a chain of half roundings
// would drift past ONNX's tolerance, compute wide and cast back once (ops_reduce.cpp).
Tensor widened(const Tensor& x);
void nn_ops(std::vector<OpDef>& out);           // Conv*, pooling, normalization, Dropout, DepthToSpace
void nn_sample_ops(std::vector<OpDef>& out);    // Resize, Upsample, GridSample, RoiAlign (ops_nn_sample.cpp)
void shape_ops(std::vector<OpDef>& out);        // constants, Shape, Reshape ... Concat, Split, Slice, Pad, Range, Trilu
void shape_index_ops(std::vector<OpDef>& out);  // Gather*, Scatter*, OneHot, ReverseSequence, Compress, NonZero, Unique
void misc_ops(std::vector<OpDef>& out);         // quantization, NonMaxSuppression, Bernoulli, RandomUniformLike
void misc_signal_ops(std::vector<OpDef>& out);  // windows, MelWeightMatrix, DFT, STFT (ops_misc_signal.cpp)
void misc_rnn_ops(std::vector<OpDef>& out);     // RNN, GRU, LSTM (ops_misc_rnn.cpp)

}  // namespace kiln::onnx::detail
