// codegen/lir.cpp - linearized kernel -> LIR records, the text form and its parser.
#include "codegen/lir.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <sstream>

#include "support/check.hpp"
#include "support/flat_map.hpp"
#include "support/hash.hpp"

namespace kiln {

namespace {

// The LIR op of every core op, from ops.def's LIR column (NONE: the op never reaches a renderer).
namespace lir_id {
constexpr uint32_t NONE = 0;
#define KILN_LIR_ID(name) constexpr uint32_t name = KILN_LIR_OP_##name;
KILN_LIR_OPS(KILN_LIR_ID)
#undef KILN_LIR_ID
}  // namespace lir_id
constexpr uint32_t kLirOfOp[] = {
#define KILN_OP(name, kind, lir, doc) lir_id::lir,
#include "kiln/ops.def"
};

// The LIR ops' names from the C header's list (the core includes only the SDK's C headers).
constexpr const char* kLirOpNames[] = {
    "?",
#define KILN_CORE_LIR_OP_NAME(name) #name,
    KILN_LIR_OPS(KILN_CORE_LIR_OP_NAME)
#undef KILN_CORE_LIR_OP_NAME
};
static_assert(std::size(kLirOpNames) == KILN_LIR_OP_COUNT, "KILN_LIR_OPS lists every KILN_LIR_OP_*");

const char* op_text(uint32_t op) { return op >= 1 && op < KILN_LIR_OP_COUNT ? kLirOpNames[op] : "?"; }

// "float32" for KILN_LIR_DTYPE_FLOAT32 (the core's name of the scalar with that number); "" when
// no scalar has it
std::string lir_dtype_name(uint32_t dtype) {
  for (int s = 0; s <= static_cast<int>(Scalar::float64); ++s)
    if (lir_dtype(static_cast<Scalar>(s)) == dtype) return DType(static_cast<Scalar>(s)).name();
  return "";
}

kiln_lir_type type_of(DType d) {
  kiln_lir_type t{};
  t.scalar = static_cast<uint8_t>(lir_dtype(d.scalar()));
  KILN_CHECK(t.scalar < KILN_LIR_DTYPE_COUNT, "LIR: dtype ", d.name(), " has no LIR form (index must be lowered first)");
  t.count = static_cast<uint16_t>(d.count());
  if (d.is_ptr()) {
    t.addrspace = d.addrspace() == AddrSpace::global ? KILN_LIR_ADDR_GLOBAL : d.addrspace() == AddrSpace::local ? KILN_LIR_ADDR_LOCAL
                                                                                                               : KILN_LIR_ADDR_REG;
    t.size = static_cast<int32_t>(std::min<int64_t>(d.ptr_size(), INT32_MAX));
  }
  return t;
}

std::string type_text(const kiln_lir_type& t) {
  std::string s = lir_dtype_name(t.scalar);
  if (s.empty()) s = "?";
  if (t.count != 1) s += "x" + std::to_string(t.count);
  if (t.addrspace != KILN_LIR_ADDR_NONE) {
    s += "*";
    s += t.addrspace == KILN_LIR_ADDR_GLOBAL ? "global" : t.addrspace == KILN_LIR_ADDR_LOCAL ? "local" : "reg";
    s += "[" + std::to_string(t.size) + "]";
  }
  return s;
}

class Builder {
 public:
  LirProgram p;

  uint32_t add(uint32_t op, DType d, std::vector<uint32_t> src, uint32_t arg_kind = KILN_LIR_ARG_NONE, int64_t arg = 0,
               int64_t len = 0) {
    kiln_lir_inst in{};
    in.op = static_cast<uint16_t>(op);
    in.arg_kind = static_cast<uint16_t>(arg_kind);
    in.n_src = static_cast<uint32_t>(src.size());
    in.first_src = static_cast<uint32_t>(p.srcs.size());
    in.type = d.is_void() ? kiln_lir_type{0, 0, 1, 0} : type_of(d);
    in.arg = arg;
    in.arg_length = len;
    p.srcs.insert(p.srcs.end(), src.begin(), src.end());
    p.insts.push_back(in);
    return static_cast<uint32_t>(p.insts.size() - 1);
  }
  uint32_t add_string(uint32_t op, DType d, std::vector<uint32_t> src, const std::string& s) {
    int64_t off = static_cast<int64_t>(p.strings.size());
    p.strings += s;
    return add(op, d, std::move(src), KILN_LIR_ARG_STRING, off, static_cast<int64_t>(s.size()));
  }
  uint32_t add_ints(uint32_t op, DType d, std::vector<uint32_t> src, const std::vector<int64_t>& v) {
    int64_t off = static_cast<int64_t>(p.ints.size());
    p.ints.insert(p.ints.end(), v.begin(), v.end());
    return add(op, d, std::move(src), KILN_LIR_ARG_INTS, off, static_cast<int64_t>(v.size()));
  }
  uint32_t add_const(DType d, const Arg& a) {
    if (const auto* i = std::get_if<int64_t>(&a)) return add(KILN_LIR_OP_CONST, d, {}, KILN_LIR_ARG_INT, *i);
    if (const auto* b = std::get_if<bool>(&a)) return add(KILN_LIR_OP_CONST, d, {}, KILN_LIR_ARG_BOOL, *b);
    uint64_t bits = std::get<Float>(a).bits();
    return add(KILN_LIR_OP_CONST, d, {}, KILN_LIR_ARG_FLOAT, static_cast<int64_t>(bits));
  }
};

}  // namespace

uint32_t lir_op(Ops op) { return static_cast<int>(op) < kNumOps ? kLirOfOp[static_cast<int>(op)] : 0; }

uint32_t lir_dtype(Scalar s) {
  switch (s) {
    case Scalar::void_: return KILN_LIR_DTYPE_VOID;
    case Scalar::bool_: return KILN_LIR_DTYPE_BOOL;
    case Scalar::int8: return KILN_LIR_DTYPE_INT8;
    case Scalar::int16: return KILN_LIR_DTYPE_INT16;
    case Scalar::int32: return KILN_LIR_DTYPE_INT32;
    case Scalar::int64: return KILN_LIR_DTYPE_INT64;
    case Scalar::uint8: return KILN_LIR_DTYPE_UINT8;
    case Scalar::uint16: return KILN_LIR_DTYPE_UINT16;
    case Scalar::uint32: return KILN_LIR_DTYPE_UINT32;
    case Scalar::uint64: return KILN_LIR_DTYPE_UINT64;
    case Scalar::float16: return KILN_LIR_DTYPE_FLOAT16;
    case Scalar::bfloat16: return KILN_LIR_DTYPE_BFLOAT16;
    case Scalar::float32: return KILN_LIR_DTYPE_FLOAT32;
    case Scalar::float64: return KILN_LIR_DTYPE_FLOAT64;
    case Scalar::index: return KILN_LIR_DTYPE_COUNT;  // (lowered to int32/int64 before the LIR)
  }
  return KILN_LIR_DTYPE_COUNT;
}

kiln_lir LirProgram::view() const {
  kiln_lir l{};
  l.struct_size = sizeof(kiln_lir);
  l.version = KILN_LIR_VERSION;
  l.n_insts = static_cast<uint32_t>(insts.size());
  l.insts = insts.data();
  l.srcs = srcs.data();
  l.n_srcs = static_cast<uint32_t>(srcs.size());
  l.n_ints = static_cast<uint32_t>(ints.size());
  l.ints = ints.data();
  l.strings = strings.data();
  l.strings_length = strings.size();
  l.name = name.c_str();
  l.n_buffers = n_buffers;
  l.n_vars = n_vars;
  for (int i = 0; i < 3; ++i) l.global[i] = global[i], l.local[i] = local[i];
  return l;
}

LirProgram to_lir(const std::vector<UOp>& program, const std::string& name) {
  Builder b;
  b.p.name = name;
  PtrMap<uint32_t> idx;
  auto at = [&](const UOp& u) -> uint32_t {
    const uint32_t* i = idx.find(u.node());
    KILN_CHECK(i, "LIR: ", op_name(u.op()), " used before it was emitted");
    return *i;
  };
  // parameters first, in slot order; variables next, by name (their slot order)
  std::vector<UOp> params, vars;
  for (const UOp& u : program) {
    if (u.op() == Ops::PARAM) params.push_back(u);
    if (u.op() == Ops::DEFINE_VAR) vars.push_back(u);
  }
  std::sort(params.begin(), params.end(), [](const UOp& a, const UOp& c) { return a.arg_int() < c.arg_int(); });
  for (const UOp& p : params) {
    idx[p.node()] = b.add(KILN_LIR_OP_PARAM, p.dtype(), {}, KILN_LIR_ARG_INT, p.arg_int());
    b.p.n_buffers = std::max<uint32_t>(b.p.n_buffers, static_cast<uint32_t>(p.arg_int() + 1));
  }
  std::sort(vars.begin(), vars.end(), [](const UOp& a, const UOp& c) {
    return std::get<NamedInts>(a.arg()).name < std::get<NamedInts>(c.arg()).name;
  });
  for (const UOp& v : vars) {
    const std::string& n = std::get<NamedInts>(v.arg()).name;
    idx[v.node()] = b.add_string(KILN_LIR_OP_VAR, v.dtype(), {}, n);
    b.p.var_names.push_back(n);
  }
  b.p.n_vars = static_cast<uint32_t>(vars.size());
  for (const UOp& u : program) {
    if (idx.contains(u.node())) continue;
    switch (u.op()) {
      case Ops::SINK: case Ops::GROUP: case Ops::NOOP: continue;
      case Ops::AFTER: idx[u.node()] = at(u.src(0)); continue;
      case Ops::END:
        if (u.nsrc() == 1) b.add(KILN_LIR_OP_END, dtypes::void_, {at(u.src(0))});
        continue;  // END(value, ranges): ordering only
      case Ops::CONST: idx[u.node()] = b.add_const(u.dtype(), u.arg()); continue;
      case Ops::RANGE: idx[u.node()] = b.add(KILN_LIR_OP_RANGE, u.dtype(), {at(u.src(0))}, KILN_LIR_ARG_INT, u.arg_ints()[0]); continue;
      case Ops::SPECIAL: idx[u.node()] = b.add_string(KILN_LIR_OP_SPECIAL, u.dtype(), {at(u.src(0))}, u.arg_string()); continue;
      case Ops::DEFINE_REG: case Ops::DEFINE_LOCAL:
        idx[u.node()] = b.add(lir_op(u.op()), u.dtype(), {}, KILN_LIR_ARG_INT, u.arg_int());
        continue;
      case Ops::INDEX: idx[u.node()] = b.add(KILN_LIR_OP_INDEX, u.dtype(), {at(u.src(0)), at(u.src(1))}); continue;
      case Ops::LOAD: {
        const UOp& index = u.src(0);
        std::vector<uint32_t> src{at(index)};
        if (index.op() == Ops::INDEX && index.nsrc() > 2) {  // gated: the alternative is 0
          UOp zero = u.dtype().is_bool() ? UOp::cbool(false, u.dtype().count()) : UOp::cvalue(u.dtype(), 0);
          src.push_back(b.add_const(zero.dtype(), zero.arg()));
          src.push_back(at(index.src(2)));
        }
        idx[u.node()] = b.add(KILN_LIR_OP_LOAD, u.dtype(), src);
        continue;
      }
      case Ops::STORE: {
        const UOp& index = u.src(0);
        std::vector<uint32_t> src{at(index), at(u.src(1))};
        if (u.nsrc() > 2) src.push_back(at(u.src(2)));
        else if (index.op() == Ops::INDEX && index.nsrc() > 2) src.push_back(at(index.src(2)));
        b.add(KILN_LIR_OP_STORE, dtypes::void_, src);
        continue;
      }
      case Ops::GEP: idx[u.node()] = b.add_ints(KILN_LIR_OP_GEP, u.dtype(), {at(u.src(0))}, u.arg_ints()); continue;
      case Ops::PREFETCH: b.add(KILN_LIR_OP_PREFETCH, dtypes::void_, {at(u.src(0))}); continue;
      case Ops::BARRIER: idx[u.node()] = b.add(KILN_LIR_OP_BARRIER, dtypes::void_, {}); continue;  // sources: ordering only
      case Ops::CUSTOM: case Ops::CUSTOMI: {
        std::vector<uint32_t> src;
        for (const UOp& s : u.src()) src.push_back(at(s));
        idx[u.node()] = b.add_string(lir_op(u.op()), u.dtype(), src, u.arg_string());
        continue;
      }
      default: break;
    }
    uint32_t op = lir_op(u.op());
    KILN_CHECK(op && (groups::Elementwise.has(u.op()) || u.op() == Ops::VECTORIZE || u.op() == Ops::DOT2),
               "LIR: ", op_name(u.op()), " cannot appear in a linearized kernel");
    std::vector<uint32_t> src;
    for (const UOp& s : u.src()) src.push_back(at(s));
    idx[u.node()] = b.add(op, u.dtype(), src);
  }
  return std::move(b.p);
}

std::string lir_text(const kiln_lir& l) {
  std::ostringstream os;
  os << "kernel " << l.name << " buffers=" << l.n_buffers << " vars=" << l.n_vars << " global=" << l.global[0] << ","
     << l.global[1] << "," << l.global[2] << " local=" << l.local[0] << "," << l.local[1] << "," << l.local[2] << "\n";
  for (uint32_t i = 0; i < l.n_insts; ++i) {
    const kiln_lir_inst& in = l.insts[i];
    os << "%" << i << " = " << op_text(in.op) << " " << type_text(in.type);
    if (in.n_src) {
      os << " (";
      for (uint32_t k = 0; k < in.n_src; ++k) os << (k ? ", " : "") << "%" << l.srcs[in.first_src + k];
      os << ")";
    }
    switch (in.arg_kind) {
      case KILN_LIR_ARG_INT: os << " " << in.arg; break;
      case KILN_LIR_ARG_BOOL: os << (in.arg ? " true" : " false"); break;
      case KILN_LIR_ARG_FLOAT: {
        char buf[32];
        std::snprintf(buf, sizeof buf, " 0x%016llx", static_cast<unsigned long long>(in.arg));
        double v;
        uint64_t bits = static_cast<uint64_t>(in.arg);
        std::memcpy(&v, &bits, 8);
        os << buf << " (" << v << ")";
        break;
      }
      case KILN_LIR_ARG_STRING: os << " \"" << std::string(l.strings + in.arg, static_cast<size_t>(in.arg_length)) << "\""; break;
      case KILN_LIR_ARG_INTS: {
        os << " [";
        for (int64_t k = 0; k < in.arg_length; ++k) os << (k ? ", " : "") << l.ints[in.arg + k];
        os << "]";
        break;
      }
      default: break;
    }
    os << "\n";
  }
  return os.str();
}

namespace {

[[noreturn]] void bad(size_t line, const std::string& why) { fail(ErrorCode::invalid_argument, "LIR text line ", line, ": ", why); }

kiln_lir_type parse_type(const std::string& s, size_t line) {
  kiln_lir_type t{0, 0, 1, 0};
  std::string base = s, ptr;
  size_t star = s.find('*');
  if (star != std::string::npos) base = s.substr(0, star), ptr = s.substr(star + 1);
  size_t x = base.find('x', 1);
  std::string sc = base;
  if (x != std::string::npos && base.substr(0, 5) != "void") {
    sc = base.substr(0, x);
    t.count = static_cast<uint16_t>(std::stoi(base.substr(x + 1)));
  }
  int found = -1;
  for (int i = 0; i < static_cast<int>(KILN_LIR_DTYPE_COUNT); ++i)
    if (sc == lir_dtype_name(i)) found = i;
  if (found < 0) bad(line, "unknown type '" + s + "'");
  t.scalar = static_cast<uint8_t>(found);
  if (!ptr.empty()) {
    size_t br = ptr.find('[');
    std::string space = ptr.substr(0, br);
    t.addrspace = space == "global" ? KILN_LIR_ADDR_GLOBAL : space == "local" ? KILN_LIR_ADDR_LOCAL : KILN_LIR_ADDR_REG;
    t.size = std::stoi(ptr.substr(br + 1));
  }
  return t;
}

}  // namespace

LirProgram parse_lir_text(const std::string& text) {
  LirProgram p;
  std::istringstream in(text);
  std::string line;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    if (line.rfind("kernel ", 0) == 0) {
      char name[256];
      unsigned g[3], l[3], nb, nv;
      if (std::sscanf(line.c_str(), "kernel %255s buffers=%u vars=%u global=%u,%u,%u local=%u,%u,%u", name, &nb, &nv, &g[0], &g[1], &g[2],
                      &l[0], &l[1], &l[2]) != 9)
        bad(lineno, "malformed kernel header");
      p.name = name, p.n_buffers = nb, p.n_vars = nv;
      for (int i = 0; i < 3; ++i) p.global[i] = g[i], p.local[i] = l[i];
      continue;
    }
    std::istringstream ls(line);
    std::string ref, eq, op, type;
    ls >> ref >> eq >> op >> type;
    if (ref.empty() || ref[0] != '%' || eq != "=") bad(lineno, "expected '%N = OP type ...'");
    if (std::stoul(ref.substr(1)) != p.insts.size()) bad(lineno, "instructions must be numbered in order");
    kiln_lir_inst inst{};
    for (uint32_t o = 1; o < KILN_LIR_OP_COUNT; ++o)
      if (op == kLirOpNames[o]) inst.op = static_cast<uint16_t>(o);
    if (!inst.op) bad(lineno, "unknown op '" + op + "'");
    inst.type = parse_type(type, lineno);
    inst.first_src = static_cast<uint32_t>(p.srcs.size());
    std::string rest;
    std::getline(ls, rest);
    size_t i = rest.find_first_not_of(' ');
    rest = i == std::string::npos ? "" : rest.substr(i);
    if (!rest.empty() && rest[0] == '(') {
      size_t close = rest.find(')');
      std::string list = rest.substr(1, close - 1);
      std::istringstream srcs(list);
      std::string tok;
      while (std::getline(srcs, tok, ',')) {
        size_t pc = tok.find('%');
        if (pc == std::string::npos) bad(lineno, "bad source list");
        uint32_t s = static_cast<uint32_t>(std::stoul(tok.substr(pc + 1)));
        if (s >= p.insts.size()) bad(lineno, "source %" + std::to_string(s) + " is not an earlier instruction");
        p.srcs.push_back(s);
        ++inst.n_src;
      }
      rest = rest.substr(close + 1);
      i = rest.find_first_not_of(' ');
      rest = i == std::string::npos ? "" : rest.substr(i);
    }
    if (!rest.empty()) {
      if (rest[0] == '"') {
        std::string s = rest.substr(1, rest.rfind('"') - 1);
        inst.arg_kind = KILN_LIR_ARG_STRING, inst.arg = static_cast<int64_t>(p.strings.size()), inst.arg_length = static_cast<int64_t>(s.size());
        p.strings += s;
      } else if (rest[0] == '[') {
        std::istringstream vs(rest.substr(1, rest.find(']') - 1));
        std::string tok;
        inst.arg_kind = KILN_LIR_ARG_INTS, inst.arg = static_cast<int64_t>(p.ints.size());
        while (std::getline(vs, tok, ',')) p.ints.push_back(std::stoll(tok)), ++inst.arg_length;
      } else if (rest.rfind("0x", 0) == 0) {
        inst.arg_kind = KILN_LIR_ARG_FLOAT, inst.arg = static_cast<int64_t>(std::stoull(rest.substr(2, 16), nullptr, 16));
      } else if (rest == "true" || rest == "false") {
        inst.arg_kind = KILN_LIR_ARG_BOOL, inst.arg = rest == "true";
      } else {
        inst.arg_kind = KILN_LIR_ARG_INT, inst.arg = std::stoll(rest);
      }
    }
    p.insts.push_back(inst);
  }
  for (const kiln_lir_inst& in : p.insts)
    if (in.op == KILN_LIR_OP_VAR) p.var_names.push_back(std::string(p.strings.data() + in.arg, static_cast<size_t>(in.arg_length)));
  return p;
}

Key128 lir_key(const kiln_lir& l) {
  Fingerprint f;
  f.u64(l.version).str(l.name).u64(l.n_insts);
  for (uint32_t i = 0; i < l.n_insts; ++i) {
    const kiln_lir_inst& in = l.insts[i];
    f.u64(in.op).u64(in.arg_kind).u64(in.n_src).u64(in.type.scalar).u64(in.type.addrspace).u64(in.type.count).i64(in.type.size);
    for (uint32_t k = 0; k < in.n_src; ++k) f.u64(l.srcs[in.first_src + k]);
    if (in.arg_kind == KILN_LIR_ARG_STRING) f.str(std::string_view(l.strings + in.arg, static_cast<size_t>(in.arg_length)));
    else if (in.arg_kind == KILN_LIR_ARG_INTS)
      for (int64_t k = 0; k < in.arg_length; ++k) f.i64(l.ints[in.arg + k]);
    else f.i64(in.arg);
  }
  return f.finish();
}

}  // namespace kiln
