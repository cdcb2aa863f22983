// model.cpp - Model: parse with ONNX's classes, check everything kiln can check at load, run.
//
// Load: parse -> the default domain's opset -> every node's operator, opset and attributes
// against the table (ops.cpp) -> the initializers (realized once, on the default device) -> the
// nodes in dependency order (a value no one defines or a cycle is an error).
// Run: the feeds checked against the declared inputs, then each node's operator in order; an
// error inside an operator is re-thrown naming the node.
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <mutex>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "kiln/onnx.hpp"
#include "ops.hpp"
#include "run_state.hpp"
#include "symbolic.hpp"
#include "tensor_proto.hpp"

namespace kiln::onnx {

// The newest default-domain opset whose operators kiln implements (ONNX 1.22 ships opset 23).
constexpr int64_t kMaxOpset = 23;

struct Model::Impl {
  std::string name, base_dir;
  ::onnx::ModelProto proto;
  int64_t opset = 0;
  std::vector<ValueInfo> inputs, outputs;
  std::vector<const ::onnx::NodeProto*> order;  // nodes in dependency order
  std::unordered_map<std::string, Tensor> initializers;  // on the default device
  std::unordered_map<std::string, detail::Layout> layouts;  // how each initializer is stored (absent: as given)
  mutable std::mutex cache_mu;
  mutable std::unordered_map<std::string, std::unordered_map<std::string, Tensor>> per_device;
  mutable detail::ConstantCache constants;  // attribute tensors, per device

  [[noreturn]] void fail(const std::string& what, ErrorCode code) const { throw Error(code, name + ": " + what); }
  [[noreturn]] void fail_node(const ::onnx::NodeProto& n, const std::string& what, ErrorCode code) const {
    std::string id = n.name();
    for (int i = 0; id.empty() && i < n.output_size(); ++i) id = n.output(i);  // unnamed: its first named output
    fail("node '" + id + "' (" + n.op_type() + ", opset " + std::to_string(opset) + "): " + what, code);
  }
  void check_domains() const;
  void check_nodes();
  void sort_nodes();
  const std::unordered_map<std::string, Tensor>& initializers_on(const std::string& device) const;
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& feeds, const std::string& device) const;
};

namespace {

// The initializers stored output channel innermost (Layout::out_channels_last): the weights of
// ungrouped Convs whose window covers more than one position. kiln's plans for such convolutions
// vector the output channels and copy a panel of the weight per block of input channels; from the
// file's (O, I, k...) order that copy gathers one element from each of 16-32 output channels' rows
// at a time, a stream per channel, which the prefetchers do not follow once the weights outgrow the
// caches (ResNet-18 at batch 1: its 7 x 7 x 512 convolutions ran at 190 GFLOP/s, 320 stored this
// way). 1 x 1 convolutions are matrix products whose plans broadcast weights along a row of W
// (MobileNetV2's ran up to 1.6x slower transposed), and grouped ones read a channel's own few
// weights: both keep the file's order. Values and shapes are the same either way (a view).
std::unordered_set<std::string> packed_conv_weights(const ::onnx::GraphProto& g) {
  std::unordered_map<std::string, const ::onnx::TensorProto*> inits;
  for (const auto& t : g.initializer()) inits.emplace(t.name(), &t);
  std::unordered_set<std::string> out;
  for (const auto& n : g.node()) {
    if (n.op_type() != "Conv" || !(n.domain().empty() || n.domain() == "ai.onnx") || n.input_size() < 2) continue;
    int64_t group = 1;
    for (const auto& a : n.attribute())
      if (a.name() == "group") group = a.i();
    auto it = inits.find(n.input(1));
    if (group != 1 || it == inits.end() || it->second->dims_size() < 3) continue;
    const auto& dims = it->second->dims();
    bool window = false, empty = false;
    for (int i = 0; i < dims.size(); ++i) {
      empty = empty || dims[i] <= 0;  // (a bad shape is tensor_from_proto's to report)
      window = window || (i >= 2 && dims[i] > 1);
    }
    if (window && !empty) out.insert(n.input(1));
  }
  return out;
}

ValueInfo value_info(const ::onnx::ValueInfoProto& v, const Model::Impl& m) {
  ValueInfo info{v.name(), dtypes::void_, {}};
  if (!v.type().has_tensor_type())
    m.fail("graph value '" + v.name() + "' is not a tensor (sequences, maps and optionals are not supported)",
           ErrorCode::unimplemented);
  const auto& tt = v.type().tensor_type();
  auto dt = detail::dtype_of(tt.elem_type());
  if (!dt)
    m.fail("graph value '" + v.name() + "' has element type " + detail::onnx_type_name(tt.elem_type()) +
               ", which kiln does not support", ErrorCode::unimplemented);
  info.dtype = *dt;
  if (tt.has_shape())
    for (const auto& d : tt.shape().dim())
      info.dims.push_back(d.has_dim_value() ? std::to_string(d.dim_value()) : d.has_dim_param() ? d.dim_param() : "?");
  return info;
}

// "(2, 3)", "(N, 3)", "()" for messages.
std::string dims_text(const std::vector<std::string>& dims) {
  std::string out;
  for (const auto& d : dims) out += (out.empty() ? "" : ", ") + d;
  return "(" + out + ")";
}
std::string dims_text(const Shape& shape) {
  std::vector<std::string> dims;
  for (auto d : shape) dims.push_back(std::to_string(d));
  return dims_text(dims);
}

bool fixed(const ValueInfo& v) {
  for (const auto& d : v.dims)
    if (d.empty() || !std::isdigit(static_cast<unsigned char>(d[0]))) return false;
  return true;
}

}  // namespace

// Only the default domain's operators exist in kiln: a node of another domain is named at load.
void Model::Impl::check_domains() const {
  for (const auto& n : proto.graph().node())
    if (!n.domain().empty() && n.domain() != "ai.onnx")
      fail_node(n, "operators of domain '" + n.domain() + "' are not supported (only the default ONNX domain)",
                ErrorCode::unimplemented);
}

void Model::Impl::check_nodes() {
  check_domains();
  for (const auto& n : proto.graph().node()) {
    const detail::OpDef* op = detail::find_op(n.op_type());
    if (!op)
      fail_node(n, "operator " + n.op_type() + " is not supported by kiln (kiln::onnx::supported_ops() lists those that are)",
                ErrorCode::unimplemented);
    if (opset < op->since)
      fail_node(n, n.op_type() + " does not exist before opset " + std::to_string(op->since) +
                       " (the model imports opset " + std::to_string(opset) + ")", ErrorCode::invalid_argument);
    for (const auto& a : n.attribute()) {
      bool known = false;
      for (auto k : op->attrs) known = known || k == a.name();
      if (!known) {
        std::string names;
        for (auto k : op->attrs) names += (names.empty() ? "" : ", ") + std::string(k);
        fail_node(n, "attribute '" + a.name() + "' is not supported by kiln's " + n.op_type() + " (" +
                         (names.empty() ? "kiln's " + n.op_type() + " takes no attributes"
                                        : n.op_type() + "'s attributes are: " + names) +
                         "; a misspelt name, or one of a newer opset than kiln implements)",
                     ErrorCode::unimplemented);
      }
      if (a.type() == ::onnx::AttributeProto::GRAPH || a.type() == ::onnx::AttributeProto::GRAPHS)
        fail_node(n, "subgraph attribute '" + a.name() + "' (control flow) is not supported", ErrorCode::unimplemented);
    }
  }
}

void Model::Impl::sort_nodes() {
  const auto& g = proto.graph();
  std::unordered_set<std::string> defined;
  for (const auto& i : g.input()) defined.insert(i.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& o : g.node(i).output())
      if (!o.empty()) {
        if (defined.count(o) || !producer.emplace(o, i).second)
          fail_node(g.node(i), "output '" + o + "' is defined twice (ONNX graphs are single-assignment)",
                    ErrorCode::invalid_argument);
      }
  // Kahn's algorithm over the nodes, keeping the file's order among ready nodes.
  std::vector<int> pending(g.node_size(), 0);
  std::unordered_map<std::string, std::vector<int>> users;
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& in : g.node(i).input()) {
      if (in.empty() || defined.count(in)) continue;
      if (!producer.count(in))
        fail_node(g.node(i), "input '" + in + "' is not a graph input, an initializer or any node's output",
                  ErrorCode::invalid_argument);
      ++pending[i];
      users[in].push_back(i);
    }
  std::set<int> ready;
  for (int i = 0; i < g.node_size(); ++i)
    if (pending[i] == 0) ready.insert(i);
  while (!ready.empty()) {
    int i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(&g.node(i));
    for (const auto& o : g.node(i).output())
      for (int u : users[o])
        if (--pending[u] == 0) ready.insert(u);
  }
  if (static_cast<int>(order.size()) != g.node_size())
    for (int i = 0; i < g.node_size(); ++i)
      if (pending[i] > 0)
        fail_node(g.node(i), "is part of a cycle (its inputs depend on its own outputs)", ErrorCode::invalid_argument);
  for (const auto& o : g.output())
    if (!defined.count(o.name()) && !producer.count(o.name()))
      fail("graph output '" + o.name() + "' is produced by no node", ErrorCode::invalid_argument);
}

const std::unordered_map<std::string, Tensor>& Model::Impl::initializers_on(const std::string& device) const {
  const std::string dev = device.empty() ? default_device() : device;
  if (dev == default_device()) return initializers;
  std::lock_guard<std::mutex> lock(cache_mu);
  auto it = per_device.find(dev);
  if (it != per_device.end()) return it->second;
  auto& moved = per_device[dev];
  for (const auto& [k, t] : initializers) {  // flat copies of the storage, realized, viewed as tensor_from_proto views them
    auto layout = layouts.find(k);
    const detail::Layout how = layout == layouts.end() ? detail::Layout::as_given : layout->second;
    Tensor stored = t.permute(detail::layout_storage(how, t.ndim()));
    Tensor flat = stored.reshape({t.numel()}).to(dev);
    flat.realize();
    moved.emplace(k, flat.reshape(stored.shape()).permute(detail::layout_view(how, t.ndim())));
  }
  return moved;
}

std::map<std::string, Tensor> Model::Impl::run(const std::map<std::string, Tensor>& feeds, const std::string& device) const {
  const std::string dev = device.empty() ? default_device() : device;
  detail::RunState state(name, dev, base_dir, &constants);
  for (const auto& [k, t] : initializers_on(dev)) state.set(k, t);
  std::unordered_set<std::string> declared;
  for (const auto& in : proto.graph().input()) declared.insert(in.name());
  for (const auto& [k, t] : feeds) {
    if (!declared.count(k)) {
      std::string names;
      for (const auto& i : inputs) names += (names.empty() ? "" : ", ") + i.name;
      fail("feed '" + k + "' is not an input of the model (its inputs: " + names + ")", ErrorCode::invalid_argument);
    }
    state.set(k, t.device() == dev ? t : t.to(dev));
  }
  for (const auto& in : inputs) {
    const Tensor* t = state.find(in.name);
    if (!t)
      fail("input '" + in.name + "' is not fed (the model declares it " + in.dtype.name() + " " + dims_text(in.dims) + ")",
           ErrorCode::invalid_argument);
    if (t->dtype() != in.dtype)
      fail("input '" + in.name + "' is declared " + in.dtype.name() + ", the feed is " + t->dtype().name() +
               " (cast the feed to " + in.dtype.name() + ")", ErrorCode::invalid_argument);
    if (!in.dims.empty()) {
      bool ok = in.dims.size() == t->shape().size();
      for (size_t d = 0; ok && d < in.dims.size(); ++d)
        if (fixed(ValueInfo{"", in.dtype, {in.dims[d]}})) ok = std::stoll(in.dims[d]) == t->shape()[d];
      if (!ok)
        fail("input '" + in.name + "' is declared " + dims_text(in.dims) + ", the feed is " + dims_text(t->shape()) +
                 " (a named dimension takes any size, a number exactly that size)", ErrorCode::invalid_argument);
    }
  }
  detail::check_feed_dims(inputs, state, name);  // symbolic dimensions: symbolic.hpp
  for (const auto* n : order) {
    detail::Node node(*n, opset, state);
    const detail::OpDef* op = detail::find_op(n->op_type());
    std::vector<Tensor> outs;
    try {
      detail::check_symbolic_inputs(node);
      outs = op->fn(node);
    } catch (const Error& e) {
      const std::string msg = e.what();
      if (msg.rfind(name + ": node '", 0) == 0) throw;  // already names the node
      // A shape or dtype the operator refuses usually comes from one input (an initializer that
      // does not fit, a feed of the wrong size): the inputs' shapes say which to fix.
      std::string ins;
      for (int i = 0; i < n->input_size(); ++i) {
        const std::string& in = n->input(i);
        const Tensor* t = in.empty() ? nullptr : state.find(in);
        if (!t) continue;
        const char* kind = feeds.count(in) ? " (graph input)" : initializers.count(in) ? " (initializer)" : "";
        ins += (ins.empty() ? "" : ", ") + ("'" + in + "' ") + t->dtype().name() + " " + dims_text(t->shape()) + kind;
      }
      node.fail(ins.empty() ? msg : msg + " [the node's inputs: " + ins + "]", e.code());
    }
    for (size_t i = 0; i < node.num_outputs(); ++i) {
      if (!node.wants(i)) continue;
      if (i >= outs.size()) node.fail("kiln produced " + std::to_string(outs.size()) + " outputs, the model uses output " +
                                      std::to_string(i), ErrorCode::unimplemented);
      state.set(n->output(static_cast<int>(i)), outs[i]);
    }
    detail::propagate_taint(*n, opset, *op, state, outs);
  }
  detail::check_outputs(outputs, state, name);
  std::map<std::string, Tensor> result;
  for (const auto& o : proto.graph().output()) result.emplace(o.name(), *state.find(o.name()));
  return result;
}

Model Model::from_bytes(std::string_view bytes, const std::string& base_dir, const std::string& name) {
  auto m = std::make_shared<Impl>();
  m->name = name.empty() ? "<bytes>" : name;
  m->base_dir = base_dir;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !m->proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    m->fail("not an ONNX model (the protobuf does not parse: a truncated or corrupt file?)", ErrorCode::data_loss);
  return Model(load_checked(std::move(m)));
}

Model Model::load(const std::string& path) {
  std::string bytes;
  if (!detail::read_file(path, bytes)) throw Error(ErrorCode::not_found, path + ": cannot open the model file");
  auto m = std::make_shared<Impl>();
  m->name = path;
  m->base_dir = std::filesystem::path(path).parent_path().string();
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !m->proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    m->fail("not an ONNX model (the protobuf does not parse: a truncated or corrupt file?)", ErrorCode::data_loss);
  return Model(load_checked(std::move(m)));
}

std::shared_ptr<const Model::Impl> Model::load_checked(std::shared_ptr<Impl> m) {
  const auto& g = m->proto.graph();
  bool has_default = false;
  for (const auto& imp : m->proto.opset_import())
    if (imp.domain().empty() || imp.domain() == "ai.onnx") {
      m->opset = imp.version();
      has_default = true;
    }
  if (!has_default) {
    if (m->proto.opset_import_size() == 0 && m->proto.ir_version() < 3) m->opset = 1;  // IR 1-2 predate opset imports
    else if (g.node_size() > 0) {
      m->check_domains();  // a model of another domain only: say which (ai.onnx.ml, training, ...)
      m->fail("imports no opset of the default ONNX domain", ErrorCode::invalid_argument);
    }
  }
  if (m->opset > kMaxOpset || m->opset < 1)
    if (has_default)
      m->fail("imports opset " + std::to_string(m->opset) + "; kiln supports opsets 1 to " + std::to_string(kMaxOpset) +
                  " (re-export the model with an opset in that range)", ErrorCode::unimplemented);
  m->check_nodes();
  m->sort_nodes();
  std::unordered_set<std::string> init_names;
  const std::unordered_set<std::string> packed = packed_conv_weights(g);
  for (const auto& t : g.initializer()) {
    init_names.insert(t.name());
    const auto layout = packed.count(t.name()) ? detail::Layout::out_channels_last : detail::Layout::as_given;
    if (layout != detail::Layout::as_given) m->layouts[t.name()] = layout;
    m->initializers.emplace(t.name(), detail::tensor_from_proto(t, m->base_dir, m->name + ": initializer '" + t.name() + "'",
                                                                 default_device(), layout));
  }
  if (g.sparse_initializer_size() > 0) m->fail("sparse initializers are not supported", ErrorCode::unimplemented);
  for (const auto& in : g.input()) {
    ValueInfo v = value_info(in, *m);
    auto it = m->initializers.find(in.name());
    if (it != m->initializers.end()) {  // a declared default: its shape must match the declaration
      const Tensor& t = it->second;
      // (a declaration without a shape says nothing about it; its dtype must still agree)
      bool ok = t.dtype() == v.dtype && (!in.type().tensor_type().has_shape() || v.dims.size() == t.shape().size());
      for (size_t d = 0; ok && d < v.dims.size(); ++d)
        if (fixed(ValueInfo{"", v.dtype, {v.dims[d]}})) ok = std::stoll(v.dims[d]) == t.shape()[d];
      if (!ok)
        m->fail("initializer '" + in.name() + "' is " + t.dtype().name() + " " + dims_text(t.shape()) +
                    ", its graph input declares " + v.dtype.name() + " " + dims_text(v.dims) +
                    " (the initializer and the graph input disagree: fix one of them, or drop the input's declaration)",
                ErrorCode::invalid_argument);
      continue;
    }
    m->inputs.push_back(std::move(v));
  }
  for (const auto& out : g.output()) m->outputs.push_back(value_info(out, *m));
  return m;
}

const std::vector<ValueInfo>& Model::inputs() const { return impl_->inputs; }
const std::vector<ValueInfo>& Model::outputs() const { return impl_->outputs; }
int64_t Model::opset() const { return impl_->opset; }
const std::string& Model::name() const { return impl_->name; }
std::map<std::string, Tensor> Model::run(const std::map<std::string, Tensor>& feeds, const std::string& device) const {
  return impl_->run(feeds, device);
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> out;
  for (const auto& d : detail::op_table()) out.emplace_back(d.op);
  return out;
}

}  // namespace kiln::onnx
