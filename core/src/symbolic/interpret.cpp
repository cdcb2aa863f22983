// symbolic/interpret.cpp - a toposort walk with a value per node.
#include "symbolic/interpret.hpp"

#include "ir/traverse.hpp"
#include "support/check.hpp"
#include "support/flat_map.hpp"

namespace kiln {

std::optional<Value> interpret(const UOp& root, const Assignment& vars) {
  PtrMap<Value> val(vars.size() + 64);
  for (const auto& [var, v] : vars) val[var.node()] = normalize(var.dtype(), v);
  for (const UOpNode* n : toposort_nodes(root, [&](const UOpNode* x) { return val.contains(x); })) {
    if (val.contains(n)) continue;
    Value vs[3];
    for (uint32_t i = 0; i < n->nsrc && i < 3; ++i) vs[i] = *val.find(n->srcs()[i].node());
    Value r;
    auto take = [&](const AluResult& v) {
      if (v.is_unimplemented())
        fail(ErrorCode::unimplemented, "interpret: ", op_name(n->op), " is not implemented for ", n->dtype.name());
      if (v) r = *v;
      return static_cast<bool>(v);
    };
    bool ok = true;
    switch (n->op) {
      case Ops::CONST: r = normalize(n->dtype, std::holds_alternative<Float>(n->arg) ? Value{std::get<Float>(n->arg).v}
                                               : std::holds_alternative<bool>(n->arg) ? Value{std::get<bool>(n->arg)}
                                                                                      : Value{std::get<int64_t>(n->arg)});
        break;
      case Ops::BIND: r = vs[1]; break;
      case Ops::CAST: ok = take(exec_cast(n->srcs()[0].node()->dtype.scalar_type(), n->dtype.scalar_type(), vs[0])); break;
      case Ops::BITCAST: ok = take(exec_bitcast(n->srcs()[0].node()->dtype.scalar_type(), n->dtype.scalar_type(), vs[0])); break;
      case Ops::DEFINE_VAR: case Ops::RANGE: case Ops::SPECIAL:
        fail(ErrorCode::invalid_argument, "interpret: no value for ", op_name(n->op), " ", arg_str(n->arg));
      default: {  // (the ALU ops; anything else has no value here)
        if (!groups::ALU.has(n->op)) fail(ErrorCode::invalid_argument, "interpret: cannot evaluate ", op_name(n->op));
        DType in = n->op == Ops::WHERE ? n->srcs()[1].node()->dtype : n->srcs()[0].node()->dtype;
        ok = take(exec_alu(n->op, n->dtype.scalar_type(), in.scalar_type(), std::span<const Value>(vs, n->nsrc)));
      }
    }
    if (!ok) return std::nullopt;  // undefined for these operands
    val[n] = r;
  }
  return *val.find(root.node());
}

}  // namespace kiln
