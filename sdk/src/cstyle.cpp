// sdk/src/cstyle.cpp - the C-family renderer's walk over the LIR.
#include "kiln/sdk/cstyle.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string_view>

namespace kiln::sdk {

void CStyleRenderer::unsupported(const std::string& what) { throw Error{KILN_STATUS_UNIMPLEMENTED, "renderer: " + what}; }

const char* CStyleRenderer::c_scalar_name(uint8_t s) {
  switch (s) {
    case KILN_LIR_DTYPE_INT8: return "signed char";
    case KILN_LIR_DTYPE_INT16: return "short";
    case KILN_LIR_DTYPE_INT32: return "int";
    case KILN_LIR_DTYPE_INT64: return "long long";
    case KILN_LIR_DTYPE_UINT8: return "unsigned char";
    case KILN_LIR_DTYPE_UINT16: return "unsigned short";
    case KILN_LIR_DTYPE_UINT32: return "unsigned int";
    case KILN_LIR_DTYPE_UINT64: return "unsigned long long";
    case KILN_LIR_DTYPE_FLOAT32: return "float";
    case KILN_LIR_DTYPE_FLOAT64: return "double";
    default: return nullptr;
  }
}

std::string CStyleRenderer::c_literal_float(double f, bool is_f32) {
  if (std::isnan(f)) return is_f32 ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
  if (std::isinf(f)) return std::string(f < 0 ? "-" : "") + (is_f32 ? "__builtin_inff()" : "__builtin_inf()");
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", f);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return is_f32 ? s + "f" : s;
}

std::string CStyleRenderer::vector_name(uint8_t scalar, int count) const {
  used_vectors_.insert({scalar, count});
  std::string base = scalar_name(scalar);
  for (char& c : base)
    if (c == ' ') c = '_';
  return base + "x" + std::to_string(count);
}

std::string CStyleRenderer::type_name(const kiln_lir_type& t) const {
  if (t.count == 1) return scalar_name(t.scalar);
  return vector_name(t.scalar == KILN_LIR_DTYPE_BOOL ? bool_vector_lane() : t.scalar, t.count);
}

std::string CStyleRenderer::vector_typedefs(const std::set<std::pair<uint8_t, int>>& used) const {
  std::string out;
  for (auto [s, n] : used) {
    std::string v = vector_name(s, n);
    out += "typedef " + scalar_name(s) + " " + v + " __attribute__((ext_vector_type(" + std::to_string(n) + ")));\n";
    out += "typedef " + scalar_name(s) + " " + v + "_u __attribute__((ext_vector_type(" + std::to_string(n) + "), aligned(" +
           std::to_string(lir_scalar_size(s)) + ")));\n";
  }
  return out;
}

std::string CStyleRenderer::literal(uint8_t scalar, const kiln_lir_inst& in, double f) const {
  if (in.arg_kind == KILN_LIR_ARG_BOOL) return in.arg ? "1" : "0";
  switch (scalar) {
    case KILN_LIR_DTYPE_FLOAT32: return c_literal_float(in.arg_kind == KILN_LIR_ARG_FLOAT ? f : static_cast<double>(in.arg), true);
    case KILN_LIR_DTYPE_FLOAT64: return c_literal_float(in.arg_kind == KILN_LIR_ARG_FLOAT ? f : static_cast<double>(in.arg), false);
    case KILN_LIR_DTYPE_INT64: return std::to_string(in.arg) + "ll";
    case KILN_LIR_DTYPE_UINT64: return std::to_string(static_cast<uint64_t>(in.arg)) + "ull";
    case KILN_LIR_DTYPE_UINT32: return std::to_string(static_cast<uint32_t>(in.arg)) + "u";
    case KILN_LIR_DTYPE_INT32:
      if (in.arg == INT32_MIN) return "(-2147483647-1)";
      return std::to_string(in.arg);
    case KILN_LIR_DTYPE_BOOL: return in.arg ? "1" : "0";
    default:
      if (lir_is_float(scalar)) unsupported("a literal of a half type");
      return "(" + scalar_name(scalar) + ")" + std::to_string(in.arg);
  }
}

std::string CStyleRenderer::vector_splat(const std::string& vtype, const std::string& scalar) const {
  return "(" + vtype + ")(" + scalar + ")";
}

std::string CStyleRenderer::vector_make(const std::string& vtype, const std::vector<std::string>& lanes) const {
  std::string s = "(" + vtype + "){";
  for (size_t i = 0; i < lanes.size(); ++i) s += (i ? ", " : "") + lanes[i];
  return s + "}";
}

std::string CStyleRenderer::lane(const std::string& vec, int64_t i) const { return vec + "[" + std::to_string(i) + "]"; }

std::string CStyleRenderer::cast(const std::string& x, const kiln_lir_type& from, const kiln_lir_type& to) const {
  if (to.count == 1) return "(" + type_name(to) + ")(" + x + ")";
  // bool vector lanes are all-ones for true: normalise to 0/1 before converting
  std::string src = from.scalar == KILN_LIR_DTYPE_BOOL ? "((" + x + ")&1)" : x;
  if (to.scalar == KILN_LIR_DTYPE_BOOL) {
    kiln_lir_type zt = from;
    return compare("!=", x, vector_splat(type_name(from), "0"), zt, to);
  }
  return "__builtin_convertvector(" + src + ", " + type_name(to) + ")";
}

std::string CStyleRenderer::bitcast(const std::string& x, const kiln_lir_type& /*from*/, const kiln_lir_type& to) const {
  if (to.count == 1) return "__builtin_bit_cast(" + type_name(to) + ", " + x + ")";
  return "(" + type_name(to) + ")(" + x + ")";
}

std::string CStyleRenderer::ordered(const char* op, const std::string& a, const std::string& b, const kiln_lir_type& operand) {
  const bool reversed = operand.count > 1 && operand.scalar == KILN_LIR_DTYPE_BOOL && std::string_view(op) == "<";
  return reversed ? "(" + b + op + a + ")" : "(" + a + op + b + ")";
}

std::string CStyleRenderer::compare(const char* op, const std::string& a, const std::string& b, const kiln_lir_type& operand,
                                    const kiln_lir_type& result) const {
  std::string e = ordered(op, a, b, operand);
  if (result.count == 1) return e;
  // vector comparisons produce signed lanes as wide as the operands; bool vectors are int lanes
  if (lir_scalar_size(operand.scalar) == lir_scalar_size(bool_vector_lane()) && operand.scalar != KILN_LIR_DTYPE_BOOL) return e;
  if (operand.scalar == KILN_LIR_DTYPE_BOOL) return e;
  return "__builtin_convertvector(" + e + ", " + type_name(result) + ")";
}

std::string CStyleRenderer::max(const std::string& a, const std::string& b, const kiln_lir_type& t) const {
  bool f = lir_is_float(t.scalar);
  if (t.count > 1 && t.scalar == KILN_LIR_DTYPE_BOOL) return "(" + a + "|" + b + ")";  // (lanes -1 for true)
  if (t.count == 1) return f ? "((" + a + ">" + b + "||" + a + "!=" + a + ")?" + a + ":" + b + ")" : "((" + a + ">" + b + ")?" + a + ":" + b + ")";
  std::string m = f ? "((" + a + ">" + b + ")|(" + a + "!=" + a + "))" : "(" + a + ">" + b + ")";
  return "(" + m + "?" + a + ":" + b + ")";
}

std::string CStyleRenderer::where(const std::string& c, const std::string& a, const std::string& b, const kiln_lir_type& t) const {
  int size = lir_scalar_size(t.scalar);
  if (t.count == 1 || size == lir_scalar_size(bool_vector_lane())) return "(" + c + "?" + a + ":" + b + ")";
  // a vector select needs condition lanes as wide as the values
  uint8_t lane = size == 1 ? KILN_LIR_DTYPE_INT8 : size == 2 ? KILN_LIR_DTYPE_INT16 : KILN_LIR_DTYPE_INT64;
  return "(__builtin_convertvector(" + c + ", " + vector_name(lane, t.count) + ")?" + a + ":" + b + ")";
}

// Bool vectors are int lanes in registers (all ones for true) but one byte per element in memory:
// they are loaded and stored lane by lane.
std::string CStyleRenderer::load(const std::string& addr, const kiln_lir_type& ptr) const {
  if (ptr.count == 1) return "*(" + addr + ")";
  if (ptr.scalar == KILN_LIR_DTYPE_BOOL) {
    std::vector<std::string> lanes;
    for (int i = 0; i < ptr.count; ++i) lanes.push_back("-(" + addr + ")[" + std::to_string(i) + "]");
    return vector_make(type_name({ptr.scalar, 0, ptr.count, 0}), lanes);
  }
  return "*(" + type_name({ptr.scalar, 0, ptr.count, 0}) + "_u*)(" + addr + ")";
}

std::string CStyleRenderer::store(const std::string& addr, const std::string& value, const kiln_lir_type& ptr) const {
  if (ptr.count == 1) return "*(" + addr + ") = " + value + ";";
  if (ptr.scalar == KILN_LIR_DTYPE_BOOL) {
    std::string s = "{";
    for (int i = 0; i < ptr.count; ++i)
      s += " (" + addr + ")[" + std::to_string(i) + "] = " + lane(value, i) + " != 0;";
    return s + " }";
  }
  return "*(" + type_name({ptr.scalar, 0, ptr.count, 0}) + "_u*)(" + addr + ") = " + value + ";";
}

std::string CStyleRenderer::local_array(const std::string& name, const kiln_lir_type& ptr) const {
  return type_name({ptr.scalar, 0, ptr.count, 0}) + " " + name + "[" + std::to_string(ptr.size) + "];";
}

std::string CStyleRenderer::reg_array(const std::string& name, const kiln_lir_type& ptr) const {
  return type_name({ptr.scalar, 0, ptr.count, 0}) + " " + name + "[" + std::to_string(ptr.size < 1 ? 1 : ptr.size) + "];";
}

namespace {

const char* binary_op(uint32_t op) {
  switch (op) {
    case KILN_LIR_OP_ADD: return "+";
    case KILN_LIR_OP_SUB: return "-";
    case KILN_LIR_OP_MUL: return "*";
    case KILN_LIR_OP_IDIV: return "/";
    case KILN_LIR_OP_FDIV: return "/";
    case KILN_LIR_OP_MOD: return "%";
    case KILN_LIR_OP_SHL: return "<<";
    case KILN_LIR_OP_SHR: return ">>";
    case KILN_LIR_OP_AND: return "&";
    case KILN_LIR_OP_OR: return "|";
    case KILN_LIR_OP_XOR: return "^";
    default: return nullptr;
  }
}

std::string sanitize(std::string_view s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "v_" + out;
  return out;
}

}  // namespace

LirOpSet CStyleRenderer::generic_ops() {
  return lir_ops::kStructure | lir_ops::kVectors | lir_ops::kConversions | lir_ops::kArithmetic | lir_ops::kCustom |
         LirOpSet{LirOp::RECIPROCAL};
}

std::string CStyleRenderer::render(const kiln_lir& lir) {
  LirView l(lir);
  used_vectors_.clear();
  std::vector<std::string> expr(l.size());
  std::vector<CParam> params;
  std::ostringstream body;
  int indent = 1;
  auto line = [&](const std::string& s) { body << std::string(2 * indent, ' ') << s << "\n"; };
  auto S = [&](uint32_t i, uint32_t k) -> const std::string& { return expr[l.src(i, k)]; };
  auto T = [&](uint32_t i, uint32_t k) -> const kiln_lir_type& { return l[l.src(i, k)].type; };
  auto declare = [&](uint32_t i, const std::string& e) {
    expr[i] = "v" + std::to_string(i);
    line(type_name(l[i].type) + " " + expr[i] + " = " + e + ";");
  };
  uint32_t n_vars = 0;
  for (uint32_t i = 0; i < l.size(); ++i) {
    const kiln_lir_inst& in = l[i];
    const kiln_lir_type& t = in.type;
    rendering_ = i;
    if (!lir_op_known(in.op)) unsupported("LIR op " + std::to_string(in.op));
    switch (static_cast<LirOp>(in.op)) {
      case LirOp::PARAM:
        expr[i] = "data" + std::to_string(in.arg);
        params.push_back({expr[i], t, true, static_cast<uint32_t>(in.arg)});
        break;
      case LirOp::VAR:
        expr[i] = sanitize(l.str(i));
        params.push_back({expr[i], t, false, n_vars++});
        break;
      case LirOp::SPECIAL: expr[i] = special(l.str(i)); break;
      case LirOp::CONST: {
        std::string lit = literal(t.scalar, in, l.f64(i));
        expr[i] = t.count == 1 ? lit : vector_splat(type_name(t), in.arg_kind == KILN_LIR_ARG_BOOL && in.arg ? "-1" : lit);
        break;
      }
      case LirOp::RANGE:
        expr[i] = "ridx" + std::to_string(in.arg);
        line("for (" + type_name(t) + " " + expr[i] + " = 0; " + expr[i] + " < " + S(i, 0) + "; " + expr[i] + "++) {");
        ++indent;
        break;
      case LirOp::END:
      case LirOp::ENDIF:
        --indent;
        line("}");
        break;
      case LirOp::IF:
        line("if (" + S(i, 0) + ") {");
        ++indent;
        break;
      case LirOp::BARRIER: line(barrier()); break;
      case LirOp::DEFINE_LOCAL:
        expr[i] = "local" + std::to_string(in.arg);
        line(local_array(expr[i], t));
        break;
      case LirOp::DEFINE_REG:
        expr[i] = "acc" + std::to_string(in.arg);
        line(reg_array(expr[i], t));
        break;
      case LirOp::INDEX: expr[i] = "(" + S(i, 0) + "+" + S(i, 1) + ")"; break;
      case LirOp::LOAD: {
        std::string v = load(S(i, 0), T(i, 0));
        if (in.n_src == 3) v = "(" + S(i, 2) + "?" + v + ":" + S(i, 1) + ")";
        declare(i, v);
        break;
      }
      case LirOp::STORE: {
        std::string s = store(S(i, 0), S(i, 1), T(i, 0));
        line(in.n_src == 3 ? "if (" + S(i, 2) + ") " + s : s);
        break;
      }
      case LirOp::VECTORIZE: {
        std::vector<std::string> lanes;
        for (uint32_t k = 0; k < in.n_src; ++k) {
          std::string x = S(i, k);
          if (t.scalar == KILN_LIR_DTYPE_BOOL) x = "-(" + x + ")";  // true lanes are all ones
          lanes.push_back(x);
        }
        declare(i, vector_make(type_name(t), lanes));
        break;
      }
      case LirOp::GEP: {
        auto lanes = l.ints(i);
        if (lanes.size() != 1) {  // a sub-vector (a tree fold's half): lanes of a bool vector stay all-ones
          std::vector<std::string> xs;
          for (int64_t j : lanes) xs.push_back(lane(S(i, 0), j));
          declare(i, vector_make(type_name(t), xs));
          break;
        }
        std::string x = lane(S(i, 0), lanes[0]);
        if (t.scalar == KILN_LIR_DTYPE_BOOL) x = "(" + x + "!=0)";
        declare(i, x);
        break;
      }
      case LirOp::CAST: declare(i, cast(S(i, 0), T(i, 0), t)); break;
      case LirOp::BITCAST: declare(i, bitcast(S(i, 0), T(i, 0), t)); break;
      case LirOp::NEG: declare(i, "(-" + S(i, 0) + ")"); break;
      case LirOp::RECIPROCAL: {
        std::string lit = c_literal_float(1.0, t.scalar == KILN_LIR_DTYPE_FLOAT32);
        declare(i, "(" + (t.count == 1 ? lit : vector_splat(type_name(t), lit)) + "/" + S(i, 0) + ")");
        break;
      }
      case LirOp::SQRT: case LirOp::EXP2: case LirOp::LOG2: case LirOp::SIN: case LirOp::TRUNC:
      case LirOp::POW: {
        std::vector<std::string> args;
        for (uint32_t k = 0; k < in.n_src; ++k) args.push_back(S(i, k));
        declare(i, math(in.op, args, t));
        break;
      }
      case LirOp::CMPLT: declare(i, compare("<", S(i, 0), S(i, 1), T(i, 0), t)); break;
      case LirOp::CMPNE: declare(i, compare("!=", S(i, 0), S(i, 1), T(i, 0), t)); break;
      case LirOp::CMPEQ: declare(i, compare("==", S(i, 0), S(i, 1), T(i, 0), t)); break;
      case LirOp::MAX: declare(i, max(S(i, 0), S(i, 1), t)); break;
      case LirOp::WHERE: declare(i, where(S(i, 0), S(i, 1), S(i, 2), t)); break;
      case LirOp::MULACC: declare(i, "(" + S(i, 0) + "*" + S(i, 1) + "+" + S(i, 2) + ")"); break;
      case LirOp::CUSTOM: case LirOp::CUSTOMI: {
        std::string fmt(l.str(i)), out;
        for (size_t p = 0; p < fmt.size(); ++p) {
          if (fmt[p] == '{' && p + 2 < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[p + 1])) && fmt[p + 2] == '}') {
            out += S(i, static_cast<uint32_t>(fmt[p + 1] - '0'));
            p += 2;
          } else {
            out += fmt[p];
          }
        }
        if (in.op == KILN_LIR_OP_CUSTOM) line(out);
        else declare(i, out);
        break;
      }
      case LirOp::ADD: case LirOp::SUB: case LirOp::MUL: case LirOp::IDIV: case LirOp::FDIV: case LirOp::MOD:
      case LirOp::SHL: case LirOp::SHR: case LirOp::AND: case LirOp::OR: case LirOp::XOR:
        declare(i, "(" + S(i, 0) + binary_op(in.op) + S(i, 1) + ")");
        break;
      case LirOp::PREFETCH: break;  // a hint; the C family has no portable spelling (a dialect that lists it may)
      case LirOp::DOT2: unsupported("LIR op DOT2 (no C-family dialect lists it)"); break;
    }
  }
  if (indent != 1) unsupported("unbalanced RANGE/END or IF/ENDIF");
  return kernel(l.name(), params, vector_typedefs(used_vectors_), body.str());
}

}  // namespace kiln::sdk
