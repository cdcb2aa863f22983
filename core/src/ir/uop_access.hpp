// ir/uop_access.hpp - internal access to UOp handles from raw nodes (traversals, caches).
#pragma once
#include "kiln/uop.hpp"

namespace kiln {

struct UOpAccess {
  // A new handle to a node that is alive (held by some other handle).
  static UOp from_node(const UOpNode* n);
};

}  // namespace kiln
