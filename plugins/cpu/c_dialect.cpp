// plugins/cpu/c_dialect.cpp - C spellings for the CPU backend.
#include "c_dialect.hpp"

namespace kiln::cpu {

std::string CDialect::scalar_name(uint8_t s) const {
  if (s == KILN_LIR_DTYPE_BOOL) return "_Bool";
  if (const char* name = c_scalar_name(s)) return name;
  unsupported("C dialect has no type for LIR dtype " + std::to_string(s));
}

std::string CDialect::math(uint32_t op, const std::vector<std::string>& a, const kiln_lir_type& t) const {
  bool f32 = t.scalar == KILN_LIR_DTYPE_FLOAT32;
  std::string fn;
  if (op == KILN_LIR_OP_SQRT) fn = f32 ? "__builtin_sqrtf" : "__builtin_sqrt";
  else if (op == KILN_LIR_OP_TRUNC) fn = f32 ? "__builtin_truncf" : "__builtin_trunc";
  else unsupported("C dialect has no math function for LIR op " + std::to_string(op));
  if (t.count == 1) return fn + "(" + a[0] + ")";
  // per lane: clang's vectorizers turn these back into vector instructions
  std::vector<std::string> lanes;
  for (int i = 0; i < t.count; ++i) lanes.push_back(fn + "(" + lane(a[0], i) + ")");
  return vector_make(type_name(t), lanes);
}

std::string CDialect::special(std::string_view name) const {
  if (name != "gidx0" && name != "gidx1" && name != "gidx2")
    unsupported("the CPU has no launch index '" + std::string(name) + "' (only gidx0..2)");
  return std::string(name);
}

std::string CDialect::kernel(std::string_view name, const std::vector<sdk::CParam>& params, const std::string& typedefs,
                             const std::string& body) const {
  // kiln_nargs_<entry> lets the runtime check every launch's buffer and value counts.
  size_t buffers = 0;
  for (const sdk::CParam& p : params) buffers += p.is_buffer;
  std::string s = typedefs;
  s += "const unsigned int kiln_nargs_" + std::string(name) + "[2] = {" + std::to_string(buffers) + ", " +
       std::to_string(params.size() - buffers) + "};\n";
  s += "void " + std::string(name) + "(void* const* bufs, const long long* vals, int gidx0, int gidx1, int gidx2) {\n";
  for (const sdk::CParam& p : params) {
    std::string elem = type_name({p.type.scalar, 0, 1, 0});
    if (p.is_buffer) s += "  " + elem + "* restrict " + p.name + " = (" + elem + "*)bufs[" + std::to_string(p.slot) + "];\n";
    else s += "  const " + type_name(p.type) + " " + p.name + " = (" + type_name(p.type) + ")vals[" + std::to_string(p.slot) + "];\n";
  }
  s += "  (void)gidx0; (void)gidx1; (void)gidx2;\n";
  return s + body + "}\n";
}

sdk::LirOpSet c_dialect_ops() { return CDialect::generic_ops() | sdk::LirOpSet{sdk::LirOp::SQRT, sdk::LirOp::TRUNC}; }

void c_dialect_caps(uint64_t ops[2], uint32_t& dtypes) {
  ops[0] = c_dialect_ops().bits()[0], ops[1] = c_dialect_ops().bits()[1];
  // an allow-list: a dtype added to kiln/lir.h later is not claimed until it is listed here
  dtypes = (1u << KILN_LIR_DTYPE_VOID) | (1u << KILN_LIR_DTYPE_BOOL) | (1u << KILN_LIR_DTYPE_INT8) | (1u << KILN_LIR_DTYPE_INT16) |
           (1u << KILN_LIR_DTYPE_INT32) | (1u << KILN_LIR_DTYPE_INT64) | (1u << KILN_LIR_DTYPE_UINT8) | (1u << KILN_LIR_DTYPE_UINT16) |
           (1u << KILN_LIR_DTYPE_UINT32) | (1u << KILN_LIR_DTYPE_UINT64) |
           (1u << KILN_LIR_DTYPE_FLOAT32) | (1u << KILN_LIR_DTYPE_FLOAT64);  // (no float16, bfloat16)
}

}  // namespace kiln::cpu
