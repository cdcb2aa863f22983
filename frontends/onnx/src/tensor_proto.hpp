// tensor_proto.hpp - ONNX TensorProto <-> kiln::Tensor, and ONNX's element types.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/tensor.hpp"

namespace onnx {
class TensorProto;
}

namespace kiln::onnx::detail {

// The kiln dtype of an ONNX TensorProto.DataType; nullopt for those kiln lacks (string,
// complex, float8, int4, ...).
std::optional<DType> dtype_of(int32_t onnx_type);
// "FLOAT", "STRING", ... ("42 (not an ONNX type: ...)" when unknown); valid until the thread's next call
const char* onnx_type_name(int32_t onnx_type);
int32_t onnx_type_of(DType dtype);

// The whole file at `path` into `out`; false when it cannot be opened or read.
bool read_file(const std::string& path, std::string& out);

// How a tensor's elements are stored on the device; the values and the shape never change.
enum class Layout {
  as_given,           // row-major, as the file stores them
  out_channels_last,  // a (O, I, k1, ...) weight stored as (I, k1, ..., O): see packed_conv_weights (model.cpp)
};

// The tensor a TensorProto holds (typed fields, raw_data or external data read from
// `base_dir`), realized on `device` (a flat buffer viewed in the tensor's shape: realize() it again
// only to force a copy). `what` names it in errors ("model.onnx: initializer 'w'").
// out_channels_last (rank >= 2) transposes the elements on the host before the copy and returns
// the stored (I, k1, ..., O) buffer permuted back into the (O, I, k1, ...) shape, a view.
Tensor tensor_from_proto(const ::onnx::TensorProto& proto, const std::string& base_dir, const std::string& what,
                         const std::string& device, Layout layout = Layout::as_given);

// The permutation that views a tensor stored in `layout` in its own shape (identity for as_given),
// and its inverse, which views that tensor as its storage (a row-major buffer).
std::vector<int> layout_view(Layout layout, int64_t ndim);
std::vector<int> layout_storage(Layout layout, int64_t ndim);

}  // namespace kiln::onnx::detail
