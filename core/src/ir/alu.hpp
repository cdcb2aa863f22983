// ir/alu.hpp - the value semantics of every ALU op for every dtype (C semantics).
//
// One implementation serves constant folding, the scalar interpreter and the reference executor,
// so all three agree. Integers wrap to their width (two's complement), IDIV truncates toward
// zero, MOD takes the dividend's sign, and division is total (as Tensor::idiv documents): x / 0 = 0,
// x % 0 = x, INT_MIN / -1 wraps to INT_MIN and INT_MIN % -1 = 0 (codegen guards the divisor so
// every backend computes the same); floats compute in double and round to the dtype (float32,
// float16 and bfloat16 round to nearest even); MAX propagates NaN; comparisons with NaN are false
// except CMPNE. Operations C leaves undefined that kiln does not define (shifts by the width or
// more, float-to-int out of range) return no value, so they are never folded.
#pragma once
#include <optional>
#include <span>
#include <variant>

#include "kiln/uop.hpp"

namespace kiln {

// A constant: bool, any integer (index and uint64 stored as int64 bits), or a float (double).
using Value = std::variant<bool, int64_t, double>;

Value value_of(const UOp& const_node);
UOp const_of(DType d, const Value& v);
// Wraps/rounds a value to what a variable of dtype d can hold (d's scalar type).
Value normalize(DType d, const Value& v);
double as_double(const Value& v);
int64_t as_int(const Value& v);  // bool -> 0/1, float truncated

// Computes op over `src` (values of dtype `in`; WHERE's condition is bool and its branches `in`),
// producing a value of dtype `out`. Empty for undefined operations.
std::optional<Value> exec_alu(Ops op, DType out, DType in, std::span<const Value> src);
// CAST and BITCAST of one value from dtype `from` to dtype `to`.
std::optional<Value> exec_cast(DType from, DType to, const Value& v);
std::optional<Value> exec_bitcast(DType from, DType to, const Value& v);

// The identity of a reduce op (ADD 0, MUL 1, MAX the lowest value: -inf, false, the minimum
// integer) as a value of dtype d: what an accumulator starts from and what padding may add.
Value reduce_identity(Ops op, DType d);

// threefry2x32-20 of a packed (hi:lo) counter and key, as tinygrad and JAX use for random bits.
uint64_t threefry2x32(uint64_t counter, uint64_t key);

}  // namespace kiln
