// kiln/key.hpp - a 128-bit digest (structural fingerprints, cache keys).
#pragma once
#include <cstdint>
#include <string>

namespace kiln {

struct Key128 {
  uint64_t hi = 0, lo = 0;
  friend bool operator==(const Key128&, const Key128&) = default;
  friend bool operator<(const Key128& a, const Key128& b) { return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo; }
  std::string hex() const;  // 32 lower-case hex digits
};

struct Key128Hash {
  size_t operator()(const Key128& k) const { return static_cast<size_t>(k.hi ^ (k.lo * 0x9e3779b97f4a7c15ULL)); }
};

}  // namespace kiln
