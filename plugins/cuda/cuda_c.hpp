// plugins/cuda/cuda_c.hpp - the CUDA dialect of the SDK's C-family renderer.
//
// Header-free CUDA C++ that both compilers take unchanged: NVRTC (which predefines threadIdx,
// __shared__, __syncthreads, ...) and clang-15 -nocudainc -nocudalib (which has none of the CUDA
// headers, only the NVPTX builtins). A short prelude maps the few spellings that differ, chosen by
// __CUDACC_RTC__ (defined by NVRTC only):
//  - kernels: extern "C" __global__ with __launch_bounds__(<local size>) when it is constant
//  - launch indices: KILN_BID(x|y|z) (blockIdx / %ctaid) and KILN_TID(x|y|z) (threadIdx / %tid)
//  - shared memory: __shared__ arrays; barrier: __syncthreads()
//  - math: what lowers to one instruction and needs no libdevice (-nocudalib): sqrtf / sqrt
//    (sqrt.rn), truncf / trunc (cvt.rzi); NVRTC declares them, for clang the prelude maps them to
//    clang's builtins. The core decomposes exp2, log2, sin and pow into polynomials
//  - types: C++ spellings (bool, long long, ...). Neither compiler has a 16-bit float type without
//    the toolkit's cuda_fp16.h/cuda_bf16.h (NVRTC has no _Float16, clang-15's NVPTX no _Float16
//    arithmetic and no __bf16), so the target does not list float16/bfloat16: the core stores
//    them as uint16 bits and computes in float32.
//  - vectors: float2/float4, int2/int4, uint2/uint4 in memory only (the target says
//    KILN_TARGET_VECTOR_MEMORY_ONLY, max_vector_width 4): 8- and 16-byte loads and stores at
//    indices the core proved aligned, make_float4(...) to build one, .x/.y/.z/.w to take it apart;
//    the arithmetic is per lane. CUDA's vector types have no operators, and NVRTC takes
//    ext_vector_type and vector_size without a word and compiles them as scalars (one ld.global.f32
//    for a "float4" load, tried with NVRTC 13.0). NVRTC predefines the types and make_*; the
//    prelude defines them for clang.
// Kernel argument convention (the runtime's): buffers in slot order as T*, then every integer
// variable as a long long in slot order; load() checks the launch's count against the PTX entry's.
#pragma once
#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kiln/sdk/cstyle.hpp"

namespace kiln::cuda {

class CudaDialect : public sdk::CStyleRenderer {
 public:
  std::string render_kernel(const kiln_lir& kernel);

 protected:
  std::string scalar_name(uint8_t scalar) const override;
  std::string vector_name(uint8_t scalar, int count) const override;
  std::string vector_typedefs(const std::set<std::pair<uint8_t, int>>& used) const override;
  std::string vector_splat(const std::string& vtype, const std::string& scalar) const override;
  std::string vector_make(const std::string& vtype, const std::vector<std::string>& lanes) const override;
  std::string lane(const std::string& vec, int64_t i) const override;
  std::string load(const std::string& addr, const kiln_lir_type& ptr) const override;
  std::string store(const std::string& addr, const std::string& value, const kiln_lir_type& ptr) const override;
  std::string literal(uint8_t scalar, const kiln_lir_inst& in, double f) const override;
  std::string math(uint32_t op, const std::vector<std::string>& args, const kiln_lir_type& t) const override;
  std::string local_array(const std::string& name, const kiln_lir_type& ptr) const override;
  std::string barrier() const override { return "__syncthreads();"; }
  std::string special(std::string_view name) const override;
  std::string kernel(std::string_view name, const std::vector<sdk::CParam>& params, const std::string& typedefs,
                     const std::string& body) const override;

 private:
  std::array<uint32_t, 3> local_{0, 0, 0};  // the kernel's local size (0 = not constant)
};

// The prelude every kernel starts with (identical in every kernel, so compile_many can join them).
extern const char* const kCudaPrelude;

// The LIR ops the dialect renders: the C-family renderer's own, workgroups, SQRT and TRUNC.
sdk::LirOpSet cuda_ops();
// The LIR ops and dtypes the dialect renders (the ops above; every dtype but the 16-bit floats).
void cuda_caps(uint64_t ops[2], uint32_t& dtypes);

}  // namespace kiln::cuda
