// frontends/python/src/bind_onnx.cpp - kiln._kiln.onnx, the bindings of kiln/onnx.hpp (DESIGN
// §5.3) that the pure Python kiln.onnx wraps: Model (load, from_bytes, inputs, outputs, opset,
// run), ValueInfo, load_tensor / tensor_from_bytes for ONNX TensorProto files, supported_ops().
// Only in a build with the library kiln::onnx (KILN_HAVE_ONNX, set by frontends/python/CMakeLists.txt
// when ONNX's C++ package was found); otherwise bind_onnx binds nothing and `import kiln.onnx`
// raises ImportError. The GIL is released while models are read (initializers are realized at
// load), while run() builds the graph (ops read some inputs on the host, which runs kernels) and
// while its outputs are realized.
#include "common.hpp"

#ifdef KILN_HAVE_ONNX
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <string>
#include <vector>

#include "kiln/onnx.hpp"

namespace kiln_py {

namespace {

namespace kx = kiln::onnx;

// feeds: a dict of str to Tensor (kiln.onnx converts numpy arrays and Python data before this).
std::map<std::string, Tensor> feeds_of(nb::handle feeds) {
  if (!nb::isinstance<nb::dict>(feeds))
    throw nb::type_error(("Model.run(): feeds must be a dict of input name to Tensor, got " + py_type_name(feeds)).c_str());
  std::map<std::string, Tensor> out;
  for (auto [k, v] : nb::borrow<nb::dict>(feeds)) {
    if (!nb::isinstance<nb::str>(k))
      throw nb::type_error(("Model.run(): input names must be str, got " + py_type_name(k)).c_str());
    if (!nb::isinstance<Tensor>(v))
      throw nb::type_error(("Model.run(): the feed '" + nb::cast<std::string>(k) + "' must be a Tensor, got " + py_type_name(v))
                               .c_str());
    out.emplace(nb::cast<std::string>(k), nb::cast<Tensor>(v));
  }
  return out;
}

std::string dims_repr(const std::vector<std::string>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i];
  return s + (dims.size() == 1 ? ",)" : ")");
}

}  // namespace

void bind_onnx(nb::module_& m) {
  nb::module_ o = m.def_submodule("onnx", "kiln::onnx: ONNX models on kiln (kiln.onnx wraps this)");

  nb::class_<kx::ValueInfo>(o, "ValueInfo")
      .def_ro("name", &kx::ValueInfo::name)
      .def_ro("dtype", &kx::ValueInfo::dtype)
      // as written in the model: "3" for a fixed size, a name such as "N" for a symbolic one, "?" unknown
      .def_ro("dims", &kx::ValueInfo::dims)
      .def("__repr__", [](const kx::ValueInfo& v) {
        return "ValueInfo(name='" + v.name + "', dtype=dtypes." + (v.dtype.is_bool() ? std::string("bool") : v.dtype.name()) +
               ", dims=" + dims_repr(v.dims) + ")";
      });

  nb::class_<kx::Model>(o, "Model")
      .def_static(
          "load",
          [](const std::string& path) {
            nb::gil_scoped_release release;
            return kx::Model::load(path);
          },
          nb::arg("path"))
      .def_static(
          "from_bytes",
          [](nb::bytes data, const std::string& base_dir, const std::string& name) {
            std::string bytes(data.c_str(), data.size());  // copied while the GIL is held
            nb::gil_scoped_release release;
            return kx::Model::from_bytes(bytes, base_dir, name);
          },
          nb::arg("data"), nb::arg("base_dir") = "", nb::arg("name") = "")
      .def_prop_ro("inputs", &kx::Model::inputs)
      .def_prop_ro("outputs", &kx::Model::outputs)
      .def_prop_ro("opset", &kx::Model::opset)
      .def_prop_ro("name", &kx::Model::name)
      // -> {output name: Tensor}; lazy unless realize (then realized together, in one schedule)
      .def(
          "run",
          [](const kx::Model& model, nb::handle feeds, nb::handle device, bool realize) {
            auto in = feeds_of(feeds);
            std::string dev = device_arg(device, "Model.run");
            nb::gil_scoped_release release;
            auto out = model.run(in, dev);
            if (realize) {
              std::vector<Tensor> all;
              for (auto& [k, t] : out) all.push_back(t);
              Tensor::realize_all(all);  // the tensors share their state with those in `out`
            }
            return out;
          },
          nb::arg("feeds"), nb::arg("device").none() = nb::none(), nb::arg("realize") = false)
      .def("__repr__", [](const kx::Model& model) {
        return "<kiln.onnx model " + model.name() + ", opset " + std::to_string(model.opset()) + ", " +
               std::to_string(model.inputs().size()) + " inputs, " + std::to_string(model.outputs().size()) + " outputs>";
      });

  o.def(
      "load_tensor",
      [](const std::string& path, nb::handle device) {
        std::string dev = device_arg(device, "load_tensor");
        nb::gil_scoped_release release;
        return kx::load_tensor(path, dev);
      },
      nb::arg("path"), nb::arg("device").none() = nb::none());
  o.def(
      "tensor_from_bytes",
      [](nb::bytes data, const std::string& what, nb::handle device) {
        std::string bytes(data.c_str(), data.size());
        std::string dev = device_arg(device, "tensor_from_bytes");
        nb::gil_scoped_release release;
        return kx::tensor_from_bytes(bytes, what, dev);
      },
      nb::arg("data"), nb::arg("what") = "<bytes>", nb::arg("device").none() = nb::none());
  o.def("supported_ops", &kx::supported_ops);
}

}  // namespace kiln_py

#else

namespace kiln_py {
// kiln was configured without ONNX's C++ package: no kiln._kiln.onnx (kiln.onnx says so on import).
void bind_onnx(nb::module_&) {}
}  // namespace kiln_py

#endif
