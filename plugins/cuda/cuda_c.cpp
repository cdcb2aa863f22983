// plugins/cuda/cuda_c.cpp - CUDA spellings.
#include "cuda_c.hpp"

#include <algorithm>
#include <cmath>

#include "../common/plugin_util.hpp"

namespace kiln::cuda {

const char* const kCudaPrelude =
    "#ifdef __CUDACC_RTC__\n"
    "#define KILN_TID(d) ((int)threadIdx.d)\n"
    "#define KILN_BID(d) ((int)blockIdx.d)\n"
    "#else\n"
    "#define __global__ __attribute__((global))\n"
    "#define __shared__ __attribute__((shared))\n"
    "#define __launch_bounds__(n) __attribute__((launch_bounds(n)))\n"
    "#define KILN_TID(d) ((int)__nvvm_read_ptx_sreg_tid_##d())\n"
    "#define KILN_BID(d) ((int)__nvvm_read_ptx_sreg_ctaid_##d())\n"
    "#define sqrtf __builtin_sqrtf\n"
    "#define sqrt __builtin_sqrt\n"
    "#define truncf __builtin_truncf\n"
    "#define trunc __builtin_trunc\n"
    "#ifndef KILN_VECTORS\n"  // (compile_many joins kernels: the types once)
    "#define KILN_VECTORS\n"
    "#define KILN_V2(N, T) struct __attribute__((aligned(2 * sizeof(T)))) N##2 { T x, y; }; \\\n"
    "  static __attribute__((device)) inline N##2 make_##N##2(T x, T y) { N##2 v; v.x = x; v.y = y; return v; }\n"
    "#define KILN_V4(N, T) struct __attribute__((aligned(4 * sizeof(T)))) N##4 { T x, y, z, w; }; \\\n"
    "  static __attribute__((device)) inline N##4 make_##N##4(T x, T y, T z, T w) { N##4 v; v.x = x; v.y = y; v.z = z; v.w = w; return v; }\n"
    "KILN_V2(float, float) KILN_V4(float, float) KILN_V2(int, int) KILN_V4(int, int)\n"
    "KILN_V2(uint, unsigned int) KILN_V4(uint, unsigned int)\n"
    "#endif\n"
    "#endif\n";

std::string CudaDialect::render_kernel(const kiln_lir& kernel) {
  local_ = {kernel.local[0], kernel.local[1], kernel.local[2]};
  return render(kernel);
}

std::string CudaDialect::scalar_name(uint8_t s) const {
  if (s == KILN_LIR_DTYPE_BOOL) return "bool";
  if (const char* name = c_scalar_name(s)) return name;
  unsupported("the CUDA dialect has no type for LIR dtype " + std::to_string(s) +
              " (16-bit floats are stored as bits by the core; the target does not list them)");
}

std::string CudaDialect::vector_name(uint8_t scalar, int count) const {
  const char* base = scalar == KILN_LIR_DTYPE_FLOAT32 ? "float" : scalar == KILN_LIR_DTYPE_INT32 ? "int"
                     : scalar == KILN_LIR_DTYPE_UINT32 ? "uint" : nullptr;
  if (!base || (count != 2 && count != 4))
    unsupported("the CUDA dialect's vectors are float, int and uint in 2 or 4 lanes (the target says "
                "KILN_TARGET_VECTOR_MEMORY_ONLY), got " + std::to_string(count) + " lanes of dtype " + std::to_string(scalar));
  return base + std::to_string(count);
}

std::string CudaDialect::vector_typedefs(const std::set<std::pair<uint8_t, int>>&) const { return ""; }  // (the prelude's)

std::string CudaDialect::vector_splat(const std::string& vtype, const std::string& scalar) const {
  return vector_make(vtype, std::vector<std::string>(vtype.back() - '0', scalar));
}

std::string CudaDialect::vector_make(const std::string& vtype, const std::vector<std::string>& lanes) const {
  std::string s = "make_" + vtype + "(";
  for (size_t i = 0; i < lanes.size(); ++i) s += (i ? ", " : "") + lanes[i];
  return s + ")";
}

std::string CudaDialect::lane(const std::string& vec, int64_t i) const {
  if (i < 0 || i > 3) unsupported("lane " + std::to_string(i) + " of a CUDA vector (x, y, z, w)");
  return vec + "." + "xyzw"[i];
}

std::string CudaDialect::load(const std::string& addr, const kiln_lir_type& ptr) const {
  if (ptr.count == 1) return CStyleRenderer::load(addr, ptr);
  return "*((" + vector_name(ptr.scalar, ptr.count) + "*)(" + addr + "))";  // (aligned: the core proved it)
}

std::string CudaDialect::store(const std::string& addr, const std::string& value, const kiln_lir_type& ptr) const {
  if (ptr.count == 1) return CStyleRenderer::store(addr, value, ptr);
  return "*((" + vector_name(ptr.scalar, ptr.count) + "*)(" + addr + ")) = " + value + ";";
}

std::string CudaDialect::literal(uint8_t scalar, const kiln_lir_inst& in, double f) const {
  if (in.arg_kind == KILN_LIR_ARG_BOOL || scalar == KILN_LIR_DTYPE_BOOL) return in.arg ? "true" : "false";
  // NVRTC has no __builtin_inff/__builtin_nanf: infinities and NaN by their bits
  if (in.arg_kind == KILN_LIR_ARG_FLOAT && (std::isnan(f) || std::isinf(f))) {
    bool f32 = scalar == KILN_LIR_DTYPE_FLOAT32;
    const char* bits = std::isnan(f) ? (f32 ? "0x7fc00000u" : "0x7ff8000000000000ull")
                       : f > 0       ? (f32 ? "0x7f800000u" : "0x7ff0000000000000ull")
                                     : (f32 ? "0xff800000u" : "0xfff0000000000000ull");
    return std::string("__builtin_bit_cast(") + (f32 ? "float" : "double") + ", " + bits + ")";
  }
  return CStyleRenderer::literal(scalar, in, f);
}

std::string CudaDialect::math(uint32_t op, const std::vector<std::string>& a, const kiln_lir_type& t) const {
  bool f64 = t.scalar == KILN_LIR_DTYPE_FLOAT64;
  const char* fn = op == KILN_LIR_OP_SQRT    ? (f64 ? "sqrt" : "sqrtf")
                   : op == KILN_LIR_OP_TRUNC ? (f64 ? "trunc" : "truncf")
                                             : nullptr;
  if (!fn || t.count != 1) unsupported("the CUDA dialect (no libdevice) has no math function for LIR op " + std::to_string(op));
  return std::string(fn) + "(" + a[0] + ")";
}

std::string CudaDialect::local_array(const std::string& name, const kiln_lir_type& ptr) const {
  return "__shared__ __attribute__((aligned(16))) " + CStyleRenderer::local_array(name, ptr);
}

std::string CudaDialect::special(std::string_view name) const {
  static const char xyz[] = "xyz";
  if (auto i = plugins::parse_launch_index(name)) return std::string(i->group ? "KILN_BID(" : "KILN_TID(") + xyz[i->dim] + ")";
  unsupported("CUDA has no launch index '" + std::string(name) + "' (gidx0..2, lidx0..2)");
}

std::string CudaDialect::kernel(std::string_view name, const std::vector<sdk::CParam>& params, const std::string& typedefs,
                                const std::string& body) const {
  std::vector<const sdk::CParam*> buffers, values;
  for (const sdk::CParam& p : params) (p.is_buffer ? buffers : values).push_back(&p);
  auto by_slot = [](const sdk::CParam* a, const sdk::CParam* b) { return a->slot < b->slot; };
  std::sort(buffers.begin(), buffers.end(), by_slot);
  std::sort(values.begin(), values.end(), by_slot);
  std::string s = std::string(kCudaPrelude) + typedefs;
  uint64_t threads = uint64_t{local_[0]} * local_[1] * local_[2];
  s += "extern \"C\" __global__ void ";
  if (threads) s += "__launch_bounds__(" + std::to_string(threads) + ") ";
  s += std::string(name) + "(";
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

sdk::LirOpSet cuda_ops() {
  using enum sdk::LirOp;
  return CudaDialect::generic_ops() | sdk::lir_ops::kWorkgroup | sdk::LirOpSet{SQRT, TRUNC};
}

void cuda_caps(uint64_t ops[2], uint32_t& dtypes) {
  ops[0] = cuda_ops().bits()[0], ops[1] = cuda_ops().bits()[1];
  // an allow-list: a dtype added to kiln/lir.h later is not claimed until it is listed here
  dtypes = (1u << KILN_LIR_DTYPE_VOID) | (1u << KILN_LIR_DTYPE_BOOL) | (1u << KILN_LIR_DTYPE_INT8) | (1u << KILN_LIR_DTYPE_INT16) |
           (1u << KILN_LIR_DTYPE_INT32) | (1u << KILN_LIR_DTYPE_INT64) | (1u << KILN_LIR_DTYPE_UINT8) | (1u << KILN_LIR_DTYPE_UINT16) |
           (1u << KILN_LIR_DTYPE_UINT32) | (1u << KILN_LIR_DTYPE_UINT64) | (1u << KILN_LIR_DTYPE_FLOAT32) |
           (1u << KILN_LIR_DTYPE_FLOAT64);  // (no float16, no bfloat16: see cuda_c.hpp)
}

}  // namespace kiln::cuda
