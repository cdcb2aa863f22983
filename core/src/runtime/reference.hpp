// runtime/reference.hpp - the reference executor: interprets kernel ASTs on host memory.
//
// Plain and obviously correct rather than fast: it walks the scheduler's kernel AST (SINK of
// END(STORE) over RANGEs, REDUCE, LOAD/INDEX, every ALU op through the same exec_alu as constant
// folding) one element at a time, checks every memory access against the buffer's size, and is
// the oracle that compiled kernels on every device are compared with.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kiln/uop.hpp"

namespace kiln::runtime {

struct HostBuffer {
  void* data;
  uint64_t bytes;
};

// Runs `ast` with PARAM slot i bound to bufs[i]; `vars` gives DEFINE_VAR values by name.
// Throws kiln::Error(internal) on an out-of-bounds access or an op it cannot run.
void run_reference_kernel(const UOp& ast, const std::vector<HostBuffer>& bufs,
                          const std::vector<std::pair<std::string, int64_t>>& vars);

}  // namespace kiln::runtime
