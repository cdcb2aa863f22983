// node.cpp - Node: an operator's view of its ONNX node (inputs, attributes, errors).
#include "node.hpp"

#include <algorithm>

#include <onnx/onnx_pb.h>

#include "run_state.hpp"
#include "tensor_proto.hpp"

namespace kiln::onnx::detail {

const std::string& Node::op_type() const { return proto_.op_type(); }
const std::string& Node::name() const {
  if (!proto_.name().empty()) return proto_.name();
  for (const auto& o : proto_.output())  // (a leading optional output may be absent: "")
    if (!o.empty()) return o;
  return proto_.name();
}
const std::string& Node::device() const { return run_.device(); }

void Node::fail(const std::string& what, ErrorCode code) const {
  throw Error(code, run_.model() + ": node '" + name() + "' (" + op_type() + ", opset " + std::to_string(opset_) +
                        "): " + what);
}

int Node::axis(int64_t a, int rank) const {
  const int64_t r = std::max(rank, 1);  // a 0-d tensor takes axis 0 / -1, as numpy's keepdims views
  if (a < -r || a >= r)
    fail("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank), ErrorCode::invalid_argument);
  return static_cast<int>(a < 0 ? a + r : a);
}

size_t Node::num_inputs() const { return static_cast<size_t>(proto_.input_size()); }
bool Node::has(size_t i) const { return i < num_inputs() && !proto_.input(static_cast<int>(i)).empty(); }

const Tensor& Node::in(size_t i) const {
  if (!has(i)) fail("input " + std::to_string(i) + " is required but absent", ErrorCode::invalid_argument);
  const std::string& n = proto_.input(static_cast<int>(i));
  const Tensor* t = run_.find(n);
  if (!t) fail("input '" + n + "' has no value", ErrorCode::internal);
  return *t;
}

std::optional<Tensor> Node::opt(size_t i) const {
  if (!has(i)) return std::nullopt;
  return in(i);
}

namespace {

std::vector<int64_t> read_ints(const Tensor& t) {
  if (t.dtype().is_float()) return t.cast(dtypes::int64).to_vector<int64_t>();
  return t.dtype() == dtypes::int64 ? t.to_vector<int64_t>() : t.cast(dtypes::int64).to_vector<int64_t>();
}

constexpr const char* kSymbolicFix =
    "; a kiln::Jit replaying the graph with another size would compute with the old one. Feed fixed sizes, or export "
    "the model with that dimension static";

}  // namespace

// A host read of input i must not fix a symbolic size into the graph (see node.hpp). The input's
// own symbolic dimensions: its element count would be read as fixed.
void Node::check_host_read(size_t i) const {
  const Tensor& t = in(i);
  const std::string& name = proto_.input(static_cast<int>(i));
  for (int a = 0; a < t.ndim(); ++a)
    if (auto v = t.symbolic_dim(a))
      fail("input " + std::to_string(i) + " ('" + name + "') has the symbolic dimension '" + v->name() + "' (bound to " +
               std::to_string(v->value()) + ") and is read on the host as " + std::to_string(t.numel()) + " fixed numbers" +
               kSymbolicFix, ErrorCode::unimplemented);
}

// ... and its value must not be computed from a symbolic size (see shape_ints for the exception).
void Node::check_untainted(size_t i) const {
  check_host_read(i);
  const std::string& name = proto_.input(static_cast<int>(i));
  if (const Taint* taint = run_.taint(name)) {
    std::string values;
    for (int64_t v : read_ints(in(i))) values += (values.empty() ? "" : ", ") + std::to_string(v);
    fail("input " + std::to_string(i) + " ('" + name + "') is computed from the symbolic dimension " + taint->dim +
             " (through node '" + taint->node + "') and would be read as the fixed [" + values + "]" + kSymbolicFix,
         ErrorCode::unimplemented);
  }
}

std::vector<int64_t> Node::ints(size_t i) const {
  check_untainted(i);
  return read_ints(in(i));
}

Node::ShapeInts Node::shape_ints(size_t i) const {
  check_host_read(i);
  ShapeInts r{read_ints(in(i)), {}};
  r.vars.resize(r.values.size());
  const std::string& name = proto_.input(static_cast<int>(i));
  const Taint* taint = run_.taint(name);
  if (!taint) return r;
  if (taint->elems.size() != r.values.size())
    fail("the shape input '" + name + "' is computed from the symbolic dimension " + taint->dim + " (through node '" + taint->node +
             "') by operators kiln cannot follow (it follows Shape, Gather, Slice, Concat, (Un)Squeeze, Reshape, Cast and the "
             "like, which move sizes as they are)" + kSymbolicFix, ErrorCode::unimplemented);
  for (size_t k = 0; k < r.values.size(); ++k) {
    if (taint->elems[k].var) r.vars[k] = taint->elems[k].var;
    else if (taint->elems[k].depends)
      fail("element " + std::to_string(k) + " (" + std::to_string(r.values[k]) + ") of the shape input '" + name +
               "' is computed from the symbolic dimension " + taint->dim + " (through node '" + taint->node +
               "'), not equal to it (a product such as N * 16 cannot stay symbolic)" + kSymbolicFix, ErrorCode::unimplemented);
  }
  return r;
}

std::vector<double> Node::doubles(size_t i) const {
  check_untainted(i);
  const Tensor& t = in(i);
  return t.dtype() == dtypes::float64 ? t.to_vector<double>() : t.cast(dtypes::float64).to_vector<double>();
}

int64_t Node::int_scalar(size_t i) const {
  auto v = ints(i);
  if (v.size() != 1) fail("input " + std::to_string(i) + " must hold one value, it holds " + std::to_string(v.size()),
                          ErrorCode::invalid_argument);
  return v[0];
}

double Node::double_scalar(size_t i) const {
  auto v = doubles(i);
  if (v.size() != 1) fail("input " + std::to_string(i) + " must hold one value, it holds " + std::to_string(v.size()),
                          ErrorCode::invalid_argument);
  return v[0];
}

size_t Node::num_outputs() const { return static_cast<size_t>(proto_.output_size()); }
bool Node::wants(size_t i) const { return i < num_outputs() && !proto_.output(static_cast<int>(i)).empty(); }

const ::onnx::AttributeProto* Node::attr(const char* name) const {
  for (const auto& a : proto_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool Node::has_attr(const char* name) const { return attr(name) != nullptr; }

int64_t Node::attr_int(const char* name, int64_t fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  if (a->type() != ::onnx::AttributeProto::INT) fail(std::string("attribute '") + name + "' must be an INT");
  return a->i();
}

double Node::attr_float(const char* name, double fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  if (a->type() == ::onnx::AttributeProto::INT) return static_cast<double>(a->i());
  if (a->type() != ::onnx::AttributeProto::FLOAT) fail(std::string("attribute '") + name + "' must be a FLOAT");
  return a->f();
}

std::string Node::attr_string(const char* name, const std::string& fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  if (a->type() != ::onnx::AttributeProto::STRING) fail(std::string("attribute '") + name + "' must be a STRING");
  return a->s();
}

std::vector<int64_t> Node::attr_ints(const char* name, std::vector<int64_t> fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  if (a->type() == ::onnx::AttributeProto::INT) return {a->i()};
  if (a->type() != ::onnx::AttributeProto::INTS) fail(std::string("attribute '") + name + "' must be INTS");
  return {a->ints().begin(), a->ints().end()};
}

std::vector<double> Node::attr_floats(const char* name, std::vector<double> fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  if (a->type() == ::onnx::AttributeProto::FLOAT) return {a->f()};
  if (a->type() != ::onnx::AttributeProto::FLOATS) fail(std::string("attribute '") + name + "' must be FLOATS");
  return {a->floats().begin(), a->floats().end()};
}

std::vector<std::string> Node::attr_strings(const char* name, std::vector<std::string> fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  if (a->type() == ::onnx::AttributeProto::STRING) return {a->s()};
  if (a->type() != ::onnx::AttributeProto::STRINGS) fail(std::string("attribute '") + name + "' must be STRINGS");
  return {a->strings().begin(), a->strings().end()};
}

std::optional<Tensor> Node::attr_tensor(const char* name) const {
  const auto* a = attr(name);
  if (!a) return std::nullopt;
  if (a->type() != ::onnx::AttributeProto::TENSOR) fail(std::string("attribute '") + name + "' must be a TENSOR");
  auto make = [&] {
    return tensor_from_proto(a->t(), run_.base_dir(), run_.model() + ": node '" + this->name() + "' attribute '" + name + "'",
                             run_.device());
  };
  return run_.constants() ? run_.constants()->get(a, run_.device(), make) : make();
}

}  // namespace kiln::onnx::detail
