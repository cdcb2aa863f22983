// kiln/sdk/lir.hpp - a read-only C++ view of a kiln_lir kernel for plugin renderers.
//
// Borrowed: valid only during the render() call that received the kiln_lir.
#pragma once
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "kiln/lir.h"
#include "kiln/sdk/error.hpp"

namespace kiln::sdk {

class LirView {
 public:
  explicit LirView(const kiln_lir& l) : l_(l) {
    if (l.version != KILN_LIR_VERSION)
      throw Error{KILN_STATUS_UNIMPLEMENTED, "LIR version " + std::to_string(l.version) + " is not supported (expected " +
                                                 std::to_string(KILN_LIR_VERSION) + ")"};
  }

  uint32_t size() const { return l_.n_insts; }
  const kiln_lir_inst& operator[](uint32_t i) const { return l_.insts[i]; }
  std::string_view name() const { return l_.name; }
  const kiln_lir& raw() const { return l_; }

  // Instruction index of source k of instruction i.
  uint32_t src(uint32_t i, uint32_t k) const { return l_.srcs[l_.insts[i].first_src + k]; }
  std::string_view str(uint32_t i) const {
    const kiln_lir_inst& in = l_.insts[i];
    return {l_.strings + in.arg, static_cast<size_t>(in.arg_length)};
  }
  std::span<const int64_t> ints(uint32_t i) const {
    const kiln_lir_inst& in = l_.insts[i];
    return {l_.ints + in.arg, static_cast<size_t>(in.arg_length)};
  }
  double f64(uint32_t i) const {
    uint64_t bits = static_cast<uint64_t>(l_.insts[i].arg);
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }

 private:
  const kiln_lir& l_;
};

inline bool lir_is_float(uint8_t s) {
  return s == KILN_LIR_DTYPE_FLOAT16 || s == KILN_LIR_DTYPE_BFLOAT16 || s == KILN_LIR_DTYPE_FLOAT32 || s == KILN_LIR_DTYPE_FLOAT64;
}
inline bool lir_is_unsigned(uint8_t s) {
  return s == KILN_LIR_DTYPE_UINT8 || s == KILN_LIR_DTYPE_UINT16 || s == KILN_LIR_DTYPE_UINT32 || s == KILN_LIR_DTYPE_UINT64;
}
inline int lir_scalar_size(uint8_t s) {
  static const int sizes[] = {0, 1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8};
  return s < KILN_LIR_DTYPE_COUNT ? sizes[s] : 0;
}

}  // namespace kiln::sdk
