// tests/codegen/simulated_cpu.hpp - CPU targets built by hand: the caps a cpu device reports, with
// a chosen vector width and thread count (what this host has does not matter).
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

}  // namespace kiln::testing
