// plugins/opencl/opencl_c.hpp - the OpenCL C dialect of the SDK's C-family renderer.
//
// What differs from C (see sdk/cstyle.hpp for the hooks):
//  - types: char/uchar/.../long/ulong/half/double, built-in vector types float4 (widths 2, 3, 4,
//    8, 16 only); bool is not allowed in memory, so bool arrays and buffers are uchar
//  - float16 without cl_khr_fp16 (HalfSupport::storage; PoCL's CPU device): OpenCL C allows half
//    only as what a pointer points to, so the target lists float16 as a storage dtype (the core
//    computes in float32) and half values live in float registers, holding values float16 has.
//    Loads and stores convert with the built-ins vload_half(n) / vstore_half(n)_rte (round to
//    nearest even; NaN and infinities kept); local and register arrays of half are ushort arrays
//    read and written through half pointers; a rounding (CAST float -> half) or a BITCAST goes
//    through a private ushort with the same built-ins (helper functions the kernel defines).
//    In such a kernel float comparisons compare x + 0.0f: LLVM 15 (PoCL 3.1) narrows a comparison
//    of widened half values to a half comparison, which its x86 back end without AVX512-FP16
//    scalarises (a conversion per lane: a float16 relu 16M took 34 ms, with the guard 3.5 ms);
//    adding +0 changes no comparison (-0 == +0; NaN stays NaN) and hides the widening. A
//    rounding only stored is left to the store's own (vstore_half_rte rounds the same way): the
//    pair cost the elementwise bench 2.3x
//  - vectors: lanes .s0-.sF, literals (float4)(a, b, ...), conversions convert_int4(x) (OpenCL has
//    no casts between vector types), bit casts as_float4(x), unaligned vloadN/vstoreN
//  - comparisons of vectors give lanes as wide as the operands (-1 = true), so bool vectors (int
//    lanes) are converted with convert_intN, and selects convert the condition to the value width
//  - literals: 1.5f, 2L, 3UL, NAN/INFINITY; every literal is typed, so no built-in call is an
//    ambiguous overload
//  - math: the OpenCL built-ins sqrt/exp2/log2/sin/pow/trunc (vector overloads included)
//  - launch indices: gidxN = get_group_id(N), lidxN = get_local_id(N)
//  - large outputs: aligned vector stores into buffers larger than the device's cache are
//    non-temporal where the compiler is clang (a macro falls back to plain stores elsewhere):
//    elementwise 16M on PoCL 4.3 -> 2.9 ms, as the stores no longer read every line first
//  - the kernel: __kernel void NAME(__global T* restrict data0, ..., long n_value, ...), buffers
//    first in slot order, then every integer variable as a long in slot order (the runtime's
//    argument convention), with reqd_work_group_size when the kernel's local size is constant:
//    drivers may compile for exactly that size (PoCL after 3.1 does so when the binary is made;
//    3.1 builds a generic work-group function then and the sized one at the first launch)
#pragma once
#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "kiln/sdk/cstyle.hpp"

namespace kiln::opencl {

// How a device has float16: computing in it (cl_khr_fp16) or only storing it (see above).
enum class HalfSupport { native, storage };

class OpenclDialect : public sdk::CStyleRenderer {
 public:
  // Vector stores into global buffers of at least `streaming_bytes` (0 = never) bypass the caches
  // where aligned (clang's __builtin_nontemporal_store; other compilers get plain stores).
  explicit OpenclDialect(uint64_t streaming_bytes = 0, HalfSupport half = HalfSupport::native)
      : streaming_bytes_(streaming_bytes), half_(half) {}
  // The whole translation unit for one kernel (render() plus the work-group size attribute).
  std::string render_kernel(const kiln_lir& kernel);

 protected:
  std::string scalar_name(uint8_t scalar) const override;
  std::string vector_name(uint8_t scalar, int count) const override;
  std::string vector_typedefs(const std::set<std::pair<uint8_t, int>>& used) const override;
  std::string literal(uint8_t scalar, const kiln_lir_inst& in, double f) const override;
  std::string vector_make(const std::string& vtype, const std::vector<std::string>& lanes) const override;
  std::string lane(const std::string& vec, int64_t i) const override;
  std::string cast(const std::string& x, const kiln_lir_type& from, const kiln_lir_type& to) const override;
  std::string bitcast(const std::string& x, const kiln_lir_type& from, const kiln_lir_type& to) const override;
  std::string compare(const char* op, const std::string& a, const std::string& b, const kiln_lir_type& operand,
                      const kiln_lir_type& result) const override;
  std::string where(const std::string& c, const std::string& a, const std::string& b, const kiln_lir_type& t) const override;
  std::string max(const std::string& a, const std::string& b, const kiln_lir_type& t) const override;
  std::string math(uint32_t op, const std::vector<std::string>& args, const kiln_lir_type& t) const override;
  std::string load(const std::string& addr, const kiln_lir_type& ptr) const override;
  std::string store(const std::string& addr, const std::string& value, const kiln_lir_type& ptr) const override;
  std::string local_array(const std::string& name, const kiln_lir_type& ptr) const override;
  std::string reg_array(const std::string& name, const kiln_lir_type& ptr) const override;
  std::string barrier() const override { return "barrier(CLK_LOCAL_MEM_FENCE);"; }
  std::string special(std::string_view name) const override;
  std::string kernel(std::string_view name, const std::vector<sdk::CParam>& params, const std::string& typedefs,
                     const std::string& body) const override;

 private:
  // The element type of memory holding `ptr`'s values (scalar bool is stored as uchar; half
  // without cl_khr_fp16 is ushort in local and register arrays).
  std::string element_type(const kiln_lir_type& ptr) const;
  bool half_storage(uint8_t scalar) const { return half_ == HalfSupport::storage && scalar == KILN_LIR_DTYPE_FLOAT16; }
  // A value type as registers hold it: float for half without cl_khr_fp16.
  kiln_lir_type in_register(kiln_lir_type t) const;
  // A call of the half helper `kind` ("round", "bits", "from_bits") for `count` lanes, recorded
  // so that kernel() defines it.
  std::string half_helper(const char* kind, int count, const std::string& x) const;
  // `addr` (a pointer into half memory) as the half pointer the built-ins take.
  std::string half_pointer(const std::string& addr, const kiln_lir_type& ptr) const;
  // A comparison operand: x + 0.0f for floats where the kernel stores half without computing in
  // it (see the top of this file), else x.
  std::string compared(const std::string& x, const kiln_lir_type& t) const;
  std::string store_half(const std::string& addr, const std::string& value, const kiln_lir_type& ptr) const;
  // An aligned non-temporal store of `value` (`bytes` bytes of `element`) where `addr` allows, else `plain`.
  std::string streamed(const std::string& addr, const std::string& value, const std::string& element, uint64_t bytes,
                       const std::string& plain) const;
  std::array<uint32_t, 3> local_{0, 0, 0};  // the kernel's local size (0 = not constant)
  uint64_t streaming_bytes_;
  mutable bool streamed_ = false;  // a store used KILN_STREAM (the kernel defines the macro)
  HalfSupport half_;
  bool guard_compares_ = false;  // the kernel has half values in float registers
  std::vector<bool> stored_only_;  // per instruction: a CAST to half only stored (storage half)
  mutable std::set<std::pair<std::string, int>> half_helpers_;  // (kind, lanes) used by the kernel
};

// The LIR ops the dialect renders: the C-family renderer's own but RECIPROCAL (1/x goes through
// FDIV, whose constant the literal hook types, so there is no double promotion), workgroups, and
// the built-in math functions.
sdk::LirOpSet opencl_ops();
// The LIR ops and dtypes the dialect renders, for a device with these extensions: float16 in
// `dtypes` with cl_khr_fp16, else in `storage_dtypes` (loaded, stored and converted only).
void opencl_caps(uint64_t ops[2], uint32_t& dtypes, uint32_t& storage_dtypes, bool fp16, bool fp64);

}  // namespace kiln::opencl
