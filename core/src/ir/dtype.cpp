// ir/dtype.cpp - dtype properties, names and the promotion lattice.
#include <array>
#include <cstdint>
#include <limits>

#include "kiln/dtype.hpp"

namespace kiln {
namespace {

struct ScalarInfo {
  const char* name;
  int size;
  bool is_float, is_int, is_unsigned;
  int priority;  // tie-break among lattice candidates: lower wins
};

constexpr std::array<ScalarInfo, kNumScalars> kInfo{{
    {"void", 0, false, false, false, -1},
    {"bool", 1, false, false, false, 0},
    {"int8", 1, false, true, false, 1},
    {"int16", 2, false, true, false, 3},
    {"int32", 4, false, true, false, 5},
    {"int64", 8, false, true, false, 7},
    {"uint8", 1, false, true, true, 2},
    {"uint16", 2, false, true, true, 4},
    {"uint32", 4, false, true, true, 6},
    {"uint64", 8, false, true, true, 8},
    {"float16", 2, true, false, false, 9},
    {"bfloat16", 2, true, false, false, 10},
    {"float32", 4, true, false, false, 11},
    {"float64", 8, true, false, false, 12},
    {"index", 8, false, true, false, -1},
}};

const ScalarInfo& info(Scalar s) { return kInfo[static_cast<int>(s)]; }

using Set = uint32_t;  // bitset over Scalar
constexpr Set bit(Scalar s) { return Set{1} << static_cast<int>(s); }

// Direct parents in the lattice.
Set parents(Scalar s) {
  switch (s) {
    case Scalar::bool_: return bit(Scalar::int8) | bit(Scalar::uint8);
    case Scalar::int8: return bit(Scalar::int16);
    case Scalar::int16: return bit(Scalar::int32);
    case Scalar::int32: return bit(Scalar::int64);
    case Scalar::int64: return bit(Scalar::float16) | bit(Scalar::bfloat16);
    case Scalar::uint8: return bit(Scalar::int16) | bit(Scalar::uint16);
    case Scalar::uint16: return bit(Scalar::int32) | bit(Scalar::uint32);
    case Scalar::uint32: return bit(Scalar::int64) | bit(Scalar::uint64);
    case Scalar::uint64: return bit(Scalar::float16) | bit(Scalar::bfloat16);
    case Scalar::float16: return bit(Scalar::float32);
    case Scalar::bfloat16: return bit(Scalar::float32);
    case Scalar::float32: return bit(Scalar::float64);
    case Scalar::float64: case Scalar::void_: case Scalar::index: return 0;  // (the top; outside the lattice)
  }
  return 0;
}

Set ancestors(Scalar s) {  // s and everything above it
  Set out = bit(s), frontier = bit(s);
  while (frontier) {
    Set next = 0;
    for (int i = 0; i < kNumScalars; ++i)
      if (frontier & (Set{1} << i)) next |= parents(static_cast<Scalar>(i));
    next &= ~out;
    out |= next;
    frontier = next;
  }
  return out;
}

}  // namespace

int DType::scalar_size() const { return info(scalar_).size; }
int DType::itemsize() const { return is_ptr() ? 8 : info(scalar_).size * count_; }
bool DType::is_float() const { return info(scalar_).is_float; }
bool DType::is_int() const { return info(scalar_).is_int; }
bool DType::is_unsigned() const { return info(scalar_).is_unsigned; }

int64_t DType::imin() const {
  if (is_bool()) return 0;
  if (scalar_ == Scalar::index) return std::numeric_limits<int64_t>::min();
  if (is_unsigned()) return 0;
  if (is_int()) return scalar_size() == 8 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (8 * scalar_size() - 1));
  return std::numeric_limits<int64_t>::min();
}

int64_t DType::imax() const {
  if (is_bool()) return 1;
  if (scalar_ == Scalar::index) return std::numeric_limits<int64_t>::max();
  if (is_unsigned()) return scalar_size() == 8 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (8 * scalar_size())) - 1;
  if (is_int()) return scalar_size() == 8 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (8 * scalar_size() - 1)) - 1;
  return std::numeric_limits<int64_t>::max();
}

double DType::fmax_finite() const {
  switch (scalar_) {
    case Scalar::float16: return 65504.0;
    case Scalar::bfloat16: return 3.3895313892515355e38;
    case Scalar::float32: return 3.4028234663852886e38;
    case Scalar::float64: return std::numeric_limits<double>::max();
    case Scalar::void_: case Scalar::bool_: case Scalar::int8: case Scalar::int16: case Scalar::int32: case Scalar::int64:
    case Scalar::uint8: case Scalar::uint16: case Scalar::uint32: case Scalar::uint64: case Scalar::index:
      return static_cast<double>(imax());
  }
  return static_cast<double>(imax());
}

std::string DType::name() const {
  std::string s = info(scalar_).name;
  if (count_ != 1) s += "x" + std::to_string(count_);
  if (is_ptr()) {
    s += "*";
    if (space_ != AddrSpace::global || size_ >= 0) {
      const char* sp = space_ == AddrSpace::global ? "global" : space_ == AddrSpace::local ? "local" : "reg";
      s += "[" + std::string(sp);
      if (size_ >= 0) s += "," + std::to_string(size_);
      s += "]";
    }
  }
  return s;
}

bool parse_dtype(const std::string& s, DType& out) {
  for (int i = 0; i < kNumScalars; ++i)
    if (s == kInfo[i].name) {
      out = DType(static_cast<Scalar>(i));
      return true;
    }
  return false;
}

DType least_upper_dtype(DType a, DType b) {
  Scalar x = a.scalar(), y = b.scalar();
  if (x == y) return DType(x);
  if (x == Scalar::index || y == Scalar::index) {  // index is the weak integer of index math
    Scalar other = x == Scalar::index ? y : x;
    return DType(other == Scalar::bool_ ? Scalar::index : other);
  }
  Set common = ancestors(x) & ancestors(y);
  // Minimal elements of `common`: those with no other member below them.
  Scalar best = Scalar::float32;
  int best_priority = 1 << 30;
  int minimal_count = 0;
  bool has_f16 = false, has_bf16 = false;
  for (int i = 0; i < kNumScalars; ++i) {
    if (!(common & (Set{1} << i))) continue;
    Scalar c = static_cast<Scalar>(i);
    bool minimal = true;
    for (int j = 0; j < kNumScalars; ++j)
      if (j != i && (common & (Set{1} << j)) && (ancestors(static_cast<Scalar>(j)) & bit(c))) minimal = false;
    if (!minimal) continue;
    ++minimal_count;
    has_f16 |= c == Scalar::float16;
    has_bf16 |= c == Scalar::bfloat16;
    if (info(c).priority < best_priority) best_priority = info(c).priority, best = c;
  }
  if (minimal_count > 1 && has_f16 && has_bf16) return dtypes::default_float;
  return DType(best);
}

}  // namespace kiln
