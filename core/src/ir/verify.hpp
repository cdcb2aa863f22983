// ir/verify.hpp - the IR verifier: per-op arity, dtype and arg rules.
//
// verify(root) checks every node reachable from root and throws kiln::Error(internal) naming the
// first offending node, the rule it breaks and the graph around it. verify_node checks one node
// and returns the problem ("" when fine), for tests and for rewrite-time spot checks.
#pragma once
#include <string>

#include "kiln/uop.hpp"

namespace kiln {

std::string verify_node(const UOp& u);
void verify(const UOp& root, const std::string& where = "");

}  // namespace kiln
