// kiln/safetensors.hpp - reading and writing the safetensors format
// (https://github.com/huggingface/safetensors): 8 bytes of little-endian header length N, N bytes
// of JSON header {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
// "__metadata__": {"key": "value"}} padded with spaces to a multiple of 8, then the tensors' raw
// little-endian bytes, row-major, at those offsets of the data section. Files written here are read
// by the `safetensors` package, torch and tinygrad, and files they write are read here.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln::safetensors {

using Named = std::vector<std::pair<std::string, Tensor>>;
using Metadata = std::vector<std::pair<std::string, std::string>>;

struct Contents {
  Named tensors;      // in the header's order
  Metadata metadata;  // the header's "__metadata__" (string values), in header order
};

// The file's bytes for `tensors` (realized and read to the host; written in the order given, data
// contiguous). Every scalar dtype is supported (bool, int8..uint64, float16, bfloat16, float32,
// float64). Throws kiln::Error for an empty or repeated name or the reserved "__metadata__".
std::string serialize(const Named& tensors, const Metadata& metadata = {});
// serialize() written to `path` (replaced); throws kiln::Error (not_found/permission_denied/
// unavailable) naming the path when it cannot be written.
void save(const std::string& path, const Named& tensors, const Metadata& metadata = {});

// The tensors of a file's bytes, on `device` ("" = the default device). Throws kiln::Error
// (data_loss) naming what is wrong: a header length past the end, JSON that does not parse, an
// unknown dtype, a shape whose size disagrees with data_offsets, offsets outside the data.
Contents deserialize(const void* data, uint64_t size, const std::string& device = "");
// deserialize() of the file at `path`; a missing or unreadable file throws kiln::Error naming it.
Contents load(const std::string& path, const std::string& device = "");

// The safetensors dtype code of a kiln dtype ("F32", "BF16", "BOOL", ...) and back; false when
// there is none.
bool dtype_code(DType dtype, std::string& code);
bool dtype_from_code(const std::string& code, DType& dtype);

}  // namespace kiln::safetensors
