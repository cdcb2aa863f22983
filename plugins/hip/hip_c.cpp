// plugins/hip/hip_c.cpp - HIP spellings.
#include "hip_c.hpp"

#include <algorithm>

#include "../common/plugin_util.hpp"

namespace kiln::hip {

std::string HipDialect::render_kernel(const kiln_lir& kernel) {
  local_ = {kernel.local[0], kernel.local[1], kernel.local[2]};
  return render(kernel);
}

std::string HipDialect::scalar_name(uint8_t s) const {
  if (s == KILN_LIR_DTYPE_BOOL) return "bool";
  if (s == KILN_LIR_DTYPE_FLOAT16) return "_Float16";
  if (const char* name = c_scalar_name(s)) return name;
  unsupported("HIP has no type for LIR dtype " + std::to_string(s));
}

std::string HipDialect::literal(uint8_t scalar, const kiln_lir_inst& in, double f) const {
  if (scalar == KILN_LIR_DTYPE_FLOAT16) {
    double v = in.arg_kind == KILN_LIR_ARG_FLOAT ? f : static_cast<double>(in.arg);
    return "((_Float16)" + c_literal_float(v, true) + ")";
  }
  if (in.arg_kind == KILN_LIR_ARG_BOOL || scalar == KILN_LIR_DTYPE_BOOL) return in.arg ? "true" : "false";
  return CStyleRenderer::literal(scalar, in, f);
}

std::string HipDialect::math(uint32_t op, const std::vector<std::string>& a, const kiln_lir_type& t) const {
  const char* f32 = op == KILN_LIR_OP_SQRT ? "__builtin_sqrtf" : op == KILN_LIR_OP_TRUNC ? "__builtin_truncf" : nullptr;
  const char* f64 = op == KILN_LIR_OP_SQRT ? "__builtin_sqrt" : "__builtin_trunc";
  if (!f32) unsupported("HIP (without device libraries) has no math function for LIR op " + std::to_string(op));
  auto one = [&](const std::string& x) -> std::string {
    if (t.scalar == KILN_LIR_DTYPE_FLOAT64) return std::string(f64) + "(" + x + ")";
    if (t.scalar == KILN_LIR_DTYPE_FLOAT16) return "((_Float16)" + std::string(f32) + "((float)(" + x + ")))";
    return std::string(f32) + "(" + x + ")";
  };
  if (t.count == 1) return one(a[0]);
  std::vector<std::string> lanes;
  for (int i = 0; i < t.count; ++i) lanes.push_back(one(lane(a[0], i)));
  return vector_make(type_name(t), lanes);
}

std::string HipDialect::local_array(const std::string& name, const kiln_lir_type& ptr) const {
  return "__attribute__((shared, aligned(16))) " + CStyleRenderer::local_array(name, ptr);
}

std::string HipDialect::barrier() const {
  return "__builtin_amdgcn_fence(__ATOMIC_RELEASE, \"workgroup\"); __builtin_amdgcn_s_barrier(); "
         "__builtin_amdgcn_fence(__ATOMIC_ACQUIRE, \"workgroup\");";
}

std::string HipDialect::special(std::string_view name) const {
  static const char xyz[] = "xyz";
  if (auto i = plugins::parse_launch_index(name))
    return std::string("((int)__builtin_amdgcn_") + (i->group ? "workgroup_id_" : "workitem_id_") + xyz[i->dim] + "())";
  unsupported("HIP has no launch index '" + std::string(name) + "' (gidx0..2, lidx0..2)");
}

std::string HipDialect::kernel(std::string_view name, const std::vector<sdk::CParam>& params, const std::string& typedefs,
                               const std::string& body) const {
  std::vector<const sdk::CParam*> buffers, values;
  for (const sdk::CParam& p : params) (p.is_buffer ? buffers : values).push_back(&p);
  auto by_slot = [](const sdk::CParam* a, const sdk::CParam* b) { return a->slot < b->slot; };
  std::sort(buffers.begin(), buffers.end(), by_slot);
  std::sort(values.begin(), values.end(), by_slot);
  std::string entry(name);
  std::string s = typedefs;
  s += "extern \"C\" __attribute__((device, used)) const unsigned int kiln_nargs_" + entry + "[2] = {" +
       std::to_string(buffers.size()) + "u, " + std::to_string(values.size()) + "u};\n";
  uint64_t threads = uint64_t{local_[0]} * local_[1] * local_[2];
  s += "extern \"C\" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(1, " +
       std::to_string(threads ? threads : 1024) + "))) void " + entry + "(";
  std::string unpack;
  bool first = true;
  for (const sdk::CParam* p : buffers) {
    s += (first ? "" : ", ") + type_name({p->type.scalar, 0, 1, 0}) + "* __restrict__ " + p->name;
    first = false;
  }
  for (const sdk::CParam* p : values) {
    s += (first ? "" : ", ") + std::string("long long ") + p->name + "_arg";
    unpack += "  const " + type_name(p->type) + " " + p->name + " = (" + type_name(p->type) + ")" + p->name + "_arg;\n";
    first = false;
  }
  return s + ") {\n" + unpack + body + "}\n";
}

sdk::LirOpSet hip_ops() {
  using enum sdk::LirOp;
  return HipDialect::generic_ops().without({RECIPROCAL}) | sdk::lir_ops::kWorkgroup | sdk::LirOpSet{SQRT, TRUNC};
}

void hip_caps(uint64_t ops[2], uint32_t& dtypes) {
  ops[0] = hip_ops().bits()[0], ops[1] = hip_ops().bits()[1];
  // an allow-list: a dtype added to kiln/lir.h later is not claimed until it is listed here
  dtypes = (1u << KILN_LIR_DTYPE_VOID) | (1u << KILN_LIR_DTYPE_BOOL) | (1u << KILN_LIR_DTYPE_INT8) | (1u << KILN_LIR_DTYPE_INT16) |
           (1u << KILN_LIR_DTYPE_INT32) | (1u << KILN_LIR_DTYPE_INT64) | (1u << KILN_LIR_DTYPE_UINT8) | (1u << KILN_LIR_DTYPE_UINT16) |
           (1u << KILN_LIR_DTYPE_UINT32) | (1u << KILN_LIR_DTYPE_UINT64) |
           (1u << KILN_LIR_DTYPE_FLOAT16) | (1u << KILN_LIR_DTYPE_FLOAT32) | (1u << KILN_LIR_DTYPE_FLOAT64);  // (no bfloat16)
}

}  // namespace kiln::hip
