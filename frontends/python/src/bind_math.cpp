// frontends/python/src/bind_math.cpp - tinygrad's elementwise math, activations, Python's division
// operators (//, %, <<, >>, ** with integer results), the math reductions, the losses and
// attention, under tinygrad's names, keywords and defaults. Each is kiln::Tensor's own C++ method
// (tensor/math.cpp, tensor/loss.cpp); this file only reads Python arguments: scalars on either side
// take tinygrad's dtypes (convert.hpp's operand), reductions take axis=None/int/tuple, and a bad
// `reduction` string is a ValueError as in tinygrad.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <string>

#include "common.hpp"
#include "convert.hpp"

namespace kiln_py {

namespace {


Tensor floordiv_(const Tensor& a, const Tensor& b) { return a.floordiv(b); }
Tensor remainder_(const Tensor& a, const Tensor& b) { return a.remainder(b); }
Tensor lshift_(const Tensor& a, const Tensor& b) { return a.lshift(b); }
Tensor rshift_(const Tensor& a, const Tensor& b) { return a.rshift(b); }

// torch and tinygrad refuse an integer tensor to a negative Python int power (the result is no integer)
void check_int_pow(const Tensor& base, nb::handle exponent, const char* fn) {
  if (base.dtype().is_int() && nb::isinstance<nb::int_>(exponent) && !nb::isinstance<nb::bool_>(exponent) &&
      nb::cast<double>(nb::float_(exponent)) < 0)
    throw kiln::Error(std::string(fn) + "(): integers to negative integer powers are not allowed (base is " + base.dtype().name() +
                      "); use a float base");
}
Tensor pow_of(const Tensor& self, nb::handle x, bool reverse, const char* fn) {
  Tensor o = operand_or_throw(self, x, fn, "x");
  if (reverse) return o.pow(self);
  check_int_pow(self, x, fn);
  return self.pow(o);
}


std::string reduction_arg(nb::handle r, const char* fn) {
  if (!nb::isinstance<nb::str>(r)) throw nb::type_error((std::string(fn) + "(): reduction must be a str, got " + py_type_name(r)).c_str());
  std::string s = nb::cast<std::string>(r);
  if (s != "mean" && s != "sum" && s != "none")
    throw nb::value_error((std::string(fn) + "(): reduction='" + s + "' must be one of ('none', 'mean', 'sum')").c_str());
  return s;
}

std::optional<Tensor> tensor_or_none(nb::handle h, const char* fn, const char* arg) {
  if (h.is_none()) return std::nullopt;
  if (!nb::isinstance<Tensor>(h))
    throw nb::type_error((std::string(fn) + "(): " + arg + " must be a Tensor or None, got " + py_type_name(h)).c_str());
  return nb::cast<Tensor>(h);
}

Tensor tensor_arg(nb::handle h, const char* fn, const char* arg) {
  if (!nb::isinstance<Tensor>(h)) throw nb::type_error((std::string(fn) + "(): " + arg + " must be a Tensor, got " + py_type_name(h)).c_str());
  return nb::cast<Tensor>(h);
}

}  // namespace

void bind_math(nb::class_<Tensor>& T) {
  // ---- unary ----
#define KILN_UNARY(name) T.def(#name, [](const Tensor& t) { return t.name(); });
  KILN_UNARY(trunc) KILN_UNARY(floor) KILN_UNARY(ceil) KILN_UNARY(round) KILN_UNARY(isnan) KILN_UNARY(isfinite)
  KILN_UNARY(asin) KILN_UNARY(acos) KILN_UNARY(atan) KILN_UNARY(sinh) KILN_UNARY(cosh) KILN_UNARY(asinh)
  KILN_UNARY(acosh) KILN_UNARY(atanh) KILN_UNARY(log10) KILN_UNARY(erf) KILN_UNARY(softsign) KILN_UNARY(logsigmoid)
  KILN_UNARY(quick_gelu) KILN_UNARY(relu6) KILN_UNARY(hardswish) KILN_UNARY(mish) KILN_UNARY(swish) KILN_UNARY(bitwise_not) KILN_UNARY(square)
#undef KILN_UNARY
  T.def("isinf", &Tensor::isinf, nb::arg("detect_positive") = true, nb::arg("detect_negative") = true)
      .def("hardsigmoid", &Tensor::hardsigmoid, nb::arg("alpha") = 1.0 / 6, nb::arg("beta") = 0.5)
      .def("softplus", &Tensor::softplus, nb::arg("beta") = 1.0)
      .def("gelu", [](const Tensor& t, const std::string& approximate) { return t.gelu(approximate); }, nb::arg("approximate") = "tanh")
      .def("elu", &Tensor::elu, nb::arg("alpha") = 1.0)
      .def("celu", &Tensor::celu, nb::arg("alpha") = 1.0)
      .def("selu", &Tensor::selu, nb::arg("alpha") = 1.6732632423543772, nb::arg("gamma") = 1.0507009873554805)
      .def("hardtanh", &Tensor::hardtanh, nb::arg("min_val") = -1.0, nb::arg("max_val") = 1.0)
      .def("leaky_relu", &Tensor::leaky_relu, nb::arg("neg_slope") = 0.01)
      .def("softmin",
           [](const Tensor& t, int axis, nb::handle dtype) {
             auto d = dtype_arg(dtype, "softmin");
             return (d ? t.cast(*d) : t).softmin(axis);
           },
           nb::arg("axis") = -1, nb::arg("dtype").none() = nb::none());

  // ---- binary ----
  T.def("lerp",
        [](const Tensor& t, nb::handle end, nb::handle weight) {
          return t.lerp(operand_or_throw(t, end, "lerp", "end"), operand_or_throw(t, weight, "lerp", "weight"));
        },
        nb::arg("end"), nb::arg("weight"))
      .def("copysign", [](const Tensor& t, nb::handle other) { return t.copysign(operand_or_throw(t, other, "copysign", "other")); },
           nb::arg("other"))
      .def("logaddexp", [](const Tensor& t, nb::handle other) { return t.logaddexp(operand_or_throw(t, other, "logaddexp", "other")); },
           nb::arg("other"))
      .def("isclose",
           [](const Tensor& t, nb::handle other, double rtol, double atol, bool equal_nan) {
             return t.isclose(operand_or_throw(t, other, "isclose", "other"), rtol, atol, equal_nan);
           },
           nb::arg("other"), nb::arg("rtol") = 1e-5, nb::arg("atol") = 1e-8, nb::arg("equal_nan") = false)
      .def("allclose",
           [](const Tensor& t, nb::handle other, double rtol, double atol, bool equal_nan) {
             return t.allclose(operand_or_throw(t, other, "allclose", "other"), rtol, atol, equal_nan);
           },
           nb::arg("other"), nb::arg("rtol") = 1e-5, nb::arg("atol") = 1e-8, nb::arg("equal_nan") = false)
      .def("fmod", [](const Tensor& t, nb::handle x) { return t.fmod(operand_or_throw(t, x, "fmod", "x")); }, nb::arg("x"))
      .def("div",
           [](const Tensor& t, nb::handle x, bool reverse, nb::handle rounding_mode) {
             std::string mode;
             if (!rounding_mode.is_none()) {
               if (!nb::isinstance<nb::str>(rounding_mode))
                 throw nb::type_error(("div(): rounding_mode must be None, 'trunc' or 'floor', got " + py_type_name(rounding_mode)).c_str());
               mode = nb::cast<std::string>(rounding_mode);
               // (the C++ method reads "" as true division; Python spells that None)
               if (mode.empty()) throw kiln::Error("div(): rounding_mode must be None, 'trunc' or 'floor', got ''");
             }
             Tensor o = operand_or_throw(t, x, "div", "x");
             return reverse ? o.div(t, mode) : t.div(o, mode);
           },
           nb::arg("x"), nb::arg("reverse") = false, nb::arg("rounding_mode").none() = nb::none())
      .def("mod", [](const Tensor& t, nb::handle x, bool r) { return method_op<remainder_>(t, x, r, "mod"); }, nb::arg("x"),
           nb::arg("reverse") = false)
      .def("lshift", [](const Tensor& t, nb::handle x, bool r) { return method_op<lshift_>(t, x, r, "lshift"); }, nb::arg("x"),
           nb::arg("reverse") = false)
      .def("rshift", [](const Tensor& t, nb::handle x, bool r) { return method_op<rshift_>(t, x, r, "rshift"); }, nb::arg("x"),
           nb::arg("reverse") = false)
      .def("__floordiv__", &binop<floordiv_>).def("__rfloordiv__", &rbinop<floordiv_>)
      .def("__mod__", &binop<remainder_>).def("__rmod__", &rbinop<remainder_>)
      .def("__lshift__", &binop<lshift_>).def("__rlshift__", &rbinop<lshift_>)
      .def("__rshift__", &binop<rshift_>).def("__rrshift__", &rbinop<rshift_>)
      .def("pow", [](const Tensor& t, nb::handle x, bool r) { return pow_of(t, x, r, "pow"); }, nb::arg("x"), nb::arg("reverse") = false)
      .def("__pow__",
           [](const Tensor& t, nb::handle x) -> nb::object {
             if (!operand(t, x)) return nb::borrow(Py_NotImplemented);
             return nb::cast(pow_of(t, x, false, "pow"));
           })
      .def("__rpow__", [](const Tensor& t, nb::handle x) -> nb::object {
        if (!operand(t, x)) return nb::borrow(Py_NotImplemented);
        return nb::cast(pow_of(t, x, true, "pow"));
      });
  auto clip = [](const Tensor& t, nb::handle min_, nb::handle max_) {
    std::optional<Tensor> lo, hi;
    if (!min_.is_none()) lo = operand_or_throw(t, min_, "clip", "min_");
    if (!max_.is_none()) hi = operand_or_throw(t, max_, "clip", "max_");
    return t.clip(lo, hi);
  };
  T.def("clip", clip, nb::arg("min_").none() = nb::none(), nb::arg("max_").none() = nb::none())
      .def("clamp", clip, nb::arg("min_").none() = nb::none(), nb::arg("max_").none() = nb::none());

  // ---- reductions ----
  auto boolean = [&](const char* name, Tensor (Tensor::*fn)(const std::vector<int>&, bool) const) {
    T.def(name,
          [fn, name](const Tensor& t, nb::handle axis, bool keepdim) {
            if (reduces_nothing(axis)) return t.cast(dtypes::bool_);
            return (t.*fn)(axis_arg(axis, name), keepdim);
          },
          nb::arg("axis").none() = nb::none(), nb::arg("keepdim") = false);
  };
  boolean("any", &Tensor::any);
  boolean("all", &Tensor::all);
  T.def("logsumexp",
           [](const Tensor& t, nb::handle axis, bool keepdim) {
             if (reduces_nothing(axis)) return t;
             return t.logsumexp(axis_arg(axis, "logsumexp"), keepdim);
           },
           nb::arg("axis").none() = nb::none(), nb::arg("keepdim") = false)
      .def("normalize", &Tensor::normalize, nb::arg("p") = 2.0, nb::arg("dim") = 1, nb::arg("eps") = 1e-12);

  // ---- losses and attention ----
  T.def("cross_entropy",
        [](const Tensor& t, nb::handle Y, nb::handle reduction, double label_smoothing) {
          return t.cross_entropy(tensor_arg(Y, "cross_entropy", "Y"), reduction_arg(reduction, "cross_entropy"), label_smoothing);
        },
        nb::arg("Y"), nb::arg("reduction") = "mean", nb::arg("label_smoothing") = 0.0)
      .def("sparse_categorical_crossentropy",
           [](const Tensor& t, nb::handle Y, int64_t ignore_index, double label_smoothing, nb::handle reduction) {
             const char* fn = "sparse_categorical_crossentropy";
             return t.sparse_categorical_crossentropy(tensor_arg(Y, fn, "Y"), ignore_index, label_smoothing, reduction_arg(reduction, fn));
           },
           nb::arg("Y"), nb::arg("ignore_index") = -1, nb::arg("label_smoothing") = 0.0, nb::arg("reduction") = "mean")
      .def("binary_crossentropy",
           [](const Tensor& t, nb::handle Y, nb::handle reduction) {
             const char* fn = "binary_crossentropy";
             return t.binary_crossentropy(operand_or_throw(t, Y, fn, "Y"), reduction_arg(reduction, fn));
           },
           nb::arg("Y"), nb::arg("reduction") = "mean")
      .def("binary_crossentropy_logits",
           [](const Tensor& t, nb::handle Y, nb::handle reduction, nb::handle pos_weight) {
             const char* fn = "binary_crossentropy_logits";
             return t.binary_crossentropy_logits(operand_or_throw(t, Y, fn, "Y"), reduction_arg(reduction, fn),
                                                 tensor_or_none(pos_weight, fn, "pos_weight"));
           },
           nb::arg("Y"), nb::arg("reduction") = "mean", nb::arg("pos_weight").none() = nb::none())
      .def("nll_loss",
           [](const Tensor& t, nb::handle Y, nb::handle weight, std::optional<int64_t> ignore_index, nb::handle reduction) {
             const char* fn = "nll_loss";
             return t.nll_loss(tensor_arg(Y, fn, "Y"), tensor_or_none(weight, fn, "weight"), ignore_index, reduction_arg(reduction, fn));
           },
           nb::arg("Y"), nb::arg("weight").none() = nb::none(), nb::arg("ignore_index").none() = nb::none(),
           nb::arg("reduction") = "mean")
      .def("scaled_dot_product_attention",
           [](const Tensor& q, nb::handle key, nb::handle value, nb::handle attn_mask, double dropout_p, bool is_causal, bool enable_gqa) {
             const char* fn = "scaled_dot_product_attention";
             return q.scaled_dot_product_attention(tensor_arg(key, fn, "key"), tensor_arg(value, fn, "value"),
                                                   tensor_or_none(attn_mask, fn, "attn_mask"), dropout_p, is_causal, enable_gqa);
           },
           nb::arg("key"), nb::arg("value"), nb::arg("attn_mask").none() = nb::none(), nb::arg("dropout_p") = 0.0,
           nb::arg("is_causal") = false, nb::arg("enable_gqa") = false);
}

}  // namespace kiln_py
