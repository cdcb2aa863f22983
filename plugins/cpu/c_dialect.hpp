// plugins/cpu/c_dialect.hpp - the CPU backend's C dialect of the SDK's C-family renderer.
//
// Freestanding C for clang: no headers, no libm (exp2/log2/sin/pow are decomposed by the core),
// `restrict` buffer pointers, clang ext_vector_type vectors (unaligned variants for loads and
// stores), and the kernel calling convention the CPU runtime uses:
//   void NAME(void* const* bufs, const long long* vals, int gidx0, int gidx1, int gidx2)
#pragma once
#include "kiln/sdk/cstyle.hpp"

namespace kiln::cpu {

class CDialect : public sdk::CStyleRenderer {
 protected:
  std::string scalar_name(uint8_t scalar) const override;
  std::string math(uint32_t op, const std::vector<std::string>& args, const kiln_lir_type& t) const override;
  std::string special(std::string_view name) const override;
  std::string kernel(std::string_view name, const std::vector<sdk::CParam>& params, const std::string& typedefs,
                     const std::string& body) const override;
};

// The LIR ops this dialect renders: the C-family renderer's own and the math() above spells (SQRT,
// TRUNC; the core decomposes EXP2, LOG2, SIN and POW); no workgroups or shared memory.
sdk::LirOpSet c_dialect_ops();
// The LIR ops and dtypes this dialect renders (for the device's kiln_target).
void c_dialect_caps(uint64_t ops[2], uint32_t& dtypes);

}  // namespace kiln::cpu
