// codegen/lir.hpp - the LIR (the ABI's kernel form): building it from a linearized kernel, its
// text form, and parsing that text back (round-trip tests, tools).
#pragma once
#include <string>
#include <vector>

#include "kiln/lir.h"
#include "kiln/uop.hpp"

namespace kiln {

// LIR op number of a kernel-level op, or 0 when the op has no LIR form.
uint32_t lir_op(Ops op);
uint32_t lir_dtype(Scalar s);  // KILN_LIR_DTYPE_*, or KILN_LIR_DTYPE_COUNT for index/unknown

// An LIR kernel with owned storage; view() is the C struct pointing into it.
struct LirProgram {
  std::string name;
  std::vector<kiln_lir_inst> insts;
  std::vector<uint32_t> srcs;
  std::vector<int64_t> ints;
  std::string strings;
  uint32_t n_buffers = 0, n_vars = 0;
  uint32_t global[3] = {1, 1, 1}, local[3] = {1, 1, 1};
  std::vector<std::string> var_names;  // VAR slot order

  kiln_lir view() const;
};

// Serialises a linearized kernel (the output of linearize()).
LirProgram to_lir(const std::vector<UOp>& program, const std::string& name);
// "%4 = ADD int32 (%2, %3)" per instruction, plus a header line with the kernel name.
std::string lir_text(const kiln_lir& lir);
// Parses lir_text output; throws kiln::Error(invalid_argument) with the line on bad input.
LirProgram parse_lir_text(const std::string& text);
// A stable fingerprint of the kernel's LIR (the compile cache key part that names the kernel).
Key128 lir_key(const kiln_lir& lir);

}  // namespace kiln
