// ir/verify.cpp - the rules behind verify(). One case per op family; messages say what is expected.
#include "ir/verify.hpp"

#include "ir/print.hpp"
#include "ir/traverse.hpp"
#include "ir/uop_access.hpp"
#include "support/check.hpp"

namespace kiln {

namespace {

bool is_ints_arg(const UOp& u) { return std::holds_alternative<std::vector<int64_t>>(u.arg()); }

std::string check_arity(const UOp& u, size_t lo, size_t hi) {
  if (u.nsrc() < lo || u.nsrc() > hi)
    return lo == hi ? cat("expects ", lo, " sources, has ", u.nsrc()) : cat("expects ", lo, "..", hi, " sources, has ", u.nsrc());
  return "";
}

std::string check_const(const UOp& u) {
  if (u.nsrc() != 0) return "CONST has no sources";
  DType d = u.dtype();
  if (d.is_float() && !std::holds_alternative<Float>(u.arg())) return "float CONST needs a float arg";
  if (d.is_int() && !std::holds_alternative<int64_t>(u.arg())) return "integer CONST needs an int arg";
  if (d.is_bool() && !std::holds_alternative<bool>(u.arg())) return "bool CONST needs a bool arg";
  if (d.is_void() || d.is_ptr()) return "CONST needs a value dtype";
  return "";
}

std::string check_alu(const UOp& u) {
  Ops op = u.op();
  DType d = u.dtype();
  if (groups::Unary.has(op)) {
    if (auto e = check_arity(u, 1, 1); !e.empty()) return e;
    if (!(u.src(0).dtype() == d)) return cat("result dtype ", d.name(), " differs from source ", u.src(0).dtype().name());
    if ((op == Ops::EXP2 || op == Ops::LOG2 || op == Ops::SIN || op == Ops::SQRT || op == Ops::RECIPROCAL) && !d.is_float())
      return cat(op_name(op), " needs a float dtype, got ", d.name());
    return "";
  }
  if (op == Ops::WHERE) {
    if (auto e = check_arity(u, 3, 3); !e.empty()) return e;
    if (!u.src(0).dtype().is_bool()) return cat("WHERE condition must be bool, got ", u.src(0).dtype().name());
    if (!(u.src(1).dtype() == d) || !(u.src(2).dtype() == d))
      return cat("WHERE branches ", u.src(1).dtype().name(), "/", u.src(2).dtype().name(), " must both be ", d.name());
    return "";
  }
  if (op == Ops::MULACC) {
    if (auto e = check_arity(u, 3, 3); !e.empty()) return e;
    for (const UOp& s : u.src())
      if (!(s.dtype() == d)) return cat("MULACC source ", s.dtype().name(), " differs from ", d.name());
    return "";
  }
  if (auto e = check_arity(u, 2, 2); !e.empty()) return e;
  DType a = u.src(0).dtype(), b = u.src(1).dtype();
  if (groups::Comparison.has(op)) {
    if (!d.is_bool()) return cat(op_name(op), " result must be bool, got ", d.name());
    if (!(a == b)) return cat(op_name(op), " compares ", a.name(), " with ", b.name());
    return "";
  }
  if (op == Ops::THREEFRY) return a == dtypes::uint64.vec(a.count()) && a == b && d == a ? "" : "THREEFRY takes and gives uint64";
  if (op == Ops::SHL || op == Ops::SHR) {
    if (!(a == d)) return cat(op_name(op), " result ", d.name(), " differs from source ", a.name());
    if (!(d.is_int() || d.is_bool()) || !(b.is_int())) return cat(op_name(op), " needs integer operands");
    return "";
  }
  if (!(a == d) || !(b == d)) return cat(op_name(op), " operands ", a.name(), ", ", b.name(), " must both be ", d.name());
  if ((op == Ops::IDIV || op == Ops::MOD) && !d.is_int()) return cat(op_name(op), " needs integers, got ", d.name());
  if ((op == Ops::AND || op == Ops::OR || op == Ops::XOR) && !(d.is_int() || d.is_bool()))
    return cat(op_name(op), " needs integers or bools, got ", d.name());
  if (op == Ops::FDIV && !d.is_float()) return cat("FDIV needs floats, got ", d.name());
  return "";
}

}  // namespace

std::string verify_node(const UOp& u) {
  Ops op = u.op();
  if (groups::ALU.has(op)) return check_alu(u);
  switch (op) {
    case Ops::CONST: return check_const(u);
    case Ops::CAST: return check_arity(u, 1, 1);
    case Ops::BITCAST: {
      if (auto e = check_arity(u, 1, 1); !e.empty()) return e;
      return u.src(0).dtype().itemsize() == u.dtype().itemsize() ? "" : "BITCAST must keep the size";
    }
    case Ops::RANGE:
      if (auto e = check_arity(u, 1, 1); !e.empty()) return e;
      if (!is_ints_arg(u) || u.arg_ints().size() < 2 || u.arg_ints().size() > 3) return "RANGE arg is (axis, AxisType[, vectorize])";
      return u.src(0).dtype().is_int() && u.dtype().is_int() ? "" : "RANGE is an integer loop";
    case Ops::DEFINE_VAR: {
      const auto* n = std::get_if<NamedInts>(&u.arg());
      if (!n || n->ints.size() != 2) return "DEFINE_VAR arg is (name, min, max)";
      return n->ints[0] <= n->ints[1] ? "" : cat("DEFINE_VAR ", n->name, " has min ", n->ints[0], " > max ", n->ints[1]);
    }
    case Ops::BIND:
      if (auto e = check_arity(u, 2, 2); !e.empty()) return e;
      return u.src(0).op() == Ops::DEFINE_VAR && u.src(1).op() == Ops::CONST ? "" : "BIND is (DEFINE_VAR, CONST)";
    case Ops::INDEX:
      if (auto e = check_arity(u, 2, 3); !e.empty()) return e;
      if (!u.src(0).dtype().is_ptr()) return "INDEX base must be a pointer";
      if (!u.src(1).dtype().is_int()) return "INDEX offset must be an integer";
      if (u.nsrc() == 3 && !u.src(2).dtype().is_bool()) return "INDEX valid must be bool";
      return "";
    case Ops::LOAD: return check_arity(u, 1, 3);
    case Ops::STORE:
      if (auto e = check_arity(u, 2, 3); !e.empty()) return e;
      return u.dtype().is_void() ? "" : "STORE has no value";
    case Ops::SINK: return u.dtype().is_void() ? "" : "SINK has no value";
    case Ops::PREFETCH:
      if (auto e = check_arity(u, 1, 1); !e.empty()) return e;
      if (u.src(0).op() != Ops::INDEX) return "PREFETCH reads through an INDEX";
      return u.dtype().is_void() ? "" : "PREFETCH has no value";
    case Ops::VECTORIZE:
      if (u.nsrc() < 1) return "VECTORIZE needs sources";
      for (const UOp& s : u.src())
        if (!(s.dtype() == u.dtype().scalar_type()) && !(u.dtype().is_ptr()))
          return cat("VECTORIZE source ", s.dtype().name(), " is not ", u.dtype().scalar_type().name());
      return static_cast<int>(u.nsrc()) == u.dtype().count() || u.dtype().is_ptr() ? "" : "VECTORIZE width must equal the source count";
    case Ops::GEP:
      if (auto e = check_arity(u, 1, 1); !e.empty()) return e;
      if (!is_ints_arg(u)) return "GEP arg is the lane list";
      return static_cast<int>(u.arg_ints().size()) == u.dtype().count() ? "" : "GEP width must equal its lane count";
    case Ops::RESHAPE: case Ops::PERMUTE: case Ops::EXPAND: case Ops::PAD: case Ops::SHRINK: case Ops::FLIP:
      if (auto e = check_arity(u, 1, 1); !e.empty()) return e;
      return is_ints_arg(u) ? "" : cat(op_name(op), " arg is an int list");
    case Ops::REDUCE_AXIS: {
      if (auto e = check_arity(u, 1, 1); !e.empty()) return e;
      if (!is_ints_arg(u) || u.arg_ints().empty()) return "REDUCE_AXIS arg is (op, axes...)";
      Ops r = static_cast<Ops>(u.arg_ints()[0]);
      return r == Ops::ADD || r == Ops::MUL || r == Ops::MAX ? "" : "REDUCE_AXIS op must be ADD, MUL or MAX";
    }
    case Ops::REDUCE: case Ops::END:
      if (u.nsrc() < 1) return cat(op_name(op), " needs a value");
      for (size_t i = 1; i < u.nsrc(); ++i)
        if (u.src(i).op() != Ops::RANGE) return cat(op_name(op), " source ", i, " must be a RANGE, is ", op_name(u.src(i).op()));
      return "";
    case Ops::BUFFER:
      if (!is_ints_arg(u) || u.arg_ints().size() != 2) return "BUFFER arg is (unique id, size)";
      return u.nsrc() == 1 && u.src(0).op() == Ops::DEVICE ? "" : "BUFFER source is its DEVICE";
    case Ops::DEVICE: return std::holds_alternative<std::string>(u.arg()) ? "" : "DEVICE arg is the device name";
    case Ops::PARAM: return std::holds_alternative<int64_t>(u.arg()) ? "" : "PARAM arg is its slot";
    case Ops::SPECIAL:
      if (auto e = check_arity(u, 1, 1); !e.empty()) return e;
      return std::holds_alternative<std::string>(u.arg()) ? "" : "SPECIAL arg is its name";
    default: return "";
  }
}

void verify(const UOp& root, const std::string& where) {
  for (const UOpNode* n : toposort_nodes(root)) {
    UOp u = UOpAccess::from_node(n);
    std::string e = verify_node(u);
    if (!e.empty())
      fail(ErrorCode::internal, "IR verification failed", where.empty() ? "" : " after '" + where + "'", ": ",
           op_name(u.op()), " ", u.dtype().name(), ": ", e, "\n", print_graph(u));
  }
}

}  // namespace kiln
