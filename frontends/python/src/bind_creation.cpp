// frontends/python/src/bind_creation.cpp - the creation functions beyond module.cpp's basic ones, in
// tinygrad's signatures: linspace, eye, and the random tensors (uniform, normal, randint and the
// initializers scaled_uniform, glorot_uniform, kaiming_uniform, kaiming_normal). Each is
// kiln::Tensor's static method; this file reads Python's arguments only.
#include <nanobind/stl/string.h>

#include <optional>

#include <string>

#include "common.hpp"

namespace kiln_py {

namespace {

Tensor with_grad(Tensor t, nb::handle requires_grad) {
  if (!requires_grad.is_none()) t.requires_grad_(nb::cast<bool>(requires_grad));
  return t;
}

double number(nb::handle h, const char* fn, const char* arg) {
  if (!is_py_scalar(h) || nb::isinstance<nb::bool_>(h))
    throw nb::type_error((std::string(fn) + "(): " + arg + " must be an int or float, got " + py_type_name(h)).c_str());
  return nb::cast<double>(nb::float_(h));
}

int64_t integer(nb::handle h, const char* fn, const char* arg) {
  if (!nb::isinstance<nb::int_>(h) || nb::isinstance<nb::bool_>(h))
    throw nb::type_error((std::string(fn) + "(): " + arg + " must be an int, got " + py_type_name(h)).c_str());
  return i64(h);
}

// f(*shape, <two float keywords>, dtype=None, device=None, requires_grad=None)
using TwoParam = Tensor (*)(const Shape&, double, double, DType, const std::string&);
void two_param(nb::class_<Tensor>& T, const char* name, TwoParam fn, const char* a, double a0, const char* b, double b0) {
  T.def_static(
      name,
      [fn, name, a, b](nb::args shape, nb::handle va, nb::handle vb, nb::handle dtype, nb::handle device, nb::handle requires_grad) {
        Tensor t = fn(shape_args(shape, name), number(va, name, a), number(vb, name, b),
                      dtype_arg(dtype, name).value_or(dtypes::default_float), device_arg(device, name));
        return with_grad(t, requires_grad);
      },
      nb::arg("shape"), nb::kw_only(), nb::arg(a) = a0, nb::arg(b) = b0, nb::arg("dtype").none() = nb::none(),
      nb::arg("device").none() = nb::none(), nb::arg("requires_grad").none() = nb::none());
}

}  // namespace

void bind_creation(nb::class_<Tensor>& T) {
  T.def_static(
      "linspace",
      [](nb::handle start, nb::handle stop, nb::handle steps, nb::handle dtype, nb::handle device, nb::handle requires_grad) {
        Tensor t = Tensor::linspace(number(start, "linspace", "start"), number(stop, "linspace", "stop"),
                                    integer(steps, "linspace", "steps"), dtype_arg(dtype, "linspace").value_or(dtypes::default_float),
                                    device_arg(device, "linspace"));
        return with_grad(t, requires_grad);
      },
      nb::arg("start"), nb::arg("stop"), nb::arg("steps"), nb::arg("dtype").none() = nb::none(), nb::kw_only(),
      nb::arg("device").none() = nb::none(), nb::arg("requires_grad").none() = nb::none());
  T.def_static(
      "eye",
      [](nb::handle n, nb::handle m, nb::handle dtype, nb::handle device, nb::handle requires_grad) {
        std::optional<int64_t> cols;
        if (!m.is_none()) cols = integer(m, "eye", "m");
        Tensor t = Tensor::eye(integer(n, "eye", "n"), cols, dtype_arg(dtype, "eye").value_or(dtypes::default_float), device_arg(device, "eye"));
        return with_grad(t, requires_grad);
      },
      nb::arg("n"), nb::arg("m").none() = nb::none(), nb::arg("dtype").none() = nb::none(), nb::kw_only(),
      nb::arg("device").none() = nb::none(), nb::arg("requires_grad").none() = nb::none());

  two_param(T, "uniform", &Tensor::uniform, "low", 0.0, "high", 1.0);
  two_param(T, "normal", &Tensor::normal, "mean", 0.0, "std", 1.0);
  T.def_static(
      "randint",
      [](nb::args shape, nb::handle low, nb::handle high, nb::handle dtype, nb::handle device, nb::handle requires_grad) {
        DType d = dtype_arg(dtype, "randint").value_or(dtypes::int32);
        if (!d.is_int()) throw nb::type_error(("randint(): dtype must be an integer type, got " + d.name()).c_str());
        Tensor t = Tensor::randint(shape_args(shape, "randint"), integer(low, "randint", "low"), integer(high, "randint", "high"), d,
                                   device_arg(device, "randint"));
        return with_grad(t, requires_grad);
      },
      nb::arg("shape"), nb::kw_only(), nb::arg("low") = 0, nb::arg("high") = 10, nb::arg("dtype").none() = nb::none(),
      nb::arg("device").none() = nb::none(), nb::arg("requires_grad").none() = nb::none());

  using Init = Tensor (*)(const Shape&, DType, const std::string&);
  for (auto [name, fn] : {std::pair<const char*, Init>{"scaled_uniform", &Tensor::scaled_uniform}, {"glorot_uniform", &Tensor::glorot_uniform}})
    T.def_static(
        name,
        [fn, name](nb::args shape, nb::handle dtype, nb::handle device, nb::handle requires_grad) {
          Tensor t = fn(shape_args(shape, name), dtype_arg(dtype, name).value_or(dtypes::default_float), device_arg(device, name));
          return with_grad(t, requires_grad);
        },
        nb::arg("shape"), nb::kw_only(), nb::arg("dtype").none() = nb::none(), nb::arg("device").none() = nb::none(),
        nb::arg("requires_grad").none() = nb::none());
  using Kaiming = Tensor (*)(const Shape&, double, DType, const std::string&);
  for (auto [name, fn] : {std::pair<const char*, Kaiming>{"kaiming_uniform", &Tensor::kaiming_uniform}, {"kaiming_normal", &Tensor::kaiming_normal}})
    T.def_static(
        name,
        [fn, name](nb::args shape, nb::handle a, nb::handle dtype, nb::handle device, nb::handle requires_grad) {
          Tensor t = fn(shape_args(shape, name), number(a, name, "a"), dtype_arg(dtype, name).value_or(dtypes::default_float),
                        device_arg(device, name));
          return with_grad(t, requires_grad);
        },
        nb::arg("shape"), nb::kw_only(), nb::arg("a") = 0.01, nb::arg("dtype").none() = nb::none(),
        nb::arg("device").none() = nb::none(), nb::arg("requires_grad").none() = nb::none());
}

}  // namespace kiln_py
