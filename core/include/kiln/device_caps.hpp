// kiln/device_caps.hpp - what a backend device is and what kiln may generate for it, as plain
// values: its properties and its target caps, copied from the plugin's kiln_device_props and
// kiln_target when the device opens (kiln/backend.hpp hands them out).
//
// These are the core's own records, not copies of them: the plugin layer keeps a device's props
// in a DeviceProps, and the code generator's Target is a TargetCaps plus the defaults its
// heuristics assume where a cap is unknown. Numbers are the ABI's (sdk/include/kiln/plugin.h,
// kiln/lir.h): KILN_DEVICE_KIND_*, KILN_DEVICE_* flags, KILN_TARGET_* flags, KILN_LIR_OP_* and
// KILN_LIR_DTYPE_* bits.
#pragma once
#include <cstdint>
#include <string>

namespace kiln::backend {

struct DeviceProps {
  std::string name, description, arch, features;
  uint32_t kind = 0, flags = 0, compute_units = 0;  // kind 0 is KILN_DEVICE_KIND_CPU
  uint64_t memory_total = 0, memory_free = 0;       // bytes; 0 = unknown
};

// Launch limits, vector width, work-group memory, a worker's caches and vector unit, and the LIR
// ops and dtypes the device's renderer accepts (the core decomposes the ops it lacks).
struct TargetCaps {
  uint32_t flags = 0, threads = 1, global_max[3] = {1, 1, 1}, local_max[3] = {1, 1, 1}, local_prod_max = 1,
           max_vector_width = 1;
  uint64_t shared_max = 0;
  uint32_t dtypes = 0;       // bit KILN_LIR_DTYPE_x
  uint64_t ops[2] = {0, 0};  // bit KILN_LIR_OP_x
  std::string source_format;
  uint64_t l1d_bytes = 0, l2_bytes = 0;  // a worker's data caches (CPU targets); 0 = unknown
  // A worker's vector unit (CPU targets): architectural vector registers and vector multiply-adds
  // started per cycle; 0 = unknown.
  uint32_t vector_registers = 0, fma_pipes = 0;
  // Dtypes (bit KILN_LIR_DTYPE_x: float16, bfloat16) the renderer loads, stores and converts to and
  // from float32 exactly without computing in them: the core computes in float32 and keeps the
  // dtype only at loads, stores and the roundings (CASTs) that give 16-bit results; 0 = none.
  uint32_t storage_dtypes = 0;

  bool has(uint32_t flag) const { return (flags & flag) == flag; }
  bool supports_op(uint32_t lir_op) const { return lir_op < 128 && (ops[lir_op / 64] >> (lir_op % 64)) & 1; }
  bool supports_dtype(uint32_t lir_dtype) const { return lir_dtype < 32 && (dtypes >> lir_dtype) & 1; }
  bool stores_dtype(uint32_t lir_dtype) const { return lir_dtype < 32 && (storage_dtypes >> lir_dtype) & 1; }
};

}  // namespace kiln::backend
