// plugins/opencl/opencl_c.cpp - OpenCL C spellings.
#include "opencl_c.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "../common/plugin_util.hpp"

namespace kiln::opencl {

namespace {

bool valid_width(int n) { return n == 2 || n == 3 || n == 4 || n == 8 || n == 16; }

// The signed integer lane type of a vector comparison on `scalar` lanes.
uint8_t mask_lane(uint8_t scalar) {
  switch (sdk::lir_scalar_size(scalar)) {
    case 1: return KILN_LIR_DTYPE_INT8;
    case 2: return KILN_LIR_DTYPE_INT16;
    case 8: return KILN_LIR_DTYPE_INT64;
    default: return KILN_LIR_DTYPE_INT32;
  }
}

// (a half literal without cl_khr_fp16 is a float: registers hold half values as floats)
std::string float_literal(double f, uint8_t scalar) {
  bool f32 = scalar != KILN_LIR_DTYPE_FLOAT64;
  std::string prefix = scalar == KILN_LIR_DTYPE_FLOAT64 ? "(double)" : scalar == KILN_LIR_DTYPE_FLOAT16 ? "(half)" : "";
  if (std::isnan(f)) return "(" + prefix + "NAN)";
  if (std::isinf(f)) return "(" + std::string(f < 0 ? "-" : "") + prefix + "INFINITY)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", f);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  if (f32) s += "f";
  return scalar == KILN_LIR_DTYPE_FLOAT16 ? "(half)" + s : s;
}

// The helper functions a kernel without cl_khr_fp16 calls for roundings and bit casts of half
// values: through a private ushort, converted by the built-ins (a compiler keeps them in
// registers: LLVM's fptrunc/fpext of half). Guarded, as several kernels may share one program.
std::string half_helper_definition(const std::string& kind, int n) {
  const std::string w = n == 1 ? "" : std::to_string(n), f = "float" + w, u = "ushort" + w;
  const std::string name = "kiln_half_" + kind + w, guard = "KILN_HALF_" + kind + w;
  const std::string store = "vstore_half" + w + "_rte(x, 0, (__private half*)&b); ";
  const std::string load = "vload_half" + w + "(0, (__private half*)&b)";
  std::string body = kind == "round"  ? f + " " + name + "(" + f + " x) { " + u + " b; " + store + "return " + load + "; }"
                     : kind == "bits" ? u + " " + name + "(" + f + " x) { " + u + " b; " + store + "return b; }"
                                      : f + " " + name + "(" + u + " b) { return " + load + "; }";
  return "#ifndef " + guard + "\n#define " + guard + "\n" + body + "\n#endif\n";
}

}  // namespace

std::string OpenclDialect::render_kernel(const kiln_lir& kernel) {
  local_ = {kernel.local[0], kernel.local[1], kernel.local[2]};
  streamed_ = false;
  half_helpers_.clear();
  guard_compares_ = false;
  stored_only_.clear();
  if (half_ == HalfSupport::storage) {
    sdk::LirView l(kernel);
    stored_only_.assign(l.size(), false);
    for (uint32_t i = 0; i < l.size(); ++i) {
      guard_compares_ |= l[i].type.scalar == KILN_LIR_DTYPE_FLOAT16;
      stored_only_[i] = l[i].op == KILN_LIR_OP_CAST && half_storage(l[i].type.scalar);
    }
    for (uint32_t i = 0; i < l.size(); ++i)
      for (uint32_t k = 0; k < l[i].n_src; ++k)
        if (!(l[i].op == KILN_LIR_OP_STORE && k == 1)) stored_only_[l.src(i, k)] = false;
  }
  return render(kernel);
}

std::string OpenclDialect::scalar_name(uint8_t s) const {
  switch (s) {
    case KILN_LIR_DTYPE_BOOL: return "bool";
    case KILN_LIR_DTYPE_INT8: return "char";
    case KILN_LIR_DTYPE_INT16: return "short";
    case KILN_LIR_DTYPE_INT32: return "int";
    case KILN_LIR_DTYPE_INT64: return "long";
    case KILN_LIR_DTYPE_UINT8: return "uchar";
    case KILN_LIR_DTYPE_UINT16: return "ushort";
    case KILN_LIR_DTYPE_UINT32: return "uint";
    case KILN_LIR_DTYPE_UINT64: return "ulong";
    case KILN_LIR_DTYPE_FLOAT16: return half_ == HalfSupport::native ? "half" : "float";  // (a register's)
    case KILN_LIR_DTYPE_FLOAT32: return "float";
    case KILN_LIR_DTYPE_FLOAT64: return "double";
    default: unsupported("OpenCL C has no type for LIR dtype " + std::to_string(s));
  }
}

std::string OpenclDialect::vector_name(uint8_t scalar, int count) const {
  if (!valid_width(count)) unsupported("OpenCL C has no vectors of " + std::to_string(count) + " lanes (2, 3, 4, 8, 16)");
  if (scalar == KILN_LIR_DTYPE_BOOL) scalar = bool_vector_lane();
  return scalar_name(scalar) + std::to_string(count);
}

std::string OpenclDialect::vector_typedefs(const std::set<std::pair<uint8_t, int>>&) const { return ""; }

std::string OpenclDialect::literal(uint8_t scalar, const kiln_lir_inst& in, double f) const {
  if (in.arg_kind == KILN_LIR_ARG_BOOL || scalar == KILN_LIR_DTYPE_BOOL) return in.arg ? "true" : "false";
  if (sdk::lir_is_float(scalar))
    return float_literal(in.arg_kind == KILN_LIR_ARG_FLOAT ? f : static_cast<double>(in.arg), in_register({scalar, 0, 1, 0}).scalar);
  switch (scalar) {
    case KILN_LIR_DTYPE_INT64:
      if (in.arg == INT64_MIN) return "(-9223372036854775807L-1L)";
      return std::to_string(in.arg) + "L";
    case KILN_LIR_DTYPE_UINT64: return std::to_string(static_cast<uint64_t>(in.arg)) + "UL";
    case KILN_LIR_DTYPE_UINT32: return std::to_string(static_cast<uint32_t>(in.arg)) + "u";
    case KILN_LIR_DTYPE_INT32:
      if (in.arg == INT32_MIN) return "(-2147483647-1)";
      return std::to_string(in.arg);
    default: return "((" + scalar_name(scalar) + ")" + std::to_string(in.arg) + ")";
  }
}

std::string OpenclDialect::vector_make(const std::string& vtype, const std::vector<std::string>& lanes) const {
  std::string s = "(" + vtype + ")(";
  for (size_t i = 0; i < lanes.size(); ++i) s += (i ? ", " : "") + lanes[i];
  return s + ")";
}

std::string OpenclDialect::lane(const std::string& vec, int64_t i) const {
  static const char hex[] = "0123456789ABCDEF";
  if (i < 0 || i > 15) unsupported("vector lane " + std::to_string(i) + " (OpenCL C vectors have at most 16)");
  return "(" + vec + ").s" + hex[i];
}

kiln_lir_type OpenclDialect::in_register(kiln_lir_type t) const {
  if (half_storage(t.scalar)) t.scalar = KILN_LIR_DTYPE_FLOAT32;
  return t;
}

std::string OpenclDialect::half_helper(const char* kind, int count, const std::string& x) const {
  half_helpers_.insert({kind, count});
  return "kiln_half_" + std::string(kind) + (count == 1 ? "" : std::to_string(count)) + "(" + x + ")";
}

std::string OpenclDialect::half_pointer(const std::string& addr, const kiln_lir_type& ptr) const {
  if (ptr.addrspace == KILN_LIR_ADDR_GLOBAL) return addr;  // a half* parameter already
  return std::string("((") + (ptr.addrspace == KILN_LIR_ADDR_LOCAL ? "__local" : "__private") + " half*)(" + addr + "))";
}

std::string OpenclDialect::cast(const std::string& x, const kiln_lir_type& from, const kiln_lir_type& to) const {
  if (half_storage(from.scalar) || half_storage(to.scalar)) {
    // registers hold half values as floats: widening is nothing, narrowing rounds the float
    if (half_storage(to.scalar)) {
      if (from.scalar == KILN_LIR_DTYPE_FLOAT16) return x;
      // (another source would be rounded twice; the core narrows only float32)
      if (from.scalar != KILN_LIR_DTYPE_FLOAT32) unsupported("a CAST to float16 from a type other than float32 without cl_khr_fp16");
      if (rendering() < stored_only_.size() && stored_only_[rendering()]) return x;  // the store rounds
      return half_helper("round", to.count, x);
    }
    if (to.scalar == KILN_LIR_DTYPE_FLOAT32) return x;
    return cast(x, in_register(from), to);
  }
  if (to.count == 1) return "(" + type_name(to) + ")(" + x + ")";
  if (to.scalar == KILN_LIR_DTYPE_BOOL)
    return compare("!=", x, vector_make(type_name(from), std::vector<std::string>(1, "0")), from, to);
  // bool lanes are all-ones for true: 0/1 first
  std::string src = from.scalar == KILN_LIR_DTYPE_BOOL ? "((" + x + ")&1)" : x;
  return "convert_" + type_name(to) + "(" + src + ")";
}

std::string OpenclDialect::bitcast(const std::string& x, const kiln_lir_type& from, const kiln_lir_type& to) const {
  // half values in float registers: their bits through a private ushort
  const std::string bits = "ushort" + std::string(to.count == 1 ? "" : std::to_string(to.count));
  if (half_storage(from.scalar)) {
    std::string b = half_helper("bits", from.count, x);
    return to.scalar == KILN_LIR_DTYPE_UINT16 ? b : "as_" + type_name(to) + "(" + b + ")";
  }
  if (half_storage(to.scalar))
    return half_helper("from_bits", to.count, from.scalar == KILN_LIR_DTYPE_UINT16 ? x : "as_" + bits + "(" + x + ")");
  return "as_" + type_name(to) + "(" + x + ")";
}

std::string OpenclDialect::compared(const std::string& x, const kiln_lir_type& t) const {
  return guard_compares_ && in_register(t).scalar == KILN_LIR_DTYPE_FLOAT32 ? "(" + x + "+0.0f)" : x;
}

std::string OpenclDialect::compare(const char* op, const std::string& a, const std::string& b, const kiln_lir_type& operand,
                                   const kiln_lir_type& result) const {
  std::string e = ordered(op, compared(a, operand), compared(b, operand), operand);
  if (result.count == 1) return e;
  uint8_t lanes = operand.scalar == KILN_LIR_DTYPE_BOOL ? bool_vector_lane() : mask_lane(in_register(operand).scalar);
  return lanes == bool_vector_lane() ? e : "convert_" + type_name(result) + e;
}

std::string OpenclDialect::where(const std::string& c, const std::string& a, const std::string& b, const kiln_lir_type& t) const {
  if (t.count == 1) return "(" + c + "?" + a + ":" + b + ")";
  // a vector select needs condition lanes as wide as the values
  uint8_t lanes = mask_lane(in_register(t).scalar);
  std::string cond = lanes == bool_vector_lane() ? c : "convert_" + vector_name(lanes, t.count) + "(" + c + ")";
  return "(" + cond + "?" + a + ":" + b + ")";
}

// NaN-propagating, as the C family's, comparing guarded operands and selecting the originals.
std::string OpenclDialect::max(const std::string& a, const std::string& b, const kiln_lir_type& t) const {
  if (compared(a, t) == a) return CStyleRenderer::max(a, b, t);
  const std::string ga = compared(a, t), gb = compared(b, t);
  if (t.count == 1) return "((" + ga + ">" + gb + "||" + ga + "!=" + ga + ")?" + a + ":" + b + ")";
  return "((((" + ga + ">" + gb + ")|(" + ga + "!=" + ga + ")))?" + a + ":" + b + ")";
}

std::string OpenclDialect::math(uint32_t op, const std::vector<std::string>& a, const kiln_lir_type& t) const {
  if (!sdk::lir_is_float(t.scalar)) unsupported("OpenCL C math on a non-float type");
  switch (op) {
    case KILN_LIR_OP_SQRT: return "sqrt(" + a[0] + ")";
    case KILN_LIR_OP_EXP2: return "exp2(" + a[0] + ")";
    case KILN_LIR_OP_LOG2: return "log2(" + a[0] + ")";
    case KILN_LIR_OP_SIN: return "sin(" + a[0] + ")";
    case KILN_LIR_OP_TRUNC: return "trunc(" + a[0] + ")";
    case KILN_LIR_OP_POW: return "pow(" + a[0] + ", " + a[1] + ")";
    default: unsupported("OpenCL C has no math function for LIR op " + std::to_string(op));
  }
}

std::string OpenclDialect::element_type(const kiln_lir_type& ptr) const {
  if (half_storage(ptr.scalar)) {  // (no half arrays without cl_khr_fp16)
    if (ptr.addrspace == KILN_LIR_ADDR_GLOBAL) return "half";
    return ptr.count > 1 ? vector_name(KILN_LIR_DTYPE_UINT16, ptr.count) : "ushort";
  }
  if (ptr.count > 1) return vector_name(ptr.scalar, ptr.count);  // bool vectors: int lanes, all-ones for true
  return ptr.scalar == KILN_LIR_DTYPE_BOOL ? "uchar" : scalar_name(ptr.scalar);
}

// Global memory is read and written with vloadN/vstoreN (any alignment); register and local
// arrays of vectors are addressed in whole vectors, so a plain dereference is aligned.
std::string OpenclDialect::load(const std::string& addr, const kiln_lir_type& ptr) const {
  if (half_storage(ptr.scalar))
    return "vload_half" + std::string(ptr.count == 1 ? "" : std::to_string(ptr.count)) + "(0, " + half_pointer(addr, ptr) + ")";
  if (ptr.count == 1) return "*(" + addr + ")";
  std::string n = std::to_string(ptr.count);
  if (ptr.addrspace != KILN_LIR_ADDR_GLOBAL)
    return "*((" + std::string(ptr.addrspace == KILN_LIR_ADDR_LOCAL ? "__local " : "") + element_type(ptr) + "*)(" + addr + "))";
  if (ptr.scalar == KILN_LIR_DTYPE_BOOL)  // stored 0/1 as uchar, computed with all-ones lanes
    return "(-convert_" + vector_name(bool_vector_lane(), ptr.count) + "(vload" + n + "(0, " + addr + ")))";
  return "vload" + n + "(0, " + addr + ")";
}

std::string OpenclDialect::store(const std::string& addr, const std::string& value, const kiln_lir_type& ptr) const {
  if (half_storage(ptr.scalar)) return store_half(addr, value, ptr);
  if (ptr.count == 1) return "*(" + addr + ") = " + value + ";";
  if (ptr.addrspace != KILN_LIR_ADDR_GLOBAL)
    return "*((" + std::string(ptr.addrspace == KILN_LIR_ADDR_LOCAL ? "__local " : "") + element_type(ptr) + "*)(" + addr +
           ")) = " + value + ";";
  std::string n = std::to_string(ptr.count);
  if (ptr.scalar == KILN_LIR_DTYPE_BOOL) return "vstore" + n + "(convert_uchar" + n + "((" + value + ")&1), 0, " + addr + ");";
  std::string plain = "vstore" + n + "(" + value + ", 0, " + addr + ");";
  uint64_t bytes = static_cast<uint64_t>(sdk::lir_scalar_size(ptr.scalar)) * ptr.count;
  bool big = streaming_bytes_ && ptr.size > 0 &&
             static_cast<uint64_t>(ptr.size) * sdk::lir_scalar_size(ptr.scalar) >= streaming_bytes_;
  if (!big || (bytes & (bytes - 1)) != 0) return plain;
  return streamed(addr, value, element_type(ptr), bytes, plain);
}

// The cast claims the vector's alignment, so only aligned addresses take it.
std::string OpenclDialect::streamed(const std::string& addr, const std::string& value, const std::string& element,
                                    uint64_t bytes, const std::string& plain) const {
  streamed_ = true;
  return "{ if ((((ulong)(" + addr + ")) & " + std::to_string(bytes - 1) + "UL) == 0) KILN_STREAM(" + value + ", (__global " +
         element + "*)(" + addr + ")); else " + plain + " }";
}

// A float rounded to nearest even into half memory; large outputs streamed as their bits.
std::string OpenclDialect::store_half(const std::string& addr, const std::string& value, const kiln_lir_type& ptr) const {
  const std::string n = ptr.count == 1 ? "" : std::to_string(ptr.count);
  const std::string plain = "vstore_half" + n + "_rte(" + value + ", 0, " + half_pointer(addr, ptr) + ");";
  const uint64_t bytes = 2 * static_cast<uint64_t>(ptr.count);
  const bool big = streaming_bytes_ && ptr.addrspace == KILN_LIR_ADDR_GLOBAL && ptr.count > 1 && ptr.size > 0 &&
                   static_cast<uint64_t>(ptr.size) * 2 >= streaming_bytes_;
  if (!big || (bytes & (bytes - 1)) != 0) return plain;
  return streamed(addr, half_helper("bits", ptr.count, value), "ushort" + n, bytes, plain);
}

std::string OpenclDialect::local_array(const std::string& name, const kiln_lir_type& ptr) const {
  return "__local " + element_type(ptr) + " " + name + "[" + std::to_string(ptr.size < 1 ? 1 : ptr.size) + "];";
}

std::string OpenclDialect::reg_array(const std::string& name, const kiln_lir_type& ptr) const {
  return element_type(ptr) + " " + name + "[" + std::to_string(ptr.size < 1 ? 1 : ptr.size) + "];";
}

std::string OpenclDialect::special(std::string_view name) const {
  if (auto i = plugins::parse_launch_index(name))
    return std::string("((int)") + (i->group ? "get_group_id(" : "get_local_id(") + std::to_string(i->dim) + "))";
  unsupported("OpenCL has no launch index '" + std::string(name) + "' (gidx0..2, lidx0..2)");
}

std::string OpenclDialect::kernel(std::string_view name, const std::vector<sdk::CParam>& params, const std::string&,
                                  const std::string& body) const {
  std::string s;
  // Extensions only when the kernel uses their types (a device without them never gets such a kernel).
  auto uses = [&](const char* type) { return body.find(type) != std::string::npos; };
  bool dbl = uses("double"), half = half_ == HalfSupport::native && uses("half");
  for (const sdk::CParam& p : params) {
    dbl |= p.type.scalar == KILN_LIR_DTYPE_FLOAT64;
    half |= half_ == HalfSupport::native && p.type.scalar == KILN_LIR_DTYPE_FLOAT16;
  }
  if (dbl) s += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  if (streamed_)
    s += "#ifdef __clang__\n#define KILN_STREAM(v, p) __builtin_nontemporal_store((v), (p))\n#else\n"
         "#define KILN_STREAM(v, p) (*(p) = (v))\n#endif\n";
  if (half) s += "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n";
  for (const auto& [kind, n] : half_helpers_) s += half_helper_definition(kind, n);
  s += "__kernel ";
  if (local_[0] && local_[1] && local_[2])
    s += "__attribute__((reqd_work_group_size(" + std::to_string(local_[0]) + ", " + std::to_string(local_[1]) + ", " +
         std::to_string(local_[2]) + "))) ";
  s += "void " + std::string(name) + "(";
  // buffers in slot order, then values in slot order: the runtime's argument convention
  std::vector<const sdk::CParam*> buffers, values;
  for (const sdk::CParam& p : params) (p.is_buffer ? buffers : values).push_back(&p);
  auto by_slot = [](const sdk::CParam* a, const sdk::CParam* b) { return a->slot < b->slot; };
  std::sort(buffers.begin(), buffers.end(), by_slot);
  std::sort(values.begin(), values.end(), by_slot);
  std::string unpack;
  bool first = true;
  for (const sdk::CParam* p : buffers) {
    s += (first ? "" : ", ") + std::string("__global ") + element_type({p->type.scalar, KILN_LIR_ADDR_GLOBAL, 1, 0}) + "* restrict " + p->name;
    first = false;
  }
  for (const sdk::CParam* p : values) {
    s += (first ? "" : ", ") + std::string("long ") + p->name + "_arg";
    unpack += "  const " + type_name(p->type) + " " + p->name + " = (" + type_name(p->type) + ")" + p->name + "_arg;\n";
    first = false;
  }
  return s + ") {\n" + unpack + body + "}\n";
}

sdk::LirOpSet opencl_ops() {
  using enum sdk::LirOp;
  return OpenclDialect::generic_ops().without({RECIPROCAL}) | sdk::lir_ops::kWorkgroup |
         sdk::LirOpSet{SQRT, TRUNC, EXP2, LOG2, SIN, POW};
}

void opencl_caps(uint64_t ops[2], uint32_t& dtypes, uint32_t& storage_dtypes, bool fp16, bool fp64) {
  ops[0] = opencl_ops().bits()[0], ops[1] = opencl_ops().bits()[1];
  // an allow-list: a dtype added to kiln/lir.h later is not claimed until it is listed here
  dtypes = (1u << KILN_LIR_DTYPE_VOID) | (1u << KILN_LIR_DTYPE_BOOL) | (1u << KILN_LIR_DTYPE_INT8) | (1u << KILN_LIR_DTYPE_INT16) |
           (1u << KILN_LIR_DTYPE_INT32) | (1u << KILN_LIR_DTYPE_INT64) | (1u << KILN_LIR_DTYPE_UINT8) | (1u << KILN_LIR_DTYPE_UINT16) |
           (1u << KILN_LIR_DTYPE_UINT32) | (1u << KILN_LIR_DTYPE_UINT64) |
           (1u << KILN_LIR_DTYPE_FLOAT32);  // (no bfloat16; float16 and float64 where the device has them)
  // without cl_khr_fp16 half is still a buffer's element type, converted by vload_half/vstore_half
  storage_dtypes = 0;
  (fp16 ? dtypes : storage_dtypes) |= 1u << KILN_LIR_DTYPE_FLOAT16;
  if (fp64) dtypes |= 1u << KILN_LIR_DTYPE_FLOAT64;
}

}  // namespace kiln::opencl
