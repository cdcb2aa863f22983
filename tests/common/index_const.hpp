// tests/common/index_const.hpp - ci(v): an index constant, the tests' shorthand for UOp::cindex.
#pragma once
#include <cstdint>

#include "kiln/uop.hpp"

namespace kiln::testing {

inline UOp ci(int64_t v) { return UOp::cindex(v); }

}  // namespace kiln::testing
