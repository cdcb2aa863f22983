// tensor_proto.hpp - ONNX TensorProto <-> kiln::Tensor, and ONNX's element types.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

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

// The tensor a TensorProto holds (typed fields, raw_data or external data read from
// `base_dir`), realized on `device` (a flat buffer viewed in the tensor's shape: realize() it again
// only to force a copy). `what` names it in errors ("model.onnx: initializer 'w'").
Tensor tensor_from_proto(const ::onnx::TensorProto& proto, const std::string& base_dir, const std::string& what,
                         const std::string& device);

}  // namespace kiln::onnx::detail
