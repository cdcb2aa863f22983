// plugins/cpu/llvm_ir.hpp - LIR to LLVM IR (text) for the in-process LLVM compiler.
//
// The module holds two functions: `NAME_body`, whose buffer parameters are `noalias` (kiln never
// passes one buffer in two slots, and the memory planner never lets a kernel's output share
// memory with its inputs), and the entry point with the cpu runtime's calling convention, which
// unpacks the argument arrays and calls it (the optimiser inlines it, keeping the aliasing
// facts):
//   void NAME(void* const* bufs, const int64_t* vals, int32_t gidx0, int32_t gidx1, int32_t gidx2)
// plus `kiln_nargs_NAME = {buffers, values}` for the runtime's argument check. Loops become
// counted loops with a phi, gated loads and stores branches (masked intrinsics for vector
// gates), accumulators allocas (promoted to registers by the optimiser), MULACC llvm.fmuladd.
// Bool values are i1; bools in memory are bytes. Target attributes are added by the compiler.
#pragma once
#include <string>

#include "kiln/lir.h"

namespace kiln::cpu {

// Throws sdk::Error{UNIMPLEMENTED} for an op the cpu target does not advertise (the core
// decomposes those) and {INVALID_ARGUMENT} for malformed LIR.
std::string render_llvm_ir(const kiln_lir& kernel);

}  // namespace kiln::cpu
