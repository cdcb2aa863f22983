// ir/print.cpp - the graph printer and the infix expression renderer.
#include "ir/print.hpp"

#include "ir/traverse.hpp"
#include "support/check.hpp"
#include "support/flat_map.hpp"

namespace kiln {

static std::string node_arg_str(const UOpNode* n) {
  if (n->op == Ops::RANGE) {
    const auto& v = std::get<std::vector<int64_t>>(n->arg);
    if (v.size() == 2) return cat("(", v[0], ", ", axis_type_name(static_cast<AxisType>(v[1])), ")");
    if (v.size() == 3) return cat("(", v[0], ", ", axis_type_name(static_cast<AxisType>(v[1])), v[2] ? ", vector)" : ")");
  }
  if ((n->op == Ops::REDUCE_AXIS || n->op == Ops::REDUCE) && n->arg.index() == 5) {
    const auto& v = std::get<std::vector<int64_t>>(n->arg);
    std::string s = cat("(", op_name(static_cast<Ops>(v[0])));
    for (size_t i = 1; i < v.size(); ++i) s += cat(", ", v[i]);
    return s + ")";
  }
  return arg_str(n->arg);
}

std::string print_graph(const UOp& root) {
  std::string out;
  PtrMap<int> num;
  int next = 0;
  for (const UOpNode* n : toposort_nodes(root)) {
    num[n] = next;
    out += cat("%", next++, " = ", op_name(n->op), " ", n->dtype.name());
    if (n->nsrc) {
      out += " (";
      for (uint32_t i = 0; i < n->nsrc; ++i) out += cat(i ? ", " : "", "%", *num.find(n->srcs()[i].node()));
      out += ")";
    }
    std::string a = node_arg_str(n);
    if (!a.empty()) out += " " + a;
    if (n->tag) out += cat(" tag=", n->tag);
    out += "\n";
  }
  return out;
}

static const char* infix(Ops op) {
  switch (op) {
    case Ops::ADD: return "+";
    case Ops::SUB: return "-";
    case Ops::MUL: return "*";
    case Ops::IDIV: return "//";
    case Ops::MOD: return "%";
    case Ops::FDIV: return "/";
    case Ops::CMPLT: return "<";
    case Ops::CMPNE: return "!=";
    case Ops::CMPEQ: return "==";
    case Ops::AND: return "&";
    case Ops::OR: return "|";
    case Ops::XOR: return "^";
    case Ops::SHL: return "<<";
    case Ops::SHR: return ">>";
    default: return nullptr;
  }
}

std::string render_expr(const UOp& root) {
  PtrMap<std::string> done;
  for (const UOpNode* n : toposort_nodes(root)) {
    auto s = [&](int i) -> const std::string& { return *done.find(n->srcs()[i].node()); };
    std::string r;
    if (n->op == Ops::CONST) {
      r = n->arg.index() == 3 ? (std::get<bool>(n->arg) ? "True" : "False") : arg_str(n->arg);
    } else if (n->op == Ops::DEFINE_VAR) {
      r = std::get<NamedInts>(n->arg).name;
    } else if (n->op == Ops::RANGE) {
      r = cat("r", std::get<std::vector<int64_t>>(n->arg)[0]);
    } else if (n->op == Ops::SPECIAL) {
      r = std::get<std::string>(n->arg);
    } else if (const char* op = infix(n->op); op && n->nsrc == 2) {
      r = cat("(", s(0), op, s(1), ")");
    } else if (n->op == Ops::NEG) {
      r = cat("(-", s(0), ")");
    } else if (n->op == Ops::WHERE) {
      r = cat("(", s(0), "?", s(1), ":", s(2), ")");
    } else if (n->op == Ops::MAX) {
      r = cat("max(", s(0), ", ", s(1), ")");
    } else if (n->op == Ops::CAST) {
      r = cat("(", n->dtype.name(), ")", s(0));
    } else {
      r = op_name(n->op);
      r += "(";
      for (uint32_t i = 0; i < n->nsrc; ++i) r += (i ? ", " : "") + s(i);
      r += ")";
    }
    done[n] = std::move(r);
  }
  return *done.find(root.node());
}

}  // namespace kiln
