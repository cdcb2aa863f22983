// symbolic/bounds.hpp - value bounds (vmin/vmax) of integer and bool expressions.
//
// Bounds are computed bottom-up through CONST, DEFINE_VAR, RANGE, SPECIAL and the ALU ops, cached
// in the node, and always sound: the true value lies in [vmin, vmax]. Floats and anything not
// understood get the dtype's full range. Computation is iterative (deep graphs are fine).
#pragma once
#include <cstdint>
#include <utility>

#include "kiln/uop.hpp"

namespace kiln {

std::pair<int64_t, int64_t> bounds(const UOp& u);
inline int64_t vmin(const UOp& u) { return bounds(u).first; }
inline int64_t vmax(const UOp& u) { return bounds(u).second; }

// Mathematical floor division and the matching modulo (for b != 0).
inline int64_t floordiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

}  // namespace kiln
