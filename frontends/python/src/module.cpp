// frontends/python/src/module.cpp - kiln._kiln, the nanobind bindings of the public C++ API: this
// file is the module itself (kiln.Error and its exception translator, DType and the dtypes, the
// device functions, the Tensor class with __init__ and the creation functions); convert.cpp has the
// conversions between Python data and tensors, tensor_methods.cpp the rest of the Tensor class,
// common.hpp the argument readers they share. The Python Tensor follows tinygrad's Tensor (DESIGN
// §5.2). Every operation is kiln::Tensor's own C++ method; the bindings only add Python's calling
// conventions: tinygrad's names, keywords and defaults, *args shapes, Python scalars on either side
// of an operator (given a dtype as tinygrad gives them), conversion from and to Python lists,
// scalars and numpy arrays. The GIL is released whenever kernels may compile or run (realize, reads
// to the host, backward).
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "common.hpp"
#include "convert.hpp"

using namespace kiln_py;

namespace {

// The least or greatest value of a dtype as a Python bool, int or float.
nb::object dtype_limit(const DType& d, bool greatest) {
  if (d.is_bool()) return nb::bool_(greatest);
  if (d.is_float()) return nb::float_(greatest ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity());
  int bits = static_cast<int>(d.itemsize()) * 8;
  if (d.is_unsigned()) {
    if (!greatest) return nb::int_(0);
    return nb::steal(PyLong_FromUnsignedLongLong(bits == 64 ? ~0ULL : (1ULL << bits) - 1));
  }
  if (bits == 64) return nb::int_(greatest ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min());
  int64_t m = int64_t{1} << (bits - 1);
  return nb::int_(greatest ? m - 1 : -m);
}

}  // namespace

NB_MODULE(_kiln, m) {
  m.doc() = "kiln: a tensor compiler (C++); tinygrad's Tensor API on kiln's engine";

  // kiln.Error: a RuntimeError with the C++ message and `code`, the ErrorCode's name
  // ("invalid_argument", "not_found", ...).
  // A plain pointer, never released: a static nb::object would drop its reference after the
  // interpreter is gone.
  static PyObject* error_type = PyErr_NewExceptionWithDoc(
      "kiln.Error", "Every failure kiln reports (bad shapes or dtypes, unknown devices, compile and backend errors); "
                    "`code` names the kind, e.g. 'invalid_argument'.", PyExc_RuntimeError, nullptr);
  if (!error_type) throw nb::python_error();
  m.attr("Error") = nb::handle(error_type);
  // tinygrad's and torch's code catches Python's own exception types (an axis or index out of
  // range is an IndexError, a bad argument a ValueError, an unknown dtype name an AttributeError),
  // so those kiln.Errors are also instances of them: subclasses of kiln.Error and the builtin.
  auto error_subclass = [&](const char* name, PyObject* builtin, const char* doc) {
    PyObject* bases = PyTuple_Pack(2, error_type, builtin);
    if (!bases) throw nb::python_error();
    PyObject* t = PyErr_NewExceptionWithDoc(name, doc, bases, nullptr);
    Py_DECREF(bases);
    if (!t) throw nb::python_error();
    return t;
  };
  static PyObject* index_error = error_subclass("kiln.IndexError", PyExc_IndexError,
                                                "A kiln.Error (code 'out_of_range': an index or axis out of range) that is an IndexError.");
  static PyObject* value_error = error_subclass("kiln.ValueError", PyExc_ValueError,
                                                "A kiln.Error (code 'invalid_argument') that is a ValueError.");
  static PyObject* attribute_error = error_subclass("kiln.AttributeError", PyExc_AttributeError,
                                                    "A kiln.Error for an unknown dtype name that is an AttributeError (as tinygrad's dtypes lookup).");
  m.attr("IndexError") = nb::handle(index_error);
  m.attr("ValueError") = nb::handle(value_error);
  m.attr("AttributeError") = nb::handle(attribute_error);
  set_error_types(attribute_error, index_error);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const kiln::Error& e) {
      PyObject* type = e.code() == kiln::ErrorCode::out_of_range      ? index_error
                       : e.code() == kiln::ErrorCode::invalid_argument ? value_error
                                                                       : error_type;
      nb::object exc = nb::handle(type)(e.what());
      exc.attr("code") = kiln::error_code_name(e.code());
      PyErr_SetObject(type, exc.ptr());
    }
  });

  nb::class_<DType>(m, "DType")
      .def_prop_ro("name", [](const DType& d) { return d.scalar() == Scalar::bool_ ? std::string("bool") : d.name(); })
      .def_prop_ro("itemsize", &DType::itemsize)
      .def_prop_ro("count", &DType::count)
      .def("__eq__", [](const DType& a, nb::handle b) { return nb::isinstance<DType>(b) && a == nb::cast<DType>(b); })
      .def("__ne__", [](const DType& a, nb::handle b) { return !(nb::isinstance<DType>(b) && a == nb::cast<DType>(b)); })
      .def("__hash__", [](const DType& d) { return static_cast<int64_t>(d.bits() & 0x7fffffffffffffffULL); })
      .def("__repr__", [](const DType& d) { return "dtypes." + (d.scalar() == Scalar::bool_ ? std::string("bool") : d.name()); })
      .def("is_float", &DType::is_float)
      .def("is_int", &DType::is_int)
      .def("is_unsigned", &DType::is_unsigned)
      // tinygrad's dtypes.int.min / .max: the range of the type (floats: -inf / inf, bool: False / True)
      .def_prop_ro("min", [](const DType& d) { return dtype_limit(d, false); })
      .def_prop_ro("max", [](const DType& d) { return dtype_limit(d, true); });

  nb::module_ dt = m.def_submodule("_dtypes", "kiln's dtypes by tinygrad's names");
  for (const DType& d : {dtypes::bool_, dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64, dtypes::uint8,
                         dtypes::uint16, dtypes::uint32, dtypes::uint64, dtypes::float16, dtypes::bfloat16,
                         dtypes::float32, dtypes::float64})
    dt.attr(d.name().c_str()) = d;  // kiln's names are tinygrad's ("bool", "float32", ...)
  m.def("least_upper_dtype", [](const DType& a, const DType& b) { return kiln::least_upper_dtype(a, b); });

  m.def("default_device", []() {
    std::string o = default_override();
    if (!o.empty()) return o;
    nb::gil_scoped_release release;  // the first call discovers and loads backends
    return kiln::default_device();
  });
  m.def("_set_default_device", [](const std::string& d) { set_default_override(d); });
  m.def("devices", []() {
    nb::gil_scoped_release release;
    return kiln::devices();
  });

  // weak-referenceable: kiln.nn.state marks buffers (BatchNorm statistics) without keeping them alive
  nb::class_<Tensor> T(m, "Tensor", nb::is_weak_referenceable());
  T.def(
       "__init__",
       [](Tensor* self, nb::handle data, nb::handle device, nb::handle dtype, nb::handle requires_grad) {
         new (self) Tensor(make_tensor(data, device, dtype, requires_grad));
       },
       nb::arg("data").none(), nb::arg("device").none() = nb::none(), nb::arg("dtype").none() = nb::none(),
       nb::arg("requires_grad").none() = nb::none())
      // ---- creation (static, tinygrad's signatures) ----
      ;

  auto creation = [&](const char* name, Tensor (*fn)(const Shape&, DType, const std::string&)) {
    T.def_static(
        name,
        [fn, name](nb::args shape, nb::handle device, nb::handle dtype, nb::handle requires_grad) {
          Tensor t = fn(shape_args(shape, name), dtype_arg(dtype, name).value_or(dtypes::default_float), device_arg(device, name));
          if (!requires_grad.is_none()) t.requires_grad_(nb::cast<bool>(requires_grad));
          return t;
        },
        nb::arg("shape"), nb::kw_only(), nb::arg("device").none() = nb::none(), nb::arg("dtype").none() = nb::none(),
        nb::arg("requires_grad").none() = nb::none());
  };
  creation("empty", &Tensor::empty);
  creation("zeros", &Tensor::zeros);
  creation("ones", &Tensor::ones);
  creation("rand", &Tensor::rand);
  creation("randn", &Tensor::randn);
  T.def_static(
      "full",
      [](nb::handle shape, nb::handle fill_value, nb::handle device, nb::handle dtype, nb::handle requires_grad) {
        if (!is_py_scalar(fill_value))
          throw nb::type_error(("full(): fill_value must be a bool, int or float, got " + py_type_name(fill_value)).c_str());
        DType d = dtype_arg(dtype, "full").value_or(from_py(fill_value));
        Tensor t = Tensor::full(shape_of(shape, "full"), nb::cast<double>(nb::float_(fill_value)), d, device_arg(device, "full"));
        if (!requires_grad.is_none()) t.requires_grad_(nb::cast<bool>(requires_grad));
        return t;
      },
      nb::arg("shape"), nb::arg("fill_value"), nb::kw_only(), nb::arg("device").none() = nb::none(),
      nb::arg("dtype").none() = nb::none(), nb::arg("requires_grad").none() = nb::none());
  T.def_static(
      "arange",
      [](nb::handle start, nb::handle stop, nb::handle step, nb::handle device, nb::handle dtype, nb::handle requires_grad) {
        for (auto [h, n] : {std::pair{start, "start"}, {stop, "stop"}, {step, "step"}})
          if (!(is_py_scalar(h) || (h.is_none() && std::string(n) == "stop")))
            throw nb::type_error(("arange(): " + std::string(n) + " must be an int or float, got " + py_type_name(h)).c_str());
        nb::handle b = start, e = stop;
        nb::int_ zero(0);
        if (stop.is_none()) b = zero, e = start;
        bool all_int = nb::isinstance<nb::int_>(b) && nb::isinstance<nb::int_>(e) && nb::isinstance<nb::int_>(step);
        // tinygrad: an int range that does not fit default_int (int32) is int64
        auto fits32 = [](nb::handle v) {
          double x = nb::cast<double>(nb::float_(v));
          return x >= -2147483648.0 && x <= 2147483647.0;
        };
        DType int_d = fits32(b) && fits32(e) ? dtypes::default_int : dtypes::int64;
        DType d = dtype_arg(dtype, "arange").value_or(all_int ? int_d : dtypes::default_float);
        if (d.is_int() && !d.is_bool()) {
          // tinygrad: an integer range whose first or last value does not fit the dtype is an
          // OverflowError (a cast would silently wrap)
          double lo = nb::cast<double>(nb::float_(b)), hi = nb::cast<double>(nb::float_(e)), st = nb::cast<double>(nb::float_(step));
          double n = st != 0 ? std::ceil((hi - lo) / st) : 0;
          if (n > 0) {
            double last = lo + (n - 1) * st;
            int bits = static_cast<int>(d.itemsize()) * 8;
            double min = d.is_unsigned() ? 0 : -std::ldexp(1.0, bits - 1), max = std::ldexp(1.0, d.is_unsigned() ? bits : bits - 1) - 1;
            for (double v : {lo, last})
              if (v < min || v > max) {
                std::string msg = "arange(): value " + std::to_string(static_cast<long long>(v)) + " does not fit " + d.name();
                PyErr_SetString(PyExc_OverflowError, msg.c_str());
                throw nb::python_error();
              }
          }
        }
        Tensor t = Tensor::arange(nb::cast<double>(nb::float_(b)), nb::cast<double>(nb::float_(e)),
                                  nb::cast<double>(nb::float_(step)), d, device_arg(device, "arange"));
        if (!requires_grad.is_none()) t.requires_grad_(nb::cast<bool>(requires_grad));
        return t;
      },
      nb::arg("start"), nb::arg("stop").none() = nb::none(), nb::arg("step") = 1, nb::kw_only(),
      nb::arg("device").none() = nb::none(), nb::arg("dtype").none() = nb::none(), nb::arg("requires_grad").none() = nb::none());
  // tinygrad's *_like: the shape (and, unless given, the dtype and device) of `t`; static or a method
  auto like = [](const Tensor& t, double value, nb::handle dtype, nb::handle device, nb::handle requires_grad, const char* fn) {
    DType d = dtype_arg(dtype, fn).value_or(t.dtype());
    Tensor r = Tensor::full(t.shape(), value, d, device.is_none() ? t.device() : device_arg(device, fn));
    if (!requires_grad.is_none()) r.requires_grad_(nb::cast<bool>(requires_grad));
    return r;
  };
  T.def(
       "full_like",
       [like](const Tensor& t, nb::handle fill_value, nb::handle dtype, nb::handle device, nb::handle requires_grad) {
         if (!is_py_scalar(fill_value))
           throw nb::type_error(("full_like(): fill_value must be a bool, int or float, got " + py_type_name(fill_value)).c_str());
         return like(t, nb::cast<double>(nb::float_(fill_value)), dtype, device, requires_grad, "full_like");
       },
       nb::arg("fill_value"), nb::kw_only(), nb::arg("dtype").none() = nb::none(), nb::arg("device").none() = nb::none(),
       nb::arg("requires_grad").none() = nb::none())
      .def(
          "zeros_like",
          [like](const Tensor& t, nb::handle dtype, nb::handle device, nb::handle requires_grad) {
            return like(t, 0, dtype, device, requires_grad, "zeros_like");
          },
          nb::kw_only(), nb::arg("dtype").none() = nb::none(), nb::arg("device").none() = nb::none(),
          nb::arg("requires_grad").none() = nb::none())
      .def(
          "ones_like",
          [like](const Tensor& t, nb::handle dtype, nb::handle device, nb::handle requires_grad) {
            return like(t, 1, dtype, device, requires_grad, "ones_like");
          },
          nb::kw_only(), nb::arg("dtype").none() = nb::none(), nb::arg("device").none() = nb::none(),
          nb::arg("requires_grad").none() = nb::none());
  T.def_static("manual_seed", [](uint64_t seed) { kiln::manual_seed(seed); }, nb::arg("seed") = 0);

  bind_indexing(T);
  bind_tensor_methods(T);
  bind_creation(T);
  bind_dlpack(m, T);
  bind_train(m, T);
  bind_struct(T);
  bind_conv(T);
  bind_math(T);
  bind_symbolic(m, T);
  bind_onnx(m);
  bind_dist(m);
}
