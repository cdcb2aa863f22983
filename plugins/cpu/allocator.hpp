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
// A buffer over host memory the host owns (the allocator's wrap_host); an address that is not
// kBufferAlign-aligned throws INVALID_ARGUMENT.
std::unique_ptr<CpuBuffer> wrap(void* address, uint64_t size);
  friend std::unique_ptr<CpuBuffer> wrap(void* address, uint64_t size);
  size_t mapped_ = 0;      // bytes mmap'd (0: from aligned_alloc)
  bool borrowed_ = false;  // the host's memory (wrap): never freed here
};

// The alignment every buffer's address has: the kernels' loads and stores assume it
// (llvm_ir.cpp), so memory wrapped from the host must have it too.
inline constexpr uint64_t kBufferAlign = 64;

// flags: KILN_ALLOC_ZERO (memory starts zeroed; mmap'd memory always is). Out of memory throws
// sdk::Error{RESOURCE_EXHAUSTED}.
std::unique_ptr<CpuBuffer> allocate(uint64_t size, uint32_t flags);
// A buffer over host memory the host owns (the allocator's wrap_host); an address that is not
// kBufferAlign-aligned throws INVALID_ARGUMENT.
std::unique_ptr<CpuBuffer> wrap(void* address, uint64_t size);

// Bounds check for copies and launches: throws OUT_OF_RANGE naming the operation.
void check_range(const CpuBuffer& b, uint64_t offset, uint64_t n, const char* what);

}  // namespace kiln::cpu
