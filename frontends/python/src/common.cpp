// frontends/python/src/common.cpp - the readers of Python arguments every binding uses
// (device=, dtype=, Python scalars, ints, shapes, axes) and the Device.DEFAULT override; their
// contracts are in common.hpp.
#include "common.hpp"

#include <nanobind/stl/string.h>

#include <mutex>

namespace kiln_py {

// ---- device and dtype arguments ----

namespace {

// Device.DEFAULT when Python set it; "" means kiln's own default (KILN_DEVICE, config, best device).
std::mutex g_default_mu;
std::string g_default_device;

}  // namespace

std::string default_override() {
  std::lock_guard<std::mutex> lock(g_default_mu);
  return g_default_device;
}

void set_default_override(const std::string& device) {
  std::lock_guard<std::mutex> lock(g_default_mu);
  g_default_device = device;
}

std::string device_arg(nb::handle device, const char* fn) {
  if (device.is_none()) return default_override();
  if (nb::isinstance<nb::str>(device)) return nb::cast<std::string>(device);
  throw nb::type_error((std::string(fn) + "(): device must be a str such as 'cpu:0' or None, got " +
                        nb::cast<std::string>(nb::str(device.type().attr("__name__"))))
                           .c_str());
}

std::string py_type_name(nb::handle h) { return nb::cast<std::string>(nb::str(h.type().attr("__name__"))); }

namespace {
PyObject* g_attribute_error = nullptr;
PyObject* g_index_error = nullptr;

[[noreturn]] void raise_as(PyObject* type, const std::string& msg, const char* code) {
  nb::object exc = nb::handle(type)(msg);
  exc.attr("code") = code;
  PyErr_SetObject(type, exc.ptr());
  throw nb::python_error();
}
}  // namespace

void set_error_types(PyObject* attribute_error, PyObject* index_error) {
  g_attribute_error = attribute_error;
  g_index_error = index_error;
}

void raise_attribute_error(const std::string& msg) { raise_as(g_attribute_error, msg, "invalid_argument"); }

void raise_index_error(const kiln::Error& e) { raise_as(g_index_error, e.what(), kiln::error_code_name(e.code())); }

std::optional<DType> dtype_arg(nb::handle dtype, const char* fn) {
  if (dtype.is_none()) return std::nullopt;
  if (nb::isinstance<DType>(dtype)) return nb::cast<DType>(dtype);
  if (nb::isinstance<nb::str>(dtype)) {
    std::string name = nb::cast<std::string>(dtype);
    // tinygrad's aliases (its dtypes.<name>, which a str dtype= is looked up as)
    static const std::pair<const char*, DType> aliases[] = {
        {"bool", dtypes::bool_},   {"char", dtypes::int8},    {"short", dtypes::int16},   {"int", dtypes::int32},
        {"long", dtypes::int64},   {"uchar", dtypes::uint8},  {"ushort", dtypes::uint16}, {"uint", dtypes::uint32},
        {"ulong", dtypes::uint64}, {"half", dtypes::float16}, {"float", dtypes::float32}, {"double", dtypes::float64}};
    for (const auto& [alias, d] : aliases)
      if (name == alias) return d;
    DType d;
    if (kiln::parse_dtype(name, d) && !d.is_void() && d.scalar() != Scalar::index) return d;
    raise_attribute_error(std::string(fn) + "(): unknown dtype '" + name + "' (use a kiln.dtypes member, e.g. dtypes.float32)");
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
  if (args.size() >= 1 && (nb::isinstance<nb::tuple>(args[0]) || nb::isinstance<nb::list>(args[0]))) {
    // one sequence or the ints themselves, never both (tinygrad's argfix: a ValueError)
    if (args.size() != 1)
      throw kiln::Error(std::string(fn) + "(): give the shape as one tuple or as ints, not a tuple followed by more arguments: " +
                        nb::cast<std::string>(nb::repr(args)));
    src = args[0];
  }
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

}  // namespace kiln_py
