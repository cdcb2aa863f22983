// frontends/python/src/bind_train.cpp - what training needs beyond the core ops, in tinygrad's
// names: Tensor.layernorm/batchnorm/dropout, Tensor.training (kiln::Tensor's process-wide flag),
// and the private parts kiln.nn.optim, kiln.nn.state and kiln.TinyJit are written over: _kiln._optim (kiln::optim's SGD and Adam), _kiln._safetensors
// (kiln/safetensors.hpp) and _kiln._Jit (kiln::Jit over a Python function). The GIL is released
// where kernels run: optimizer steps, safetensors reads and writes, and the whole Jit call (the
// Python function it calls on its first two calls takes the GIL back while it runs).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "kiln/jit.hpp"
#include "kiln/optim.hpp"
#include "kiln/safetensors.hpp"

namespace kiln_py {

namespace {

std::vector<Tensor> tensor_list(nb::handle seq, const char* fn, const char* what) {
  std::vector<Tensor> out;
  if (!nb::isinstance<nb::list>(seq) && !nb::isinstance<nb::tuple>(seq))
    throw nb::type_error((std::string(fn) + "(): " + what + " must be a list of Tensors, got " + py_type_name(seq)).c_str());
  for (nb::handle h : seq) {
    if (!nb::isinstance<Tensor>(h))
      throw nb::type_error((std::string(fn) + "(): " + what + " must hold Tensors, got " + py_type_name(h)).c_str());
    out.push_back(nb::cast<Tensor>(h));
  }
  return out;
}

nb::dict metadata_dict(const kiln::safetensors::Metadata& md) {
  nb::dict d;
  for (const auto& [k, v] : md) d[nb::str(k.c_str())] = nb::str(v.c_str());
  return d;
}

kiln::safetensors::Metadata metadata_of(nb::handle h) {
  kiln::safetensors::Metadata md;
  if (h.is_none()) return md;
  if (!nb::isinstance<nb::dict>(h)) throw nb::type_error(("safe_save(): metadata must be a dict of str to str, got " + py_type_name(h)).c_str());
  for (auto [k, v] : nb::borrow<nb::dict>(h)) {
    if (!nb::isinstance<nb::str>(k) || !nb::isinstance<nb::str>(v))
      throw nb::type_error("safe_save(): metadata must map str to str");
    md.emplace_back(nb::cast<std::string>(k), nb::cast<std::string>(v));
  }
  return md;
}

kiln::safetensors::Named named_of(nb::handle tensors) {
  kiln::safetensors::Named named;
  if (!nb::isinstance<nb::dict>(tensors))
    throw nb::type_error(("safe_save(): tensors must be a dict of str to Tensor, got " + py_type_name(tensors)).c_str());
  for (auto [k, v] : nb::borrow<nb::dict>(tensors)) {
    if (!nb::isinstance<nb::str>(k)) throw nb::type_error(("safe_save(): names must be str, got " + py_type_name(k)).c_str());
    if (!nb::isinstance<Tensor>(v))
      throw nb::type_error(("safe_save(): '" + nb::cast<std::string>(k) + "' must be a Tensor, got " + py_type_name(v)).c_str());
    named.emplace_back(nb::cast<std::string>(k), nb::cast<Tensor>(v));
  }
  return named;
}

nb::tuple contents_tuple(kiln::safetensors::Contents c) {
  nb::list tensors;
  for (auto& [name, t] : c.tensors) tensors.append(nb::make_tuple(nb::str(name.c_str()), nb::cast(std::move(t))));
  return nb::make_tuple(tensors, metadata_dict(c.metadata));
}

}  // namespace

void bind_train(nb::module_& m, nb::class_<Tensor>& T) {
  // ---- normalization and dropout ----
  T.def("layernorm",
        [](const Tensor& t, nb::handle axis, double eps) {
          if (axis.is_none()) throw nb::type_error("layernorm(): axis must be an int or a tuple of ints, got None");
          return t.layernorm(axis_arg(axis, "layernorm"), eps);
        },
        nb::arg("axis") = -1, nb::arg("eps") = 1e-5)
      .def("batchnorm",
           [](const Tensor& t, std::optional<Tensor> weight, std::optional<Tensor> bias, const Tensor& mean, const Tensor& invstd,
              nb::handle axis) {
             if (axis.is_none()) throw nb::type_error("batchnorm(): axis must be an int or a tuple of ints, got None");
             return t.batchnorm(weight, bias, mean, invstd, axis_arg(axis, "batchnorm"));
           },
           nb::arg("weight").none(), nb::arg("bias").none(), nb::arg("mean"), nb::arg("invstd"), nb::arg("axis") = 1)
      .def("dropout",
           [](const Tensor& t, double p) {
             if (!(p >= 0 && p <= 1)) throw nb::value_error(("dropout(): p=" + std::to_string(p) + " is out of range [0, 1]").c_str());
             return t.dropout(p);
           },
           nb::arg("p") = 0.5)
      .def_prop_rw_static(
          "training", [](nb::handle) { return Tensor::training(); },
          [](nb::handle, nb::handle on) {
            if (!nb::isinstance<nb::bool_>(on)) throw nb::type_error(("Tensor.training must be a bool, got " + py_type_name(on)).c_str());
            Tensor::set_training(nb::cast<bool>(on));
          });

  // ---- optimizers (kiln.nn.optim wraps these) ----
  nb::module_ optim = m.def_submodule("_optim", "kiln::optim's optimizers; use kiln.nn.optim");
  nb::class_<kiln::optim::Optimizer>(optim, "Optimizer")
      .def("step",
           [](kiln::optim::Optimizer& o) {
             nb::gil_scoped_release release;
             o.step();
           })
      .def("schedule_step", [](kiln::optim::Optimizer& o) { return o.step_tensors(); })
      .def("zero_grad", &kiln::optim::Optimizer::zero_grad)
      .def_prop_ro("params", &kiln::optim::Optimizer::params)
      .def_prop_rw(
          "lr", &kiln::optim::Optimizer::lr, [](kiln::optim::Optimizer& o, double lr) {
            nb::gil_scoped_release release;
            o.set_lr(lr);
          });
  nb::class_<kiln::optim::SGD, kiln::optim::Optimizer>(optim, "SGD")
      .def(
          "__init__",
          [](kiln::optim::SGD* self, nb::handle params, double lr, double momentum, double weight_decay, bool nesterov, bool classic) {
            std::vector<Tensor> ps = tensor_list(params, "SGD", "params");
            nb::gil_scoped_release release;  // (the parameters are realized)
            new (self) kiln::optim::SGD(std::move(ps), lr, momentum, weight_decay, nesterov, classic);
          },
          nb::arg("params"), nb::arg("lr") = 0.001, nb::arg("momentum") = 0.0, nb::arg("weight_decay") = 0.0,
          nb::arg("nesterov") = false, nb::arg("classic") = false);
  nb::class_<kiln::optim::Adam, kiln::optim::Optimizer>(optim, "Adam")
      .def(
          "__init__",
          [](kiln::optim::Adam* self, nb::handle params, double lr, double b1, double b2, double eps, double weight_decay) {
            std::vector<Tensor> ps = tensor_list(params, "Adam", "params");
            nb::gil_scoped_release release;
            new (self) kiln::optim::Adam(std::move(ps), lr, b1, b2, eps, weight_decay);
          },
          nb::arg("params"), nb::arg("lr") = 0.001, nb::arg("b1") = 0.9, nb::arg("b2") = 0.999, nb::arg("eps") = 1e-8,
          nb::arg("weight_decay") = 0.0);

  // ---- safetensors (kiln.nn.state wraps these) ----
  nb::module_ st = m.def_submodule("_safetensors", "kiln/safetensors.hpp; use kiln.nn.state");
  st.def("save", [](const std::string& path, nb::handle tensors, nb::handle metadata) {
    auto named = named_of(tensors);
    auto md = metadata_of(metadata);
    nb::gil_scoped_release release;
    kiln::safetensors::save(path, named, md);
  }, nb::arg("path"), nb::arg("tensors"), nb::arg("metadata").none() = nb::none());
  st.def("serialize", [](nb::handle tensors, nb::handle metadata) {
    auto named = named_of(tensors);
    auto md = metadata_of(metadata);
    std::string bytes;
    {
      nb::gil_scoped_release release;
      bytes = kiln::safetensors::serialize(named, md);
    }
    return nb::bytes(bytes.data(), bytes.size());
  }, nb::arg("tensors"), nb::arg("metadata").none() = nb::none());
  // -> ([(name, Tensor)], {metadata})
  st.def("load", [](const std::string& path, nb::handle device) {
    std::string dev = device_arg(device, "safe_load");
    kiln::safetensors::Contents c;
    {
      nb::gil_scoped_release release;
      c = kiln::safetensors::load(path, dev);
    }
    return contents_tuple(std::move(c));
  }, nb::arg("path"), nb::arg("device").none() = nb::none());
  st.def("deserialize", [](nb::bytes data, nb::handle device) {
    std::string dev = device_arg(device, "safe_load");
    kiln::safetensors::Contents c;
    {
      nb::gil_scoped_release release;
      c = kiln::safetensors::deserialize(data.c_str(), data.size(), dev);
    }
    return contents_tuple(std::move(c));
  }, nb::arg("data"), nb::arg("device").none() = nb::none());

  // ---- Jit (kiln.TinyJit wraps it): fn(list[Tensor]) -> list[Tensor] ----
  nb::class_<kiln::Jit>(m, "_Jit")
      .def("__init__",
           [](kiln::Jit* self, nb::callable fn) {
             // fn is kept by the Jit's function object and released with the GIL held, whichever
             // thread frees the Jit
             struct Holder {
               nb::object fn;
               ~Holder() {
                 nb::gil_scoped_acquire gil;
                 fn.reset();
               }
             };
             auto keep = std::make_shared<Holder>();
             keep->fn = std::move(fn);
             new (self) kiln::Jit([keep](const std::vector<Tensor>& inputs, const std::vector<kiln::BoundVariable>& vars) {
               nb::gil_scoped_acquire gil;
               nb::object out = keep->fn(inputs, vars);
               return tensor_list(out, "TinyJit", "the function's tensors");
             });
           },
           nb::arg("fn"))
      // vars: the BoundVariables re-bound on every replay (kiln::Jit's `vars`)
      .def("__call__",
           [](kiln::Jit& j, nb::handle inputs, const std::vector<kiln::BoundVariable>& vars) {
             std::vector<Tensor> ins = tensor_list(inputs, "TinyJit", "inputs");
             nb::gil_scoped_release release;  // a replay runs kernels only; fn takes the GIL back when it runs
             return j(ins, vars);
           },
           nb::arg("inputs"), nb::arg("vars") = std::vector<kiln::BoundVariable>{})
      .def_prop_ro("captured", &kiln::Jit::captured)
      .def_prop_ro("kernel_count", &kiln::Jit::kernel_count)
      .def("reset", [](kiln::Jit& j) {
        nb::gil_scoped_release release;
        j.reset();
      });
}

}  // namespace kiln_py
