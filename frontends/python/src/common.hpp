// frontends/python/src/common.hpp - what every file of kiln._kiln shares: the names it uses
// (nb, DType, Shape, Tensor, dtypes), the readers of Python arguments (device=, dtype=, shapes,
// axes, Python ints as C++ integers, Python scalars and the dtype tinygrad gives them), the
// Device.DEFAULT override that Python sets, and the bind_* entry points the module calls. The
// readers throw nb::type_error for an argument of the wrong Python type and kiln::Error for a
// value kiln rejects (the module translates that to kiln.Error); `fn` is the Python function's
// name, which every message starts with.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"

namespace nb = nanobind;

namespace kiln_py {

using kiln::DType;
using kiln::Scalar;
using kiln::Shape;
using kiln::Tensor;
namespace dtypes = kiln::dtypes;

// ---- errors ----

// The module's kiln.AttributeError and kiln.IndexError classes (module.cpp sets them at import).
void set_error_types(PyObject* attribute_error, PyObject* index_error);
// Raises kiln.AttributeError (a kiln.Error and an AttributeError, code 'invalid_argument') with msg.
[[noreturn]] void raise_attribute_error(const std::string& msg);
// Raises e as kiln.IndexError (a kiln.Error and an IndexError) keeping its code: every error of
// an index (Python's convention), whatever kiln's code for it.
[[noreturn]] void raise_index_error(const kiln::Error& e);

// ---- device and dtype arguments ----

// Device.DEFAULT when Python set it (kiln._set_default_device); "" means kiln's own default
// (KILN_DEVICE, config, best device). Thread-safe.
std::string default_override();
void set_default_override(const std::string& device);

// device=: None -> default_override(); a str as given (kiln checks it when it is used).
std::string device_arg(nb::handle device, const char* fn);
// dtype=: None -> nullopt; a kiln DType; or a dtype name ("bool", "float32", ...) or one of
// tinygrad's aliases ("int", "float", "half", "long", ...); an unknown name is kiln.AttributeError.
std::optional<DType> dtype_arg(nb::handle dtype, const char* fn);
// The Python type's __name__ of h, for messages.
std::string py_type_name(nb::handle h);

// ---- Python scalars ----

// The dtype tinygrad gives a Python scalar (dtypes.from_py): bool, default_int or default_float.
DType from_py(nb::handle v);
// A Python bool, int or float (a Tensor or a numpy scalar is not).
bool is_py_scalar(nb::handle v);

// ---- Python ints as C++ integers ----

// A size, axis or count: kiln::Error naming the value when it does not fit.
int64_t i64(nb::handle h);
int i32(nb::handle h);
// A data value: any Python int, wrapped modulo 2**64 like a C cast (numpy's astype).
uint64_t wrap_u64(nb::handle h);

// ---- shapes and axes ----

// tinygrad's `*shape` convention: f(2, 3), f((2, 3)) or f([2, 3]); entries must be ints.
Shape shape_args(const nb::args& args, const char* fn);
// One shape argument: an int or a tuple/list of ints.
Shape shape_of(nb::handle seq, const char* fn);
// shape_args read as ints (axes, permutations).
std::vector<int> ints_args(const nb::args& args, const char* fn);
// axis=: None -> {} (all axes), an int, or a tuple/list of ints.
std::vector<int> axis_arg(nb::handle axis, const char* fn);
// True for an empty tuple/list of axes: a reduction over it reduces nothing (tinygrad, numpy),
// where axis_arg's {} would mean all axes.
bool reduces_nothing(nb::handle axis);

// ---- symbolic dimensions ----

// h as a kiln.BoundVariable (kiln.Variable(...).bind(v)), which a size argument may be (a symbolic
// dimension); nullopt for anything else (bind_symbolic.cpp).
std::optional<kiln::BoundVariable> bound_var(nb::handle h);

// ---- the module's parts (each binds onto the class module.cpp created) ----

// bind_indexing.cpp: __getitem__ and __setitem__.
void bind_indexing(nb::class_<Tensor>& T);
// tensor_methods.cpp: the Tensor class's methods and properties after __init__ and creation.
void bind_tensor_methods(nb::class_<Tensor>& T);
// bind_creation.cpp: linspace, eye and the random creation functions beyond rand/randn.
void bind_creation(nb::class_<Tensor>& T);
// dlpack.cpp: __dlpack__, __dlpack_device__ and kiln.from_dlpack.
void bind_dlpack(nb::module_& m, nb::class_<Tensor>& T);
// bind_train.cpp: layernorm/batchnorm/dropout, Tensor.training, and the private _optim,
// _safetensors and _Jit that kiln.nn and kiln.TinyJit wrap.
void bind_train(nb::module_& m, nb::class_<Tensor>& T);
// bind_struct.cpp: the structural ops (cumsum..., sort, einsum, scatter, pad with modes, ...);
// replaces bind_tensor_methods' pad, so it is called after it.
void bind_struct(nb::class_<Tensor>& T);
// bind_conv.cpp: conv2d, conv_transpose2d, max_pool2d, avg_pool2d, max_unpool2d (N-d, tinygrad's arguments).
void bind_conv(nb::class_<Tensor>& T);
// bind_math.cpp: elementwise math, activations, // % << >> **, math reductions, losses, attention.
void bind_math(nb::class_<Tensor>& T);
// bind_symbolic.cpp: kiln.Variable, kiln.BoundVariable and Tensor.symbolic_dim.
void bind_symbolic(nb::module_& m, nb::class_<Tensor>& T);
// bind_onnx.cpp: the submodule kiln._kiln.onnx (kiln/onnx.hpp) that kiln.onnx wraps; binds nothing
// in a build without kiln::onnx (KILN_HAVE_ONNX unset).
void bind_onnx(nb::module_& m);
// kiln._kiln.dist (kiln::dist over MPI) when the build has it (bind_dist.cpp).
void bind_dist(nb::module_& m);

}  // namespace kiln_py
