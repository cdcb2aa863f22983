// frontends/python/src/module.cpp - kiln._kiln: nanobind bindings of the public C++ API.
//
// The Python Tensor follows tinygrad's Tensor (DESIGN §5.2). Every operation is kiln::Tensor's own
// C++ method; this file only adds Python's calling conventions: tinygrad's names, keywords and
// defaults, *args shapes, Python scalars on either side of an operator (given a dtype as tinygrad
// gives them), conversion from and to Python lists, scalars and numpy arrays. The GIL is released
// whenever kernels may compile or run (realize, reads to the host, backward).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"

namespace nb = nanobind;
using kiln::DType;
using kiln::Scalar;
using kiln::Shape;
using kiln::Tensor;
namespace dtypes = kiln::dtypes;

namespace {

// ---- device and dtype arguments -----------------------------------------------------------------

// Device.DEFAULT when Python set it; "" means kiln's own default (KILN_DEVICE, config, best device).
std::mutex g_default_mu;
std::string g_default_device;

std::string default_override() {
  std::lock_guard<std::mutex> lock(g_default_mu);
  return g_default_device;
}

std::string device_arg(nb::handle device, const char* fn) {
  if (device.is_none()) return default_override();
  if (nb::isinstance<nb::str>(device)) return nb::cast<std::string>(device);
  throw nb::type_error((std::string(fn) + "(): device must be a str such as 'cpu:0' or None, got " +
                        nb::cast<std::string>(nb::str(device.type().attr("__name__"))))
                           .c_str());
}

std::string py_type_name(nb::handle h) { return nb::cast<std::string>(nb::str(h.type().attr("__name__"))); }

std::optional<DType> dtype_arg(nb::handle dtype, const char* fn) {
  if (dtype.is_none()) return std::nullopt;
  if (nb::isinstance<DType>(dtype)) return nb::cast<DType>(dtype);
  if (nb::isinstance<nb::str>(dtype)) {
    std::string name = nb::cast<std::string>(dtype);
    DType d;
    if (name == "bool") return dtypes::bool_;
    if (kiln::parse_dtype(name, d) && !d.is_void() && d.scalar() != Scalar::index) return d;
    throw kiln::Error(std::string(fn) + "(): unknown dtype '" + name + "' (use a kiln.dtypes member, e.g. dtypes.float32)");
  }
  throw nb::type_error((std::string(fn) + "(): dtype must be a kiln.dtypes member, a dtype name or None, got " + py_type_name(dtype)).c_str());
}

// The dtype tinygrad gives a Python scalar (dtypes.from_py).
DType from_py(nb::handle v) {
  if (nb::isinstance<nb::bool_>(v)) return dtypes::bool_;
  if (nb::isinstance<nb::int_>(v)) return dtypes::default_int;
  return dtypes::default_float;
}

bool is_py_scalar(nb::handle v) {
  return nb::isinstance<nb::bool_>(v) || nb::isinstance<nb::int_>(v) || nb::isinstance<nb::float_>(v);
}

// Python ints as C++ integers: a size, axis or count out of range is a kiln::Error naming it (not
// nanobind's bare std::bad_cast); data values wrap modulo 2**64 like a C cast (numpy's astype).
int64_t i64(nb::handle h) {
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
  if (overflow || (v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    throw kiln::Error("the integer " + nb::cast<std::string>(nb::repr(h)) + " does not fit in 64 bits");
  }
  return v;
}
int i32(nb::handle h) {
  int64_t v = i64(h);
  if (v < INT32_MIN || v > INT32_MAX) throw kiln::Error("the axis or size " + std::to_string(v) + " does not fit in 32 bits");
  return static_cast<int>(v);
}
uint64_t wrap_u64(nb::handle h) {
  nb::int_ i(h);
  unsigned long long v = PyLong_AsUnsignedLongLongMask(i.ptr());
  if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) throw nb::python_error();
  return v;
}

// A shape from tinygrad's `*shape` convention: f(2, 3) or f((2, 3)) or f([2, 3]).
Shape shape_args(const nb::args& args, const char* fn) {
  nb::handle src = args;
  if (args.size() == 1 && (nb::isinstance<nb::tuple>(args[0]) || nb::isinstance<nb::list>(args[0]))) src = args[0];
  Shape out;
  for (nb::handle h : src) {
    if (!nb::isinstance<nb::int_>(h) || nb::isinstance<nb::bool_>(h))
      throw nb::type_error((std::string(fn) + "(): shape entries must be ints, got " + py_type_name(h)).c_str());
    out.push_back(i64(h));
  }
  return out;
}

Shape shape_of(nb::handle seq, const char* fn) {
  Shape out;
  if (nb::isinstance<nb::int_>(seq) && !nb::isinstance<nb::bool_>(seq)) return {i64(seq)};
  if (!nb::isinstance<nb::tuple>(seq) && !nb::isinstance<nb::list>(seq))
    throw nb::type_error((std::string(fn) + "(): shape must be an int or a tuple of ints, got " + py_type_name(seq)).c_str());
  for (nb::handle h : seq) {
    if (!nb::isinstance<nb::int_>(h) || nb::isinstance<nb::bool_>(h))
      throw nb::type_error((std::string(fn) + "(): shape entries must be ints, got " + py_type_name(h)).c_str());
    out.push_back(i64(h));
  }
  return out;
}

std::vector<int> ints_args(const nb::args& args, const char* fn) {
  std::vector<int> out;
  for (int64_t v : shape_args(args, fn)) out.push_back(static_cast<int>(v));
  return out;
}

// axis=None (all), an int, or a tuple of ints.
std::vector<int> axis_arg(nb::handle axis, const char* fn) {
  if (axis.is_none()) return {};
  if (nb::isinstance<nb::int_>(axis) && !nb::isinstance<nb::bool_>(axis)) return {i32(axis)};
  if (nb::isinstance<nb::tuple>(axis) || nb::isinstance<nb::list>(axis)) {
    std::vector<int> out;
    for (nb::handle h : axis) {
      if (!nb::isinstance<nb::int_>(h) || nb::isinstance<nb::bool_>(h))
        throw nb::type_error((std::string(fn) + "(): axis entries must be ints, got " + py_type_name(h)).c_str());
      out.push_back(i32(h));
    }
    return out;
  }
  throw nb::type_error((std::string(fn) + "(): axis must be None, an int or a tuple of ints, got " + py_type_name(axis)).c_str());
}

// A reduction over an empty tuple of axes reduces nothing (tinygrad, numpy); C++ reads {} as all.
bool reduces_nothing(nb::handle axis) {
  return (nb::isinstance<nb::tuple>(axis) || nb::isinstance<nb::list>(axis)) && nb::len(axis) == 0;
}

// ---- host element conversions ---------------------------------------------------------------------

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000 | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while (!(mant & 0x400));
    bits = sign | ((112 - e) << 23) | ((mant & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16_to_float(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// The Python value of element i of a host copy in dtype d.
nb::object element(const uint8_t* p, DType d, int64_t i) {
  switch (d.scalar()) {
    case Scalar::bool_: return nb::bool_(p[i] != 0);
#define KILN_INT(S, T) \
  case Scalar::S: { T v; std::memcpy(&v, p + i * sizeof(T), sizeof(T)); return nb::int_(v); }
    KILN_INT(int8, int8_t) KILN_INT(int16, int16_t) KILN_INT(int32, int32_t) KILN_INT(int64, int64_t)
    KILN_INT(uint8, uint8_t) KILN_INT(uint16, uint16_t) KILN_INT(uint32, uint32_t) KILN_INT(uint64, uint64_t)
#undef KILN_INT
    case Scalar::float16: { uint16_t v; std::memcpy(&v, p + i * 2, 2); return nb::float_(half_to_float(v)); }
    case Scalar::bfloat16: { uint16_t v; std::memcpy(&v, p + i * 2, 2); return nb::float_(bf16_to_float(v)); }
    case Scalar::float32: { float v; std::memcpy(&v, p + i * 4, 4); return nb::float_(v); }
    case Scalar::float64: { double v; std::memcpy(&v, p + i * 8, 8); return nb::float_(v); }
    default: throw kiln::Error("tolist: tensors of " + d.name() + " have no Python value");
  }
}

std::vector<uint8_t> host_bytes(const Tensor& t) {
  std::vector<uint8_t> bytes(static_cast<size_t>(t.numel()) * static_cast<size_t>(t.dtype().itemsize()));
  nb::gil_scoped_release release;
  t.to_bytes(bytes.data(), bytes.size());
  return bytes;
}

nb::object nested(const uint8_t* p, DType d, const Shape& shape, size_t dim, int64_t& i) {
  if (dim == shape.size()) return element(p, d, i++);
  nb::list out;
  for (int64_t k = 0; k < shape[dim]; ++k) out.append(nested(p, d, shape, dim + 1, i));
  return out;
}

nb::tuple py_shape(const Shape& shape) {
  nb::list l;
  for (int64_t d : shape) l.append(nb::int_(d));
  return nb::steal<nb::tuple>(PySequence_Tuple(l.ptr()));
}

// numpy's name of a kiln dtype (bfloat16 goes as its uint16 bits, then ml_dtypes' view).
const char* numpy_name(DType d) {
  switch (d.scalar()) {
    case Scalar::bool_: return "bool";
    case Scalar::int8: return "int8";
    case Scalar::int16: return "int16";
    case Scalar::int32: return "int32";
    case Scalar::int64: return "int64";
    case Scalar::uint8: return "uint8";
    case Scalar::uint16: return "uint16";
    case Scalar::uint32: return "uint32";
    case Scalar::uint64: return "uint64";
    case Scalar::float16: return "float16";
    case Scalar::bfloat16: return "uint16";
    case Scalar::float32: return "float32";
    case Scalar::float64: return "float64";
    default: throw kiln::Error("numpy: tensors of " + d.name() + " have no numpy dtype");
  }
}

nb::object to_numpy(const Tensor& t) {
  nb::module_ np = nb::module_::import_("numpy");
  nb::tuple shape = py_shape(t.shape());
  nb::object arr = np.attr("empty")(shape, nb::arg("dtype") = numpy_name(t.dtype()));
  {
    auto view = nb::cast<nb::ndarray<nb::c_contig, nb::device::cpu>>(arr);
    void* dst = view.data();
    uint64_t n = static_cast<uint64_t>(t.numel()) * static_cast<uint64_t>(t.dtype().itemsize());
    nb::gil_scoped_release release;
    t.to_bytes(dst, n);
  }
  if (t.dtype().scalar() == Scalar::bfloat16) {
    try {
      return arr.attr("view")(nb::module_::import_("ml_dtypes").attr("bfloat16"));
    } catch (nb::python_error& e) {
      if (!e.matches(PyExc_ImportError)) throw;
      // without ml_dtypes numpy has no bfloat16: the exact float32 values
      return (arr.attr("astype")("uint32") << nb::int_(16)).attr("view")("float32");
    }
  }
  return arr;
}

// ---- Python data to tensors -----------------------------------------------------------------------

// Nested lists or tuples of bool/int/float: their shape and flattened leaves.
void flatten_into(nb::handle v, size_t dim, Shape& shape, std::vector<nb::handle>& leaves, bool& seen_leaf_depth,
                  size_t& leaf_depth) {
  if (nb::isinstance<nb::list>(v) || nb::isinstance<nb::tuple>(v)) {
    int64_t n = static_cast<int64_t>(nb::len(v));
    if (seen_leaf_depth && dim >= leaf_depth)
      throw kiln::Error("Tensor(): ragged nested list: a list where a number was expected at depth " + std::to_string(dim));
    if (dim == shape.size()) {
      if (seen_leaf_depth) throw kiln::Error("Tensor(): ragged nested list: lists of different depths");
      shape.push_back(n);
    } else if (shape[dim] != n) {
      throw kiln::Error("Tensor(): ragged nested list: lengths " + std::to_string(shape[dim]) + " and " + std::to_string(n) +
                        " at depth " + std::to_string(dim));
    }
    for (nb::handle x : v) flatten_into(x, dim + 1, shape, leaves, seen_leaf_depth, leaf_depth);
    if (n == 0 && !seen_leaf_depth && dim + 1 == shape.size()) {
      // an empty innermost list fixes the depth too
    }
    return;
  }
  if (!is_py_scalar(v))
    throw nb::type_error(("Tensor(): nested list entries must be bool, int or float, got " + py_type_name(v)).c_str());
  if (!seen_leaf_depth) {
    seen_leaf_depth = true;
    leaf_depth = dim;
    if (dim != shape.size()) throw kiln::Error("Tensor(): ragged nested list: numbers and lists at one depth");
  } else if (dim != leaf_depth) {
    throw kiln::Error("Tensor(): ragged nested list: numbers at depths " + std::to_string(leaf_depth) + " and " + std::to_string(dim));
  }
  leaves.push_back(v);
}

template <typename T>
Tensor leaves_as(const std::vector<nb::handle>& leaves, const Shape& shape, const std::string& device) {
  std::vector<T> v;
  v.reserve(leaves.size());
  for (nb::handle h : leaves) {
    if constexpr (std::is_same_v<T, bool>) {
      v.push_back(nb::cast<double>(nb::float_(h)) != 0);
    } else if constexpr (std::is_floating_point_v<T>) {
      v.push_back(static_cast<T>(nb::cast<double>(nb::float_(h))));
    } else {
      if (nb::isinstance<nb::float_>(h)) {
        v.push_back(static_cast<T>(nb::cast<double>(h)));
      } else {  // exact, wrapping like a C cast (tinygrad: numpy's cast)
        nb::int_ i(h);
        v.push_back(static_cast<T>(wrap_u64(i)));
      }
    }
  }
  return Tensor::from_vector<T>(v, shape, device);
}

Tensor from_leaves(const std::vector<nb::handle>& leaves, const Shape& shape, DType d, const std::string& device) {
  switch (d.scalar()) {
    case Scalar::bool_: return leaves_as<bool>(leaves, shape, device);
    case Scalar::int8: return leaves_as<int8_t>(leaves, shape, device);
    case Scalar::int16: return leaves_as<int16_t>(leaves, shape, device);
    case Scalar::int32: return leaves_as<int32_t>(leaves, shape, device);
    case Scalar::int64: return leaves_as<int64_t>(leaves, shape, device);
    case Scalar::uint8: return leaves_as<uint8_t>(leaves, shape, device);
    case Scalar::uint16: return leaves_as<uint16_t>(leaves, shape, device);
    case Scalar::uint32: return leaves_as<uint32_t>(leaves, shape, device);
    case Scalar::uint64: return leaves_as<uint64_t>(leaves, shape, device);
    case Scalar::float64: return leaves_as<double>(leaves, shape, device);
    case Scalar::float32: return leaves_as<float>(leaves, shape, device);
    default: return leaves_as<float>(leaves, shape, device).cast(d);  // float16, bfloat16: exact from float32 rounding
  }
}

std::optional<DType> dlpack_dtype(nb::dlpack::dtype t) {
  using C = nb::dlpack::dtype_code;
  if (t.lanes != 1) return std::nullopt;
  switch (static_cast<C>(t.code)) {
    case C::Bool: return t.bits == 8 ? std::optional(dtypes::bool_) : std::nullopt;
    case C::Int:
      switch (t.bits) { case 8: return dtypes::int8; case 16: return dtypes::int16; case 32: return dtypes::int32; case 64: return dtypes::int64; }
      return std::nullopt;
    case C::UInt:
      switch (t.bits) { case 8: return dtypes::uint8; case 16: return dtypes::uint16; case 32: return dtypes::uint32; case 64: return dtypes::uint64; }
      return std::nullopt;
    case C::Float:
      switch (t.bits) { case 16: return dtypes::float16; case 32: return dtypes::float32; case 64: return dtypes::float64; }
      return std::nullopt;
    case C::Bfloat: return t.bits == 16 ? std::optional(dtypes::bfloat16) : std::nullopt;
    default: return std::nullopt;
  }
}

Tensor from_array(nb::handle data, std::optional<DType> want, const std::string& device) {
  std::optional<DType> forced;
  nb::object src = nb::borrow(data);
  // ml_dtypes' bfloat16 crosses neither DLPack nor the buffer protocol: its bits, as uint16
  if (nb::hasattr(data, "dtype") && nb::hasattr(data, "view")) {
    nb::object dt = data.attr("dtype");
    if (nb::hasattr(dt, "name") && nb::cast<std::string>(nb::str(dt.attr("name"))) == "bfloat16") {
      src = data.attr("view")("uint16");
      forced = dtypes::bfloat16;
    }
  }
  nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu> arr;
  if (!nb::try_cast(src, arr))
    throw nb::type_error(("Tensor(): data must be a bool, int, float, a nested list or tuple of them, or an array "
                          "(numpy, anything with __dlpack__ or the buffer protocol) on the host; got " +
                          py_type_name(data))
                             .c_str());
  std::optional<DType> d = forced ? forced : dlpack_dtype(arr.dtype());
  if (!d) throw nb::type_error(("Tensor(): the array's element type (" + py_type_name(data) + ") has no kiln dtype").c_str());
  Shape shape;
  for (size_t i = 0; i < arr.ndim(); ++i) shape.push_back(static_cast<int64_t>(arr.shape(i)));
  uint64_t nbytes = static_cast<uint64_t>(arr.size()) * static_cast<uint64_t>(d->itemsize());
  Tensor t = Tensor::from_bytes(arr.data(), nbytes, *d, shape, device);
  return want && *want != *d ? t.cast(*want) : t;
}

Tensor make_tensor(nb::handle data, nb::handle device_h, nb::handle dtype_h, nb::handle requires_grad) {
  std::string device = device_arg(device_h, "Tensor");
  std::optional<DType> want = dtype_arg(dtype_h, "Tensor");
  if (!requires_grad.is_none() && !nb::isinstance<nb::bool_>(requires_grad))
    throw nb::type_error(("Tensor(): requires_grad must be a bool or None, got " + py_type_name(requires_grad)).c_str());
  Tensor t = [&]() -> Tensor {
    if (data.is_none())
      throw nb::type_error("Tensor(): data must be a bool, int, float, a nested list or tuple, or an array; got None "
                           "(use Tensor.empty(*shape) for an uninitialised tensor)");
    if (nb::isinstance<nb::str>(data))
      throw nb::type_error("Tensor(): data must be a bool, int, float, a nested list or tuple, or an array; got str");
    if (nb::isinstance<Tensor>(data)) {
      Tensor src = nb::cast<Tensor>(data);
      Tensor r = device_h.is_none() ? src : src.to(device);
      return want && *want != r.dtype() ? r.cast(*want) : r;
    }
    if (is_py_scalar(data) || nb::isinstance<nb::list>(data) || nb::isinstance<nb::tuple>(data)) {
      Shape shape;
      std::vector<nb::handle> leaves;
      bool seen = false;
      size_t depth = 0;
      flatten_into(data, 0, shape, leaves, seen, depth);
      DType d;
      if (want) {
        d = *want;
      } else {  // tinygrad: all bool -> bool; all int -> default_int; else default_float
        bool all_bool = !leaves.empty(), all_int = !leaves.empty();
        for (nb::handle h : leaves) {
          all_bool &= nb::isinstance<nb::bool_>(h);
          all_int &= nb::isinstance<nb::int_>(h);
        }
        d = all_bool ? dtypes::bool_ : all_int ? dtypes::default_int : dtypes::default_float;
      }
      return from_leaves(leaves, shape, d, device);
    }
    return from_array(data, want, device);
  }();
  if (!requires_grad.is_none()) t.requires_grad_(nb::cast<bool>(requires_grad));
  return t;
}

// ---- operands ---------------------------------------------------------------------------------------

// A Python scalar beside a tensor, with the dtype tinygrad gives it (Tensor._broadcasted): a float
// tensor's own dtype; an int tensor's dtype for an int (or bool); else dtypes.from_py(scalar). The
// binary op then promotes the two as C++ does.
Tensor scalar_operand(const Tensor& like, nb::handle v) {
  DType d = like.dtype();
  bool keep = d.is_float() || (d.is_int() && nb::isinstance<nb::int_>(v));
  DType sd = keep ? d : from_py(v);
  if (nb::isinstance<nb::int_>(v) && sd.is_int()) {  // exact for every int64
    int64_t i = static_cast<int64_t>(wrap_u64(v));
    if (sd == like.dtype()) return kiln::scalar_like(like, i);
    return Tensor::full({}, static_cast<double>(i), sd, like.device());
  }
  return Tensor::full({}, nb::cast<double>(nb::float_(v)), sd, like.device());
}

// The other operand of a binary op, or nullopt when it is neither a Tensor nor a Python scalar
// (the operator then returns NotImplemented, so Python raises its TypeError).
std::optional<Tensor> operand(const Tensor& like, nb::handle v) {
  if (nb::isinstance<Tensor>(v)) return nb::cast<Tensor>(v);
  if (is_py_scalar(v)) return scalar_operand(like, v);
  return std::nullopt;
}

Tensor operand_or_throw(const Tensor& like, nb::handle v, const char* fn, const char* arg) {
  if (auto t = operand(like, v)) return *t;
  throw nb::type_error((std::string(fn) + "(): " + arg + " must be a Tensor, bool, int or float, got " + py_type_name(v)).c_str());
}

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
Tensor method_op(const Tensor& self, nb::handle x, bool reverse, const char* fn) {
  Tensor o = operand_or_throw(self, x, fn, "x");
  return reverse ? F(o, self) : F(self, o);
}

Tensor add_(const Tensor& a, const Tensor& b) { return a + b; }
Tensor sub_(const Tensor& a, const Tensor& b) { return a - b; }
Tensor mul_(const Tensor& a, const Tensor& b) { return a * b; }
Tensor div_(const Tensor& a, const Tensor& b) { return a / b; }
Tensor pow_(const Tensor& a, const Tensor& b) { return a.pow(b); }
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

int int_or_uniform_pair(nb::handle v, const char* fn, const char* arg) {
  if (nb::isinstance<nb::int_>(v) && !nb::isinstance<nb::bool_>(v)) return i32(v);
  if (nb::isinstance<nb::tuple>(v) || nb::isinstance<nb::list>(v)) {
    std::vector<int> xs;
    for (nb::handle h : v) {
      if (!nb::isinstance<nb::int_>(h)) break;
      xs.push_back(i32(h));
    }
    if (xs.size() == nb::len(v) && !xs.empty()) {
      for (int x : xs)
        if (x != xs[0])
          throw kiln::Error(std::string(fn) + "(): " + arg + " must be the same along both spatial axes for now, got " +
                            nb::cast<std::string>(nb::repr(v)));
      return xs[0];
    }
  }
  throw nb::type_error((std::string(fn) + "(): " + arg + " must be an int or a tuple of ints, got " + py_type_name(v)).c_str());
}

// The Python object of `t` (methods that return self in tinygrad return the same object).
nb::object same(Tensor& t) { return nb::find(&t); }

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
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const kiln::Error& e) {
      nb::object exc = nb::handle(error_type)(e.what());
      exc.attr("code") = kiln::error_code_name(e.code());
      PyErr_SetObject(error_type, exc.ptr());
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
      .def("is_unsigned", &DType::is_unsigned);

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
  m.def("_set_default_device", [](const std::string& d) {
    std::lock_guard<std::mutex> lock(g_default_mu);
    g_default_device = d;
  });
  m.def("devices", []() {
    nb::gil_scoped_release release;
    return kiln::devices();
  });

  nb::class_<Tensor> T(m, "Tensor");
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
        DType d = dtype_arg(dtype, "arange").value_or(all_int ? dtypes::default_int : dtypes::default_float);
        Tensor t = Tensor::arange(nb::cast<double>(nb::float_(b)), nb::cast<double>(nb::float_(e)),
                                  nb::cast<double>(nb::float_(step)), d, device_arg(device, "arange"));
        if (!requires_grad.is_none()) t.requires_grad_(nb::cast<bool>(requires_grad));
        return t;
      },
      nb::arg("start"), nb::arg("stop").none() = nb::none(), nb::arg("step") = 1, nb::kw_only(),
      nb::arg("device").none() = nb::none(), nb::arg("dtype").none() = nb::none(), nb::arg("requires_grad").none() = nb::none());
  T.def_static("manual_seed", [](uint64_t seed) { kiln::manual_seed(seed); }, nb::arg("seed") = 0);

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
      .def("tolist",
           [](const Tensor& t) {
             std::vector<uint8_t> bytes = host_bytes(t);
             int64_t i = 0;
             return nested(bytes.data(), t.dtype(), t.shape(), 0, i);
           })
      .def("item",
           [](const Tensor& t) {
             if (t.numel() != 1)
               throw kiln::Error("item: the tensor has " + std::to_string(t.numel()) + " elements, expected 1");
             std::vector<uint8_t> bytes = host_bytes(t);
             return element(bytes.data(), t.dtype(), 0);
           })
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
       // tinygrad: None keeps that dimension
       nb::handle src = shape;
       if (shape.size() == 1 && (nb::isinstance<nb::tuple>(shape[0]) || nb::isinstance<nb::list>(shape[0]))) src = shape[0];
       Shape s;
       size_t i = 0;
       for (nb::handle h : src) {
         if (h.is_none()) {
           if (i >= t.shape().size()) throw kiln::Error("reshape(): None at axis " + std::to_string(i) + " of a " + std::to_string(t.ndim()) + "-d tensor");
           s.push_back(t.shape()[i]);
         } else if (nb::isinstance<nb::int_>(h) && !nb::isinstance<nb::bool_>(h)) {
           s.push_back(i64(h));
         } else {
           throw nb::type_error(("reshape(): shape entries must be ints or None, got " + py_type_name(h)).c_str());
         }
         ++i;
       }
       return t.reshape(s);
     })
      .def("view", [](const Tensor& t, nb::args shape) { return t.reshape(shape_args(shape, "view")); })
      .def("permute", [](const Tensor& t, nb::args order) { return t.permute(ints_args(order, "permute")); })
      .def("expand", [](const Tensor& t, nb::args shape) { return t.expand(shape_args(shape, "expand")); })
      .def("flip", [](const Tensor& t, nb::args axis) { return t.flip(ints_args(axis, "flip")); })
      .def("transpose", [](const Tensor& t, int dim0, int dim1) { return t.transpose(dim0, dim1); }, nb::arg("dim0") = 1,
           nb::arg("dim1") = 0)
      .def_prop_ro("T", [](const Tensor& t) { return t.transpose(1, 0); })
      .def("flatten", [](const Tensor& t, int start_dim, int end_dim) { return t.flatten(start_dim, end_dim); },
           nb::arg("start_dim") = 0, nb::arg("end_dim") = -1)
      .def("squeeze",
           [](const Tensor& t, std::optional<int> dim) {
             if (dim) return t.squeeze(*dim);
             Shape s;
             for (int64_t d : t.shape())
               if (d != 1) s.push_back(d);
             return t.reshape(s);
           },
           nb::arg("dim").none() = nb::none())
      .def("unsqueeze", &Tensor::unsqueeze, nb::arg("dim"))
      .def("pad",
           [](const Tensor& t, nb::handle padding, double value) {
             // tinygrad: a tuple of (before, after) or None per axis from the first, or a flat
             // torch-style tuple (last axis first)
             if (!nb::isinstance<nb::tuple>(padding) && !nb::isinstance<nb::list>(padding))
               throw nb::type_error(("pad(): padding must be a tuple, got " + py_type_name(padding)).c_str());
             kiln::Pads pads;
             bool flat = nb::len(padding) > 0;
             for (nb::handle h : padding) flat &= nb::isinstance<nb::int_>(h);
             if (flat) {
               if (nb::len(padding) % 2 || nb::len(padding) / 2 > t.shape().size())
                 throw kiln::Error("pad(): a flat padding needs an even count of at most 2 * ndim values");
               pads.assign(t.shape().size(), {0, 0});
               std::vector<int64_t> v;
               for (nb::handle h : padding) v.push_back(i64(h));
               for (size_t i = 0; i < v.size() / 2; ++i) pads[t.shape().size() - 1 - i] = {v[2 * i], v[2 * i + 1]};
             } else {
               for (nb::handle h : padding) {
                 if (h.is_none()) pads.push_back({0, 0});
                 else pads.push_back(int_pair(h, "pad"));
               }
             }
             return t.pad(pads, value);
           },
           nb::arg("padding"), nb::kw_only(), nb::arg("value") = 0.0)
      .def("shrink",
           [](const Tensor& t, nb::handle arg) {
             kiln::Pads se;
             size_t i = 0;
             for (nb::handle h : arg) {
               if (h.is_none()) se.push_back({0, i < t.shape().size() ? t.shape()[i] : 0});
               else se.push_back(int_pair(h, "shrink"));
               ++i;
             }
             return t.shrink(se);
           },
           nb::arg("arg"))
      .def("cat",
           [](const Tensor& t, nb::args others, int dim) {
             std::vector<Tensor> all{t};
             for (nb::handle h : others) all.push_back(operand_or_throw(t, h, "cat", "args"));
             return Tensor::cat(all, dim);
           },
           nb::arg("args"), nb::kw_only(), nb::arg("dim") = 0)
      .def("stack",
           [](const Tensor& t, nb::args others, int dim) {
             std::vector<Tensor> all{t};
             for (nb::handle h : others) all.push_back(operand_or_throw(t, h, "stack", "args"));
             return Tensor::stack(all, dim);
           },
           nb::arg("args"), nb::kw_only(), nb::arg("dim") = 0)
      .def("gather", [](const Tensor& t, int dim, const Tensor& index) { return t.gather(dim, index); }, nb::arg("dim"),
           nb::arg("index"));

  // ---- elementwise ----
#define KILN_UNARY(name) T.def(#name, &Tensor::name);
  KILN_UNARY(exp) KILN_UNARY(log) KILN_UNARY(exp2) KILN_UNARY(log2) KILN_UNARY(sqrt) KILN_UNARY(rsqrt)
  KILN_UNARY(sin) KILN_UNARY(cos) KILN_UNARY(tan) KILN_UNARY(abs) KILN_UNARY(sign) KILN_UNARY(reciprocal)
  KILN_UNARY(relu) KILN_UNARY(sigmoid) KILN_UNARY(tanh) KILN_UNARY(gelu) KILN_UNARY(silu) KILN_UNARY(logical_not)
#undef KILN_UNARY
  T.def("neg", [](const Tensor& t) { return -t; })
      .def("__neg__", [](const Tensor& t) { return -t; })
      .def("__invert__",
           [](const Tensor& t) {
             if (t.dtype().is_bool()) return t.logical_not();
             if (t.dtype().is_int()) return t ^ kiln::scalar_like(t, -1);
             throw kiln::Error("__invert__: ~ needs a bool or integer tensor, got " + t.dtype().name());
           })
      .def("__add__", &binop<add_>).def("__radd__", &rbinop<add_>)
      .def("__sub__", &binop<sub_>).def("__rsub__", &rbinop<sub_>)
      .def("__mul__", &binop<mul_>).def("__rmul__", &rbinop<mul_>)
      .def("__truediv__", &binop<div_>).def("__rtruediv__", &rbinop<div_>)
      .def("__pow__", &binop<pow_>).def("__rpow__", &rbinop<pow_>)
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
      .def("div", [](const Tensor& t, nb::handle x, bool r) { return method_op<div_>(t, x, r, "div"); }, nb::arg("x"), nb::arg("reverse") = false)
      .def("pow", [](const Tensor& t, nb::handle x, bool r) { return method_op<pow_>(t, x, r, "pow"); }, nb::arg("x"), nb::arg("reverse") = false)
      .def("matmul", [](const Tensor& t, nb::handle x, bool r) { return method_op<matmul_>(t, x, r, "matmul"); }, nb::arg("x"), nb::arg("reverse") = false)
      .def("dot", [](const Tensor& t, nb::handle w) { return t.dot(operand_or_throw(t, w, "dot", "w")); }, nb::arg("w"))
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
  // sum and prod take tinygrad's dtype= (the dtype to reduce in: the input is cast to it first)
  auto reduction = [&](const char* name, Red fn, bool with_dtype) {
    auto body = [fn, name](const Tensor& t0, nb::handle axis, bool keepdim, nb::handle dtype) {
      auto d = dtype_arg(dtype, name);
      Tensor t = d && *d != t0.dtype() ? t0.cast(*d) : t0;
      if (reduces_nothing(axis)) return t;
      return (t.*fn)(axis_arg(axis, name), keepdim);
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
      .def("softmax",
           [](const Tensor& t, int axis, nb::handle dtype) {
             auto d = dtype_arg(dtype, "softmax");
             return (d ? t.cast(*d) : t).softmax(axis);
           },
           nb::arg("axis") = -1, nb::arg("dtype").none() = nb::none())
      .def("log_softmax",
           [](const Tensor& t, int axis, nb::handle dtype) {
             auto d = dtype_arg(dtype, "log_softmax");
             return (d ? t.cast(*d) : t).log_softmax(axis);
           },
           nb::arg("axis") = -1, nb::arg("dtype").none() = nb::none());

  // ---- nn ----
  T.def("conv2d",
        [](const Tensor& t, const Tensor& weight, std::optional<Tensor> bias, int groups, nb::handle stride, nb::handle dilation,
           nb::handle padding) {
          return t.conv2d(weight, bias, int_or_uniform_pair(stride, "conv2d", "stride"), int_or_uniform_pair(padding, "conv2d", "padding"),
                          int_or_uniform_pair(dilation, "conv2d", "dilation"), groups);
        },
        nb::arg("weight"), nb::arg("bias").none() = nb::none(), nb::arg("groups") = 1, nb::arg("stride") = 1,
        nb::arg("dilation") = 1, nb::arg("padding") = 0);
  auto pool = [&](const char* name, Tensor (Tensor::*fn)(int, int, int) const) {
    T.def(
        name,
        [fn, name](const Tensor& t, nb::handle kernel_size, nb::handle stride, nb::handle dilation, nb::handle padding) {
          int k = int_or_uniform_pair(kernel_size, name, "kernel_size");
          int s = stride.is_none() ? 0 : int_or_uniform_pair(stride, name, "stride");
          if (int_or_uniform_pair(dilation, name, "dilation") != 1)
            throw kiln::Error(std::string(name) + "(): dilation other than 1 is not implemented yet");
          return (t.*fn)(k, s, int_or_uniform_pair(padding, name, "padding"));
        },
        nb::arg("kernel_size") = nb::make_tuple(2, 2), nb::arg("stride").none() = nb::none(), nb::arg("dilation") = 1,
        nb::arg("padding") = 0);
  };
  pool("max_pool2d", &Tensor::max_pool2d);
  pool("avg_pool2d", &Tensor::avg_pool2d);
}
