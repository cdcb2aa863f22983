// frontends/python/src/convert.cpp - conversions between Python data and tensors: host bytes to
// Python values (half/bfloat16 decoding, tolist, item, numpy), Python scalars, nested lists and
// host arrays (DLPack, buffer protocol, ml_dtypes' bfloat16) to tensors, and the Python scalar
// operand of a binary op. Contracts in convert.hpp.
#include "convert.hpp"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace kiln_py {

namespace {

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

}  // namespace

nb::tuple py_shape(const Shape& shape) {
  nb::list l;
  for (int64_t d : shape) l.append(nb::int_(d));
  return nb::steal<nb::tuple>(PySequence_Tuple(l.ptr()));
}

namespace {

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

}  // namespace

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

nb::object to_list(const Tensor& t) {
  std::vector<uint8_t> bytes = host_bytes(t);
  int64_t i = 0;
  return nested(bytes.data(), t.dtype(), t.shape(), 0, i);
}

nb::object item(const Tensor& t) {
  if (t.numel() != 1) throw kiln::Error("item: the tensor has " + std::to_string(t.numel()) + " elements, expected 1");
  std::vector<uint8_t> bytes = host_bytes(t);
  return element(bytes.data(), t.dtype(), 0);
}

namespace {

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
  if (!forced)
    if (std::optional<Tensor> shared = share_array(src, want, device)) return *shared;
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

}  // namespace

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

}  // namespace kiln_py
