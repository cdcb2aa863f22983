// ir/alu.cpp - exec_alu and casts with C semantics per dtype.
#include "ir/alu.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "support/check.hpp"
#include "support/half.hpp"

namespace kiln {

namespace {

int width_bits(DType d) { return d.scalar() == Scalar::index ? 64 : 8 * d.scalar_size(); }

// Sign- or zero-extends the low `width` bits of x.
int64_t wrap_int(DType d, uint64_t x) {
  int w = width_bits(d);
  if (w >= 64) return static_cast<int64_t>(x);
  uint64_t mask = (uint64_t{1} << w) - 1;
  x &= mask;
  if (!d.is_unsigned() && (x >> (w - 1)) & 1) x |= ~mask;
  return static_cast<int64_t>(x);
}

double round_float(DType d, double v) {
  switch (d.scalar()) {
    case Scalar::float32: return static_cast<double>(static_cast<float>(v));
    case Scalar::float16: return half_to_float(float_to_half(static_cast<float>(v)));
    case Scalar::bfloat16: return bf16_to_float(float_to_bf16(static_cast<float>(v)));
    case Scalar::float64: return v;
    // (normalize rounds only float dtypes)
    case Scalar::void_: case Scalar::bool_: case Scalar::int8: case Scalar::int16: case Scalar::int32: case Scalar::int64:
    case Scalar::uint8: case Scalar::uint16: case Scalar::uint32: case Scalar::uint64: case Scalar::index:
      return v;
  }
  KILN_UNREACHABLE("round_float: scalar ", static_cast<int>(d.scalar()));
}

// The switches below name every ALU op (exec_alu turns the others away first; their labels come
// from ops.def by kind), so a new ALU op does not compile until each dtype family says what it
// computes or that it has no semantics there (AluResult::unimplemented).
#define KILN_NOT_ALU_Unary(name)
#define KILN_NOT_ALU_Binary(name)
#define KILN_NOT_ALU_Ternary(name)
#define KILN_NOT_ALU_Cast(name) case Ops::name:
#define KILN_NOT_ALU_KernelOnly(name) case Ops::name:
#define KILN_NOT_ALU_Movement(name) case Ops::name:
#define KILN_NOT_ALU_TensorOnly(name) case Ops::name:
#define KILN_NOT_ALU_ProgramLevel(name) case Ops::name:

// Unsigned values are stored by bits; compare them as unsigned.
bool int_less(DType d, int64_t a, int64_t b) {
  return d.is_unsigned() ? static_cast<uint64_t>(a) < static_cast<uint64_t>(b) : a < b;
}

double int_to_double(DType d, int64_t v) {
  return d.is_unsigned() ? static_cast<double>(static_cast<uint64_t>(v)) : static_cast<double>(v);
}

AluResult int_alu(Ops op, DType out, DType in, std::span<const Value> s) {
  auto I = [&](int i) { return std::get<int64_t>(s[i]); };
  auto U = [&](int i) { return static_cast<uint64_t>(std::get<int64_t>(s[i])); };
  switch (op) {
    case Ops::ADD: return Value{wrap_int(out, U(0) + U(1))};
    case Ops::SUB: return Value{wrap_int(out, U(0) - U(1))};
    case Ops::MUL: return Value{wrap_int(out, U(0) * U(1))};
    case Ops::NEG: return Value{wrap_int(out, uint64_t{0} - U(0))};
    case Ops::IDIV:
    case Ops::MOD: {
      if (I(1) == 0) return op == Ops::IDIV ? Value{int64_t{0}} : s[0];
      if (in.is_unsigned()) return Value{wrap_int(out, op == Ops::IDIV ? U(0) / U(1) : U(0) % U(1))};
      // x / -1 is -x, which wraps at the minimum (INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0)
      if (I(1) == -1) return op == Ops::IDIV ? Value{wrap_int(out, uint64_t{0} - U(0))} : Value{int64_t{0}};
      return Value{op == Ops::IDIV ? I(0) / I(1) : I(0) % I(1)};
    }
    case Ops::MAX: return Value{int_less(in, I(0), I(1)) ? I(1) : I(0)};
    case Ops::SHL:
    case Ops::SHR: {
      int64_t amount = I(1);
      if (amount < 0 || amount >= width_bits(in)) return AluResult::undefined();
      if (op == Ops::SHL) return Value{wrap_int(out, U(0) << amount)};
      if (in.is_unsigned()) return Value{wrap_int(out, U(0) >> amount)};
      return Value{I(0) >> amount};
    }
    case Ops::AND: return Value{wrap_int(out, U(0) & U(1))};
    case Ops::OR: return Value{wrap_int(out, U(0) | U(1))};
    case Ops::XOR: return Value{wrap_int(out, U(0) ^ U(1))};
    case Ops::CMPLT: return Value{int_less(in, I(0), I(1))};
    case Ops::CMPNE: return Value{I(0) != I(1)};
    case Ops::CMPEQ: return Value{I(0) == I(1)};
    case Ops::MULACC: return Value{wrap_int(out, U(0) * U(1) + U(2))};
    case Ops::THREEFRY: return Value{static_cast<int64_t>(threefry2x32(U(0), U(1)))};
    case Ops::TRUNC: return s[0];
    case Ops::FDIV: case Ops::POW: case Ops::EXP2: case Ops::LOG2: case Ops::SIN: case Ops::SQRT: case Ops::RECIPROCAL:
    case Ops::WHERE:  // (exec_alu's)
#define KILN_OP(name, kind, lir, doc) KILN_NOT_ALU_##kind(name)
#include "kiln/ops.def"
      return AluResult::unimplemented();
  }
  KILN_UNREACHABLE("int_alu: op ", static_cast<int>(op));
}

AluResult float_alu(Ops op, DType out, std::span<const Value> s) {
  auto F = [&](int i) { return std::get<double>(s[i]); };
  auto R = [&](double v) { return Value{round_float(out, v)}; };
  switch (op) {
    case Ops::ADD: return R(F(0) + F(1));
    case Ops::SUB: return R(F(0) - F(1));
    case Ops::MUL: return R(F(0) * F(1));
    case Ops::FDIV: return R(F(0) / F(1));
    case Ops::NEG: return R(-F(0));
    case Ops::MAX: return std::isnan(F(0)) || std::isnan(F(1)) ? R(std::nan("")) : R(F(0) < F(1) ? F(1) : F(0));
    case Ops::POW: return R(std::pow(F(0), F(1)));
    case Ops::EXP2: return R(std::exp2(F(0)));
    case Ops::LOG2: return R(std::log2(F(0)));
    case Ops::SIN: return R(std::sin(F(0)));
    case Ops::SQRT: return R(std::sqrt(F(0)));
    case Ops::RECIPROCAL: return R(1.0 / F(0));
    case Ops::TRUNC: return R(std::trunc(F(0)));
    case Ops::CMPLT: return Value{F(0) < F(1)};
    case Ops::CMPNE: return Value{F(0) != F(1)};
    case Ops::CMPEQ: return Value{F(0) == F(1)};
    case Ops::MULACC: return R(F(0) * F(1) + F(2));
    case Ops::IDIV: case Ops::MOD: case Ops::SHL: case Ops::SHR: case Ops::AND: case Ops::OR: case Ops::XOR:
    case Ops::THREEFRY:
    case Ops::WHERE:  // (exec_alu's)
#define KILN_OP(name, kind, lir, doc) KILN_NOT_ALU_##kind(name)
#include "kiln/ops.def"
      return AluResult::unimplemented();
  }
  KILN_UNREACHABLE("float_alu: op ", static_cast<int>(op));
}

AluResult bool_alu(Ops op, std::span<const Value> s) {
  auto B = [&](int i) { return std::get<bool>(s[i]); };
  switch (op) {
    case Ops::AND: case Ops::MUL: return Value{B(0) && B(1)};
    case Ops::OR: case Ops::ADD: case Ops::MAX: return Value{B(0) || B(1)};
    case Ops::XOR: case Ops::CMPNE: return Value{B(0) != B(1)};
    case Ops::CMPEQ: return Value{B(0) == B(1)};
    case Ops::CMPLT: return Value{!B(0) && B(1)};
    case Ops::TRUNC: return s[0];
    case Ops::SUB: case Ops::NEG: case Ops::IDIV: case Ops::MOD: case Ops::FDIV: case Ops::POW: case Ops::SHL: case Ops::SHR:
    case Ops::EXP2: case Ops::LOG2: case Ops::SIN: case Ops::SQRT: case Ops::RECIPROCAL: case Ops::MULACC: case Ops::THREEFRY:
    case Ops::WHERE:  // (exec_alu's)
#define KILN_OP(name, kind, lir, doc) KILN_NOT_ALU_##kind(name)
#include "kiln/ops.def"
      return AluResult::unimplemented();
  }
  KILN_UNREACHABLE("bool_alu: op ", static_cast<int>(op));
}

#undef KILN_NOT_ALU_Unary
#undef KILN_NOT_ALU_Binary
#undef KILN_NOT_ALU_Ternary
#undef KILN_NOT_ALU_Cast
#undef KILN_NOT_ALU_KernelOnly
#undef KILN_NOT_ALU_Movement
#undef KILN_NOT_ALU_TensorOnly
#undef KILN_NOT_ALU_ProgramLevel

uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

}  // namespace

Value reduce_identity(Ops op, DType d) {
  if (op == Ops::ADD) return normalize(d, Value{int64_t{0}});
  if (op == Ops::MUL) return normalize(d, Value{int64_t{1}});
  if (d.is_float()) return Value{-INFINITY};
  if (d.is_bool()) return Value{false};
  return Value{d.imin()};
}

uint64_t threefry2x32(uint64_t counter, uint64_t key) {
  uint32_t ks[3] = {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32), 0};
  ks[2] = ks[0] ^ ks[1] ^ 0x1BD11BDAu;
  static const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  uint32_t x0 = static_cast<uint32_t>(counter) + ks[0], x1 = static_cast<uint32_t>(counter >> 32) + ks[1];
  for (int i = 0; i < 5; ++i) {
    for (int r : rot[i % 2]) {
      x0 += x1;
      x1 = rotl32(x1, r);
      x1 ^= x0;
    }
    x0 += ks[(i + 1) % 3];
    x1 += ks[(i + 2) % 3] + static_cast<uint32_t>(i + 1);
  }
  return static_cast<uint64_t>(x1) << 32 | x0;
}

double as_double(const Value& v) {
  if (const auto* b = std::get_if<bool>(&v)) return *b;
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return std::get<double>(v);
}
int64_t as_int(const Value& v) {
  if (const auto* b = std::get_if<bool>(&v)) return *b;
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  return static_cast<int64_t>(std::get<double>(v));
}

Value normalize(DType d, const Value& v) {
  if (d.is_bool()) return Value{as_double(v) != 0 || (std::holds_alternative<double>(v) && std::isnan(std::get<double>(v)))};
  if (d.is_float()) return Value{round_float(d, std::holds_alternative<double>(v) ? std::get<double>(v) : as_double(v))};
  if (const auto* i = std::get_if<int64_t>(&v)) return Value{wrap_int(d, static_cast<uint64_t>(*i))};
  return Value{wrap_int(d, static_cast<uint64_t>(as_int(v)))};
}

Value value_of(const UOp& c) {
  const Arg& a = c.arg();
  if (const auto* i = std::get_if<int64_t>(&a)) return Value{*i};
  if (const auto* f = std::get_if<Float>(&a)) return Value{f->v};
  if (const auto* b = std::get_if<bool>(&a)) return Value{*b};
  KILN_UNREACHABLE("CONST without a value: ", op_name(c.op()));
}

UOp const_of(DType d, const Value& v) {
  Value n = normalize(d, v);
  if (d.is_bool()) return UOp::make(Ops::CONST, d, {}, Arg{std::get<bool>(n)});
  if (d.is_float()) return UOp::make(Ops::CONST, d, {}, Arg{Float(std::get<double>(n))});
  return UOp::make(Ops::CONST, d, {}, Arg{std::get<int64_t>(n)});
}

const Value& AluResult::operator*() const {
  KILN_CHECK(status_ == Status::value, "AluResult: no value (", status_ == Status::undefined ? "undefined for these operands" : "not implemented", ")");
  return value_;
}

AluResult exec_alu(Ops op, DType out, DType in, std::span<const Value> src) {
  KILN_CHECK(groups::ALU.has(op), "exec_alu: ", op_name(op), " is not an ALU op");
  if (op == Ops::WHERE) return std::get<bool>(src[0]) ? src[1] : src[2];
  if (in.is_bool()) return bool_alu(op, src);
  if (in.is_float()) return float_alu(op, out, src);
  return int_alu(op, out, in, src);
}

AluResult exec_cast(DType from, DType to, const Value& v) {
  if (to.is_bool()) {
    if (const auto* f = std::get_if<double>(&v)) return Value{*f != 0 || std::isnan(*f)};
    return Value{as_int(v) != 0};
  }
  if (to.is_float()) {
    if (const auto* i = std::get_if<int64_t>(&v)) return normalize(to, Value{int_to_double(from, *i)});
    return normalize(to, Value{as_double(v)});
  }
  if (const auto* f = std::get_if<double>(&v)) {  // float -> int truncates; out of range is undefined
    if (std::isnan(*f)) return AluResult::undefined();
    double t = std::trunc(*f);
    if (to.is_unsigned()) {
      if (t < 0 || t >= std::ldexp(1.0, width_bits(to))) return AluResult::undefined();
      return Value{wrap_int(to, static_cast<uint64_t>(t))};
    }
    double lim = std::ldexp(1.0, width_bits(to) - 1);
    if (t < -lim || t >= lim) return AluResult::undefined();
    return Value{static_cast<int64_t>(t)};
  }
  return normalize(to, Value{as_int(v)});
}

AluResult exec_bitcast(DType from, DType to, const Value& v) {
  if (from.itemsize() != to.itemsize()) return AluResult::undefined();
  uint64_t bits = 0;
  switch (from.scalar()) {
    case Scalar::float64: { double x = std::get<double>(v); std::memcpy(&bits, &x, 8); break; }
    case Scalar::float32: bits = f32_bits(static_cast<float>(std::get<double>(v))); break;
    case Scalar::float16: bits = float_to_half(static_cast<float>(std::get<double>(v))); break;
    case Scalar::bfloat16: bits = float_to_bf16(static_cast<float>(std::get<double>(v))); break;
    case Scalar::void_: case Scalar::bool_: case Scalar::int8: case Scalar::int16: case Scalar::int32: case Scalar::int64:
    case Scalar::uint8: case Scalar::uint16: case Scalar::uint32: case Scalar::uint64: case Scalar::index:
      bits = static_cast<uint64_t>(as_int(v));
      break;
  }
  switch (to.scalar()) {
    case Scalar::float64: { double x; std::memcpy(&x, &bits, 8); return Value{x}; }
    case Scalar::float32: return Value{static_cast<double>(f32_from_bits(static_cast<uint32_t>(bits)))};
    case Scalar::float16: return Value{static_cast<double>(half_to_float(static_cast<uint16_t>(bits)))};
    case Scalar::bfloat16: return Value{static_cast<double>(bf16_to_float(static_cast<uint16_t>(bits)))};
    case Scalar::bool_: return Value{(bits & 0xff) != 0};
    case Scalar::void_: case Scalar::int8: case Scalar::int16: case Scalar::int32: case Scalar::int64:
    case Scalar::uint8: case Scalar::uint16: case Scalar::uint32: case Scalar::uint64: case Scalar::index:
      return Value{wrap_int(to, bits)};
  }
  KILN_UNREACHABLE("exec_bitcast: scalar ", static_cast<int>(to.scalar()));
}

}  // namespace kiln
