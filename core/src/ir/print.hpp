// ir/print.hpp - deterministic text forms of UOp graphs (what golden tests compare).
//
// print_graph: one line per node in toposort order, shared nodes named once:
//   %0 = CONST index 4
//   %1 = RANGE index (%0) (0, 0)
//   %2 = ADD index (%1, %0)
// render_expr: a compact infix form of scalar expressions, e.g. "((x*4)+y)//4" -> "x".
#pragma once
#include <string>

#include "kiln/uop.hpp"

namespace kiln {

std::string print_graph(const UOp& root);
std::string render_expr(const UOp& u);

}  // namespace kiln
