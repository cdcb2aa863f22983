// symbolic/interpret.hpp - evaluates a scalar UOp graph under a variable assignment.
//
// Understands CONST, DEFINE_VAR, RANGE, SPECIAL (values from the assignment), BIND, the ALU ops,
// CAST and BITCAST, with exactly the semantics of constant folding (ir/alu.hpp). The oracle
// of the simplifier's property tests.
#pragma once
#include <optional>
#include <utility>
#include <vector>

#include "ir/alu.hpp"

namespace kiln {

using Assignment = std::vector<std::pair<UOp, Value>>;

// The value of root; empty when an operation on the way is undefined (a shift by the width or more, ...).
// Throws kiln::Error(invalid_argument) for a variable without a value or an op it cannot evaluate.
std::optional<Value> interpret(const UOp& root, const Assignment& vars);

}  // namespace kiln
