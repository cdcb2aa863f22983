// ir/shape.hpp - the shape rule of every tensor-level op that changes a shape, written once.
//
// shape_of gives the shape a movement op (RESHAPE, EXPAND, PERMUTE, PAD, SHRINK, FLIP) or a
// REDUCE_AXIS makes of its source's shape, from the op's int arg. One rule serves two forms of
// shape: concrete ones (int64 dims) and dims as index UOps, where a dim may be symbolic: an arg
// entry -k of RESHAPE, EXPAND or a SHRINK end names source k of the node (a DEFINE_VAR, or a
// BIND of one) in place of a number. The scheduler (schedule/kernelize.cpp), the gradients
// (tensor/gradient.cpp) and multi-device views (tensor/multi.cpp) all take shapes from here.
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/uop.hpp"

namespace kiln {

// The ops shape_of knows: the Movement kind and REDUCE_AXIS (reduced axes keep size 1).
bool has_shape_rule(Ops op);

// Concrete: every arg entry a number (a symbolic one is an internal error: callers that may see
// one check first).
std::vector<int64_t> shape_of(Ops op, const std::vector<int64_t>& arg, const std::vector<int64_t>& in);
// Symbolic: the shape `node` makes of its source's shape `in` (index UOps, constants or not).
std::vector<UOp> shape_of(const UOp& node, const std::vector<UOp>& in);

// Decodes arg entries [begin, begin + count) of a movement op as index dims: a number becomes a
// constant, an entry -k source k (a BIND's variable).
std::vector<UOp> movement_dims(const UOp& mop, size_t begin, size_t count);

}  // namespace kiln
