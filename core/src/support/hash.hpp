// support/hash.hpp - fast identity hashing and the stable 128-bit structural fingerprint.
//
// mix64/hash_combine are for in-process tables (values may change between builds). Fingerprint
// is stable across processes, builds and machines: it keys the on-disk caches, so its output for
// a given byte stream must never change without bumping the cache versions that use it.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "kiln/key.hpp"

namespace kiln {

inline uint64_t mix64(uint64_t x) {  // splitmix64 finalizer: full avalanche, 3 multiplies
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

inline uint64_t hash_combine(uint64_t seed, uint64_t v) {
  return mix64(seed ^ (v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)));
}

uint64_t hash_bytes(const void* data, size_t n, uint64_t seed = 0);


// Streaming stable hash: feed integers, doubles (by bits) and strings; finish() gives a Key128.
// Two independent 64-bit lanes with different multipliers; every update is length-delimited so
// ("ab","c") and ("a","bc") differ.
class Fingerprint {
 public:
  Fingerprint& u64(uint64_t v) {
    a_ = lane(a_, v, 0x9e3779b97f4a7c15ULL);
    b_ = lane(b_, v, 0xc2b2ae3d27d4eb4fULL);
    ++n_;
    return *this;
  }
  Fingerprint& i64(int64_t v) { return u64(static_cast<uint64_t>(v)); }
  Fingerprint& f64(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    return u64(bits);
  }
  Fingerprint& str(std::string_view s);
  Fingerprint& key(const Key128& k) { return u64(k.hi).u64(k.lo); }
  Key128 finish() const;

 private:
  static uint64_t lane(uint64_t h, uint64_t v, uint64_t k) {
    h ^= mix64(v * k + 0x165667b19e3779f9ULL);
    return (h << 27 | h >> 37) * 5 + 0x52dce729;
  }
  uint64_t a_ = 0x243f6a8885a308d3ULL, b_ = 0x13198a2e03707344ULL, n_ = 0;
};

}  // namespace kiln
