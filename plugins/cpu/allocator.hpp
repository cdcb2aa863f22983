// plugins/cpu/allocator.hpp - host memory buffers for the cpu device.
//
// Every buffer is 64-byte aligned (a cache line; the widest AVX-512 load). Buffers of 2 MiB and
// more are mmap'd at a 2 MiB boundary with MADV_HUGEPAGE: first-touch page faults of a fresh
// 64 MiB buffer cost ~25 ms with 4 KiB pages and ~3 ms with transparent huge pages. (Populating
// fresh mappings on a background thread while kernels compile was tried and measured: its
// MADV_POPULATE_WRITE holds the mmap lock, stalling the compiler's and loader's mmaps; the
// elementwise first call went from 23-30 ms to 26-190 ms.)
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "kiln/sdk.hpp"

namespace kiln::cpu {

class CpuBuffer final : public sdk::Buffer {
 public:
  ~CpuBuffer() override;
  std::byte* data = nullptr;  // nullptr only for size 0
  uint64_t size = 0;

 private:
  friend std::unique_ptr<CpuBuffer> allocate(uint64_t size, uint32_t flags);
  size_t mapped_ = 0;  // bytes mmap'd (0: from aligned_alloc)
};

// flags: KILN_ALLOC_ZERO (memory starts zeroed; mmap'd memory always is). Out of memory throws
// sdk::Error{RESOURCE_EXHAUSTED}.
std::unique_ptr<CpuBuffer> allocate(uint64_t size, uint32_t flags);

// Bounds check for copies and launches: throws OUT_OF_RANGE naming the operation.
void check_range(const CpuBuffer& b, uint64_t offset, uint64_t n, const char* what);

}  // namespace kiln::cpu
