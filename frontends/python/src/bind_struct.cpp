// frontends/python/src/bind_struct.cpp - the structural ops (running reductions, argmin, sort and
// topk, einsum, triangles, one_hot, masked_fill, scatter, repeat, split/chunk, unfold, meshgrid,
// diag/diagonal, roll, unflatten, pad with its modes, interpolate) under tinygrad's names, keywords
// and defaults. Each is kiln::Tensor's C++ method; this file only reads Python's arguments and
// raises the Python exception types tinygrad raises where test_ops checks them (IndexError for an
// axis out of range, ValueError for malformed padding or counts, TypeError for wrong argument kinds,
// NotImplementedError for an unknown pad mode). Everything else fails as kiln.Error. Graph building
// only, so the GIL stays held, except masked_select and nonzero without a size (they realize a count).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "convert.hpp"

namespace kiln_py {

namespace {

std::string py_repr(nb::handle h) { return nb::cast<std::string>(nb::repr(h)); }

// An axis of t as a Python int; out of range is IndexError (as torch and tinygrad). A 0-d tensor
// takes 0 and -1 where `scalar_ok` (the running ops, sort).
int axis_of(const Tensor& t, nb::handle axis, const char* fn, const char* arg, bool scalar_ok = false) {
  if (!nb::isinstance<nb::int_>(axis) || nb::isinstance<nb::bool_>(axis))
    throw nb::type_error((std::string(fn) + "(): " + arg + " must be an int, got " + py_type_name(axis)).c_str());
  const int a = i32(axis), n = t.ndim() == 0 && scalar_ok ? 1 : t.ndim();
  if (a < -n || a >= n)
    throw nb::index_error((std::string(fn) + "(): " + arg + " " + std::to_string(a) + " is out of range for a tensor of " +
                           std::to_string(t.ndim()) + " dimensions (expected " + std::to_string(-n) + " <= " + arg + " < " +
                           std::to_string(n) + ")")
                              .c_str());
  return a;
}

// An int or a tuple/list of ints.
std::vector<int64_t> int_list(nb::handle h, const char* fn, const char* arg) {
  std::vector<int64_t> out;
  if (nb::isinstance<nb::int_>(h) && !nb::isinstance<nb::bool_>(h)) return {i64(h)};
  if (nb::isinstance<nb::tuple>(h) || nb::isinstance<nb::list>(h)) {
    for (nb::handle x : h) {
      if (!nb::isinstance<nb::int_>(x) || nb::isinstance<nb::bool_>(x))
        throw nb::type_error((std::string(fn) + "(): " + arg + " must hold ints, got " + py_repr(h)).c_str());
      out.push_back(i64(x));
    }
    return out;
  }
  throw nb::type_error((std::string(fn) + "(): " + arg + " must be an int or a tuple of ints, got " + py_type_name(h)).c_str());
}

nb::tuple as_tuple(const std::vector<Tensor>& ts) {
  nb::list l;
  for (const Tensor& t : ts) l.append(nb::cast(t));
  return nb::tuple(l);
}

// tinygrad's pad argument: a flat torch-style tuple of ints (last axis first, an even count of at
// most 2 * ndim) or one (before, after) pair or None per axis from the first.
kiln::Pads pad_arg(const Tensor& t, nb::handle padding) {
  if (!nb::isinstance<nb::tuple>(padding) && !nb::isinstance<nb::list>(padding))
    throw nb::type_error(("pad(): padding must be a tuple or list, got " + py_type_name(padding)).c_str());
  const size_t nd = t.shape().size(), len = nb::len(padding);
  bool flat = true;
  for (nb::handle h : padding) flat &= nb::isinstance<nb::int_>(h) && !nb::isinstance<nb::bool_>(h);
  kiln::Pads pads(nd, {0, 0});
  if (flat && len > 0) {
    if (len % 2 || len / 2 > nd)
      throw nb::value_error(("pad(): a flat padding needs an even count of at most 2 * ndim = " + std::to_string(2 * nd) +
                             " ints, got " + py_repr(padding))
                                .c_str());
    for (size_t i = 0; i < len / 2; ++i) pads[nd - 1 - i] = {i64(padding[2 * i]), i64(padding[2 * i + 1])};
    return pads;
  }
  if (len != nd)
    throw nb::value_error(("pad(): padding " + py_repr(padding) + " needs one (before, after) pair or None per dimension (" +
                           std::to_string(nd) + ")")
                              .c_str());
  for (size_t i = 0; i < nd; ++i) {
    nb::handle h = padding[i];
    if (h.is_none()) continue;
    std::vector<int64_t> p = int_list(h, "pad", "each padding pair");
    if (p.size() != 2 || nb::isinstance<nb::int_>(h))
      throw nb::value_error(("pad(): expected a (before, after) pair or None per dimension, got " + py_repr(h)).c_str());
    pads[i] = {p[0], p[1]};
  }
  return pads;
}

// Operands of einsum: f(formula, a, b) or f(formula, [a, b]).
std::vector<Tensor> tensor_list(const nb::args& args, const char* fn) {
  nb::handle src = args;
  if (args.size() == 1 && (nb::isinstance<nb::tuple>(args[0]) || nb::isinstance<nb::list>(args[0]))) src = args[0];
  std::vector<Tensor> out;
  for (nb::handle h : src) {
    if (!nb::isinstance<Tensor>(h)) throw nb::type_error((std::string(fn) + "(): operands must be Tensors, got " + py_type_name(h)).c_str());
    out.push_back(nb::cast<Tensor>(h));
  }
  return out;
}

}  // namespace

void bind_struct(nb::class_<Tensor>& T) {
  // ---- running reductions, argmin, sorting ----
  T.def("cumsum", [](const Tensor& t, nb::handle axis) { return t.cumsum(axis_of(t, axis, "cumsum", "axis", true)); }, nb::arg("axis") = 0)
      .def("cumprod", [](const Tensor& t, nb::handle axis) { return t.cumprod(axis_of(t, axis, "cumprod", "axis", true)); }, nb::arg("axis"))
      .def("cummax", [](const Tensor& t, nb::handle axis) { return t.cummax(axis_of(t, axis, "cummax", "axis", true)); }, nb::arg("axis") = 0)
      .def("cummin", [](const Tensor& t, nb::handle axis) { return t.cummin(axis_of(t, axis, "cummin", "axis", true)); }, nb::arg("axis") = 0)
      .def("logcumsumexp", [](const Tensor& t, nb::handle axis) { return t.logcumsumexp(axis_of(t, axis, "logcumsumexp", "axis", true)); },
           nb::arg("axis") = 0)
      .def("argmin",
           [](const Tensor& t, nb::handle axis, bool keepdim) {
             if (axis.is_none()) return t.flatten().argmin(0, false);  // tinygrad: the index into the flattened tensor
             return t.argmin(axis_of(t, axis, "argmin", "axis"), keepdim);
           },
           nb::arg("axis").none() = nb::none(), nb::arg("keepdim") = false)
      .def("sort", [](const Tensor& t, nb::handle dim, bool descending) { return t.sort(axis_of(t, dim, "sort", "dim", true), descending); },
           nb::arg("dim") = -1, nb::arg("descending") = false)
      .def("argsort",
           [](const Tensor& t, nb::handle dim, bool descending) { return t.argsort(axis_of(t, dim, "argsort", "dim", true), descending); },
           nb::arg("dim") = -1, nb::arg("descending") = false)
      .def("topk",
           [](const Tensor& t, int64_t k, nb::handle dim, bool largest, bool sorted_) {
             return t.topk(k, axis_of(t, dim, "topk", "dim", true), largest, sorted_);
           },
           nb::arg("k"), nb::arg("dim") = -1, nb::arg("largest") = true, nb::arg("sorted_") = true);

  // ---- einsum ----
  T.def_static(
      "einsum",
      [](const std::string& formula, nb::args operands, nb::handle dtype) {
        std::vector<Tensor> ops = tensor_list(operands, "einsum");
        if (auto d = dtype_arg(dtype, "einsum"))
          for (Tensor& o : ops) o = o.cast(*d);
        return Tensor::einsum(formula, ops);
      },
      nb::arg("formula"), nb::arg("operands"), nb::kw_only(), nb::arg("dtype").none() = nb::none());

  // ---- masks, one_hot, scatter ----
  T.def("tril", &Tensor::tril, nb::arg("diagonal") = 0)
      .def("triu", &Tensor::triu, nb::arg("diagonal") = 0)
      .def("one_hot",
           [](const Tensor& t, int64_t num_classes) {
             if (num_classes < 0) throw nb::value_error(("one_hot(): num_classes must be >= 0, got " + std::to_string(num_classes)).c_str());
             return t.one_hot(num_classes);
           },
           nb::arg("num_classes"))
      .def("masked_fill",
           [](const Tensor& t, const Tensor& mask, nb::handle value) {
             if (nb::isinstance<Tensor>(value)) return t.masked_fill(mask, nb::cast<Tensor>(value));
             if (!is_py_scalar(value))
               throw nb::type_error(("masked_fill(): value must be a Tensor, bool, int or float, got " + py_type_name(value)).c_str());
             return t.masked_fill(mask, nb::cast<double>(nb::float_(value)));
           },
           nb::arg("mask"), nb::arg("value"))
      .def("masked_select",
           [](const Tensor& t, const Tensor& mask, std::optional<int64_t> size, nb::handle fill_value) {
             if (!is_py_scalar(fill_value))
               throw nb::type_error(("masked_select(): fill_value must be a bool, int or float, got " + py_type_name(fill_value)).c_str());
             const double fill = nb::cast<double>(nb::float_(fill_value));
             nb::gil_scoped_release release;  // without a size the mask's count is realized
             return t.masked_select(mask, size, fill);
           },
           nb::arg("mask"), nb::arg("size").none() = nb::none(), nb::arg("fill_value") = 0)
      .def("nonzero",
           [](const Tensor& t, std::optional<int64_t> size, nb::handle fill_value) {
             if (!is_py_scalar(fill_value))
               throw nb::type_error(("nonzero(): fill_value must be a bool, int or float, got " + py_type_name(fill_value)).c_str());
             const double fill = nb::cast<double>(nb::float_(fill_value));
             nb::gil_scoped_release release;  // without a size the count is realized
             return t.nonzero(size, fill);
           },
           nb::arg("size").none() = nb::none(), nb::arg("fill_value") = 0)
      .def("scatter",
           [](const Tensor& t, nb::handle dim, const Tensor& index, nb::handle src, nb::handle reduce) {
             std::string r;
             if (!reduce.is_none()) {
               if (!nb::isinstance<nb::str>(reduce) || (nb::cast<std::string>(reduce) != "add" && nb::cast<std::string>(reduce) != "multiply"))
                 throw nb::type_error(("scatter(): reduce must be None, 'add' or 'multiply', got " + py_repr(reduce)).c_str());
               r = nb::cast<std::string>(reduce);
             }
             if (!is_py_scalar(src) && !nb::isinstance<Tensor>(src))
               throw nb::type_error(("scatter(): src must be a Tensor or a Python scalar, got " + py_type_name(src)).c_str());
             if (!is_py_scalar(src) && !r.empty())
               throw nb::type_error("scatter(): reduce needs a scalar src; use scatter_reduce for a Tensor src");
             int a = axis_of(t, dim, "scatter", "dim");
             if (is_py_scalar(src)) return t.scatter(a, index, nb::cast<double>(nb::float_(src)), r);
             return t.scatter(a, index, nb::cast<Tensor>(src));
           },
           nb::arg("dim"), nb::arg("index"), nb::arg("src"), nb::arg("reduce").none() = nb::none())
      .def("scatter_reduce",
           [](const Tensor& t, nb::handle dim, const Tensor& index, const Tensor& src, const std::string& reduce, bool include_self) {
             return t.scatter_reduce(axis_of(t, dim, "scatter_reduce", "dim"), index, src, reduce, include_self);
           },
           nb::arg("dim"), nb::arg("index"), nb::arg("src"), nb::arg("reduce"), nb::arg("include_self") = true);

  // ---- repeat, split, unfold, meshgrid, diagonals, roll, unflatten ----
  T.def("repeat",
        [](const Tensor& t, nb::handle repeats, nb::args more) {
          std::vector<int64_t> r = int_list(repeats, "repeat", "repeats");
          for (nb::handle h : more) {
            auto x = int_list(h, "repeat", "repeats");
            r.insert(r.end(), x.begin(), x.end());
          }
          if (r.size() < t.shape().size())
            throw nb::value_error(("repeat(): " + std::to_string(r.size()) + " repeats for a tensor of " + std::to_string(t.ndim()) +
                                   " dimensions (expected at least one per dimension)")
                                      .c_str());
          return t.repeat(r);
        },
        nb::arg("repeats"), nb::arg("args"))
      .def("repeat_interleave",
           [](const Tensor& t, int64_t repeats, nb::handle dim) {
             if (dim.is_none()) return t.repeat_interleave(repeats);
             return t.repeat_interleave(repeats, axis_of(t, dim, "repeat_interleave", "dim"));
           },
           nb::arg("repeats"), nb::arg("dim").none() = nb::none())
      .def("split",
           [](const Tensor& t, nb::handle sizes, nb::handle dim) {
             int a = axis_of(t, dim, "split", "dim");
             if (nb::isinstance<nb::int_>(sizes)) return as_tuple(t.split_size(i64(sizes), a));
             return as_tuple(t.split(int_list(sizes, "split", "sizes"), a));
           },
           nb::arg("sizes"), nb::arg("dim") = 0)
      .def("chunk", [](const Tensor& t, int64_t chunks, nb::handle dim) { return t.chunk(chunks, axis_of(t, dim, "chunk", "dim")); },
           nb::arg("chunks"), nb::arg("dim") = 0)
      .def("unfold",
           [](const Tensor& t, nb::handle dim, int64_t size, int64_t step) { return t.unfold(axis_of(t, dim, "unfold", "dim"), size, step); },
           nb::arg("dim"), nb::arg("size"), nb::arg("step"))
      .def("meshgrid",
           [](const Tensor& t, nb::args others, const std::string& indexing) {
             std::vector<Tensor> all{t};
             for (nb::handle h : others) all.push_back(operand_or_throw(t, h, "meshgrid", "args"));
             return as_tuple(Tensor::meshgrid(all, indexing));
           },
           nb::arg("args"), nb::kw_only(), nb::arg("indexing") = "ij")
      .def("diag", &Tensor::diag)
      .def("diagonal",
           [](const Tensor& t, int64_t offset, nb::handle dim1, nb::handle dim2) {
             return t.diagonal(offset, axis_of(t, dim1, "diagonal", "dim1"), axis_of(t, dim2, "diagonal", "dim2"));
           },
           nb::arg("offset") = 0, nb::arg("dim1") = 0, nb::arg("dim2") = 1)
      .def("roll",
           [](const Tensor& t, nb::handle shifts, nb::handle dims) {
             std::vector<int64_t> s = int_list(shifts, "roll", "shifts");
             std::vector<int> d;
             if (!dims.is_none())
               for (int64_t x : int_list(dims, "roll", "dims")) d.push_back(axis_of(t, nb::int_(x), "roll", "dims"));
             return t.roll(s, d);
           },
           nb::arg("shifts"), nb::arg("dims").none() = nb::none())
      .def("unflatten",
           [](const Tensor& t, nb::handle dim, nb::handle sizes) {
             return t.unflatten(axis_of(t, dim, "unflatten", "dim"), shape_of(sizes, "unflatten"));
           },
           nb::arg("dim"), nb::arg("sizes"));

  // ---- cat and stack (replace tensor_methods.cpp's): tinygrad's argfix, so Tensor.stack((a, b))
  // and Tensor.stack(a, b) work as well as a.stack(b); self is read as a handle for that reason ----
  auto tensors_arg = [](nb::handle self, const nb::args& rest, const char* fn) {
    std::vector<Tensor> all;
    const bool seq = nb::isinstance<nb::tuple>(self) || nb::isinstance<nb::list>(self);
    if (seq && rest.size() > 0)
      throw nb::value_error((std::string(fn) + "(): a sequence of tensors cannot be followed by more tensors").c_str());
    nb::handle src = seq ? self : nb::handle();
    auto add = [&](nb::handle h) {
      if (!nb::isinstance<Tensor>(h)) throw nb::type_error((std::string(fn) + "(): arguments must be Tensors, got " + py_type_name(h)).c_str());
      all.push_back(nb::cast<Tensor>(h));
    };
    if (seq) {
      for (nb::handle h : src) add(h);
    } else {
      add(self);
      for (nb::handle h : rest) add(h);
    }
    if (all.empty()) throw nb::value_error((std::string(fn) + "(): needs at least one tensor").c_str());
    return all;
  };
  if (nb::hasattr(T, "cat")) nb::delattr(T, "cat");
  if (nb::hasattr(T, "stack")) nb::delattr(T, "stack");
  T.def("cat",
        [tensors_arg](nb::handle self, nb::args rest, nb::handle dim) {
          std::vector<Tensor> all = tensors_arg(self, rest, "cat");
          return Tensor::cat(all, axis_of(all[0], dim, "cat", "dim"));
        },
        nb::arg("args"), nb::kw_only(), nb::arg("dim") = 0)
      .def("stack",
           [tensors_arg](nb::handle self, nb::args rest, nb::handle dim) {
             std::vector<Tensor> all = tensors_arg(self, rest, "stack");
             if (!nb::isinstance<nb::int_>(dim)) throw nb::type_error(("stack(): dim must be an int, got " + py_type_name(dim)).c_str());
             const int a = i32(dim), n = all[0].ndim() + 1;
             if (a < -n || a >= n)
               throw nb::index_error(("stack(): dim " + std::to_string(a) + " is out of range for stacking tensors of " +
                                      std::to_string(n - 1) + " dimensions (expected " + std::to_string(-n) + " <= dim < " + std::to_string(n) + ")")
                                         .c_str());
             return Tensor::stack(all, a);
           },
           nb::arg("args"), nb::kw_only(), nb::arg("dim") = 0);

  // ---- pad (replaces tensor_methods.cpp's constant-only binding) and interpolate ----
  if (nb::hasattr(T, "pad")) nb::delattr(T, "pad");
  T.def("pad",
        [](const Tensor& t, nb::handle padding, const std::string& mode, nb::handle value) {
          if (mode != "constant" && mode != "reflect" && mode != "replicate" && mode != "circular") {
            PyErr_SetString(PyExc_NotImplementedError,
                            ("pad(): mode " + py_repr(nb::str(mode.c_str())) + " is not one of 'constant', 'reflect', 'replicate', 'circular'").c_str());
            throw nb::python_error();
          }
          if (!is_py_scalar(value)) throw nb::type_error(("pad(): value must be a bool, int or float, got " + py_type_name(value)).c_str());
          return t.pad(pad_arg(t, padding), mode, nb::cast<double>(nb::float_(value)));
        },
        nb::arg("padding"), nb::arg("mode") = "constant", nb::arg("value") = 0.0)
      .def("interpolate",
           [](const Tensor& t, nb::handle size, const std::string& mode, bool align_corners) {
             return t.interpolate(shape_of(size, "interpolate"), mode, align_corners);
           },
           nb::arg("size"), nb::arg("mode") = "linear", nb::arg("align_corners") = false);
}

}  // namespace kiln_py
