// tests/codegen/sim_targets.hpp - simulated GPU targets (caps this host may not have; the CPU ones
// are simulated_cpu.hpp's), seeded random inputs and opts overrides, for the optimizer's tests.
#pragma once
#include <random>
#include <string>
#include <vector>

#include "simulated_cpu.hpp"
#include "codegen/target.hpp"
#include "kiln/kiln.hpp"
#include "runtime/program_cache.hpp"
#include "opencl_c.hpp"

namespace kiln {

// A GPU (OpenCL C) with the given workgroup limits, shared memory (0: none) and float lanes; no
// cl_khr_fp16 (float16 stored only: rendered with opencl::HalfSupport::storage).
inline Target gpu_caps(uint32_t local, uint32_t local_z, uint32_t prod, uint64_t shared, uint32_t lanes) {
  Target t;
  t.flags = KILN_TARGET_HAS_LOCAL | (shared ? KILN_TARGET_HAS_SHARED : 0u);
  for (int d = 0; d < 3; ++d) t.global_max[d] = 1u << 30;
  t.local_max[0] = t.local_max[1] = local, t.local_max[2] = local_z;
  t.local_prod_max = prod;
  t.shared_max = shared;
  t.max_vector_width = lanes;
  opencl::opencl_caps(t.ops, t.dtypes, t.storage_dtypes, false, false);
  t.source_format = "opencl-c";
  return t;
}

// A tensor of `s` on `device` with values uniform in [-1, 1) drawn from `rng`.
inline Tensor random_input(std::mt19937_64& rng, const Shape& s, const std::string& device) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& x : v) x = u(rng);
  return Tensor::from_vector(v, s, device);
}

// runtime::set_opts_override's chooser giving every kernel `opts` (nullptr: the heuristic's).
inline runtime::OptsOverride every_kernel(const std::vector<Opt>* opts) {
  if (!opts) return {};
  return [opts](const UOp&, const Target&) { return std::optional<std::vector<Opt>>(*opts); };
}

}  // namespace kiln
