// codegen/transcendental.hpp - polynomial exp2/log2/sin and pow for targets without them.
#pragma once
#include "kiln/uop.hpp"

namespace kiln {

UOp exp2_poly(const UOp& x);
UOp log2_poly(const UOp& x);
// use_f64: reduce the argument in float64 (targets with float64).
UOp sin_poly(const UOp& x, bool use_f64);
// x**y with numpy semantics for signs, zeros and NaN; through EXP2/LOG2 ops or the polynomials.
UOp pow_decomposed(const UOp& x, const UOp& y, bool has_exp2_log2);

}  // namespace kiln
