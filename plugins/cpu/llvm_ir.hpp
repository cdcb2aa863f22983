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
// Loads and stores carry the alignment known from the buffers' (64 bytes, the cpu allocator's
// guarantee) and the index's factors of two; aligned full-cache-line stores into buffers of at
// least `streaming_store_bytes` are non-temporal (they would only evict the inputs from caches
// they do not fit in).
#pragma once
#include <cstdint>
#include <string>

#include "kiln/lir.h"
#include "kiln/sdk/lir.hpp"

namespace kiln::cpu {

// The LIR ops render_llvm_ir handles (the cpu target's allow-list when it compiles in process): no
// transcendental functions but SQRT and TRUNC, and EXP2 for AVX-512 targets (`avx512`: it is
// rendered with vscalef), PREFETCH, DOT2 where the ISA has AVX512-BF16 (`bf16_dot`: vdpbf16ps),
// no workgroups, no CUSTOM/CUSTOMI (their text is C).
sdk::LirOpSet llvm_ir_ops(bool avx512, bool bf16_dot = false);

// Throws sdk::Error{UNIMPLEMENTED} for an op the cpu target does not advertise (the core
// decomposes those) and {INVALID_ARGUMENT} for malformed LIR.
struct LlvmRenderOptions {
  uint64_t streaming_store_bytes = uint64_t{32} << 20;  // the last-level cache size
};

std::string render_llvm_ir(const kiln_lir& kernel, const LlvmRenderOptions& options = {});

}  // namespace kiln::cpu
