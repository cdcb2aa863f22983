// tests/onnx/model_builder.hpp - small ONNX models built with ONNX's own protobuf classes, for the
// loader's error tests, its fuzzer and `kiln run`'s tests (header-only; link onnx_proto).
#pragma once
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

namespace kiln::test::onnx_models {

// A value declaration: name, element type, dims (a number is a fixed size, "N" a symbolic one).
struct Value {
  std::string name;
  int32_t type = ::onnx::TensorProto::FLOAT;
  std::vector<std::string> dims;
};

inline void declare(::onnx::ValueInfoProto* v, const Value& d) {
  v->set_name(d.name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(d.type);
  auto* shape = tt->mutable_shape();
  for (const auto& s : d.dims) {
    auto* dim = shape->add_dim();
    if (!s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-')) dim->set_dim_value(std::stoll(s));
    else dim->set_dim_param(s);
  }
}

// A model importing the default domain at `opset`, with no nodes yet.
inline ::onnx::ModelProto model(int64_t opset = 13) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("kiln tests");
  auto* imp = m.add_opset_import();
  imp->set_domain("");
  imp->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

inline ::onnx::NodeProto* node(::onnx::ModelProto& m, const std::string& op, std::initializer_list<std::string> in,
                               std::initializer_list<std::string> out, const std::string& name = "") {
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : in) n->add_input(i);
  for (const auto& o : out) n->add_output(o);
  return n;
}

inline void input(::onnx::ModelProto& m, const Value& v) { declare(m.mutable_graph()->add_input(), v); }
inline void output(::onnx::ModelProto& m, const Value& v) { declare(m.mutable_graph()->add_output(), v); }

// A float initializer (raw_data) of these dims and values.
inline ::onnx::TensorProto* initializer(::onnx::ModelProto& m, const std::string& name, std::vector<int64_t> dims,
                                        const std::vector<float>& values) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::FLOAT);
  for (auto d : dims) t->add_dims(d);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return t;
}

inline void save(const ::onnx::ModelProto& m, const std::string& path) {
  std::ofstream f(path, std::ios::binary);
  m.SerializeToOstream(&f);
}

// y = relu(x @ w + b) with x: float (N, 4), w (4, 3), b (3): a small model with initializers.
inline ::onnx::ModelProto dense_relu(int64_t opset = 13) {
  ::onnx::ModelProto m = model(opset);
  input(m, {"x", ::onnx::TensorProto::FLOAT, {"N", "4"}});
  output(m, {"y", ::onnx::TensorProto::FLOAT, {"N", "3"}});
  std::vector<float> w(12), b{0.5f, -0.25f, 0.f};
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 5) * 0.25f - 0.5f;
  initializer(m, "w", {4, 3}, w);
  initializer(m, "b", {3}, b);
  node(m, "MatMul", {"x", "w"}, {"xw"}, "project");
  node(m, "Add", {"xw", "b"}, {"z"}, "bias");
  node(m, "Relu", {"z"}, {"y"}, "act");
  return m;
}

// y = relu(x * s + b) with x: float (2, 3), s (2, 3), b (3): elementwise only, with initializers.
inline ::onnx::ModelProto scale_shift(int64_t opset = 13) {
  ::onnx::ModelProto m = model(opset);
  input(m, {"x", ::onnx::TensorProto::FLOAT, {"2", "3"}});
  output(m, {"y", ::onnx::TensorProto::FLOAT, {"2", "3"}});
  initializer(m, "s", {2, 3}, {1.f, -2.f, 0.5f, 3.f, -1.f, 0.25f});
  initializer(m, "b", {3}, {0.5f, -0.25f, 1.f});
  node(m, "Mul", {"x", "s"}, {"xs"}, "scale");
  node(m, "Add", {"xs", "b"}, {"z"}, "shift");
  node(m, "Relu", {"z"}, {"y"}, "act");
  return m;
}

}  // namespace kiln::test::onnx_models
