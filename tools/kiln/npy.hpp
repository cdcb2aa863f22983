// tools/kiln/npy.hpp - reading NumPy .npy files (`kiln run --input NAME=FILE.npy`).
#pragma once
#include <string>
#include <string_view>

#include "kiln/tensor.hpp"

namespace kiln::cli {

// The array in a .npy file (format versions 1, 2 and 3; C order; little-endian or single-byte
// elements of a dtype kiln has: bool, int8..int64, uint8..uint64, float16, float32, float64) as a
// realized tensor on `device`. kiln::Error naming the file otherwise: not_found for a missing file,
// data_loss for one that is not .npy or is truncated, unimplemented for Fortran order, big-endian
// data or another dtype (each message says how to re-save it).
Tensor read_npy(const std::string& path, const std::string& device = "");
Tensor parse_npy(std::string_view bytes, const std::string& what, const std::string& device = "");

}  // namespace kiln::cli
