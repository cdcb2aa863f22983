// frontends/python/src/bind_symbolic.cpp - symbolic dimensions from Python (kiln::Variable and
// kiln::BoundVariable, kiln/tensor.hpp): kiln.Variable(name, min, max), .bind(value), and
// Tensor.symbolic_dim(axis). tinygrad's user-facing names come along (Variable is a UOp there):
// expr, vmin, vmax and unbind(). The Tensor methods that take a bound variable in place of a size
// (shrink, reshape, expand, slicing `t[:n]`) read it with bound_var(); their bindings live with
// the rest of each method (tensor_methods.cpp, bind_indexing.cpp).
//
// Python's view of a symbolic dimension is kiln's: Tensor.shape reports the bound value (an int,
// as numpy and every shape reader expect), symbolic_dim(axis) tells the variable behind it.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include <string>
#include <utility>

#include "common.hpp"

namespace kiln_py {

namespace {

using kiln::BoundVariable;
using kiln::Variable;

const kiln::NamedInts& def_of(const Variable& v) { return std::get<kiln::NamedInts>(v.uop().arg()); }

// A Python int (numpy integer scalars too, anything with __index__), never a bool or a float:
// a size given as 3.0 is a mistake worth naming, not something to round.
int64_t int_arg(nb::handle h, const char* fn, const char* what) {
  if (nb::isinstance<nb::bool_>(h) || nb::isinstance<nb::float_>(h) || !PyIndex_Check(h.ptr()))
    throw nb::type_error((std::string(fn) + "(): " + what + " must be an int, got " + py_type_name(h) + " " +
                          nb::cast<std::string>(nb::repr(h)))
                             .c_str());
  nb::object i = nb::steal(PyNumber_Index(h.ptr()));
  if (!i.is_valid()) throw nb::python_error();
  return i64(i);
}

bool same_def(const Variable& a, nb::handle b) { return nb::isinstance<Variable>(b) && def_of(a) == def_of(nb::cast<Variable>(b)); }

std::string var_repr(const std::string& name, int64_t min, int64_t max) {
  return "Variable('" + name + "', " + std::to_string(min) + ", " + std::to_string(max) + ")";
}

}  // namespace

std::optional<BoundVariable> bound_var(nb::handle h) {
  if (!nb::isinstance<BoundVariable>(h)) return std::nullopt;
  return nb::cast<BoundVariable>(h);
}

void bind_symbolic(nb::module_& m, nb::class_<Tensor>& T) {
  nb::class_<Variable>(m, "Variable",
                       "A symbolic size (e.g. a batch size) that takes any value in [min, max]: kernels built for a "
                       "dimension of it serve every value (one compile for all).")
      .def(
          "__init__",
          [](Variable* self, nb::handle name, nb::handle min, nb::handle max) {
            if (!nb::isinstance<nb::str>(name))
              throw nb::type_error(("Variable(): name must be a str, got " + py_type_name(name)).c_str());
            new (self) Variable(nb::cast<std::string>(name), int_arg(min, "Variable", "min"), int_arg(max, "Variable", "max"));
          },
          nb::arg("name").none(), nb::arg("min").none(), nb::arg("max").none())
      .def(
          "bind", [](const Variable& v, nb::handle value) { return v.bind(int_arg(value, "bind", "the value")); },
          nb::arg("value").none(), "This variable bound to value (kiln.Error when outside [min, max]).")
      .def_prop_ro("name", [](const Variable& v) { return def_of(v).name; })
      .def_prop_ro("min", [](const Variable& v) { return def_of(v).ints[0]; })
      .def_prop_ro("max", [](const Variable& v) { return def_of(v).ints[1]; })
      // tinygrad's names (a Variable is a UOp there)
      .def_prop_ro("expr", [](const Variable& v) { return def_of(v).name; })
      .def_prop_ro("vmin", [](const Variable& v) { return def_of(v).ints[0]; })
      .def_prop_ro("vmax", [](const Variable& v) { return def_of(v).ints[1]; })
      // one variable is its name and range (kiln keeps a variable by them)
      .def("__eq__", [](const Variable& a, nb::handle b) { return same_def(a, b); })
      .def("__ne__", [](const Variable& a, nb::handle b) { return !same_def(a, b); })
      .def("__hash__", [](const Variable& v) { return nb::hash(nb::make_tuple(def_of(v).name, def_of(v).ints[0], def_of(v).ints[1])); })
      .def("__repr__", [](const Variable& v) { return var_repr(def_of(v).name, def_of(v).ints[0], def_of(v).ints[1]); });

  nb::class_<BoundVariable>(m, "BoundVariable",
                            "A Variable with a value (Variable.bind): give it where a size goes - t[:n], "
                            "t.shrink(((0, n), None)), t.reshape(n, 4), t.expand(n, 4) - for a symbolic dimension.")
      .def_prop_ro("value", &BoundVariable::value)
      .def_prop_ro("val", &BoundVariable::value)
      .def_prop_ro("name", [](const BoundVariable& b) { return b.name(); })
      .def_prop_ro("min", &BoundVariable::min)
      .def_prop_ro("max", &BoundVariable::max)
      .def_prop_ro("expr", [](const BoundVariable& b) { return b.name(); })
      .def_prop_ro("vmin", &BoundVariable::min)
      .def_prop_ro("vmax", &BoundVariable::max)
      .def("same_variable", &BoundVariable::same_variable, nb::arg("other"),
           "True when other binds the same variable (name and range), whatever the values.")
      .def(
          "unbind", [](const BoundVariable& b) { return std::pair{Variable(b.name(), b.min(), b.max()), b.value()}; },
          "tinygrad's unbind(): (the Variable, the value).")
      .def("__repr__", [](const BoundVariable& b) {
        return var_repr(b.name(), b.min(), b.max()) + ".bind(" + std::to_string(b.value()) + ")";
      });

  T.def(
      "symbolic_dim",
      [](const Tensor& t, int axis) { return t.symbolic_dim(axis); }, nb::arg("axis"),
      "The BoundVariable of dimension axis when it is symbolic, else None (shape[axis] is its value).");
}

}  // namespace kiln_py
