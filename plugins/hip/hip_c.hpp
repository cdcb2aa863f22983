// plugins/hip/hip_c.hpp - the HIP dialect of the SDK's C-family renderer.
//
// Header-free HIP (clang -x hip -nogpuinc -nogpulib): no hip_runtime.h and no device libraries,
// so everything is a clang builtin or attribute:
//  - kernels: extern "C" __attribute__((global)) with amdgpu_flat_work_group_size(1, <local size>)
//  - launch indices: __builtin_amdgcn_workgroup_id_x/y/z (gidx) and workitem_id_x/y/z (lidx)
//  - shared memory: __attribute__((shared)) arrays; barrier: workgroup fences around s_barrier
//  - math: only what lowers to instructions (sqrt, trunc); exp2/log2/sin/pow are decomposed by
//    the core into polynomials, which is what -nogpulib (no ocml) requires
//  - types: C++ spellings (bool, long long, _Float16), clang ext_vector_type vectors
// Kernel argument convention (the runtime's): buffers in slot order as T*, then every integer
// variable as a long long in slot order. The counts are recorded in the code object as
//   extern "C" const unsigned int kiln_nargs_<entry>[2] = {buffers, values};
// so a launch with other counts is an error before anything reaches the GPU.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "kiln/sdk/cstyle.hpp"

namespace kiln::hip {

class HipDialect : public sdk::CStyleRenderer {
 public:
  std::string render_kernel(const kiln_lir& kernel);

 protected:
  std::string scalar_name(uint8_t scalar) const override;
  std::string literal(uint8_t scalar, const kiln_lir_inst& in, double f) const override;
  std::string math(uint32_t op, const std::vector<std::string>& args, const kiln_lir_type& t) const override;
  std::string local_array(const std::string& name, const kiln_lir_type& ptr) const override;
  std::string barrier() const override;
  std::string special(std::string_view name) const override;
  std::string kernel(std::string_view name, const std::vector<sdk::CParam>& params, const std::string& typedefs,
                     const std::string& body) const override;

 private:
  std::array<uint32_t, 3> local_{0, 0, 0};  // the kernel's local size (0 = not constant)
};

// The LIR ops the dialect renders: the C-family renderer's own but RECIPROCAL (1/x goes through
// FDIV with a typed constant), workgroups, and of the math functions only SQRT and TRUNC (no ocml
// with -nogpulib: the core decomposes EXP2, LOG2, SIN and POW into polynomials).
sdk::LirOpSet hip_ops();
// The LIR ops and dtypes the dialect renders (the ops above; every dtype but bfloat16).
void hip_caps(uint64_t ops[2], uint32_t& dtypes);

}  // namespace kiln::hip
