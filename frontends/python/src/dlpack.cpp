// frontends/python/src/dlpack.cpp - memory shared with other libraries, both ways, through DLPack:
// Tensor.__dlpack__ / __dlpack_device__ (a consumer such as numpy.from_dlpack or torch.from_dlpack
// reads the tensor's own buffer), kiln.from_dlpack and Tensor(array) (kiln computes on the
// producer's memory). Both are zero-copy on a device whose buffers are host memory (cpu) when the
// memory is contiguous and aligned as its kernels need (Tensor::from_blob / host_data); otherwise
// one copy. The memory stays alive as long as either side uses it: the exported array holds a
// Tensor, a shared buffer holds the producer's array.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <memory>
#include <string>
#include <vector>

#include "common.hpp"
#include "convert.hpp"

namespace kiln_py {

namespace {

// A Python object as the owner of memory kiln uses: released under the GIL, from whichever thread
// drops the last tensor over it (after the interpreter is gone, the reference is leaked instead).
template <typename T>
std::shared_ptr<void> python_owner(T obj) {
  return std::shared_ptr<void>(new T(std::move(obj)), [](void* p) {
    if (!Py_IsInitialized()) return;
    nb::gil_scoped_acquire gil;
    delete static_cast<T*>(p);
  });
}

nb::dlpack::dtype dlpack_of(DType d) {
  using C = nb::dlpack::dtype_code;
  C code = d.scalar() == kiln::Scalar::bool_ ? C::Bool
         : d.scalar() == kiln::Scalar::bfloat16 ? C::Bfloat
         : d.is_float() ? C::Float
         : d.is_unsigned() ? C::UInt : C::Int;
  return {static_cast<uint8_t>(code), static_cast<uint8_t>(d.itemsize() * 8), 1};
}

// The tensor's memory as an nb_ndarray (nanobind's DLPack-capable array), sharing the buffer when
// the device's memory is host memory, else a host copy.
nb::object export_array(const Tensor& self) {
  Tensor t = self;
  void* data = nullptr;
  {
    nb::gil_scoped_release release;
    data = t.host_data();  // realizes a lazy tensor or a strided view into its own buffer
  }
  if (!data) return to_numpy(self);  // a device with memory of its own: one copy to the host
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  nb::capsule owner(new Tensor(t), [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  nb::ndarray<nb::array_api> arr(data, shape.size(), shape.data(), owner, nullptr, dlpack_of(t.dtype()), nb::device::cpu::value, 0);
  return nb::cast(arr);
}

}  // namespace

std::optional<Tensor> share_array(nb::handle data, std::optional<DType> want, const std::string& device) {
  nb::ndarray<nb::device::cpu> arr;  // writable only: a read-only array must not be written by kiln
  if (!nb::try_cast(data, arr, false)) return std::nullopt;
  std::optional<DType> d = dlpack_dtype(arr.dtype());
  if (!d || (want && *want != *d)) return std::nullopt;
  Shape shape;
  int64_t expect = 1;
  bool contiguous = true;
  for (size_t i = arr.ndim(); i-- > 0;) {
    if (arr.shape(i) != 1 && arr.stride(i) != expect) contiguous = false;
    expect *= static_cast<int64_t>(arr.shape(i));
  }
  if (!contiguous) return std::nullopt;
  for (size_t i = 0; i < arr.ndim(); ++i) shape.push_back(static_cast<int64_t>(arr.shape(i)));
  void* ptr = arr.data();
  return Tensor::from_blob(ptr, *d, shape, python_owner(std::move(arr)), device);
}

void bind_dlpack(nb::module_& m, nb::class_<Tensor>& T) {
  T.def(
      "__dlpack__",
      [](const Tensor& self, nb::kwargs kwargs) { return export_array(self).attr("__dlpack__")(**kwargs); },
      nb::arg("kwargs"), "The tensor as a DLPack capsule (the array API's __dlpack__: stream, max_version, dl_device, copy); "
                         "shares the buffer on cpu");
  T.def("__dlpack_device__", [](const Tensor&) { return nb::make_tuple(static_cast<int>(nb::device::cpu::value), 0); });
  m.def(
      "from_dlpack",
      [](nb::handle x, nb::handle device) {
        std::string dev = device_arg(device, "from_dlpack");
        if (!nb::hasattr(x, "__dlpack__"))
          throw nb::type_error(("from_dlpack(): x must implement __dlpack__ (numpy, torch, ...), got " + py_type_name(x)).c_str());
        if (std::optional<Tensor> t = share_array(x, std::nullopt, dev)) return *t;
        return make_tensor(x, device, nb::none(), nb::none());  // read-only or strided: one copy
      },
      nb::arg("x"), nb::kw_only(), nb::arg("device").none() = nb::none(),
      "A Tensor over x's memory (anything with __dlpack__): zero-copy on cpu when x is writable, contiguous and "
      "64-byte aligned, otherwise a copy");
}

}  // namespace kiln_py
