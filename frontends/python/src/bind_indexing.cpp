// frontends/python/src/bind_indexing.cpp - Tensor.__getitem__ / __setitem__: Python's subscript
// (an int, slice, None, Ellipsis, Tensor, list/tuple of ints, numpy array, or a tuple of those)
// read into kiln::Tensor::Index entries; kiln::Tensor::getitem/setitem do the work. Python's
// conventions on top: a bad index is an IndexError (kiln.IndexError, a kiln.Error too), a zero slice step a
// ValueError, a non-int slice bound a TypeError (as Python's own sequences and torch).
#include <nanobind/stl/string.h>

#include <string>
#include <vector>

#include "common.hpp"
#include "convert.hpp"

namespace kiln_py {

namespace {

using Index = Tensor::Index;

bool is_int(nb::handle h) { return nb::isinstance<nb::int_>(h) && !nb::isinstance<nb::bool_>(h); }

// An int-like entry: a Python int, or anything else with __index__ that is not an array of
// several values (numpy integer scalars and 0-d integer arrays), never a bool.
bool is_index_like(nb::handle h) {
  if (is_int(h)) return true;
  if (nb::isinstance<nb::bool_>(h) || nb::isinstance<Tensor>(h) || nb::isinstance<nb::float_>(h) || !PyIndex_Check(h.ptr())) return false;
  if (nb::hasattr(h, "dtype") && nb::str(h.attr("dtype")).equal(nb::str("bool"))) return false;
  return !nb::hasattr(h, "shape") || nb::len(nb::object(h.attr("shape"))) == 0;
}

int64_t as_index(nb::handle h) {
  nb::object i = nb::steal(PyNumber_Index(h.ptr()));
  if (!i.is_valid()) throw nb::python_error();
  return i64(i);
}

std::optional<int64_t> slice_bound(nb::handle h, const char* which) {
  if (h.is_none()) return std::nullopt;
  if (!is_index_like(h))
    throw nb::type_error(("Tensor index: slice " + std::string(which) + " must be an int or None, got " + py_type_name(h)).c_str());
  return as_index(h);
}

// An index tensor from an advanced index given as data (nested lists/tuples of ints, a numpy array).
Tensor index_tensor(const Tensor& self, nb::handle data) {
  Tensor t = make_tensor(data, nb::str(self.device().c_str()), nb::none(), nb::none());
  if (t.dtype().is_bool())
    throw nb::index_error("Tensor index: boolean (mask) indices are not supported; use an integer index or where()");
  if (!t.dtype().is_int())
    throw nb::index_error(("Tensor index: indices must be integers, got " + nb::cast<std::string>(nb::repr(data))).c_str());
  return t;
}

Index one_index(const Tensor& self, nb::handle h) {
  if (h.is_none()) return Index::none();
  if (h.ptr() == Py_Ellipsis) return Index::ellipsis();
  if (nb::isinstance<nb::slice>(h)) {
    auto start = slice_bound(h.attr("start"), "start"), stop = slice_bound(h.attr("stop"), "stop"),
         step = slice_bound(h.attr("step"), "step");
    if (step && *step == 0) throw nb::value_error("Tensor index: slice step cannot be zero");
    return Index::slice(start, stop, step);
  }
  if (nb::isinstance<Tensor>(h)) {
    Tensor t = nb::cast<Tensor>(h);
    if (t.dtype().is_bool())
      throw nb::index_error("Tensor index: boolean (mask) index tensors are not supported; use an integer index or where()");
    if (!t.dtype().is_int())
      throw nb::index_error(("Tensor index: index tensors must be integers, got dtype " + t.dtype().name()).c_str());
    return Index::tensor(t);
  }
  if (nb::isinstance<nb::bool_>(h))
    throw nb::index_error("Tensor index: a bool is not an index (boolean masks are not supported)");
  if (is_index_like(h)) return Index::integer(as_index(h));
  if (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h) || nb::hasattr(h, "__array_interface__") ||
      nb::hasattr(h, "__dlpack__"))
    return Index::tensor(index_tensor(self, h));
  throw nb::index_error(("Tensor index: only ints, slices, None, ..., integer Tensors and lists of ints are valid indices, got " +
                         py_type_name(h))
                            .c_str());
}

// Python's subscript as a list of entries: a tuple is one entry per item; so is a list holding a
// slice, None, ... or a Tensor (numpy's old sequence rule); any other list is one advanced index.
std::vector<Index> read_indices(const Tensor& self, nb::handle key) {
  std::vector<Index> out;
  bool as_tuple = nb::isinstance<nb::tuple>(key);
  if (nb::isinstance<nb::list>(key))
    for (nb::handle h : key)
      as_tuple |= h.is_none() || h.ptr() == Py_Ellipsis || nb::isinstance<nb::slice>(h) || nb::isinstance<Tensor>(h);
  if (!as_tuple) {
    out.push_back(one_index(self, key));
    return out;
  }
  for (nb::handle h : key) out.push_back(one_index(self, h));
  return out;
}

// kiln's errors about an index (out of range, too many, bad index tensors) as Python's IndexError.
template <typename F>
auto as_index_error(F&& f) {
  try {
    return f();
  } catch (const kiln::Error& e) {
    raise_index_error(e);
  }
}

}  // namespace

void bind_indexing(nb::class_<Tensor>& T) {
  T.def("__getitem__", [](const Tensor& t, nb::handle key) {
    std::vector<Index> ix = read_indices(t, key);
    return as_index_error([&] { return t.getitem(ix); });
  }, nb::arg("key").none());
  T.def("__setitem__", [](Tensor& t, nb::handle key, nb::handle value) {
    std::vector<Index> ix = read_indices(t, key);
    // a Tensor as it is (setitem casts it); data (scalars, lists, arrays) straight in this dtype
    if (!nb::isinstance<Tensor>(value) && !is_py_scalar(value) && !nb::isinstance<nb::list>(value) &&
        !nb::isinstance<nb::tuple>(value) && !nb::hasattr(value, "__array_interface__"))
      throw nb::type_error(("__setitem__(): value must be a Tensor, a Python scalar, a list or an array, got " + py_type_name(value)).c_str());
    Tensor v = nb::isinstance<Tensor>(value) ? nb::cast<Tensor>(value)
                                             : make_tensor(value, nb::str(t.device().c_str()), nb::cast(t.dtype()), nb::none());
    try {
      t.setitem(ix, v);
    } catch (const kiln::Error& e) {
      // an index out of range is an IndexError; a value that does not fit stays kiln.Error
      if (e.code() == kiln::ErrorCode::out_of_range) raise_index_error(e);
      throw;
    }
  }, nb::arg("key").none(), nb::arg("value").none());
}

}  // namespace kiln_py
