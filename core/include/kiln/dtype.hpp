// kiln/dtype.hpp - element types: scalars, vectors, pointers, and the promotion lattice.
#pragma once
#include <cstdint>
#include <string>

namespace kiln {

// Scalar kinds. `index` is the unbounded integer type of index arithmetic; codegen lowers it to
// int32 or int64 from value bounds. `void_` is the dtype of nodes without a value (STORE, SINK).
enum class Scalar : uint8_t {
  void_, bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
  float16, bfloat16, float32, float64, index,
};
inline constexpr int kNumScalars = 15;

enum class AddrSpace : uint8_t { none, global, local, reg };

// A value type: a scalar, a vector of `count` scalars, or a pointer to such an element (with an
// address space and an element count, -1 when unknown). 16 bytes, trivially copyable, compared
// and hashed by value.
class DType {
 public:
  constexpr DType() = default;
  constexpr explicit DType(Scalar s, int count = 1) : scalar_(s), count_(static_cast<uint16_t>(count)) {}

  constexpr Scalar scalar() const { return scalar_; }
  constexpr int count() const { return count_; }  // vector width (of the element, for pointers)
  constexpr bool is_ptr() const { return space_ != AddrSpace::none; }
  constexpr AddrSpace addrspace() const { return space_; }
  constexpr int64_t ptr_size() const { return size_; }  // elements behind a pointer, -1 unknown

  // The same type with `n` lanes (a pointer keeps being a pointer, to n-wide elements).
  constexpr DType vec(int n) const { DType d = *this; d.count_ = static_cast<uint16_t>(n); return d; }
  // The scalar lane type, dropping vector width and pointer-ness.
  constexpr DType scalar_type() const { return DType(scalar_); }
  // For a pointer: the element type it points to; otherwise itself.
  constexpr DType base() const { return DType(scalar_, count_); }
  constexpr DType ptr(int64_t size = -1, AddrSpace space = AddrSpace::global) const {
    DType d(scalar_, count_);
    d.space_ = space;
    d.size_ = size;
    return d;
  }

  int itemsize() const;  // bytes of one element (count * scalar size); pointers are 8
  int scalar_size() const;
  bool is_float() const;    // float16, bfloat16, float32, float64
  bool is_int() const;      // signed, unsigned or index (not bool)
  bool is_unsigned() const;
  bool is_bool() const { return scalar_ == Scalar::bool_; }
  bool is_void() const { return scalar_ == Scalar::void_ && !is_ptr(); }
  // Value range of the scalar type as int64, the width bounds analysis works in: uint64's max
  // saturates to INT64_MAX and floats report the int64 limits. fmax_finite is the largest finite
  // magnitude of a float type (of the others: imax as a double).
  int64_t imin() const;
  int64_t imax() const;
  double fmax_finite() const;

  std::string name() const;  // "float32", "int32x4", "float32*", "float32x4*[local,64]"
  constexpr uint64_t bits() const {
    return static_cast<uint64_t>(scalar_) | static_cast<uint64_t>(space_) << 8 | static_cast<uint64_t>(count_) << 16 |
           static_cast<uint64_t>(size_) << 32;
  }
  friend constexpr bool operator==(const DType& a, const DType& b) {
    return a.scalar_ == b.scalar_ && a.space_ == b.space_ && a.count_ == b.count_ && a.size_ == b.size_;
  }

 private:
  Scalar scalar_ = Scalar::void_;
  AddrSpace space_ = AddrSpace::none;
  uint16_t count_ = 1;
  int64_t size_ = -1;
};

namespace dtypes {
inline constexpr DType void_{Scalar::void_}, bool_{Scalar::bool_}, int8{Scalar::int8}, int16{Scalar::int16},
    int32{Scalar::int32}, int64{Scalar::int64}, uint8{Scalar::uint8}, uint16{Scalar::uint16},
    uint32{Scalar::uint32}, uint64{Scalar::uint64}, float16{Scalar::float16}, bfloat16{Scalar::bfloat16},
    float32{Scalar::float32}, float64{Scalar::float64}, index{Scalar::index};
inline constexpr DType default_float = float32, default_int = int32;
}  // namespace dtypes

// The smallest type both promote to, following the lattice (JAX/tinygrad, numpy where they agree):
//   bool -> {int8, uint8};  int8 -> int16 -> int32 -> int64 -> {float16, bfloat16}
//   uint8 -> {int16, uint16};  uint16 -> {int32, uint32};  uint32 -> {int64, uint64} ; uint64 -> {float16, bfloat16}
//   float16 -> float32;  bfloat16 -> float32;  float32 -> float64
// So int8+uint8 = int16, int32+uint32 = int64, int32+float16 = float16, float16+bfloat16 = float32.
// When the only common ancestors are floats above both float16 and bfloat16 (int64+uint64), the
// result is the default float, float32 (JAX's "f*"). Vector width and pointers are not promoted.
DType least_upper_dtype(DType a, DType b);
// Parses a dtype name as printed by name() for scalars ("float32", "int8", "bool", ...).
bool parse_dtype(const std::string& s, DType& out);

}  // namespace kiln
