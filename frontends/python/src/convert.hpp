// frontends/python/src/convert.hpp - Python data to tensors and tensors to Python data: the
// Tensor(data) constructor (scalars, nested lists/tuples, numpy and other host arrays through
// DLPack or the buffer protocol, with tinygrad's dtype inference), the Python scalar beside a
// tensor in an operator, and the reads back to the host (numpy(), tolist(), item(), shapes).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <optional>

#include "common.hpp"

namespace kiln_py {

// ---- tensors to Python data (each reads the tensor to the host with the GIL released) ----

// A shape as a tuple of Python ints.
nb::tuple py_shape(const Shape& shape);
// A numpy array of the tensor's dtype (bfloat16 as ml_dtypes.bfloat16, or its exact float32 values
// without ml_dtypes); kiln::Error for a dtype numpy has not.
nb::object to_numpy(const Tensor& t);
// Nested lists of Python bool/int/float (a 0-d tensor gives the scalar).
nb::object to_list(const Tensor& t);
// The one element's Python value; kiln::Error unless numel() == 1.
nb::object item(const Tensor& t);

// ---- Python data to tensors ----

// Tensor(data, device=None, dtype=None, requires_grad=None): data is a Tensor (moved to device
// when one is given), a Python scalar or nested lists/tuples of them (dtype as tinygrad infers it
// unless given), or a host array (numpy, __dlpack__, buffer protocol; cast to dtype when given).
Tensor make_tensor(nb::handle data, nb::handle device, nb::handle dtype, nb::handle requires_grad);

// The kiln dtype of a DLPack element type; nullopt for one kiln has not (complex, float8, lanes).
std::optional<DType> dlpack_dtype(nb::dlpack::dtype t);

// ---- memory shared with other libraries (dlpack.cpp) ----

// A tensor on `device` over the memory of `data` (any host array: numpy, __dlpack__) without a
// copy: when the array is writable, row-major contiguous, of dtype `want` (or any when none) and
// the device can use its memory (cpu; 64-byte aligned). nullopt when it is not such an array;
// a copy (Tensor::from_blob's fallback) when the device cannot share it.
std::optional<Tensor> share_array(nb::handle data, std::optional<DType> want, const std::string& device);

// ---- operands: the other side of a binary op ----

// A Python scalar beside `like` as a 0-d tensor on like's device, with the dtype tinygrad gives it.
Tensor scalar_operand(const Tensor& like, nb::handle v);
// v as a tensor when it is a Tensor or a Python scalar; nullopt otherwise (an operator then
// returns NotImplemented).
std::optional<Tensor> operand(const Tensor& like, nb::handle v);
// operand(), or nb::type_error "<fn>(): <arg> must be a Tensor, bool, int or float".
Tensor operand_or_throw(const Tensor& like, nb::handle v, const char* fn, const char* arg);

// A binary operator's bindings over F (a function of two tensors): the operator (self op other)
// and its reflected form (other op self) return NotImplemented for an operand that is no Tensor
// or Python scalar, so Python tries the other side; the method form (t.add(x, reverse=False))
// raises a TypeError naming the argument instead.
using BinFn = Tensor (*)(const Tensor&, const Tensor&);
template <BinFn F>
nb::object binop(const Tensor& self, nb::handle other) {
  auto o = operand(self, other);
  if (!o) return nb::borrow(Py_NotImplemented);
  return nb::cast(F(self, *o));
}
template <BinFn F>
nb::object rbinop(const Tensor& self, nb::handle other) {
  auto o = operand(self, other);
  if (!o) return nb::borrow(Py_NotImplemented);
  return nb::cast(F(*o, self));
}
template <BinFn F>
Tensor method_op(const Tensor& self, nb::handle x, bool reverse, const char* fn, const char* arg = "x") {
  Tensor o = operand_or_throw(self, x, fn, arg);
  return reverse ? F(o, self) : F(self, o);
}

}  // namespace kiln_py
