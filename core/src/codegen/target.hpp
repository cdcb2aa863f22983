// codegen/target.hpp - what the code generator may emit for one device: its launch limits, vector
// width, shared memory, cache sizes, and the LIR ops and dtypes its renderer accepts.
//
// Codegen owns this type: every pass that depends on the device reads it, and nothing here knows
// about plugins. The plugin layer fills one from the plugin's kiln_target when a device is opened
// (plugin/device.cpp); tests and benchmarks build simulated ones by hand. The flag and bit numbers
// are the ABI's (KILN_TARGET_*, KILN_LIR_OP_*, KILN_LIR_DTYPE_*), so no translation table exists.
// The caps themselves (fields, has, supports_op, supports_dtype) are the public TargetCaps
// (kiln/device_caps.hpp), which kiln/backend.hpp hands to tools such as the conformance kit; this
// type adds what the code generator assumes where a cap is unknown.
#pragma once
#include <cstdint>
#include <string>

#include "kiln/device_caps.hpp"
#include "kiln/plugin.h"  // KILN_TARGET_* flags (the ABI's C header, not the plugin layer)

namespace kiln {

struct Target : backend::TargetCaps {
  // The cache sizes the heuristics plan with: the target's, or a common core's (32 KiB, 1 MiB).
  uint64_t l1d() const { return l1d_bytes ? l1d_bytes : uint64_t{32} << 10; }
  uint64_t l2() const { return l2_bytes ? l2_bytes : uint64_t{1} << 20; }
  // The vector unit the heuristics size register tiles by: the target's, or, unknown, an x86-64
  // core's of that vector width: 32 registers at 16 float lanes (AVX-512), else 16; two FMA pipes
  // at 8 lanes or more (AVX2, AVX-512), else one (docs/optimizer.md, "Machine facts").
  uint32_t vector_regs() const { return vector_registers ? vector_registers : max_vector_width >= 16 ? 32 : 16; }
  uint32_t fma_units() const { return fma_pipes ? fma_pipes : max_vector_width >= 8 ? 2 : 1; }

  // Whether it runs row kernels (schedule/kernelize.cpp's row fusion: softmax or layernorm in one
  // pass, a row's reduces before its loop): threads and no workgroups, a row per thread (a cpu). A
  // GPU spreads a row over work items, each of which would redo the row's reduces.
  bool runs_rows() const { return has(KILN_TARGET_HAS_THREADS) && !has(KILN_TARGET_HAS_LOCAL); }
};

}  // namespace kiln
