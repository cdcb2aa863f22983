// tests/codegen/simulated_cpu.hpp - CPU targets built by hand: the caps a cpu device reports, with
// a chosen vector width and thread count (what this host has does not matter); and a GPU-like one.
#pragma once
#include "c_dialect.hpp"
#include "codegen/target.hpp"

namespace kiln::testing {

// FMA, `lanes` float lanes, `threads` threads; the C dialect's ops and dtypes (no transcendental
// functions, no half types).
inline Target simulated_cpu(uint32_t lanes, uint32_t threads) {
  Target t;
  t.flags = KILN_TARGET_HAS_THREADS | KILN_TARGET_HAS_FMA;
  t.threads = threads;
  t.max_vector_width = lanes;
  for (int d = 0; d < 3; ++d) t.global_max[d] = 0x7fffffffu;  // as the cpu device reports
  cpu::c_dialect_caps(t.ops, t.dtypes);
  t.source_format = "c";
  return t;
}

// A GPU-like target (the caps OpenCL and HIP report): workgroups, 48 KiB of shared memory,
// `lanes` float lanes and no masked vector accesses; the C dialect's ops with barriers and local
// buffers.
inline Target simulated_gpu(uint32_t lanes) {
  Target t;
  t.flags = KILN_TARGET_HAS_LOCAL | KILN_TARGET_HAS_SHARED;
  t.global_max[0] = t.global_max[1] = t.global_max[2] = 1u << 30;
  t.local_max[0] = t.local_max[1] = 256, t.local_max[2] = 64;
  t.local_prod_max = 256;
  t.shared_max = 48 << 10;
  t.max_vector_width = lanes;
  cpu::c_dialect_caps(t.ops, t.dtypes);
  t.ops[KILN_LIR_OP_BARRIER / 64] |= uint64_t{1} << (KILN_LIR_OP_BARRIER % 64);
  t.ops[KILN_LIR_OP_DEFINE_LOCAL / 64] |= uint64_t{1} << (KILN_LIR_OP_DEFINE_LOCAL % 64);
  return t;
}

}  // namespace kiln::testing
