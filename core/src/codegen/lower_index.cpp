// codegen/lower_index.cpp - the unbounded `index` type becomes int32 or int64.
//
// int32 when the value bounds of every index-typed node fit (faster address math and vectors on
// every target), else int64 for the whole kernel.
#include <climits>

#include "codegen/passes.hpp"
#include "ir/traverse.hpp"
#include "ir/uop_access.hpp"
#include "support/flat_map.hpp"
#include "symbolic/bounds.hpp"

namespace kiln {

UOp lower_index_dtype(const UOp& ast) {
  std::vector<const UOpNode*> order = toposort_nodes(ast);
  bool fits = true;
  for (const UOpNode* n : order) {
    if (n->dtype.scalar() != Scalar::index || n->dtype.count() != 1) continue;
    auto [lo, hi] = bounds(UOpAccess::from_node(n));
    fits &= lo >= INT32_MIN && hi <= INT32_MAX;
  }
  DType to = fits ? dtypes::int32 : dtypes::int64;
  PtrMap<UOp> done(order.size() * 2);
  for (const UOpNode* n : order) {
    UOp u = UOpAccess::from_node(n);
    std::vector<UOp> src;
    bool changed = false;
    for (const UOp& s : u.src()) {
      src.push_back(*done.find(s.node()));
      changed |= !(src.back() == s);
    }
    DType d = u.dtype();
    if (d.scalar() == Scalar::index && !d.is_ptr()) {
      d = DType(to.scalar(), d.count());
      changed = true;
    }
    if (d.scalar() == Scalar::index && d.is_ptr()) d = DType(to.scalar(), d.count()).ptr(d.ptr_size(), d.addrspace()), changed = true;
    done[n] = changed ? UOp::make(u.op(), d, src, u.arg(), u.tag()) : u;
  }
  return *done.find(ast.node());
}

}  // namespace kiln
