// ir/shape.cpp - shape_of: one rule per shape-changing op, over concrete or symbolic dims.
#include "ir/shape.hpp"

#include "support/check.hpp"

namespace kiln {

namespace {

// The rule, for any Dim with + and - of an int64: `dim(i)` decodes arg entry i as a Dim (RESHAPE
// and EXPAND entries, SHRINK ends), `one` is a size-1 dim.
template <typename Dim, typename DimAt>
std::vector<Dim> shape_rule(Ops op, const std::vector<int64_t>& arg, const std::vector<Dim>& in, DimAt dim, const Dim& one) {
  std::vector<Dim> out;
  if (op == Ops::REDUCE_AXIS) {  // arg = (op, axes...)
    out = in;
    for (size_t k = 1; k < arg.size(); ++k) out[static_cast<size_t>(arg[k])] = one;
    return out;
  }
  switch (op) {
    case Ops::RESHAPE:
    case Ops::EXPAND:
      for (size_t i = 0; i < arg.size(); ++i) out.push_back(dim(i));
      return out;
    case Ops::PERMUTE:
      for (int64_t a : arg) out.push_back(in[static_cast<size_t>(a)]);
      return out;
    case Ops::PAD:  // arg = (before0, after0, ...)
      out = in;
      for (size_t i = 0; i < out.size(); ++i) out[i] = out[i] + arg[2 * i] + arg[2 * i + 1];
      return out;
    case Ops::SHRINK:  // arg = (start0, end0, ...); an end may be symbolic
      for (size_t i = 0; i < in.size(); ++i) {
        Dim end = dim(2 * i + 1);
        out.push_back(arg[2 * i] ? end - arg[2 * i] : end);
      }
      return out;
    case Ops::FLIP: return in;
    // every other op, by kind (a new Movement op does not compile until it has a case above)
#define KILN_NO_RULE_Unary(name) case Ops::name:
#define KILN_NO_RULE_Binary(name) case Ops::name:
#define KILN_NO_RULE_Ternary(name) case Ops::name:
#define KILN_NO_RULE_Cast(name) case Ops::name:
#define KILN_NO_RULE_KernelOnly(name) case Ops::name:
#define KILN_NO_RULE_Movement(name)
#define KILN_NO_RULE_TensorOnly(name) case Ops::name:
#define KILN_NO_RULE_ProgramLevel(name) case Ops::name:
#define KILN_OP(name, kind, lir, doc) KILN_NO_RULE_##kind(name)
#include "kiln/ops.def"
      break;
  }
  KILN_UNREACHABLE("shape_of: ", op_name(op), " has no shape rule");
}
#undef KILN_NO_RULE_Unary
#undef KILN_NO_RULE_Binary
#undef KILN_NO_RULE_Ternary
#undef KILN_NO_RULE_Cast
#undef KILN_NO_RULE_KernelOnly
#undef KILN_NO_RULE_Movement
#undef KILN_NO_RULE_TensorOnly
#undef KILN_NO_RULE_ProgramLevel

}  // namespace

bool has_shape_rule(Ops op) { return groups::Movement.has(op) || op == Ops::REDUCE_AXIS; }

std::vector<int64_t> shape_of(Ops op, const std::vector<int64_t>& arg, const std::vector<int64_t>& in) {
  auto dim = [&](size_t i) {
    KILN_CHECK(arg[i] >= 0, "shape_of: ", op_name(op), " has a symbolic dim; a concrete shape has none");
    return arg[i];
  };
  return shape_rule<int64_t>(op, arg, in, dim, int64_t{1});
}

std::vector<UOp> shape_of(const UOp& node, const std::vector<UOp>& in) {
  auto dim = [&](size_t i) { return movement_dims(node, i, 1)[0]; };
  return shape_rule<UOp>(node.op(), node.arg_ints(), in, dim, UOp::cindex(1));
}

std::vector<UOp> movement_dims(const UOp& mop, size_t begin, size_t count) {
  const auto& arg = mop.arg_ints();
  std::vector<UOp> out;
  for (size_t i = begin; i < begin + count; ++i) {
    int64_t v = arg[i];
    if (v >= 0) {
      out.push_back(UOp::cint(dtypes::index, v));
    } else {
      UOp s = mop.src(static_cast<size_t>(-v));  // -1-k refers to source 1+k
      out.push_back(s.op() == Ops::BIND ? s.src(0) : s);
    }
  }
  return out;
}

}  // namespace kiln
