// frontends/python/src/tensor_methods.cpp - the Tensor class's methods, in tinygrad's names,
// keywords and defaults: properties and host access (shape, numpy, tolist, realize, to, cast,
// assign), autograd, movement (*shape arguments, None entries, tinygrad's pad forms), elementwise
// ops and the operators with Python scalars on either side (NotImplemented for anything else),
// reductions (axis=None/int/tuple, dtype=); nn (conv2d, pools) is bind_conv.cpp. Every operation is
// kiln::Tensor's own C++ method; the GIL is released where kernels may compile or run.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "convert.hpp"

namespace kiln_py {

namespace {

nb::object same(Tensor& t);

// x op= y as tinygrad: x.assign(x op y), the same Python object (its buffer takes the result)
template <BinFn F>
nb::object inplace(Tensor& self, nb::handle other, const char* fn) {
  Tensor r = F(self, operand_or_throw(self, other, fn, "x"));
  self.assign(r);
  return same(self);
}

Tensor add_(const Tensor& a, const Tensor& b) { return a + b; }
Tensor sub_(const Tensor& a, const Tensor& b) { return a - b; }
Tensor mul_(const Tensor& a, const Tensor& b) { return a * b; }
Tensor div_(const Tensor& a, const Tensor& b) { return a / b; }
Tensor matmul_(const Tensor& a, const Tensor& b) { return a.matmul(b); }
Tensor and_(const Tensor& a, const Tensor& b) { return a & b; }
Tensor or_(const Tensor& a, const Tensor& b) { return a | b; }
Tensor xor_(const Tensor& a, const Tensor& b) { return a ^ b; }
Tensor lt_(const Tensor& a, const Tensor& b) { return a.lt(b); }
Tensor le_(const Tensor& a, const Tensor& b) { return a.le(b); }
Tensor gt_(const Tensor& a, const Tensor& b) { return a.gt(b); }
Tensor ge_(const Tensor& a, const Tensor& b) { return a.ge(b); }
Tensor eq_(const Tensor& a, const Tensor& b) { return a.eq(b); }
Tensor ne_(const Tensor& a, const Tensor& b) { return a.ne(b); }
Tensor maximum_(const Tensor& a, const Tensor& b) { return a.maximum(b); }
Tensor minimum_(const Tensor& a, const Tensor& b) { return a.minimum(b); }

std::pair<int64_t, int64_t> int_pair(nb::handle h, const char* fn) {
  if ((nb::isinstance<nb::tuple>(h) || nb::isinstance<nb::list>(h)) && nb::len(h) == 2 && nb::isinstance<nb::int_>(h[0]) &&
      nb::isinstance<nb::int_>(h[1]))
    return {i64(h[0]), i64(h[1])};
  throw nb::type_error((std::string(fn) + "(): expected a pair of ints or None per axis, got " + nb::cast<std::string>(nb::repr(h))).c_str());
}

// The Python object of `t` (methods that return self in tinygrad return the same object).
nb::object same(Tensor& t) { return nb::find(&t); }


}  // namespace

void bind_tensor_methods(nb::class_<Tensor>& T) {
  // ---- properties and host access ----
  T.def_prop_ro("shape", [](const Tensor& t) { return py_shape(t.shape()); })
      .def_prop_ro("dtype", &Tensor::dtype)
      .def_prop_ro("device", [](const Tensor& t) { return t.device(); })
      .def_prop_ro("ndim", &Tensor::ndim)
      .def("numel", &Tensor::numel)
      .def("element_size", [](const Tensor& t) { return t.dtype().itemsize(); })
      .def("nbytes", [](const Tensor& t) { return t.numel() * t.dtype().itemsize(); })
      .def("__len__",
           [](const Tensor& t) {
             if (t.shape().empty()) throw nb::type_error("len() of a 0-d tensor");
             return t.shape()[0];
           })
      .def("__bool__", [](const Tensor&) -> bool { throw nb::type_error("__bool__ on Tensor is not defined"); })
      .def("__hash__", [](const Tensor& t) { return static_cast<int64_t>(reinterpret_cast<intptr_t>(&t)); })
      .def("__repr__",
           [](const Tensor& t) {
             std::string s = "<Tensor shape=(";
             for (size_t i = 0; i < t.shape().size(); ++i) s += std::to_string(t.shape()[i]) + (t.shape().size() == 1 || i + 1 < t.shape().size() ? "," : "");
             return s + ") dtype=dtypes." + (t.dtype().is_bool() ? std::string("bool") : t.dtype().name()) + " device=" +
                    t.device() + (t.requires_grad() ? " requires_grad" : "") + ">";
           })
      .def("numpy", &to_numpy)
      .def("tolist", &to_list)
      .def("item", &item)
      .def("realize",
           [](Tensor& self, nb::args more) {
             std::vector<Tensor> all{self};
             for (nb::handle h : more) {
               if (!nb::isinstance<Tensor>(h)) throw nb::type_error(("realize(): arguments must be Tensors, got " + py_type_name(h)).c_str());
               all.push_back(nb::cast<Tensor>(h));
             }
             {
               nb::gil_scoped_release release;
               Tensor::realize_all(all);
             }
             return same(self);
           })
      .def("contiguous", &Tensor::contiguous)
      .def("clone", &Tensor::clone)
      .def("detach", &Tensor::detach)
      .def("to", [](const Tensor& t, nb::handle device) { return t.to(device_arg(device, "to")); }, nb::arg("device").none())
      .def("cast", [](const Tensor& t, nb::handle dtype) {
        auto d = dtype_arg(dtype, "cast");
        if (!d) throw nb::type_error("cast(): dtype must not be None");
        return t.cast(*d);
      }, nb::arg("dtype"))
      .def("float", [](const Tensor& t) { return t.cast(dtypes::float32); })
      .def("double", [](const Tensor& t) { return t.cast(dtypes::float64); })
      .def("bfloat16", [](const Tensor& t) { return t.cast(dtypes::bfloat16); })
      .def("long", [](const Tensor& t) { return t.cast(dtypes::int64); })
      .def("short", [](const Tensor& t) { return t.cast(dtypes::int16); })
      .def("bitcast", [](const Tensor& t, nb::handle dtype) {
        auto d = dtype_arg(dtype, "bitcast");
        if (!d) throw nb::type_error("bitcast(): dtype must be a dtype, got None");
        return t.bitcast(*d);
      }, nb::arg("dtype").none())
      .def("is_floating_point", [](const Tensor& t) { return t.dtype().is_float(); })
      // tinygrad/torch: the shape, or one dimension of it (negative counts from the end)
      .def("size",
           [](const Tensor& t, std::optional<int> dim) -> nb::object {
             if (!dim) return py_shape(t.shape());
             int n = t.ndim(), d = *dim < 0 ? *dim + n : *dim;
             if (d < 0 || d >= n)
               throw kiln::Error(kiln::ErrorCode::out_of_range,
                                 "size(): dim " + std::to_string(*dim) + " is out of range for a " + std::to_string(n) + "-d tensor");
             return nb::int_(t.shape()[d]);
           },
           nb::arg("dim").none() = nb::none())
      .def("half", [](const Tensor& t) { return t.cast(dtypes::float16); })
      .def("int", [](const Tensor& t) { return t.cast(dtypes::int32); })
      .def("bool", [](const Tensor& t) { return t.cast(dtypes::bool_); })
      .def("shard",
           [](const Tensor& t, const std::vector<std::string>& devices, std::optional<int> axis) { return t.shard(devices, axis); },
           nb::arg("devices"), nb::arg("axis").none() = nb::none())
      .def_prop_ro("placement", &Tensor::placement)
      .def("assign", [](Tensor& t, nb::handle x) {
        Tensor v = operand_or_throw(t, x, "assign", "x");
        t.assign(v);
        return same(t);
      }, nb::arg("x"));

  // ---- autograd ----
  T.def_prop_rw(
       "requires_grad", [](const Tensor& t) -> nb::object { return t.requires_grad() ? nb::object(nb::bool_(true)) : nb::object(nb::bool_(false)); },
       [](Tensor& t, nb::handle v) {
         if (!nb::isinstance<nb::bool_>(v)) throw nb::type_error(("requires_grad must be a bool, got " + py_type_name(v)).c_str());
         t.requires_grad_(nb::cast<bool>(v));
       })
      .def("requires_grad_", [](Tensor& t, bool on) { t.requires_grad_(on); return same(t); }, nb::arg("requires_grad") = true)
      .def_prop_ro("grad", [](const Tensor& t) { return t.grad(); })
      .def("backward",
           [](Tensor& t) {
             {
               nb::gil_scoped_release release;
               t.backward();
             }
             return same(t);
           })
      .def("gradient", [](const Tensor& t, nb::args targets) {
        std::vector<Tensor> wrt;
        for (nb::handle h : targets) {
          if (!nb::isinstance<Tensor>(h)) throw nb::type_error(("gradient(): targets must be Tensors, got " + py_type_name(h)).c_str());
          wrt.push_back(nb::cast<Tensor>(h));
        }
        nb::gil_scoped_release release;
        return t.gradient(wrt);
      });

  // ---- movement ----
  T.def("reshape", [](const Tensor& t, nb::args shape) {
       // tinygrad: None keeps that dimension; a BoundVariable entry makes that dimension the
       // variable (placed where it is written, kiln::Tensor::reshape(shape, dims))
       nb::handle src = shape;
       if (shape.size() == 1 && (nb::isinstance<nb::tuple>(shape[0]) || nb::isinstance<nb::list>(shape[0]))) src = shape[0];
       Shape s;
       std::vector<std::optional<kiln::BoundVariable>> dims;
       bool placed = false;
       size_t i = 0;
       for (nb::handle h : src) {
         if (h.is_none()) {
           if (i >= t.shape().size()) throw kiln::Error("reshape(): None at axis " + std::to_string(i) + " of a " + std::to_string(t.ndim()) + "-d tensor");
           s.push_back(t.shape()[i]);
           dims.push_back(t.symbolic_dim(static_cast<int>(i)));  // a symbolic dimension kept is placed here
           placed |= dims.back().has_value();
         } else if (auto v = bound_var(h)) {
           s.push_back(v->value());
           dims.push_back(v);
           placed = true;
         } else if (nb::isinstance<nb::int_>(h) && !nb::isinstance<nb::bool_>(h)) {
           s.push_back(i64(h));
           dims.push_back(std::nullopt);
         } else {
           throw nb::type_error(("reshape(): shape entries must be ints, None or BoundVariables, got " + py_type_name(h)).c_str());
         }
         ++i;
       }
       return placed ? t.reshape(s, dims) : t.reshape(s);
     })
      .def("view", [](const Tensor& t, nb::args shape) { return t.reshape(shape_args(shape, "view")); })
      .def("permute", [](const Tensor& t, nb::args order) { return t.permute(ints_args(order, "permute")); })
      .def("expand",
           [](const Tensor& t, nb::args shape) {
             // a BoundVariable entry grows a fixed 1 (or a new leading axis) into that symbolic size:
             // the rest first (-1 keeps the 1), then kiln::Tensor::expand(axis, BoundVariable) per entry
             nb::handle src = shape;
             if (shape.size() == 1 && (nb::isinstance<nb::tuple>(shape[0]) || nb::isinstance<nb::list>(shape[0]))) src = shape[0];
             std::vector<std::pair<int, kiln::BoundVariable>> sym;
             nb::list fixed;
             size_t n = nb::len(src), lead = n > t.shape().size() ? n - t.shape().size() : 0, i = 0;
             for (nb::handle h : src) {
               if (auto v = bound_var(h)) {
                 sym.push_back({static_cast<int>(i), *v});
                 fixed.append(i < lead ? 1 : -1);
               } else {
                 fixed.append(h);
               }
               ++i;
             }
             Tensor r = t.expand(shape_of(fixed, "expand"));
             for (const auto& [axis, v] : sym) r = r.expand(axis, v);
             return r;
           })
      .def("flip", [](const Tensor& t, nb::args axis) { return t.flip(ints_args(axis, "flip")); })
      .def("transpose", [](const Tensor& t, int dim0, int dim1) { return t.transpose(dim0, dim1); }, nb::arg("dim0") = 1,
           nb::arg("dim1") = 0)
      .def_prop_ro("T", [](const Tensor& t) { return t.transpose(1, 0); })
      .def("flatten", [](const Tensor& t, int start_dim, int end_dim) { return t.flatten(start_dim, end_dim); },
           nb::arg("start_dim") = 0, nb::arg("end_dim") = -1)
      .def("squeeze",
           [](const Tensor& t, std::optional<int> dim) {
             if (dim) {
               // torch: squeezing a dimension that is not 1 is a no-op; a 0-d tensor has dim 0 (-1)
               int n = std::max(t.ndim(), 1);
               if (*dim < -n || *dim >= n)
                 throw kiln::Error(kiln::ErrorCode::out_of_range, "squeeze(): dim " + std::to_string(*dim) + " is out of range for a " +
                                                                      std::to_string(t.ndim()) + "-d tensor");
               if (t.ndim() == 0 || t.shape()[*dim < 0 ? *dim + n : *dim] != 1) return t;
               return t.squeeze(*dim);
             }
             Shape s;
             for (int64_t d : t.shape())
               if (d != 1) s.push_back(d);
             return t.reshape(s);
           },
           nb::arg("dim").none() = nb::none())
      .def("unsqueeze", &Tensor::unsqueeze, nb::arg("dim"))
      .def("shrink",
           [](const Tensor& t, nb::handle arg) {
             // tinygrad's (0, n) with n a BoundVariable: the first n along that axis, a symbolic
             // dimension (kept whole by the fixed shrink, then kiln::Tensor::shrink(axis, n))
             kiln::Pads se;
             std::vector<std::pair<int, kiln::BoundVariable>> sym;
             size_t i = 0;
             for (nb::handle h : arg) {
               int64_t whole = i < t.shape().size() ? t.shape()[i] : 0;
               std::optional<kiln::BoundVariable> end;
               if ((nb::isinstance<nb::tuple>(h) || nb::isinstance<nb::list>(h)) && nb::len(h) == 2) end = bound_var(h[1]);
               if (h.is_none()) {
                 se.push_back({0, whole});
               } else if (end) {
                 if (!(nb::isinstance<nb::int_>(h[0]) && !nb::isinstance<nb::bool_>(h[0]) && i64(h[0]) == 0))
                   throw kiln::Error("shrink(): a range ending at a variable must start at 0 (the first " + end->name() +
                                     " along axis " + std::to_string(i) + "), got " + nb::cast<std::string>(nb::repr(h)));
                 se.push_back({0, whole});
                 sym.push_back({static_cast<int>(i), *end});
               } else {
                 if ((nb::isinstance<nb::tuple>(h) || nb::isinstance<nb::list>(h)) && nb::len(h) == 2 && bound_var(h[0]))
                   throw kiln::Error("shrink(): a variable can only end a range, (0, n), got " + nb::cast<std::string>(nb::repr(h)));
                 se.push_back(int_pair(h, "shrink"));
               }
               ++i;
             }
             Tensor r = t.shrink(se);
             for (const auto& [axis, v] : sym) r = r.shrink(axis, v);
             return r;
           },
           nb::arg("arg"))
      .def("gather", [](const Tensor& t, int dim, const Tensor& index) { return t.gather(dim, index); }, nb::arg("dim"),
           nb::arg("index"));

  // ---- elementwise ----
#define KILN_UNARY(name) T.def(#name, &Tensor::name);
  KILN_UNARY(exp) KILN_UNARY(log) KILN_UNARY(exp2) KILN_UNARY(log2) KILN_UNARY(sqrt) KILN_UNARY(rsqrt)
  KILN_UNARY(sin) KILN_UNARY(cos) KILN_UNARY(tan) KILN_UNARY(abs) KILN_UNARY(sign) KILN_UNARY(reciprocal)
  KILN_UNARY(relu) KILN_UNARY(sigmoid) KILN_UNARY(tanh) KILN_UNARY(silu)
#undef KILN_UNARY
  T.def("logical_not", [](const Tensor& t) { return (t.dtype().is_bool() ? t : t.cast(dtypes::bool_)).logical_not(); })
      .def("neg", [](const Tensor& t) { return -t; })
      .def("__neg__", [](const Tensor& t) { return -t; })
      .def("__invert__",
           [](const Tensor& t) {
             if (t.dtype().is_bool()) return t.logical_not();
             if (t.dtype().is_int()) return t ^ kiln::scalar_like(t, -1);
             throw kiln::Error("__invert__: ~ needs a bool or integer tensor, got " + t.dtype().name());
           })
      .def("__abs__", [](const Tensor& t) { return t.abs(); })
      .def("__iadd__", [](Tensor& t, nb::handle x) { return inplace<add_>(t, x, "__iadd__"); })
      .def("__isub__", [](Tensor& t, nb::handle x) { return inplace<sub_>(t, x, "__isub__"); })
      .def("__imul__", [](Tensor& t, nb::handle x) { return inplace<mul_>(t, x, "__imul__"); })
      .def("__itruediv__", [](Tensor& t, nb::handle x) { return inplace<div_>(t, x, "__itruediv__"); })
      .def("__add__", &binop<add_>).def("__radd__", &rbinop<add_>)
      .def("__sub__", &binop<sub_>).def("__rsub__", &rbinop<sub_>)
      .def("__mul__", &binop<mul_>).def("__rmul__", &rbinop<mul_>)
      .def("__truediv__", &binop<div_>).def("__rtruediv__", &rbinop<div_>)
      .def("__matmul__", &binop<matmul_>).def("__rmatmul__", &rbinop<matmul_>)
      .def("__and__", &binop<and_>).def("__rand__", &rbinop<and_>)
      .def("__or__", &binop<or_>).def("__ror__", &rbinop<or_>)
      .def("__xor__", &binop<xor_>).def("__rxor__", &rbinop<xor_>)
      .def("__lt__", &binop<lt_>).def("__le__", &binop<le_>)
      .def("__gt__", &binop<gt_>).def("__ge__", &binop<ge_>)
      .def("__eq__", &binop<eq_>).def("__ne__", &binop<ne_>)
      .def("add", [](const Tensor& t, nb::handle x, bool r) { return method_op<add_>(t, x, r, "add"); }, nb::arg("x"), nb::arg("reverse") = false)
      .def("sub", [](const Tensor& t, nb::handle x, bool r) { return method_op<sub_>(t, x, r, "sub"); }, nb::arg("x"), nb::arg("reverse") = false)
      .def("mul", [](const Tensor& t, nb::handle x, bool r) { return method_op<mul_>(t, x, r, "mul"); }, nb::arg("x"), nb::arg("reverse") = false)
      .def("matmul", [](const Tensor& t, nb::handle x, bool r) { return method_op<matmul_>(t, x, r, "matmul"); }, nb::arg("x"), nb::arg("reverse") = false)
      .def("dot", [](const Tensor& t, nb::handle w) { return t.dot(operand_or_throw(t, w, "dot", "w")); }, nb::arg("w"))
      // tinygrad's linear: x @ weight + bias with weight (in, out), or x * weight for a 1-D weight;
      // C++'s linear takes torch's (out, in) weight, so the binding hands it the transpose
      .def("linear",
           [](const Tensor& t, const Tensor& weight, std::optional<Tensor> bias) {
             if (weight.ndim() == 1) return bias ? t * weight + *bias : t * weight;
             return t.linear(weight.transpose(), bias);
           },
           nb::arg("weight"), nb::arg("bias").none() = nb::none())
      .def("bitwise_and", [](const Tensor& t, nb::handle x, bool r) { return method_op<and_>(t, x, r, "bitwise_and"); }, nb::arg("x"), nb::arg("reverse") = false)
      .def("bitwise_or", [](const Tensor& t, nb::handle x, bool r) { return method_op<or_>(t, x, r, "bitwise_or"); }, nb::arg("x"), nb::arg("reverse") = false)
      .def("bitwise_xor", [](const Tensor& t, nb::handle x, bool r) { return method_op<xor_>(t, x, r, "bitwise_xor"); }, nb::arg("x"), nb::arg("reverse") = false)
      .def("eq", [](const Tensor& t, nb::handle x) { return method_op<eq_>(t, x, false, "eq"); }, nb::arg("x"))
      .def("ne", [](const Tensor& t, nb::handle x) { return method_op<ne_>(t, x, false, "ne"); }, nb::arg("x"))
      .def("maximum", [](const Tensor& t, nb::handle x) { return method_op<maximum_>(t, x, false, "maximum"); }, nb::arg("x"))
      .def("minimum", [](const Tensor& t, nb::handle x) { return method_op<minimum_>(t, x, false, "minimum"); }, nb::arg("x"))
      .def("where",
           [](const Tensor& cond, nb::handle x, nb::handle y) {
             // tinygrad: a scalar beside a tensor takes its dtype rule; two scalars their from_py dtypes
             std::optional<Tensor> tx = nb::isinstance<Tensor>(x) ? std::optional(nb::cast<Tensor>(x)) : std::nullopt;
             std::optional<Tensor> ty = nb::isinstance<Tensor>(y) ? std::optional(nb::cast<Tensor>(y)) : std::nullopt;
             auto scalar = [&](nb::handle v, const char* arg) {
               if (!is_py_scalar(v))
                 throw nb::type_error(("where(): " + std::string(arg) + " must be a Tensor, bool, int or float, got " + py_type_name(v)).c_str());
               return Tensor::full({}, nb::cast<double>(nb::float_(v)), from_py(v), cond.device());
             };
             if (!tx) tx = ty ? operand_or_throw(*ty, x, "where", "x") : scalar(x, "x");
             if (!ty) ty = operand_or_throw(*tx, y, "where", "y");
             return Tensor::where(cond, *tx, *ty);
           },
           nb::arg("x"), nb::arg("y"));

  // ---- reductions ----
  using Red = Tensor (Tensor::*)(const std::vector<int>&, bool) const;
  // sum and prod take tinygrad's dtype= (the dtype to reduce in: the input is cast to it first).
  // tinygrad's prod keeps that dtype (the input's when none is given: int8 stays int8, half half)
  // where kiln's widens small ones; sum's widening (int8 -> int32, half stays half) is tinygrad's.
  auto reduction = [&](const char* name, Red fn, bool with_dtype) {
    bool keeps_dtype = std::string(name) == "prod";
    auto body = [fn, name, keeps_dtype](const Tensor& t0, nb::handle axis, bool keepdim, nb::handle dtype) {
      auto d = dtype_arg(dtype, name);
      Tensor t = d && *d != t0.dtype() ? t0.cast(*d) : t0;
      if (reduces_nothing(axis)) return t;
      Tensor r = t.ndim() == 0 && !axis.is_none() ? (t.reshape({1}).*fn)(axis_arg(axis, name), false)
                                                  : (t.*fn)(axis_arg(axis, name), keepdim);
      return keeps_dtype && r.dtype() != t.dtype() ? r.cast(t.dtype()) : r;
    };
    if (with_dtype)
      T.def(name, body, nb::arg("axis").none() = nb::none(), nb::arg("keepdim") = false, nb::arg("dtype").none() = nb::none());
    else
      T.def(name, [body](const Tensor& t, nb::handle axis, bool keepdim) { return body(t, axis, keepdim, nb::none()); },
            nb::arg("axis").none() = nb::none(), nb::arg("keepdim") = false);
  };
  reduction("sum", &Tensor::sum, true);
  reduction("max", &Tensor::max, false);
  reduction("min", &Tensor::min, false);
  reduction("mean", &Tensor::mean, false);
  reduction("prod", &Tensor::prod, true);
  T.def("var", [](const Tensor& t, nb::handle axis, bool keepdim, double correction) { return t.var(axis_arg(axis, "var"), keepdim, correction); },
        nb::arg("axis").none() = nb::none(), nb::arg("keepdim") = false, nb::arg("correction") = 1)
      .def("std", [](const Tensor& t, nb::handle axis, bool keepdim, double correction) { return t.std(axis_arg(axis, "std"), keepdim, correction); },
           nb::arg("axis").none() = nb::none(), nb::arg("keepdim") = false, nb::arg("correction") = 1)
      .def("argmax",
           [](const Tensor& t, std::optional<int> axis, bool keepdim) {
             if (!axis) return t.flatten().argmax(0, false);  // tinygrad: the index into the flattened tensor
             return t.argmax(*axis, keepdim);
           },
           nb::arg("axis").none() = nb::none(), nb::arg("keepdim") = false)
      .def("std_mean",
           [](const Tensor& t, nb::handle axis, bool keepdim, double correction) {
             auto [s, m] = t.std_mean(axis_arg(axis, "std_mean"), keepdim, correction);
             return nb::make_tuple(s, m);
           },
           nb::arg("axis").none() = nb::none(), nb::arg("keepdim") = false, nb::arg("correction") = 1)
      .def("var_mean",
           [](const Tensor& t, nb::handle axis, bool keepdim, double correction) {
             auto [v, m] = t.var_mean(axis_arg(axis, "var_mean"), keepdim, correction);
             return nb::make_tuple(v, m);
           },
           nb::arg("axis").none() = nb::none(), nb::arg("keepdim") = false, nb::arg("correction") = 1)
      .def("softmax",
           [](const Tensor& t, int axis, nb::handle dtype) {
             auto d = dtype_arg(dtype, "softmax");
             Tensor x = d ? t.cast(*d) : t;
             return x.ndim() == 0 ? x.reshape({1}).softmax(axis).reshape({}) : x.softmax(axis);
           },
           nb::arg("axis") = -1, nb::arg("dtype").none() = nb::none())
      .def("log_softmax",
           [](const Tensor& t, int axis, nb::handle dtype) {
             auto d = dtype_arg(dtype, "log_softmax");
             Tensor x = d ? t.cast(*d) : t;
             return x.ndim() == 0 ? x.reshape({1}).log_softmax(axis).reshape({}) : x.log_softmax(axis);
           },
           nb::arg("axis") = -1, nb::arg("dtype").none() = nb::none());
}

}  // namespace kiln_py
