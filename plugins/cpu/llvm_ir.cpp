// plugins/cpu/llvm_ir.cpp - the LLVM IR renderer: one pass over the LIR, one statement per
// instruction (see llvm_ir.hpp for the shape of the module).
#include "llvm_ir.hpp"

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <vector>

#include "kiln/sdk.hpp"
#include "kiln/sdk/lir.hpp"

namespace kiln::cpu {
namespace {

using sdk::lir_is_float;
using sdk::lir_is_unsigned;
using sdk::lir_scalar_size;

constexpr int64_t kBufferAlignment = 64;  // the cpu allocator's guarantee (allocator.hpp)

[[noreturn]] void unsupported(const std::string& what) {
  throw sdk::Error{KILN_STATUS_UNIMPLEMENTED, "llvm renderer: " + what};
}

bool is_bool(uint8_t s) { return s == KILN_LIR_DTYPE_BOOL; }
bool is_signed_int(uint8_t s) { return !lir_is_float(s) && !lir_is_unsigned(s) && !is_bool(s); }

std::string scalar_ir(uint8_t s, bool in_memory = false) {
  switch (s) {
    case KILN_LIR_DTYPE_BOOL: return in_memory ? "i8" : "i1";
    case KILN_LIR_DTYPE_INT8: case KILN_LIR_DTYPE_UINT8: return "i8";
    case KILN_LIR_DTYPE_INT16: case KILN_LIR_DTYPE_UINT16: return "i16";
    case KILN_LIR_DTYPE_INT32: case KILN_LIR_DTYPE_UINT32: return "i32";
    case KILN_LIR_DTYPE_INT64: case KILN_LIR_DTYPE_UINT64: return "i64";
    case KILN_LIR_DTYPE_FLOAT32: return "float";
    case KILN_LIR_DTYPE_FLOAT64: return "double";
    // only loaded, stored, converted and stored as constants (the target's storage_dtypes): the core
    // computes in float
    case KILN_LIR_DTYPE_FLOAT16: return "half";
    default: unsupported("no LLVM type for LIR dtype " + std::to_string(s) + " (the cpu target does not list it)");
  }
}

std::string vec_ir(uint8_t s, int count, bool in_memory = false) {
  std::string e = scalar_ir(s, in_memory);
  return count == 1 ? e : "<" + std::to_string(count) + " x " + e + ">";
}
std::string type_ir(const kiln_lir_type& t, bool in_memory = false) { return vec_ir(t.scalar, t.count, in_memory); }

// LLVM wants float constants as the hex of a double that is exact in the constant's type.
std::string float_literal(uint8_t s, double v) {
  if (s == KILN_LIR_DTYPE_FLOAT32) v = static_cast<double>(static_cast<float>(v));
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016" PRIX64, bits);
  return buf;
}

std::string int_literal(uint8_t s, int64_t v) {
  switch (lir_scalar_size(s)) {  // the value as the signed integer of the type's width
    case 1: return std::to_string(static_cast<int8_t>(v));
    case 2: return std::to_string(static_cast<int16_t>(v));
    case 4: return std::to_string(static_cast<int32_t>(v));
    default: return std::to_string(v);
  }
}

// Intrinsic name suffix: f32, v16f32, i64, v8i32 ...
std::string mangle(const kiln_lir_type& t) {
  std::string e = lir_is_float(t.scalar) ? "f" + std::to_string(8 * lir_scalar_size(t.scalar))
                                         : "i" + std::to_string(is_bool(t.scalar) ? 1 : 8 * lir_scalar_size(t.scalar));
  return t.count == 1 ? e : "v" + std::to_string(t.count) + e;
}

// The largest power of two dividing v (v > 0), capped at 2^20; 2^20 for 0.
int64_t pow2_factor(int64_t v) {
  if (v == 0) return int64_t{1} << 20;
  v = v < 0 ? -v : v;
  return std::min<int64_t>(v & -v, int64_t{1} << 20);
}

class Renderer {
 public:
  Renderer(const kiln_lir& lir, const LlvmRenderOptions& options)
      : l_(lir), opt_(options), val_(lir.n_insts), elem_(lir.n_insts), pow2_(lir.n_insts, 1), align_(lir.n_insts, 0),
        big_(lir.n_insts, false), read_(lir.n_insts, false) {}

  std::string render() {
    cur_ = "entry";
    // buffers the kernel also reads (a blocked reduce adds into its output): their stores stay in
    // the caches, or each block's store and reload would go through memory
    for (uint32_t i = 0; i < l_.size(); ++i)
      if (l_[i].op == KILN_LIR_OP_LOAD && l_[src(i, 0)].op == KILN_LIR_OP_INDEX) read_[src(src(i, 0), 0)] = true;
    for (uint32_t i = 0; i < l_.size(); ++i) emit(i);
    if (!open_.empty()) throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "llvm renderer: unbalanced RANGE/END or IF/ENDIF"};
    return module();
  }

 private:
  const kiln_lir_type& T(uint32_t i) const { return l_[i].type; }
  uint32_t src(uint32_t i, uint32_t k) const { return l_.src(i, k); }
  const std::string& V(uint32_t i, uint32_t k) const { return val_[src(i, k)]; }
  std::string TV(uint32_t i, uint32_t k) const { return type_ir(T(src(i, k))) + " " + V(i, k); }

  void line(const std::string& s) { body_ << "  " + s + "\n"; }
  void label(const std::string& name) {
    body_ << name << ":\n";
    cur_ = name;
  }
  std::string tmp() { return "%t" + std::to_string(tmp_++); }
  // Defines instruction i's value with `rhs` ("add i32 %a, %b").
  void def(uint32_t i, const std::string& rhs) {
    val_[i] = "%v" + std::to_string(i);
    line(val_[i] + " = " + rhs);
  }

  std::string zero(const kiln_lir_type& t) const {
    if (t.count > 1) return "zeroinitializer";
    if (lir_is_float(t.scalar)) return float_literal(t.scalar, 0.0);
    return is_bool(t.scalar) ? "false" : "0";
  }

  std::string constant(uint32_t i) const {
    const kiln_lir_inst& in = l_[i];
    uint8_t s = in.type.scalar;
    std::string lit;
    double f = in.arg_kind == KILN_LIR_ARG_FLOAT ? l_.f64(i) : static_cast<double>(in.arg);
    if (is_bool(s)) lit = (in.arg_kind == KILN_LIR_ARG_FLOAT ? f != 0 : in.arg != 0) ? "true" : "false";
    else if (lir_is_float(s)) lit = float_literal(s, f);
    else lit = int_literal(s, in.arg_kind == KILN_LIR_ARG_FLOAT ? static_cast<int64_t>(f) : in.arg);
    if (in.type.count == 1) return lit;
    if (lit == zero({s, 0, 1, 0})) return "zeroinitializer";
    std::string v = "<";
    for (int k = 0; k < in.type.count; ++k) v += (k ? ", " : "") + scalar_ir(s) + " " + lit;
    return v + ">";
  }

  // A value converted between LIR types (C semantics).
  std::string convert(const std::string& x, const kiln_lir_type& from, const kiln_lir_type& to) {
    std::string ft = type_ir(from), tt = type_ir(to);
    uint8_t fs = from.scalar, ts = to.scalar;
    auto emit_conv = [&](const char* op) {
      std::string t = tmp();
      line(t + " = " + op + " " + ft + " " + x + " to " + tt);
      return t;
    };
    auto emit_cmp = [&](const std::string& cmp) {
      std::string t = tmp();
      line(t + " = " + cmp + " " + ft + " " + x + ", " + zero(from));
      return t;
    };
    if (ts == fs || ft == tt) return x;
    if (is_bool(ts)) return emit_cmp(lir_is_float(fs) ? "fcmp une" : "icmp ne");
    if (is_bool(fs)) return emit_conv(lir_is_float(ts) ? "uitofp" : "zext");
    bool ff = lir_is_float(fs), tf = lir_is_float(ts);
    int fw = lir_scalar_size(fs), tw = lir_scalar_size(ts);
    if (!ff && !tf) return emit_conv(fw < tw ? (lir_is_unsigned(fs) ? "zext" : "sext") : "trunc");
    if (!ff && tf) return emit_conv(lir_is_unsigned(fs) ? "uitofp" : "sitofp");
    if (ff && !tf) return emit_conv(lir_is_unsigned(ts) ? "fptoui" : "fptosi");
    if (fs == KILN_LIR_DTYPE_FLOAT16) {
      // A widened half stays float behind an arithmetic fence (no code): InstCombine otherwise
      // narrows fcmp/fadd/select of fpext'ed halves back to half, which the backend without
      // AVX512-FP16 scalarizes (a float16 relu took 200 instructions per 16 lanes, 30x slower).
      std::string wide = emit_conv("fpext"), t = tmp();
      need_intrinsic("declare " + tt + " @llvm.arithmetic.fence." + mangle(to) + "(" + tt + ")");
      line(t + " = call " + tt + " @llvm.arithmetic.fence." + mangle(to) + "(" + tt + " " + wide + ")");
      return t;
    }
    return emit_conv(fw < tw ? "fpext" : "fptrunc");
  }

  // Loads of bools read bytes; stores of bools write bytes.
  std::string from_memory(const std::string& x, const kiln_lir_type& t) {
    if (!is_bool(t.scalar)) return x;
    std::string c = tmp();
    line(c + " = icmp ne " + type_ir(t, true) + " " + x + ", " + (t.count > 1 ? "zeroinitializer" : "0"));
    return c;
  }
  std::string to_memory(const std::string& x, const kiln_lir_type& t) {
    if (!is_bool(t.scalar)) return x;
    std::string z = tmp();
    line(z + " = zext " + type_ir(t) + " " + x + " to " + type_ir(t, true));
    return z;
  }

  // The alignment of an access through the address instruction `a`: what is known of the
  // address, at least the element size, at most the access size (rounded down to a power of two:
  // a 7-column store of a convolution's tile is 28 bytes).
  int64_t access_align(uint32_t a, const kiln_lir_type& t) const {
    int64_t size = lir_scalar_size(t.scalar), bytes = size * t.count;
    return std::max(size, std::min(align_[a], static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(bytes)))));
  }
  std::string load_text(uint32_t a, const kiln_lir_type& t) const {
    return "load " + type_ir(t, true) + ", ptr " + val_[a] + ", align " + std::to_string(access_align(a, t));
  }

  // Whether every lane of access i's per-lane gate is on (an i1 value).
  std::string all_lanes_on(uint32_t i) {
    const kiln_lir_type& gate = T(src(i, 2));
    need_intrinsic("declare i1 @llvm.vector.reduce.and." + mangle(gate) + "(" + type_ir(gate) + ")");
    std::string all = tmp();
    line(all + " = call i1 @llvm.vector.reduce.and." + mangle(gate) + "(" + TV(i, 2) + ")");
    return all;
  }

  void emit_load(uint32_t i) {
    const kiln_lir_type& t = T(i);
    const std::string& addr = V(i, 0);
    if (l_[i].n_src != 3) {
      std::string raw = tmp();
      line(raw + " = " + load_text(src(i, 0), t));
      std::string v = from_memory(raw, t);
      val_[i] = v;
      return;
    }
    const kiln_lir_type& gate = T(src(i, 2));
    if (gate.count > 1) {  // per-lane gate: a masked load reads only the enabled lanes
      // bools are bytes in memory: load bytes (the disabled lanes take the alternative, widened)
      kiln_lir_type m = t;
      if (is_bool(t.scalar)) m.scalar = KILN_LIR_DTYPE_UINT8;
      need_intrinsic("declare " + type_ir(m) + " @llvm.masked.load." + mangle(m) + ".p0(ptr, i32, " + type_ir(gate) + ", " +
                     type_ir(m) + ")");
      std::string raw = tmp();
      line(raw + " = call " + type_ir(m) + " @llvm.masked.load." + mangle(m) + ".p0(ptr " + addr + ", i32 " +
           std::to_string(lir_scalar_size(t.scalar)) + ", " + TV(i, 2) + ", " + type_ir(m) + " " + to_memory(V(i, 1), t) + ")");
      val_[i] = from_memory(raw, t);
      return;
    }
    std::string id = std::to_string(i), from = cur_;
    line("br i1 " + V(i, 2) + ", label %ld" + id + ", label %ld" + id + "_join");
    label("ld" + id);
    std::string raw = tmp();
    line(raw + " = " + load_text(src(i, 0), t));
    std::string v = from_memory(raw, t);
    std::string loaded_in = cur_;
    line("br label %ld" + id + "_join");
    label("ld" + id + "_join");
    def(i, "phi " + type_ir(t) + " [ " + v + ", %" + loaded_in + " ], [ " + V(i, 1) + ", %" + from + " ]");
  }

  void emit_store(uint32_t i) {
    const kiln_lir_type& t = T(src(i, 1));
    std::string value = to_memory(V(i, 1), t);
    uint32_t a = src(i, 0);
    int64_t align = access_align(a, t), bytes = lir_scalar_size(t.scalar) * t.count;
    std::string st = "store " + type_ir(t, true) + " " + value + ", ptr " + V(i, 0) + ", align " + std::to_string(align);
    // whole aligned cache lines into a buffer larger than the caches: write around them
    if (l_[i].n_src != 3 && big_[a] && bytes == 64 && align == 64) {
      uses_nontemporal_ = true;
      return line(st + ", !nontemporal !0");
    }
    if (l_[i].n_src != 3) return line(st);
    const kiln_lir_type& gate = T(src(i, 2));
    if (gate.count > 1) {
      kiln_lir_type m = t;  // bools are stored as bytes
      if (is_bool(t.scalar)) m.scalar = KILN_LIR_DTYPE_UINT8;
      need_intrinsic("declare void @llvm.masked.store." + mangle(m) + ".p0(" + type_ir(t, true) + ", ptr, i32, " +
                     type_ir(gate) + ")");
      // A padded axis masks only its last vector, and AMD's masked store is microcode (a 1023-wide
      // softmax took 2.8x the 1024-wide one): a store whose lanes are all on is a plain one. (The
      // same branch for masked loads measured mixed: a streaming row sum 2x faster, a column sum
      // and a layernorm 1.4-2x slower; loads stay one masked access.)
      std::string id = std::to_string(i);
      line("br i1 " + all_lanes_on(i) + ", label %st" + id + "_full, label %st" + id + "_part");
      label("st" + id + "_full");
      line(st);
      line("br label %st" + id + "_join");
      label("st" + id + "_part");
      line("call void @llvm.masked.store." + mangle(m) + ".p0(" + type_ir(t, true) + " " + value + ", ptr " + V(i, 0) +
           ", i32 " + std::to_string(lir_scalar_size(t.scalar)) + ", " + TV(i, 2) + ")");
      line("br label %st" + id + "_join");
      return label("st" + id + "_join");
    }
    std::string id = std::to_string(i);
    line("br i1 " + V(i, 2) + ", label %st" + id + ", label %st" + id + "_join");
    label("st" + id);
    line(st);
    line("br label %st" + id + "_join");
    label("st" + id + "_join");
  }

  void emit_vectorize(uint32_t i) {
    const kiln_lir_inst& in = l_[i];
    std::string vt = type_ir(in.type), st = scalar_ir(in.type.scalar);
    bool splat = true;
    for (uint32_t k = 1; k < in.n_src; ++k) splat &= src(i, k) == src(i, 0);
    if (splat) {
      std::string t = tmp();
      line(t + " = insertelement " + vt + " poison, " + st + " " + V(i, 0) + ", i32 0");
      def(i, "shufflevector " + vt + " " + t + ", " + vt + " poison, <" + std::to_string(in.n_src) + " x i32> zeroinitializer");
      return;
    }
    std::string acc = "poison";
    for (uint32_t k = 0; k < in.n_src; ++k) {
      std::string t = k + 1 == in.n_src ? "%v" + std::to_string(i) : tmp();
      line(t + " = insertelement " + vt + " " + acc + ", " + st + " " + V(i, k) + ", i32 " + std::to_string(k));
      acc = t;
    }
    val_[i] = acc;
  }

  void emit_gep(uint32_t i) {
    auto lanes = l_.ints(i);
    const kiln_lir_type& from = T(src(i, 0));
    if (lanes.size() == 1) return def(i, "extractelement " + TV(i, 0) + ", i32 " + std::to_string(lanes[0]));
    std::string mask = "<";
    for (size_t k = 0; k < lanes.size(); ++k) mask += (k ? ", i32 " : "i32 ") + std::to_string(lanes[k]);
    def(i, "shufflevector " + TV(i, 0) + ", " + type_ir(from) + " poison, <" + std::to_string(lanes.size()) + " x i32> " + mask + ">");
  }

  void emit_binary(uint32_t i) {
    const kiln_lir_inst& in = l_[i];
    uint8_t s = in.type.scalar;
    bool f = lir_is_float(s), sgn = is_signed_int(s);
    // int8/int16 are user data that wraps (kiln's semantics): without nsw, LLVM may not widen
    // (sext (add nsw i8 100, 100)) into 200. 32/64-bit adds keep nsw: index math needs it to vectorize.
    bool nsw = sgn && lir_scalar_size(s) >= 4;
    const char* op = nullptr;
    switch (in.op) {
      case KILN_LIR_OP_ADD: op = f ? "fadd" : nsw ? "add nsw" : "add"; break;
      case KILN_LIR_OP_SUB: op = f ? "fsub" : nsw ? "sub nsw" : "sub"; break;
      case KILN_LIR_OP_MUL: op = f ? "fmul" : nsw ? "mul nsw" : "mul"; break;
      case KILN_LIR_OP_IDIV: op = lir_is_unsigned(s) ? "udiv" : "sdiv"; break;
      case KILN_LIR_OP_MOD: op = lir_is_unsigned(s) ? "urem" : "srem"; break;
      case KILN_LIR_OP_FDIV: op = "fdiv"; break;
      case KILN_LIR_OP_SHL: op = "shl"; break;
      case KILN_LIR_OP_SHR: op = sgn ? "ashr" : "lshr"; break;
      case KILN_LIR_OP_AND: op = "and"; break;
      case KILN_LIR_OP_OR: op = "or"; break;
      case KILN_LIR_OP_XOR: op = "xor"; break;
      default: unsupported("LIR op " + std::to_string(in.op) + " (not advertised by the cpu target)");
    }
    def(i, std::string(op) + " " + TV(i, 0) + ", " + V(i, 1));
    int64_t a = pow2_[src(i, 0)], b = pow2_[src(i, 1)], cap = int64_t{1} << 20;
    if (in.op == KILN_LIR_OP_MUL) pow2_[i] = std::min(a * b, cap);
    if (in.op == KILN_LIR_OP_ADD || in.op == KILN_LIR_OP_SUB) pow2_[i] = std::min(a, b);
    if (in.op == KILN_LIR_OP_SHL && l_[src(i, 1)].op == KILN_LIR_OP_CONST && l_[src(i, 1)].arg < 20)
      pow2_[i] = std::min(a << l_[src(i, 1)].arg, cap);
  }

  void emit_compare(uint32_t i) {
    const kiln_lir_inst& in = l_[i];
    uint8_t s = T(src(i, 0)).scalar;
    bool f = lir_is_float(s), u = lir_is_unsigned(s) || is_bool(s);
    const char* op = in.op == KILN_LIR_OP_CMPLT ? (f ? "fcmp olt" : u ? "icmp ult" : "icmp slt")
                     : in.op == KILN_LIR_OP_CMPNE ? (f ? "fcmp une" : "icmp ne")
                                                  : (f ? "fcmp oeq" : "icmp eq");
    def(i, std::string(op) + " " + TV(i, 0) + ", " + V(i, 1));
  }

  // NaN-propagating for floats, as in C: (a > b || a != a) ? a : b.
  void emit_max(uint32_t i) {
    const kiln_lir_type& t = T(i);
    std::string c = tmp();
    if (lir_is_float(t.scalar)) {
      std::string gt = tmp(), nan = tmp();
      line(gt + " = fcmp ogt " + TV(i, 0) + ", " + V(i, 1));
      line(nan + " = fcmp uno " + TV(i, 0) + ", " + V(i, 0));
      line(c + " = or " + vec_ir(KILN_LIR_DTYPE_BOOL, t.count) + " " + gt + ", " + nan);
    } else {
      line(c + " = icmp " + (lir_is_unsigned(t.scalar) || is_bool(t.scalar) ? "ugt " : "sgt ") + TV(i, 0) + ", " + V(i, 1));
    }
    def(i, "select " + vec_ir(KILN_LIR_DTYPE_BOOL, t.count) + " " + c + ", " + TV(i, 0) + ", " + TV(i, 1));
  }

  // DOT2, advertised with AVX512-BF16 (llvm_ir_ops): vdpbf16ps on 16 (zmm) or 8 (ymm, AVX512-VL)
  // float32 lanes; its bfloat16 pairs are the 32-bit lanes of the uint16 vectors. The
  // instruction's product order (the odd pair first) and its flush of subnormals are the LIR's
  // allowance (kiln/lir.h).
  void emit_dot2(uint32_t i) {
    const kiln_lir_type& t = T(i);
    if (t.scalar != KILN_LIR_DTYPE_FLOAT32 || (t.count != 16 && t.count != 8))
      unsupported("DOT2 of " + type_ir(t) + " (vdpbf16ps makes 8 or 16 float32 lanes)");
    const std::string n = std::to_string(t.count), pairs = "<" + n + " x i32>", acc = type_ir(t);
    const std::string fn = "@llvm.x86.avx512bf16.dpbf16ps." + std::to_string(t.count * 32);
    need_intrinsic("declare " + acc + " " + fn + "(" + acc + ", " + pairs + ", " + pairs + ")");
    std::string a = tmp(), b = tmp();
    line(a + " = bitcast " + TV(i, 0) + " to " + pairs);
    line(b + " = bitcast " + TV(i, 1) + " to " + pairs);
    def(i, "call " + acc + " " + fn + "(" + TV(i, 2) + ", " + pairs + " " + a + ", " + pairs + " " + b + ")");
  }

  void emit_math(uint32_t i, const char* name) {
    const kiln_lir_type& t = T(i);
    std::string fn = std::string("@llvm.") + name + "." + mangle(t);
    need_intrinsic("declare " + type_ir(t) + " " + fn + "(" + type_ir(t) + ")");
    def(i, "call " + type_ir(t) + " " + fn + "(" + TV(i, 0) + ")");
  }

  // EXP2, advertised with AVX-512 (llvm_ir_ops): x clamped to hi (NaN kept), n = roundeven(x),
  // 2^f for f = x - n in [-1/2, 1/2] by a polynomial in f, times 2^n by vscalef, which rounds
  // into the subnormal range, overflows to inf at hi and keeps NaN by itself: 13 vector ops for
  // float32 where the core's portable form (codegen/transcendental.cpp) takes 25. Below lo the
  // result is 0, selected: those lanes scale by 2^0, because a vscalef that underflows takes a
  // microcode assist (~100x the op; a masked attention's exp(-inf) was 20x slower than exp(0)).
  // float32: the minimax polynomial of degree 6 for 2^f (relative error 1.9e-9 on [-1/2, 1/2],
  // below float32's rounding; fitted by iteratively reweighted least squares on the relative
  // error); float64: the Taylor series of e^(f ln2) to degree 13, its coefficients ln2^k / k!.
  // Any width is computed in one 512-bit register.
  void emit_exp2(uint32_t i) {
    const kiln_lir_type& t = T(i);
    const bool dbl = t.scalar == KILN_LIR_DTYPE_FLOAT64;
    if (!dbl && t.scalar != KILN_LIR_DTYPE_FLOAT32) unsupported("EXP2 of a type other than float32 and float64");
    const int w = dbl ? 8 : 16;
    if (t.count > w) unsupported("EXP2 wider than a 512-bit register");
    kiln_lir_type wt = t;
    wt.count = static_cast<uint16_t>(w);
    const std::string ty = type_ir(wt), s = scalar_ir(t.scalar), mask_ty = "<" + std::to_string(w) + " x i32>";
    auto splat = [&](double v) {
      std::string r = "<";
      for (int k = 0; k < w; ++k) r += (k ? ", " : "") + s + " " + float_literal(t.scalar, v);
      return r + ">";
    };
    auto lanes = [&](int n) {
      std::string r = "<";
      for (int k = 0; k < w; ++k) r += (k ? ", i32 " : "i32 ") + (k < n ? std::to_string(k) : std::string("undef"));
      return r + ">";
    };
    std::string x = V(i, 0);
    if (t.count == 1) {
      x = tmp();
      line(x + " = insertelement " + ty + " poison, " + TV(i, 0) + ", i32 0");
    } else if (t.count < w) {
      x = tmp();
      line(x + " = shufflevector " + TV(i, 0) + ", " + type_ir(t) + " poison, " + mask_ty + " " + lanes(t.count));
    }
    const double lo = dbl ? -1075 : -150, hi = dbl ? 1024 : 128;
    std::string below = tmp(), x1 = tmp(), above = tmp(), xc = tmp(), n = tmp(), f = tmp();
    line(below + " = fcmp olt " + ty + " " + x + ", " + splat(lo));
    line(x1 + " = select <" + std::to_string(w) + " x i1> " + below + ", " + ty + " " + splat(0) + ", " + ty + " " + x);
    line(above + " = fcmp olt " + ty + " " + splat(hi) + ", " + x1);
    line(xc + " = select <" + std::to_string(w) + " x i1> " + above + ", " + ty + " " + splat(hi) + ", " + ty + " " + x1);
    const std::string round = "@llvm.roundeven." + mangle(wt), fma = "@llvm.fmuladd." + mangle(wt);
    need_intrinsic("declare " + ty + " " + round + "(" + ty + ")");
    need_intrinsic("declare " + ty + " " + fma + "(" + ty + ", " + ty + ", " + ty + ")");
    line(n + " = call " + ty + " " + round + "(" + ty + " " + xc + ")");
    line(f + " = fsub " + ty + " " + xc + ", " + n);
    std::vector<double> coef{1.0};
    if (dbl)
      for (int k = 1; k <= 13; ++k) coef.push_back(coef.back() * M_LN2 / k);
    else
      coef = {1.0, 0.69314720573726685, 0.24022646890630392, 0.055503287769671936, 0.0096184889574941288,
              0.0013399931218457388, 0.0001534581189887663};
    const int degree = static_cast<int>(coef.size()) - 1;
    std::string p = splat(coef[degree]);
    for (int k = degree - 1; k >= 0; --k) {
      std::string q = tmp();
      line(q + " = call " + ty + " " + fma + "(" + ty + " " + p + ", " + ty + " " + f + ", " + ty + " " + splat(coef[k]) + ")");
      p = q;
    }
    const std::string scalef = dbl ? "@llvm.x86.avx512.mask.scalef.pd.512" : "@llvm.x86.avx512.mask.scalef.ps.512";
    const std::string mask = dbl ? "i8" : "i16";
    need_intrinsic("declare " + ty + " " + scalef + "(" + ty + ", " + ty + ", " + ty + ", " + mask + ", i32)");
    std::string r = tmp();
    line(r + " = call " + ty + " " + scalef + "(" + ty + " " + p + ", " + ty + " " + n + ", " + ty + " zeroinitializer, " + mask + " -1, i32 4)");
    std::string scaled = r;
    r = tmp();
    line(r + " = select <" + std::to_string(w) + " x i1> " + below + ", " + ty + " zeroinitializer, " + ty + " " + scaled);
    if (t.count == 1) return def(i, "extractelement " + ty + " " + r + ", i32 0");
    if (t.count < w) {
      std::string keep = "<";
      for (int k = 0; k < t.count; ++k) keep += (k ? ", i32 " : "i32 ") + std::to_string(k);
      return def(i, "shufflevector " + ty + " " + r + ", " + ty + " poison, <" + std::to_string(t.count) + " x i32> " + keep + ">");
    }
    val_[i] = r;
  }

  void emit(uint32_t i) {
    const kiln_lir_inst& in = l_[i];
    const kiln_lir_type& t = in.type;
    if (!sdk::lir_op_known(in.op)) unsupported("LIR op " + std::to_string(in.op) + " (newer than this renderer)");
    switch (static_cast<sdk::LirOp>(in.op)) {
      case sdk::LirOp::PARAM:
        val_[i] = "%data" + std::to_string(in.arg);
        elem_[i] = scalar_ir(t.scalar, true);
        align_[i] = kBufferAlignment;
        big_[i] = t.size > 0 && static_cast<uint64_t>(t.size) * lir_scalar_size(t.scalar) >= opt_.streaming_store_bytes && !read_[i];
        break;
      case sdk::LirOp::VAR: {
        std::string v = "%var" + std::to_string(n_vars_seen_++);
        if (t.scalar == KILN_LIR_DTYPE_INT64 || t.scalar == KILN_LIR_DTYPE_UINT64) val_[i] = v;
        else def(i, "trunc i64 " + v + " to " + type_ir(t));
        break;
      }
      case sdk::LirOp::SPECIAL: {
        std::string_view name = l_.str(i);
        if (name != "gidx0" && name != "gidx1" && name != "gidx2")
          unsupported("the cpu has no launch index '" + std::string(name) + "' (only gidx0..2)");
        std::string g = "%" + std::string(name);
        if (lir_scalar_size(t.scalar) == 4) val_[i] = g;
        else def(i, "sext i32 " + g + " to " + type_ir(t));
        break;
      }
      case sdk::LirOp::CONST:
        val_[i] = constant(i);
        if (in.arg_kind == KILN_LIR_ARG_INT && t.count == 1) pow2_[i] = pow2_factor(in.arg);
        break;
      case sdk::LirOp::RANGE: {
        std::string id = std::to_string(i), it = type_ir(t), from = cur_;
        line("br label %r" + id);
        label("r" + id);
        val_[i] = "%v" + id;
        line(val_[i] + " = phi " + it + " [ 0, %" + from + " ], [ %v" + id + "_next, %r" + id + "_latch ]");
        line("%v" + id + "_go = icmp slt " + it + " " + val_[i] + ", " + V(i, 0));
        line("br i1 %v" + id + "_go, label %r" + id + "_body, label %r" + id + "_exit");
        label("r" + id + "_body");
        open_.push_back(i);
        break;
      }
      case sdk::LirOp::END: {
        uint32_t r = src(i, 0);
        close(r, KILN_LIR_OP_RANGE);
        std::string id = std::to_string(r), it = type_ir(T(r));
        line("br label %r" + id + "_latch");
        label("r" + id + "_latch");
        line("%v" + id + "_next = add nsw " + it + " %v" + id + ", 1");
        line("br label %r" + id);
        label("r" + id + "_exit");
        break;
      }
      case sdk::LirOp::IF: {
        std::string id = std::to_string(i);
        line("br i1 " + V(i, 0) + ", label %if" + id + ", label %if" + id + "_end");
        label("if" + id);
        open_.push_back(i);
        break;
      }
      case sdk::LirOp::ENDIF: {
        uint32_t f = src(i, 0);
        close(f, KILN_LIR_OP_IF);
        line("br label %if" + std::to_string(f) + "_end");
        label("if" + std::to_string(f) + "_end");
        break;
      }
      case sdk::LirOp::DEFINE_REG: {
        val_[i] = "%acc" + std::to_string(in.arg) + "_" + std::to_string(i);
        elem_[i] = vec_ir(t.scalar, t.count, true);
        allocas_ += "  " + val_[i] + " = alloca " + elem_[i] + ", i32 " + std::to_string(t.size < 1 ? 1 : t.size) + ", align 64\n";
        align_[i] = 64;
        break;
      }
      case sdk::LirOp::INDEX: {
        uint32_t base = src(i, 0);
        elem_[i] = elem_[base];
        if (elem_[i].empty()) throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "llvm renderer: INDEX of a non-pointer"};
        // x + C: the address of x, then C elements on (LLVM folds that into the addressing mode).
        // As one 32-bit sum, every such address paid its own add and sign extension in the loop
        // (a convolution's eight weight rows: 16 extra instructions per k step). Not inbounds: x's
        // address alone may lie outside the buffer.
        if (uint32_t x = src(i, 1); T(x).count == 1 && l_[x].op == KILN_LIR_OP_ADD && l_[src(x, 1)].op == KILN_LIR_OP_CONST) {
          std::string part = tmp();
          line(part + " = getelementptr " + elem_[i] + ", ptr " + val_[base] + ", " + TV(x, 0));
          def(i, "getelementptr " + elem_[i] + ", ptr " + part + ", " + TV(x, 1));
        } else {
          def(i, "getelementptr inbounds " + elem_[i] + ", ptr " + val_[base] + ", " + TV(i, 1));
        }
        int64_t elem_bytes = l_[base].op == KILN_LIR_OP_DEFINE_REG ? lir_scalar_size(T(base).scalar) * T(base).count
                                                                  : lir_scalar_size(T(base).scalar);
        align_[i] = std::min(align_[base], pow2_factor(elem_bytes * pow2_[src(i, 1)]));
        big_[i] = big_[base];
        break;
      }
      case sdk::LirOp::LOAD: emit_load(i); break;
      case sdk::LirOp::STORE: emit_store(i); break;
      case sdk::LirOp::PREFETCH:  // read, keep in all cache levels, data
        need_intrinsic("declare void @llvm.prefetch.p0(ptr, i32, i32, i32)");
        line("call void @llvm.prefetch.p0(ptr " + V(i, 0) + ", i32 0, i32 3, i32 1)");
        break;
      case sdk::LirOp::DOT2: emit_dot2(i); break;
      case sdk::LirOp::VECTORIZE: emit_vectorize(i); break;
      case sdk::LirOp::GEP: emit_gep(i); break;
      case sdk::LirOp::CAST: val_[i] = convert(V(i, 0), T(src(i, 0)), t); break;
      case sdk::LirOp::BITCAST: def(i, "bitcast " + TV(i, 0) + " to " + type_ir(t)); break;
      case sdk::LirOp::NEG:
        if (lir_is_float(t.scalar)) def(i, "fneg " + TV(i, 0));
        else def(i, "sub " + type_ir(t) + " " + zero(t) + ", " + V(i, 0));
        break;
      case sdk::LirOp::RECIPROCAL: {
        std::string lit = float_literal(t.scalar, 1.0), c = lit;
        if (t.count > 1) {
          c = "<";
          for (int k = 0; k < t.count; ++k) c += (k ? ", " : "") + scalar_ir(t.scalar) + " " + lit;
          c += ">";
        }
        def(i, "fdiv " + type_ir(t) + " " + c + ", " + V(i, 0));
        break;
      }
      case sdk::LirOp::SQRT: emit_math(i, "sqrt"); break;
      case sdk::LirOp::TRUNC: emit_math(i, "trunc"); break;
      case sdk::LirOp::CMPLT: case sdk::LirOp::CMPNE: case sdk::LirOp::CMPEQ: emit_compare(i); break;
      case sdk::LirOp::MAX: emit_max(i); break;
      case sdk::LirOp::WHERE: def(i, "select " + TV(i, 0) + ", " + TV(i, 1) + ", " + TV(i, 2)); break;
      case sdk::LirOp::MULACC:
        if (lir_is_float(t.scalar)) {
          std::string fn = "@llvm.fmuladd." + mangle(t), ty = type_ir(t);
          need_intrinsic("declare " + ty + " " + fn + "(" + ty + ", " + ty + ", " + ty + ")");
          def(i, "call " + ty + " " + fn + "(" + TV(i, 0) + ", " + TV(i, 1) + ", " + TV(i, 2) + ")");
        } else {
          std::string m = tmp();
          line(m + " = mul " + TV(i, 0) + ", " + V(i, 1));
          def(i, "add " + type_ir(t) + " " + m + ", " + V(i, 2));
        }
        break;
      case sdk::LirOp::ADD: case sdk::LirOp::SUB: case sdk::LirOp::MUL: case sdk::LirOp::IDIV: case sdk::LirOp::MOD:
      case sdk::LirOp::FDIV: case sdk::LirOp::SHL: case sdk::LirOp::SHR: case sdk::LirOp::AND: case sdk::LirOp::OR:
      case sdk::LirOp::XOR:
        emit_binary(i);
        break;
      case sdk::LirOp::EXP2: emit_exp2(i); break;
      // not in llvm_ir_ops(): the core decomposes these transcendentals; the cpu has no workgroups
      case sdk::LirOp::LOG2: case sdk::LirOp::SIN: case sdk::LirOp::POW:
      case sdk::LirOp::BARRIER: case sdk::LirOp::DEFINE_LOCAL: case sdk::LirOp::CUSTOM: case sdk::LirOp::CUSTOMI:
        unsupported(std::string("LIR op ") + sdk::lir_op_name(in.op) + " (not advertised by the cpu target)");
    }
  }

  void close(uint32_t opener, uint16_t op) {
    if (open_.empty() || open_.back() != opener || l_[opener].op != op)
      throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "llvm renderer: END/ENDIF does not close the innermost RANGE/IF"};
    open_.pop_back();
  }

  void need_intrinsic(const std::string& decl) {
    for (const std::string& d : declares_)
      if (d == decl) return;
    declares_.push_back(decl);
  }

  std::string module() const {
    const kiln_lir& raw = l_.raw();
    std::string name(l_.name());
    std::ostringstream m;
    m << "; kiln kernel " << name << "\n";
    m << "@kiln_nargs_" << name << " = constant [2 x i32] [i32 " << raw.n_buffers << ", i32 " << raw.n_vars << "]\n\n";
    std::string params;
    for (uint32_t b = 0; b < raw.n_buffers; ++b) params += "ptr noalias %data" + std::to_string(b) + ", ";
    for (uint32_t v = 0; v < raw.n_vars; ++v) params += "i64 %var" + std::to_string(v) + ", ";
    m << "define internal void @" << name << "_body(" << params << "i32 %gidx0, i32 %gidx1, i32 %gidx2) #0 {\n";
    m << "entry:\n" << allocas_ << body_.str() << "  ret void\n}\n\n";
    m << "define void @" << name << "(ptr %bufs, ptr %vals, i32 %gidx0, i32 %gidx1, i32 %gidx2) #1 {\nentry:\n";
    std::string args;
    for (uint32_t b = 0; b < raw.n_buffers; ++b) {
      m << "  %p" << b << " = getelementptr inbounds ptr, ptr %bufs, i64 " << b << "\n";
      m << "  %b" << b << " = load ptr, ptr %p" << b << ", align 8\n";
      args += "ptr %b" + std::to_string(b) + ", ";
    }
    for (uint32_t v = 0; v < raw.n_vars; ++v) {
      m << "  %q" << v << " = getelementptr inbounds i64, ptr %vals, i64 " << v << "\n";
      m << "  %x" << v << " = load i64, ptr %q" << v << ", align 8\n";
      args += "i64 %x" + std::to_string(v) + ", ";
    }
    m << "  call void @" << name << "_body(" << args << "i32 %gidx0, i32 %gidx1, i32 %gidx2)\n  ret void\n}\n\n";
    for (const std::string& d : declares_) m << d << "\n";
    // A STAGE buffer lives on the stack of whichever thread runs the kernel (a caller's thread may
    // have a small stack): probing it page by page turns an overflow into a fault at the guard
    // page instead of writes past it.
    m << "\nattributes #0 = { alwaysinline nounwind \"probe-stack\"=\"inline-asm\" }\n"
         "attributes #1 = { nounwind \"probe-stack\"=\"inline-asm\" }\n";
    if (uses_nontemporal_) m << "!0 = !{i32 1}\n";
    return m.str();
  }

  sdk::LirView l_;
  LlvmRenderOptions opt_;
  std::vector<std::string> val_;   // operand text of each instruction's value
  std::vector<std::string> elem_;  // pointers: the element type in memory
  // Integers: a power of two the value is known to be a multiple of. Pointers: the alignment in
  // bytes they are known to have, and whether they point into a buffer of at least
  // opt_.streaming_store_bytes (stores there bypass the caches).
  std::vector<int64_t> pow2_, align_;
  std::vector<bool> big_;
  std::vector<bool> read_;  // PARAMs some LOAD reads through an INDEX
  bool uses_nontemporal_ = false;
  std::vector<uint32_t> open_;     // RANGE/IF instructions not yet closed
  std::vector<std::string> declares_;
  std::ostringstream body_;
  std::string allocas_, cur_;
  uint32_t tmp_ = 0, n_vars_seen_ = 0;
};

}  // namespace

sdk::LirOpSet llvm_ir_ops(bool avx512, bool bf16_dot) {
  using enum sdk::LirOp;
  return sdk::lir_ops::kStructure | sdk::lir_ops::kVectors | sdk::lir_ops::kConversions | sdk::lir_ops::kArithmetic |
         sdk::LirOpSet{SQRT, TRUNC, RECIPROCAL, PREFETCH} | (avx512 ? sdk::LirOpSet{EXP2} : sdk::LirOpSet{}) |
         (bf16_dot ? sdk::LirOpSet{DOT2} : sdk::LirOpSet{});
}

std::string render_llvm_ir(const kiln_lir& kernel, const LlvmRenderOptions& options) {
  return Renderer(kernel, options).render();
}

}  // namespace kiln::cpu
