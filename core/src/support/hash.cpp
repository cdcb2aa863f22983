// support/hash.cpp - byte hashing and fingerprint finalisation.
#include "support/hash.hpp"

namespace kiln {

uint64_t hash_bytes(const void* data, size_t n, uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = mix64(seed ^ (n * 0x9e3779b97f4a7c15ULL));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = hash_combine(h, w);
  }
  uint64_t tail = 0;
  for (size_t k = 0; i < n; ++i, ++k) tail |= static_cast<uint64_t>(p[i]) << (8 * k);
  return hash_combine(h, tail);
}

Fingerprint& Fingerprint::str(std::string_view s) {
  u64(s.size());
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    u64(w);
  }
  uint64_t tail = 0;
  for (size_t k = 0; i < s.size(); ++i, ++k) tail |= static_cast<uint64_t>(static_cast<unsigned char>(s[i])) << (8 * k);
  return u64(tail);
}

Key128 Fingerprint::finish() const {
  uint64_t a = mix64(a_ ^ n_), b = mix64(b_ ^ (n_ * 0x9e3779b97f4a7c15ULL));
  return Key128{mix64(a ^ (b >> 17)), mix64(b + a)};
}

std::string Key128::hex() const {
  static const char* digits = "0123456789abcdef";
  std::string s(32, '0');
  for (int i = 0; i < 16; ++i) {
    s[15 - i] = digits[(hi >> (4 * i)) & 15];
    s[31 - i] = digits[(lo >> (4 * i)) & 15];
  }
  return s;
}

}  // namespace kiln
