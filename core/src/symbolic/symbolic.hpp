// symbolic/symbolic.hpp - the algebraic simplifier as rule sets.
//
// symbolic_simple: constant folding with C semantics for every ALU op and dtype, identities
//   (x+0, x*1, x//1, x|0, ...), zero folding (x%x, x^x, x<x), boolean algebra, where/cast folding.
// symbolic: symbolic_simple plus canonical operand order (constants right, then a structural
//   order), constant reassociation, like-term combining, bounds folding (a node whose vmin and
//   vmax agree becomes a constant; comparisons, WHERE and MAX decided by bounds), and div/mod
//   folding from bounds ((x*4+y)//4 -> x when 0 <= y < 4, nested and gcd forms, the x%c +
//   (x//c)*c recombination). No rule makes a graph larger (counted in nodes).
#pragma once
#include "rewrite/graph_rewrite.hpp"

namespace kiln {

const PatternMatcher& symbolic_simple();
const PatternMatcher& symbolic();

// graph_rewrite(u, symbolic()).
UOp simplify(const UOp& u);

// While one lives, simplify on this thread remembers its results (a pure function of the node;
// the table holds both sides): codegen simplifies the same index expressions many times (a
// load's index at lane 0, for its stride and again for its base). to_program opens one per
// kernel; nested ones share the outermost's table, which goes with it.
class SimplifyMemo {
 public:
  SimplifyMemo();
  ~SimplifyMemo();
  SimplifyMemo(const SimplifyMemo&) = delete;
  SimplifyMemo& operator=(const SimplifyMemo&) = delete;

 private:
  bool owner_;
};

// The structural order used to canonicalise commutative operands (exposed for tests):
// true when `a` should come after `b`.
bool canonical_after(const UOp& a, const UOp& b);

}  // namespace kiln
