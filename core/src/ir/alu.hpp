// ir/alu.hpp - the value semantics of every ALU op for every dtype (C semantics).
//
// One implementation serves constant folding, the scalar interpreter and the reference executor,
// so all three agree. Integers wrap to their width (two's complement), IDIV truncates toward
// zero, MOD takes the dividend's sign, and division is total (as Tensor::idiv documents): x / 0 = 0,
// x % 0 = x, INT_MIN / -1 wraps to INT_MIN and INT_MIN % -1 = 0 (codegen guards the divisor so
// every backend computes the same); floats compute in double and round to the dtype (float32,
// float16 and bfloat16 round to nearest even); MAX propagates NaN; comparisons with NaN are false
// except CMPNE. Operations C leaves undefined that kiln does not define (shifts by the width or
// more, float-to-int out of range) are `undefined`, so they are never folded; an op a dtype has no
// semantics for is `unimplemented` (AluResult says which).
#pragma once
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

// What exec_alu (or a cast) gives: a value, or why there is none. The two reasons differ:
//   undefined      the op is defined for the dtype, but not for these operands (a shift by the
//                  width or more, a float-to-int cast out of range): constant folding leaves it
//                  alone, an executor reports the operands
//   unimplemented  kiln has no semantics for the op at this dtype (IDIV of floats, POW of
//                  integers, SUB of bools): not foldable here; an executor that meets it has a bug
//                  or a graph the verifier should have refused, and says so
class AluResult {
 public:
  enum class Status : uint8_t { value, undefined, unimplemented };
  AluResult(Value v) : status_(Status::value), value_(v) {}  // NOLINT: a value converts
  static AluResult undefined() { return AluResult(Status::undefined); }
  static AluResult unimplemented() { return AluResult(Status::unimplemented); }

  Status status() const { return status_; }
  bool is_undefined() const { return status_ == Status::undefined; }
  bool is_unimplemented() const { return status_ == Status::unimplemented; }
  explicit operator bool() const { return status_ == Status::value; }
  const Value& operator*() const;  // throws unless there is a value

 private:
  explicit AluResult(Status s) : status_(s) {}
  Status status_;
  Value value_;
};

// Computes op (an ALU op; anything else is an internal error) over `src` (values of dtype `in`;
// WHERE's condition is bool and its branches `in`), producing a value of dtype `out`.
AluResult exec_alu(Ops op, DType out, DType in, std::span<const Value> src);
// CAST and BITCAST of one value from dtype `from` to dtype `to` (undefined: out of range, NaN to
// an integer, sizes that differ).
AluResult exec_cast(DType from, DType to, const Value& v);
AluResult exec_bitcast(DType from, DType to, const Value& v);

// The identity of a reduce op (ADD 0, MUL 1, MAX the lowest value: -inf, false, the minimum
// integer) as a value of dtype d: what an accumulator starts from and what padding may add.
Value reduce_identity(Ops op, DType d);

// threefry2x32-20 of a packed (hi:lo) counter and key, as tinygrad and JAX use for random bits.
uint64_t threefry2x32(uint64_t counter, uint64_t key);

}  // namespace kiln
