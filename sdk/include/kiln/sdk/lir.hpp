// kiln/sdk/lir.hpp - a read-only C++ view of a kiln_lir kernel for plugin renderers, the LIR ops as
// a C++ enum with their names, and sets of them (what a renderer supports).
//
// The view is borrowed: valid only during the render() call that received the kiln_lir.
#pragma once
#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string_view>

#include "kiln/lir.h"
#include "kiln/sdk/error.hpp"

namespace kiln::sdk {

// The LIR ops (KILN_LIR_OPS of kiln/lir.h) as an enum, so a renderer's `switch (LirOp(inst.op))`
// without a default case is a -Wswitch warning (an error with -Werror) when a new op is not handled.
enum class LirOp : uint16_t {
#define KILN_SDK_LIR_OP_ENUM(name) name = KILN_LIR_OP_##name,
  KILN_LIR_OPS(KILN_SDK_LIR_OP_ENUM)
#undef KILN_SDK_LIR_OP_ENUM
};

namespace detail {
inline constexpr const char* kLirOpNames[] = {
    "?",
#define KILN_SDK_LIR_OP_NAME(name) #name,
    KILN_LIR_OPS(KILN_SDK_LIR_OP_NAME)
#undef KILN_SDK_LIR_OP_NAME
};
inline constexpr uint32_t kLirOpIds[] = {
    0,
#define KILN_SDK_LIR_OP_ID(name) KILN_LIR_OP_##name,
    KILN_LIR_OPS(KILN_SDK_LIR_OP_ID)
#undef KILN_SDK_LIR_OP_ID
};
constexpr bool lir_ops_numbered_in_order() {
  for (uint32_t i = 0; i < sizeof kLirOpIds / sizeof *kLirOpIds; ++i)
    if (kLirOpIds[i] != i) return false;
  return true;
}
static_assert(sizeof kLirOpIds / sizeof *kLirOpIds == KILN_LIR_OP_COUNT && lir_ops_numbered_in_order(),
              "KILN_LIR_OPS must list every KILN_LIR_OP_* of kiln/lir.h, in number order");
}  // namespace detail

// True for the numbers of kiln/lir.h's ops (a newer core may send ones this SDK does not know).
constexpr bool lir_op_known(uint32_t op) { return op >= 1 && op < KILN_LIR_OP_COUNT; }
// "ADD" for KILN_LIR_OP_ADD; nullptr for an unknown number.
constexpr const char* lir_op_name(uint32_t op) { return lir_op_known(op) ? detail::kLirOpNames[op] : nullptr; }
// "float32" for KILN_LIR_DTYPE_FLOAT32; nullptr for an unknown number.
constexpr const char* lir_dtype_name(uint32_t dtype) {
  constexpr const char* names[] = {"void",   "bool",   "int8",    "int16",    "int32",   "int64",   "uint8",
                                   "uint16", "uint32", "uint64",  "float16",  "bfloat16", "float32", "float64"};
  static_assert(sizeof names / sizeof *names == KILN_LIR_DTYPE_COUNT, "one name per KILN_LIR_DTYPE_*");
  return dtype < KILN_LIR_DTYPE_COUNT ? names[dtype] : nullptr;
}

// A set of LIR ops: the bitmap of kiln_target.ops (bit op%64 of word op/64).
class LirOpSet {
 public:
  constexpr LirOpSet() = default;
  constexpr LirOpSet(std::initializer_list<LirOp> ops) {
    for (LirOp o : ops) add(o);
  }
  constexpr LirOpSet& add(LirOp o) {
    bits_[static_cast<uint32_t>(o) / 64] |= uint64_t{1} << (static_cast<uint32_t>(o) % 64);
    return *this;
  }
  constexpr bool has(uint32_t op) const { return op < 128 && (bits_[op / 64] >> (op % 64)) & 1; }
  constexpr bool has(LirOp o) const { return has(static_cast<uint32_t>(o)); }
  constexpr LirOpSet operator|(const LirOpSet& o) const {
    LirOpSet r;
    r.bits_ = {bits_[0] | o.bits_[0], bits_[1] | o.bits_[1]};
    return r;
  }
  constexpr LirOpSet without(const LirOpSet& o) const {
    LirOpSet r;
    r.bits_ = {bits_[0] & ~o.bits_[0], bits_[1] & ~o.bits_[1]};
    return r;
  }
  constexpr const std::array<uint64_t, 2>& bits() const { return bits_; }
  friend constexpr bool operator==(const LirOpSet&, const LirOpSet&) = default;

 private:
  std::array<uint64_t, 2> bits_{};
};

// Named sets to build a renderer's allow-list from (Target::add_ops). They are frozen: an op added
// to the LIR later joins none of them, so no renderer claims it before it lists it by name.
namespace lir_ops {
using enum LirOp;
// what every kernel is made of: parameters, launch indices, loops, conditionals, registers, memory
inline constexpr LirOpSet kStructure{PARAM, VAR, SPECIAL, RANGE, END, IF, ENDIF, DEFINE_REG, INDEX, LOAD, STORE, CONST};
inline constexpr LirOpSet kVectors{VECTORIZE, GEP};
inline constexpr LirOpSet kConversions{CAST, BITCAST};
// integer and float arithmetic, comparisons and selection (no transcendental functions)
inline constexpr LirOpSet kArithmetic{NEG, ADD, SUB, MUL, IDIV, MOD, FDIV, MAX, SHL, SHR, AND, OR, XOR,
                                      CMPLT, CMPNE, CMPEQ, WHERE, MULACC};
// workgroup-shared memory and its barrier
inline constexpr LirOpSet kWorkgroup{DEFINE_LOCAL, BARRIER};
// literal statements and expressions (CUSTOM, CUSTOMI)
inline constexpr LirOpSet kCustom{CUSTOM, CUSTOMI};
// the least a target must list: the core cannot decompose these (`kiln test` checks them)
inline constexpr LirOpSet kRequired{PARAM, RANGE, END, INDEX, LOAD, STORE, CONST, ADD, MUL, CMPLT};
}  // namespace lir_ops

class LirView {
 public:
  explicit LirView(const kiln_lir& l) : l_(l) {
    if (l.version != KILN_LIR_VERSION)
      throw Error{KILN_STATUS_UNIMPLEMENTED, "LIR version " + std::to_string(l.version) + " is not supported (expected " +
                                                 std::to_string(KILN_LIR_VERSION) + ")"};
  }

  uint32_t size() const { return l_.n_insts; }
  const kiln_lir_inst& operator[](uint32_t i) const { return l_.insts[i]; }
  std::string_view name() const { return l_.name; }
  const kiln_lir& raw() const { return l_; }

  // Instruction index of source k of instruction i.
  uint32_t src(uint32_t i, uint32_t k) const { return l_.srcs[l_.insts[i].first_src + k]; }
  std::string_view str(uint32_t i) const {
    const kiln_lir_inst& in = l_.insts[i];
    return {l_.strings + in.arg, static_cast<size_t>(in.arg_length)};
  }
  std::span<const int64_t> ints(uint32_t i) const {
    const kiln_lir_inst& in = l_.insts[i];
    return {l_.ints + in.arg, static_cast<size_t>(in.arg_length)};
  }
  double f64(uint32_t i) const {
    uint64_t bits = static_cast<uint64_t>(l_.insts[i].arg);
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }

 private:
  const kiln_lir& l_;
};

inline bool lir_is_float(uint8_t s) {
  return s == KILN_LIR_DTYPE_FLOAT16 || s == KILN_LIR_DTYPE_BFLOAT16 || s == KILN_LIR_DTYPE_FLOAT32 || s == KILN_LIR_DTYPE_FLOAT64;
}
inline bool lir_is_unsigned(uint8_t s) {
  return s == KILN_LIR_DTYPE_UINT8 || s == KILN_LIR_DTYPE_UINT16 || s == KILN_LIR_DTYPE_UINT32 || s == KILN_LIR_DTYPE_UINT64;
}
inline int lir_scalar_size(uint8_t s) {
  static const int sizes[] = {0, 1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8};
  return s < KILN_LIR_DTYPE_COUNT ? sizes[s] : 0;
}

}  // namespace kiln::sdk
