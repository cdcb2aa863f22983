// symbolic_test.cpp - symbolic input dimensions in kiln::onnx::Model::run: a feed made by
// Tensor::shrink(axis, BoundVariable) from one max-sized buffer compiles once for every value of
// the variable, gives what concrete feeds give, replays in a kiln::Jit, and whatever would fix the
// bound value into the graph (a host read of Shape's result, a graph output computed from it) is a
// kiln::Error naming the node, never a silently wrong replay.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "kiln/jit.hpp"
#include "error_check.hpp"
#include "kiln/onnx.hpp"
#include "model_builder.hpp"
#include "runtime/program_cache.hpp"

using kiln::BoundVariable;
using kiln::ErrorCode;
using kiln::Shape;
using kiln::Tensor;
using kiln::Variable;
using kiln::onnx::Model;
namespace om = kiln::test::onnx_models;
using P = ::onnx::TensorProto;

namespace {

void attr(::onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (auto x : v) a->add_ints(x);
}
void attr(::onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}
void int64_init(::onnx::ModelProto& m, const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& v) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(P::INT64);
  for (auto d : dims) t->add_dims(d);
  for (auto x : v) t->add_int64_data(x);
}
// Deterministic weights in [-0.5, 0.5).
std::vector<float> weights(int64_t n, int seed) {
  std::vector<float> w(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) w[i] = static_cast<float>((i * 37 + seed * 11) % 101) / 101.f - 0.5f;
  return w;
}
Model load(const ::onnx::ModelProto& m) { return Model::from_bytes(m.SerializeAsString()); }

// A small CNN: x (N, 3, 8, 8) -> Conv 3x3 (4) -> BatchNormalization -> Relu -> MaxPool 2 -> Conv 3x3 (8) -> Relu ->
// GlobalAveragePool -> Flatten -> Gemm (8 -> 5) -> y (N, 5).
::onnx::ModelProto cnn() {
  ::onnx::ModelProto m = om::model(13);
  om::input(m, {"x", P::FLOAT, {"N", "3", "8", "8"}});
  om::output(m, {"y", P::FLOAT, {"N", "5"}});
  om::initializer(m, "w1", {4, 3, 3, 3}, weights(4 * 27, 1));
  om::initializer(m, "b1", {4}, weights(4, 2));
  om::initializer(m, "w2", {8, 4, 3, 3}, weights(8 * 36, 3));
  om::initializer(m, "b2", {8}, weights(8, 4));
  om::initializer(m, "wg", {8, 5}, weights(40, 5));
  om::initializer(m, "bg", {5}, weights(5, 6));
  om::initializer(m, "bn_scale", {4}, {1.5f, 0.5f, 1.f, 2.f});
  om::initializer(m, "bn_bias", {4}, {0.1f, -0.2f, 0.f, 0.3f});
  om::initializer(m, "bn_mean", {4}, {0.05f, -0.1f, 0.2f, 0.f});
  om::initializer(m, "bn_var", {4}, {1.f, 0.5f, 2.f, 0.25f});
  attr(om::node(m, "Conv", {"x", "w1", "b1"}, {"c0"}, "conv1"), "pads", {1, 1, 1, 1});
  om::node(m, "BatchNormalization", {"c0", "bn_scale", "bn_bias", "bn_mean", "bn_var"}, {"c1"}, "bn");
  om::node(m, "Relu", {"c1"}, {"r1"}, "relu1");
  auto* pool = om::node(m, "MaxPool", {"r1"}, {"p1"}, "pool");
  attr(pool, "kernel_shape", {2, 2});
  attr(pool, "strides", {2, 2});
  attr(om::node(m, "Conv", {"p1", "w2", "b2"}, {"c2"}, "conv2"), "pads", {1, 1, 1, 1});
  om::node(m, "Relu", {"c2"}, {"r2"}, "relu2");
  om::node(m, "GlobalAveragePool", {"r2"}, {"g"}, "gap");
  attr(om::node(m, "Flatten", {"g"}, {"f"}, "flatten"), "axis", 1);
  om::node(m, "Gemm", {"f", "wg", "bg"}, {"y"}, "head");
  return m;
}
// The same network with kiln's Tensor ops: the plain reference.
Tensor cnn_reference(const Tensor& x) {
  auto w = [](const Shape& s, int seed) {
    return Tensor::from_vector(weights(std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()), seed), s);
  };
  auto channel = [](std::vector<float> v) { return Tensor::from_vector(v, {1, 4, 1, 1}); };
  Tensor c = x.conv2d(w({4, 3, 3, 3}, 1), w({4}, 2), 1, 1);
  c = (c - channel({0.05f, -0.1f, 0.2f, 0.f})) / (channel({1.f, 0.5f, 2.f, 0.25f}) + 1e-5).sqrt() *
          channel({1.5f, 0.5f, 1.f, 2.f}) + channel({0.1f, -0.2f, 0.f, 0.3f});
  Tensor h = c.relu().max_pool2d(2);
  h = h.conv2d(w({8, 4, 3, 3}, 3), w({8}, 4), 1, 1).relu().mean({2, 3});
  return h.matmul(w({8, 5}, 5)) + w({5}, 6);
}

// Self-attention over x (N, 16, 32), layer-normalized, with the dynamic reshapes an exporter writes:
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape (to 4 heads of 8 and back), MatMul, Softmax,
// Transpose; a bias Expand-ed to Shape(x) and a ConstantOfShape mask over (N, 16, 1).
::onnx::ModelProto attention() {
  ::onnx::ModelProto m = om::model(17);  // (LayerNormalization)
  om::input(m, {"x", P::FLOAT, {"N", "16", "32"}});
  om::output(m, {"y", P::FLOAT, {"N", "16", "32"}});
  om::initializer(m, "wq", {32, 32}, weights(32 * 32, 7));
  om::initializer(m, "wo", {32, 32}, weights(32 * 32, 8));
  om::initializer(m, "bias", {1, 1, 32}, weights(32, 9));
  om::initializer(m, "scale", {}, {0.35f});
  int64_init(m, "i0", {}, {0});
  int64_init(m, "i1", {}, {1});
  int64_init(m, "ax0", {1}, {0});
  int64_init(m, "heads", {3}, {16, 4, 8});
  int64_init(m, "minus1", {1}, {-1});
  int64_init(m, "one", {1}, {1});
  om::node(m, "Shape", {"x"}, {"s"}, "shape");
  om::node(m, "Gather", {"s", "i0"}, {"n"}, "batch");
  om::node(m, "Unsqueeze", {"n", "ax0"}, {"n1"}, "batch1");
  om::node(m, "Gather", {"s", "i1"}, {"l"}, "len");
  om::node(m, "Unsqueeze", {"l", "ax0"}, {"l1"}, "len1");
  attr(om::node(m, "Concat", {"n1", "heads"}, {"s4"}, "shape4"), "axis", 0);
  attr(om::node(m, "Concat", {"n1", "l1", "minus1"}, {"s3"}, "shape3"), "axis", 0);
  attr(om::node(m, "Concat", {"n1", "l1", "one"}, {"smask"}, "mask_shape"), "axis", 0);
  om::initializer(m, "ln_scale", {32}, weights(32, 10));
  om::initializer(m, "ln_bias", {32}, weights(32, 11));
  attr(om::node(m, "LayerNormalization", {"x", "ln_scale", "ln_bias"}, {"xn"}, "norm"), "axis", int64_t{-1});
  om::node(m, "Expand", {"bias", "s"}, {"bx"}, "bias_expand");
  om::node(m, "Add", {"xn", "bx"}, {"xb"}, "add_bias");
  om::node(m, "MatMul", {"xb", "wq"}, {"q"}, "project");
  om::node(m, "Reshape", {"q", "s4"}, {"q4"}, "split_heads");
  attr(om::node(m, "Transpose", {"q4"}, {"qt"}, "heads_first"), "perm", {0, 2, 1, 3});
  attr(om::node(m, "Transpose", {"q4"}, {"kt"}, "keys"), "perm", {0, 2, 3, 1});
  om::node(m, "MatMul", {"qt", "kt"}, {"sc"}, "scores");
  om::node(m, "Mul", {"sc", "scale"}, {"scs"}, "scaled");
  attr(om::node(m, "Softmax", {"scs"}, {"p"}, "softmax"), "axis", -1);
  om::node(m, "MatMul", {"p", "qt"}, {"o"}, "attend");
  attr(om::node(m, "Transpose", {"o"}, {"ot"}, "heads_back"), "perm", {0, 2, 1, 3});
  om::node(m, "Reshape", {"ot", "s3"}, {"merged"}, "merge_heads");
  om::node(m, "MatMul", {"merged", "wo"}, {"out"}, "out_proj");
  auto* mask = om::node(m, "ConstantOfShape", {"smask"}, {"ones"}, "mask");
  auto* value = mask->add_attribute();
  value->set_name("value");
  value->set_type(::onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(P::FLOAT);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_float_data(2.f);
  om::node(m, "Mul", {"out", "ones"}, {"y"}, "masked");
  return m;
}
Tensor attention_reference(const Tensor& x) {
  auto w = [](const Shape& s, int seed) {
    return Tensor::from_vector(weights(std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()), seed), s);
  };
  const int64_t n = x.shape()[0];
  Tensor xn = x.layernorm({-1}, 1e-5) * w({32}, 10) + w({32}, 11);
  Tensor q = (xn + w({1, 1, 32}, 9)).matmul(w({32, 32}, 7)).reshape({n, 16, 4, 8});
  Tensor qt = q.permute({0, 2, 1, 3}), kt = q.permute({0, 2, 3, 1});
  Tensor o = (qt.matmul(kt) * 0.35f).softmax(-1).matmul(qt);
  return o.permute({0, 2, 1, 3}).reshape({n, 16, 32}).matmul(w({32, 32}, 8)) * 2.0;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 + 1e-4 * std::fabs(want[i])) << what << " at " << i;
}

kiln::Error run_error(const Model& model, const std::map<std::string, Tensor>& feeds) {
  try {
    for (auto& [k, t] : model.run(feeds)) t.realize();
  } catch (const kiln::Error& e) {
    return e;
  }
  ADD_FAILURE() << "the model ran";
  return kiln::Error(ErrorCode::internal, "");
}

// One max-sized buffer, the first v rows of which each run feeds.
Tensor filled(const Shape& s) {
  return Tensor::from_vector(weights(std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()), 12), s).realize();
}
struct Batch {
  Shape max_shape;
  Tensor buffer;
  explicit Batch(const Shape& s) : max_shape(s), buffer(filled(s)) {}
  Tensor concrete(int64_t v) const {  // the same rows as a tensor of their own, fixed size
    kiln::Pads rows_only{{0, v}};
    for (size_t d = 1; d < max_shape.size(); ++d) rows_only.push_back({0, max_shape[d]});
    Tensor rows = buffer.shrink(rows_only);
    return Tensor::from_vector(rows.to_vector<float>(), rows.shape());
  }
};

const std::vector<int64_t> kSizes = {1, 2, 3, 5, 8};

// Every size from the one buffer: outputs equal the concrete model's and the reference's, and the
// kernels are built for the first size only.
void check_sizes_share_kernels(const Model& model, const Batch& batch, Tensor (*reference)(const Tensor&)) {
  Variable N("N", 1, batch.max_shape[0]);
  std::vector<std::vector<float>> symbolic;
  size_t after_first = 0;
  for (int64_t v : kSizes) {
    Tensor y = model.run({{"x", batch.buffer.shrink(0, N.bind(v))}}).at("y");
    ASSERT_TRUE(y.symbolic_dim(0)) << "the output keeps the batch symbolic";
    EXPECT_EQ(y.shape()[0], v);
    symbolic.push_back(y.to_vector<float>());
    if (v == kSizes[0]) after_first = kiln::runtime::program_cache_size();
    else EXPECT_EQ(kiln::runtime::program_cache_size(), after_first) << "N = " << v << " built kernels of its own";
  }
  for (size_t i = 0; i < kSizes.size(); ++i) {
    const int64_t v = kSizes[i];
    Tensor x = batch.concrete(v);
    expect_near(symbolic[i], model.run({{"x", x}}).at("y").to_vector<float>(), "concrete feed, N = " + std::to_string(v));
    expect_near(symbolic[i], reference(x).to_vector<float>(), "reference, N = " + std::to_string(v));
  }
}

// A Jit around model.run, fed the buffer and the variable: calls at these sizes (the second call
// captures, so {1, 1, ...} captures at 1) agree with the reference.
void check_jit(const Model& model, const Batch& batch, Tensor (*reference)(const Tensor&), const std::vector<int64_t>& sizes) {
  Variable N("N", 1, batch.max_shape[0]);
  kiln::Jit f([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>& vars) {
    return std::vector<Tensor>{model.run({{"x", in[0].shrink(0, vars[0])}}).at("y")};
  });
  for (int64_t v : sizes) {
    std::vector<Tensor> out = f({batch.buffer}, {N.bind(v)});
    ASSERT_EQ(out[0].shape()[0], v);
    expect_near(out[0].to_vector<float>(), reference(batch.concrete(v)).to_vector<float>(), "jit, N = " + std::to_string(v));
  }
  EXPECT_TRUE(f.captured());
}

TEST(OnnxSymbolic, CnnCompilesOnceForEveryBatchSize) {
  Model model = load(cnn());
  check_sizes_share_kernels(model, Batch({8, 3, 8, 8}), cnn_reference);
}

TEST(OnnxSymbolic, CnnInAJit) {
  Model model = load(cnn());
  check_jit(model, Batch({8, 3, 8, 8}), cnn_reference, {3, 5, 1, 8, 2});
  check_jit(model, Batch({8, 3, 8, 8}), cnn_reference, {1, 1, 4, 8});  // captured at 1
}

TEST(OnnxSymbolic, DynamicReshapesCompileOnceForEveryBatchSize) {
  Model model = load(attention());
  check_sizes_share_kernels(model, Batch({8, 16, 32}), attention_reference);
}

TEST(OnnxSymbolic, DynamicReshapesReplayInAJit) {
  Model model = load(attention());
  check_jit(model, Batch({8, 16, 32}), attention_reference, {3, 5, 2, 8, 1});
}

// Captured while N is bound to 1: every size-1 choice (Expand's 1 to N, the reshapes' placement of
// N among 1s) must have kept the variable, or the replays at other sizes are wrong.
TEST(OnnxSymbolic, DynamicReshapesCapturedAtOneReplayOtherSizes) {
  Model model = load(attention());
  check_jit(model, Batch({8, 16, 32}), attention_reference, {1, 1, 3, 8, 1, 5});
}

// Where a size-1 choice would be fixed at capture: y1 sums Expand(ones (1, 4), Shape(x)) over the
// batch (N per column), y2 sums Unsqueeze(x, 0) (1, N, 4) over the batch axis 1. Captured at N = 1,
// a fixed 1 in place of the variable (an Expand to the bound 1, the batch taken for the new axis)
// would replay [1, 1, 1, 1] and the first row only.
TEST(OnnxSymbolic, SizeOneChoicesKeepTheVariable) {
  ::onnx::ModelProto m = om::model(13);
  om::input(m, {"x", P::FLOAT, {"N", "4"}});
  om::output(m, {"y1", P::FLOAT, {"4"}});
  om::output(m, {"y2", P::FLOAT, {"1", "4"}});
  om::initializer(m, "ones", {1, 4}, {1, 1, 1, 1});
  int64_init(m, "ax0", {1}, {0});
  int64_init(m, "ax1", {1}, {1});
  om::node(m, "Shape", {"x"}, {"s"}, "shape");
  om::node(m, "Expand", {"ones", "s"}, {"e"}, "expand");
  attr(om::node(m, "ReduceSum", {"e", "ax0"}, {"y1"}, "count"), "keepdims", int64_t{0});
  om::node(m, "Unsqueeze", {"x", "ax0"}, {"u"}, "unsqueeze");
  attr(om::node(m, "ReduceSum", {"u", "ax1"}, {"y2"}, "sum_rows"), "keepdims", int64_t{0});
  Model model = load(m);
  Batch batch({8, 4});
  Variable N("N", 1, 8);
  kiln::Jit f([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>& vars) {
    auto out = model.run({{"x", in[0].shrink(0, vars[0])}});
    return std::vector<Tensor>{out.at("y1"), out.at("y2")};
  });
  for (int64_t v : {1, 1, 3, 1, 8, 5}) {
    std::vector<Tensor> out = f({batch.buffer}, {N.bind(v)});
    EXPECT_EQ(out[0].to_vector<float>(), std::vector<float>(4, static_cast<float>(v))) << "N = " << v;
    expect_near(out[1].to_vector<float>(), batch.concrete(v).sum({0}, true).to_vector<float>(), "y2, N = " + std::to_string(v));
  }
  EXPECT_TRUE(f.captured());
  // Squeeze without axes would drop the batch while it is 1, and not at 3: refused
  ::onnx::ModelProto sq = om::model(13);
  om::input(sq, {"x", P::FLOAT, {"N", "4"}});
  om::output(sq, {"y", P::FLOAT, {"?"}});
  om::node(sq, "Squeeze", {"x"}, {"y"}, "squeeze_all");
  kiln::Error e = run_error(load(sq), {{"x", batch.buffer.shrink(0, N.bind(1))}});
  EXPECT_CONTAINS(e.what(), "node 'squeeze_all'");
  EXPECT_CONTAINS(e.what(), "symbolic dimension 'N' (bound to 1)");
}

// The operators listed as keeping a symbolic dimension (symbolic.cpp), each on x (N, 2, 4, 4) as
// one output of a model, in a Jit captured at N = 1 and replayed at other sizes: each output must
// equal the same model fed the rows as a fixed-size tensor.
TEST(OnnxSymbolic, ListedOperatorsReplayCapturedAtOne) {
  ::onnx::ModelProto m = om::model(17);
  om::input(m, {"x", P::FLOAT, {"N", "2", "4", "4"}});
  std::vector<std::string> outs;
  auto out = [&](::onnx::NodeProto* node) {
    outs.push_back(node->output(0));
    om::output(m, {node->output(0), P::FLOAT, {}});
    return node;
  };
  int64_init(m, "ax0", {1}, {0});
  int64_init(m, "ax01", {2}, {0, 1});
  int64_init(m, "ax23", {2}, {2, 3});
  int64_init(m, "zero", {1}, {0});
  int64_init(m, "to_end", {1}, {std::numeric_limits<int64_t>::max()});
  int64_init(m, "start", {2}, {-1, 3});
  int64_init(m, "end", {2}, {std::numeric_limits<int64_t>::min(), 0});
  int64_init(m, "step2", {2}, {-1, -2});
  int64_init(m, "halves", {2}, {1, 1});
  om::initializer(m, "wt", {2, 3, 2, 2}, weights(24, 4));
  om::initializer(m, "in_scale", {2}, {1.5f, 0.5f});
  om::initializer(m, "in_bias", {2}, {0.25f, -1.f});
  om::node(m, "Abs", {"x"}, {"pos"}, "abs");
  om::node(m, "Add", {"pos", "ones"}, {"xp"}, "positive");
  om::initializer(m, "ones", {1}, {1.f});
  auto* avg = out(om::node(m, "AveragePool", {"x"}, {"avg"}, "avgpool"));
  attr(avg, "kernel_shape", {2, 2});
  attr(avg, "pads", {1, 1, 0, 0});
  out(om::node(m, "GlobalMaxPool", {"x"}, {"gmax"}, "gmaxpool"));
  attr(out(om::node(m, "ConvTranspose", {"x", "wt"}, {"convt"}, "convt")), "strides", {2, 2});
  out(om::node(m, "InstanceNormalization", {"x", "in_scale", "in_bias"}, {"inorm"}, "inorm"));
  for (const char* op : {"ReduceSum", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceProd",
                         "ReduceMax", "ReduceMin", "ReduceMean"}) {
    const std::string name = std::string(op) + "_0";
    const bool axes_input = std::string(op) == "ReduceSum" ;  // opset 17: only ReduceSum takes axes as an input
    auto* r = out(axes_input ? om::node(m, op, {"xp", "ax01"}, {name}, name) : om::node(m, op, {"xp"}, {name}, name));
    if (!axes_input) attr(r, "axes", {0, 1});
    const std::string inner = std::string(op) + "_23";
    auto* r2 = out(axes_input ? om::node(m, op, {"xp", "ax23"}, {inner}, inner) : om::node(m, op, {"xp"}, {inner}, inner));
    if (!axes_input) attr(r2, "axes", {2, 3});
  }
  attr(out(om::node(m, "Softmax", {"x"}, {"softmax0"}, "softmax0")), "axis", int64_t{0});
  attr(out(om::node(m, "LogSoftmax", {"x"}, {"logsoftmax0"}, "logsoftmax0")), "axis", int64_t{0});
  out(om::node(m, "Slice", {"x", "zero", "to_end", "ax0"}, {"whole"}, "whole_batch"));
  out(om::node(m, "Slice", {"x", "start", "end", "ax23", "step2"}, {"reversed"}, "reverse_inner"));
  attr(out(om::node(m, "Concat", {"x", "x"}, {"cat"}, "cat")), "axis", int64_t{1});
  auto* split = om::node(m, "Split", {"x", "halves"}, {"half0", "half1"}, "split");
  attr(split, "axis", int64_t{1});
  outs.push_back("half1");
  om::output(m, {"half1", P::FLOAT, {}});
  out(om::node(m, "Dropout", {"x"}, {"dropped"}, "dropout"));
  Model model = load(m);
  Batch batch({8, 2, 4, 4});
  Variable N("N", 1, 8);
  kiln::Jit f([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>& vars) {
    auto r = model.run({{"x", in[0].shrink(0, vars[0])}});
    std::vector<Tensor> v;
    for (const auto& o : outs) v.push_back(r.at(o));
    return v;
  });
  for (int64_t v : {1, 1, 3, 8, 1, 2}) {
    std::vector<Tensor> got = f({batch.buffer}, {N.bind(v)});
    auto want = model.run({{"x", batch.concrete(v)}});
    for (size_t i = 0; i < outs.size(); ++i) {
      ASSERT_EQ(got[i].shape(), want.at(outs[i]).shape()) << outs[i] << ", N = " << v;
      expect_near(got[i].to_vector<float>(), want.at(outs[i]).to_vector<float>(), outs[i] + ", N = " + std::to_string(v));
    }
  }
}

// ---- sizes read as numbers ----

// y = x / N (Shape -> Gather -> Cast -> Div): the output's values are computed from the size.
::onnx::ModelProto divide_by_batch() {
  ::onnx::ModelProto m = om::model(13);
  om::input(m, {"x", P::FLOAT, {"N", "4"}});
  om::output(m, {"y", P::FLOAT, {"N", "4"}});
  int64_init(m, "i0", {}, {0});
  om::node(m, "Shape", {"x"}, {"s"}, "shape");
  om::node(m, "Gather", {"s", "i0"}, {"n"}, "batch");
  attr(om::node(m, "Cast", {"n"}, {"nf"}, "to_float"), "to", int64_t{P::FLOAT});
  om::node(m, "Div", {"x", "nf"}, {"y"}, "divide");
  return m;
}

// y = Range(0, N): a size read on the host as the output's length.
::onnx::ModelProto range_of_batch(int64_t axis) {
  ::onnx::ModelProto m = om::model(13);
  om::input(m, {"x", P::FLOAT, {"N", "4"}});
  om::output(m, {"y", P::INT64, {"?"}});
  int64_init(m, "axis", {}, {axis});
  int64_init(m, "zero", {}, {0});
  int64_init(m, "step", {}, {1});
  om::node(m, "Shape", {"x"}, {"s"}, "shape");
  om::node(m, "Gather", {"s", "axis"}, {"n"}, "size");
  om::node(m, "Range", {"zero", "n", "step"}, {"y"}, "range");
  return m;
}

TEST(OnnxSymbolic, AnOutputComputedFromTheSizeIsAnError) {
  Model model = load(divide_by_batch());
  Variable N("N", 1, 8);
  Tensor buf = Tensor::from_vector(weights(32, 1), {8, 4}).realize();
  kiln::Error e = run_error(model, {{"x", buf.shrink(0, N.bind(3))}});
  EXPECT_EQ(e.code(), ErrorCode::unimplemented);
  EXPECT_CONTAINS(e.what(), "node 'divide'");
  EXPECT_CONTAINS(e.what(), "graph output 'y'");
  EXPECT_CONTAINS(e.what(), "'N' (bound to 3)");
  EXPECT_CONTAINS(e.what(), "Feed fixed sizes, or export the model with that dimension static");
  // fixed feeds: the size is a number like any other
  Tensor x = Tensor::from_vector(weights(12, 1), {3, 4});
  expect_near(model.run({{"x", x}}).at("y").to_vector<float>(), (x / 3.0).to_vector<float>(), "fixed feed");
}

TEST(OnnxSymbolic, ASizeReadOnTheHostIsAnError) {
  Model model = load(range_of_batch(0));
  Variable N("N", 1, 8);
  Tensor buf = Tensor::from_vector(weights(32, 1), {8, 4}).realize();
  kiln::Error e = run_error(model, {{"x", buf.shrink(0, N.bind(5))}});
  EXPECT_EQ(e.code(), ErrorCode::unimplemented);
  EXPECT_CONTAINS(e.what(), "node 'range' (Range");
  EXPECT_CONTAINS(e.what(), "'N' (bound to 5)");
  EXPECT_CONTAINS(e.what(), "through node 'size'");
  EXPECT_CONTAINS(e.what(), "fixed [5]");
  EXPECT_CONTAINS(e.what(), "Feed fixed sizes");
  EXPECT_EQ(model.run({{"x", Tensor::zeros({5, 4})}}).at("y").to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  // the fixed dimension Shape reports is a plain number, symbolic batch or not
  Model fixed_axis = load(range_of_batch(1));
  EXPECT_EQ(fixed_axis.run({{"x", buf.shrink(0, N.bind(5))}}).at("y").to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(OnnxSymbolic, ShapeAsAnOutputIsAnError) {
  ::onnx::ModelProto m = om::model(13);
  om::input(m, {"x", P::FLOAT, {"N", "4"}});
  om::output(m, {"s", P::INT64, {"2"}});
  om::node(m, "Shape", {"x"}, {"s"}, "shape");
  Model model = load(m);
  Variable N("N", 1, 8);
  Tensor buf = Tensor::zeros({8, 4}).realize();
  kiln::Error e = run_error(model, {{"x", buf.shrink(0, N.bind(2))}});
  EXPECT_CONTAINS(e.what(), "node 'shape' makes the graph output 's'");
  EXPECT_EQ(model.run({{"x", Tensor::zeros({2, 4})}}).at("s").to_vector<int64_t>(), (std::vector<int64_t>{2, 4}));
}

// Reshape to (N * 4): a product of the size cannot stay symbolic.
TEST(OnnxSymbolic, AShapeComputedFromTheSizeIsAnError) {
  ::onnx::ModelProto m = om::model(13);
  om::input(m, {"x", P::FLOAT, {"N", "4"}});
  om::output(m, {"y", P::FLOAT, {"?"}});
  int64_init(m, "four", {1}, {4});
  int64_init(m, "start", {1}, {0});
  int64_init(m, "end", {1}, {1});
  om::node(m, "Shape", {"x"}, {"s"}, "shape");
  om::node(m, "Slice", {"s", "start", "end"}, {"n1"}, "take_batch");
  om::node(m, "Mul", {"n1", "four"}, {"total"}, "times4");
  om::node(m, "Reshape", {"x", "total"}, {"y"}, "flatten_all");
  Model model = load(m);
  Variable N("N", 1, 8);
  Tensor buf = Tensor::zeros({8, 4}).realize();
  kiln::Error e = run_error(model, {{"x", buf.shrink(0, N.bind(3))}});
  EXPECT_CONTAINS(e.what(), "node 'flatten_all' (Reshape");
  EXPECT_CONTAINS(e.what(), "(12)");
  EXPECT_CONTAINS(e.what(), "through node 'times4'");
  EXPECT_CONTAINS(e.what(), "N * 16");
  EXPECT_CONTAINS(e.what(), "Feed fixed sizes");
  EXPECT_EQ(model.run({{"x", Tensor::ones({3, 4})}}).at("y").shape(), (Shape{12}));
}

// An operator whose implementation is not known to keep a symbolic dimension (ArgMax counts along
// its axis with a fixed arange), MaxPool's Indices, a Slice or Gather along the symbolic axis:
// refused. (A reversing Slice captured at 1 replayed one row: the regression for getitem's check.)
TEST(OnnxSymbolic, OperatorsNotKnownToKeepTheVariableAreRefused) {
  Variable N("N", 1, 8);
  Tensor buf = Tensor::from_vector(weights(8 * 4 * 4, 3), {8, 1, 4, 4}).realize();
  auto one_node = [](std::initializer_list<std::string> outs) {
    ::onnx::ModelProto m = om::model(13);
    om::input(m, {"x", P::FLOAT, {"N", "1", "4", "4"}});
    for (const auto& o : outs) om::output(m, {o, P::FLOAT, {}});
    return m;
  };
  ::onnx::ModelProto argmax = one_node({"y"});
  argmax.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(P::INT64);
  attr(om::node(argmax, "ArgMax", {"x"}, {"y"}, "argmax"), "axis", int64_t{0});
  kiln::Error e = run_error(load(argmax), {{"x", buf.shrink(0, N.bind(1))}});
  EXPECT_CONTAINS(e.what(), "node 'argmax' (ArgMax");
  EXPECT_CONTAINS(e.what(), "symbolic dimension 'N' (bound to 1)");
  EXPECT_CONTAINS(e.what(), "Feed fixed sizes");
  EXPECT_EQ(load(argmax).run({{"x", Tensor::zeros({3, 1, 4, 4})}}).at("y").shape(), (Shape{1, 1, 4, 4})) << "fixed feeds run";

  ::onnx::ModelProto pool = one_node({"y", "i"});
  pool.mutable_graph()->mutable_output(1)->mutable_type()->mutable_tensor_type()->set_elem_type(P::INT64);
  attr(om::node(pool, "MaxPool", {"x"}, {"y", "i"}, "pool"), "kernel_shape", {2, 2});
  e = run_error(load(pool), {{"x", buf.shrink(0, N.bind(2))}});
  EXPECT_CONTAINS(e.what(), "node 'pool' (MaxPool");

  // Slice along the batch resolves its ends from the bound size: only the whole axis is kept
  ::onnx::ModelProto reverse = one_node({"y"});
  int64_init(reverse, "start", {1}, {-1});
  int64_init(reverse, "end", {1}, {std::numeric_limits<int64_t>::min()});
  int64_init(reverse, "axis", {1}, {0});
  int64_init(reverse, "step", {1}, {-1});
  om::node(reverse, "Slice", {"x", "start", "end", "axis", "step"}, {"y"}, "reverse_batch");
  e = run_error(load(reverse), {{"x", buf.shrink(0, N.bind(1))}});
  EXPECT_CONTAINS(e.what(), "node 'reverse_batch' (Slice");
  EXPECT_CONTAINS(e.what(), "symbolic 'N' (bound to 1");
  EXPECT_EQ(load(reverse).run({{"x", Tensor::zeros({3, 1, 4, 4})}}).at("y").shape(), (Shape{3, 1, 4, 4}));

  ::onnx::ModelProto gather = one_node({"y"});
  int64_init(gather, "idx", {1}, {-1});
  om::node(gather, "Gather", {"x", "idx"}, {"y"}, "last_row");
  e = run_error(load(gather), {{"x", buf.shrink(0, N.bind(3))}});
  EXPECT_CONTAINS(e.what(), "node 'last_row' (Gather");
}

// A fixed size that meets the symbolic one: equal to its value now, it would not be at the next
// call, so it is a loud broadcast error naming the node; a fixed 1 broadcasts to every value.
TEST(OnnxSymbolic, AFixedSizeMeetingTheVariableIsABroadcastError) {
  auto add_to = [](int64_t rows) {
    ::onnx::ModelProto m = om::model(13);
    om::input(m, {"x", P::FLOAT, {"N", "4"}});
    om::output(m, {"y", P::FLOAT, {"N", "4"}});
    om::initializer(m, "c", {rows, 4}, weights(rows * 4, 2));
    om::node(m, "Add", {"x", "c"}, {"y"}, "add");
    return load(m);
  };
  Variable N("N", 1, 8);
  Batch batch({8, 4});
  kiln::Error e = run_error(add_to(3), {{"x", batch.buffer.shrink(0, N.bind(3))}});
  EXPECT_CONTAINS(e.what(), "node 'add' (Add");
  EXPECT_CONTAINS(e.what(), "'N' (3) vs 3");
  Model row = add_to(1);
  kiln::Jit f([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>& vars) {
    return std::vector<Tensor>{row.run({{"x", in[0].shrink(0, vars[0])}}).at("y")};
  });
  Tensor c = Tensor::from_vector(weights(4, 2), {1, 4});
  for (int64_t v : {1, 1, 4, 1, 7}) {
    Tensor y = f({batch.buffer}, {N.bind(v)})[0];
    ASSERT_EQ(y.shape(), (Shape{v, 4}));
    expect_near(y.to_vector<float>(), (batch.concrete(v) + c).to_vector<float>(), "N = " + std::to_string(v));
  }
}

// ---- the feeds against the declared dimensions ----

::onnx::ModelProto two_inputs(const std::string& a_dim, const std::string& b_dim) {
  ::onnx::ModelProto m = om::model(13);
  om::input(m, {"a", P::FLOAT, {a_dim, "4"}});
  om::input(m, {"b", P::FLOAT, {b_dim, "4"}});
  om::output(m, {"y", P::FLOAT, {"?", "4"}});
  om::node(m, "Add", {"a", "b"}, {"y"}, "add");
  return m;
}

TEST(OnnxSymbolic, FeedsMustAgreeOnANamedDimension) {
  Model model = load(two_inputs("N", "N"));
  Variable N("N", 1, 8), M("M", 1, 8);
  Tensor buf = Tensor::ones({8, 4}).realize();
  kiln::Error e = run_error(model, {{"a", buf.shrink(0, N.bind(3))}, {"b", Tensor::ones({3, 4})}});
  EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  EXPECT_CONTAINS(e.what(), "inputs 'a' and 'b' share the dimension 'N'");
  EXPECT_CONTAINS(e.what(), "'a' has the symbolic 'N' (bound to 3) and 'b' has a fixed 3");
  e = run_error(model, {{"a", buf.shrink(0, N.bind(3))}, {"b", buf.shrink(0, M.bind(3))}});
  EXPECT_CONTAINS(e.what(), "'b' has the symbolic 'M' (bound to 3)");
  e = run_error(model, {{"a", Tensor::ones({3, 4})}, {"b", Tensor::ones({2, 4})}});
  EXPECT_CONTAINS(e.what(), "'a' has a fixed 3 and 'b' has a fixed 2");
  // one variable for both: fine, and the result keeps it
  Tensor y = model.run({{"a", buf.shrink(0, N.bind(3))}, {"b", buf.shrink(0, N.bind(3))}}).at("y");
  ASSERT_TRUE(y.symbolic_dim(0));
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(12, 2.f));
  // an unknown dimension ("?") takes anything
  Model unknown = load(two_inputs("?", "?"));
  EXPECT_EQ(unknown.run({{"a", buf.shrink(0, N.bind(2))}, {"b", Tensor::ones({1, 4})}}).at("y").shape(), (Shape{2, 4}));
}

TEST(OnnxSymbolic, ASymbolicFeedOnAFixedDimensionIsAnError) {
  Model model = load(two_inputs("3", "3"));
  Variable N("N", 1, 8);
  Tensor buf = Tensor::ones({8, 4}).realize();
  kiln::Error e = run_error(model, {{"a", buf.shrink(0, N.bind(3))}, {"b", Tensor::ones({3, 4})}});
  EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  EXPECT_CONTAINS(e.what(), "input 'a' declares dimension 0 fixed (3), the feed's is the symbolic 'N' (bound to 3)");
}

}  // namespace
