// frontends/python/src/bind_indexing.cpp - Tensor.__getitem__ / __setitem__: Python's subscript
// (an int, slice, None, Ellipsis, Tensor, list/tuple of ints, numpy array, or a tuple of those)
// read into kiln::Tensor::Index entries; kiln::Tensor::getitem/setitem do the work. Python's
// conventions on top: a bad index is an IndexError (kiln.IndexError, a kiln.Error too), a zero slice step a
// ValueError, a non-int slice bound a TypeError (as Python's own sequences and torch). A slice may
// end at a kiln.BoundVariable, tinygrad's t[:n]: a symbolic dimension (bind_symbolic.cpp).
#include <nanobind/stl/string.h>

#include <algorithm>
#include <optional>
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

// A slice ending at a BoundVariable, tinygrad's t[:n]: the first n along its axis, a symbolic
// dimension. __getitem__ shrinks that axis to the variable (kiln::Tensor::shrink(axis, n)) before
// the rest of the index, where the entry reads as the whole axis (which getitem keeps symbolic).
struct SymbolicSlice {
  size_t entry;  // its place in the subscript
  kiln::BoundVariable n;
};

// nullopt for a slice without variables; its variable for [:n] / [0:n] / [:n:1]; kiln::Error for a
// variable anywhere else, or where no symbolic slice is taken (`sym` null: __setitem__).
std::optional<kiln::BoundVariable> symbolic_stop(nb::handle h, bool allowed) {
  nb::object start = h.attr("start"), stop = h.attr("stop"), step = h.attr("step");
  auto n = bound_var(stop);
  if (bound_var(start) || bound_var(step))
    throw kiln::Error("Tensor index: a variable can only end a slice (t[:n], the first n along an axis), got " +
                      nb::cast<std::string>(nb::repr(h)));
  if (!n) return std::nullopt;
  if (!allowed)
    throw kiln::Error("__setitem__: a slice ending at the variable '" + n->name() +
                      "' cannot be assigned to; assign to the buffer (or a fixed slice of it) and take t[:n] of it after");
  auto is = [](nb::handle v, int64_t want) { return nb::isinstance<nb::int_>(v) && !nb::isinstance<nb::bool_>(v) && i64(v) == want; };
  if (!(start.is_none() || is(start, 0)) || !(step.is_none() || is(step, 1)))
    throw kiln::Error("Tensor index: a slice ending at the variable '" + n->name() +
                      "' takes the first n along its axis: start 0 and step 1, got " + nb::cast<std::string>(nb::repr(h)));
  return n;
}

Index one_index(const Tensor& self, nb::handle h, size_t entry, std::vector<SymbolicSlice>* sym) {
  if (h.is_none()) return Index::none();
  if (h.ptr() == Py_Ellipsis) return Index::ellipsis();
  if (nb::isinstance<nb::slice>(h)) {
    if (auto n = symbolic_stop(h, sym != nullptr)) {
      sym->push_back({entry, *n});
      return Index::slice(std::nullopt, std::nullopt, std::nullopt);
    }
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
// `sym` collects the slices ending at a variable (null: none allowed).
std::vector<Index> read_indices(const Tensor& self, nb::handle key, std::vector<SymbolicSlice>* sym) {
  std::vector<Index> out;
  bool as_tuple = nb::isinstance<nb::tuple>(key);
  if (nb::isinstance<nb::list>(key))
    for (nb::handle h : key)
      as_tuple |= h.is_none() || h.ptr() == Py_Ellipsis || nb::isinstance<nb::slice>(h) || nb::isinstance<Tensor>(h);
  if (!as_tuple) {
    out.push_back(one_index(self, key, 0, sym));
    return out;
  }
  for (nb::handle h : key) out.push_back(one_index(self, h, out.size(), sym));
  return out;
}

// t with the axis of each symbolic slice shrunk to its variable. An entry's axis counts the
// entries before it that take one (ints, slices, index tensors), an ellipsis before it standing
// for every axis the subscript leaves out. Too many entries are left for getitem to report.
Tensor shrink_symbolic(const Tensor& t, const std::vector<Index>& ix, const std::vector<SymbolicSlice>& sym) {
  auto takes_axis = [](const Index& i) { return i.kind != Index::Kind::none && i.kind != Index::Kind::ellipsis; };
  int64_t taking = 0;
  for (const Index& i : ix) taking += takes_axis(i);
  Tensor r = t;
  for (const SymbolicSlice& s : sym) {
    int64_t axis = 0;
    for (size_t k = 0; k < s.entry; ++k)
      axis += takes_axis(ix[k]) ? 1 : ix[k].kind == Index::Kind::ellipsis ? std::max<int64_t>(t.ndim() - taking, 0) : 0;
    if (axis < t.ndim()) r = r.shrink(static_cast<int>(axis), s.n);
  }
  return r;
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
    std::vector<SymbolicSlice> sym;
    std::vector<Index> ix = read_indices(t, key, &sym);
    Tensor base = sym.empty() ? t : shrink_symbolic(t, ix, sym);  // its errors name the variable: kiln.Error, not IndexError
    return as_index_error([&] { return base.getitem(ix); });
  }, nb::arg("key").none());
  T.def("__setitem__", [](Tensor& t, nb::handle key, nb::handle value) {
    std::vector<Index> ix = read_indices(t, key, nullptr);
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
