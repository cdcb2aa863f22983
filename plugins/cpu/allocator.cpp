// plugins/cpu/allocator.cpp - aligned host allocations, huge pages for large buffers.
#include "allocator.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sysinfo.hpp"

namespace kiln::cpu {
namespace {

constexpr uint64_t kAlign = kBufferAlign;
constexpr uint64_t kHuge = uint64_t{2} << 20;  // x86-64 huge page
constexpr uint64_t kMaxSize = uint64_t{1} << 56;

[[noreturn]] void out_of_memory(uint64_t size, const char* how) {
  throw sdk::Error{KILN_STATUS_RESOURCE_EXHAUSTED,
                   "cannot allocate " + std::to_string(size) + " bytes of host memory (" + how + "; " +
                       std::to_string(memory_available() >> 20) + " MiB available)"};
}

}  // namespace

CpuBuffer::~CpuBuffer() {
  if (borrowed_) return;
  if (mapped_) munmap(data, mapped_);
  else std::free(data);
}

std::unique_ptr<CpuBuffer> wrap(void* address, uint64_t size) {
  if (reinterpret_cast<uintptr_t>(address) % kBufferAlign)
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "wrap_host: the address is not " + std::to_string(kBufferAlign) +
                                                       "-byte aligned (the cpu kernels assume it); copy the data instead"};
  auto b = std::unique_ptr<CpuBuffer>(new CpuBuffer());
  b->data = static_cast<std::byte*>(address);
  b->size = size;
  b->borrowed_ = true;
  return b;
}

std::unique_ptr<CpuBuffer> allocate(uint64_t size, uint32_t flags) {
  auto b = std::unique_ptr<CpuBuffer>(new CpuBuffer());
  b->size = size;
  if (size == 0) return b;
  if (size > kMaxSize) out_of_memory(size, "larger than any address space");
  if (size >= kHuge) {
    // Over-map by one huge page, then trim both ends so the buffer starts on a 2 MiB boundary.
    uint64_t length = (size + kHuge - 1) / kHuge * kHuge;
    void* raw = mmap(nullptr, length + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) out_of_memory(size, std::strerror(errno));
    uintptr_t start = reinterpret_cast<uintptr_t>(raw), aligned = (start + kHuge - 1) & ~(kHuge - 1);
    if (aligned > start) munmap(raw, aligned - start);
    if (uintptr_t tail = start + length + kHuge - (aligned + length)) munmap(reinterpret_cast<void*>(aligned + length), tail);
    b->data = reinterpret_cast<std::byte*>(aligned);
    b->mapped_ = length;
    madvise(b->data, length, MADV_HUGEPAGE);  // best effort: THP may be disabled
    return b;
  }
  uint64_t rounded = (size + kAlign - 1) / kAlign * kAlign;
  b->data = static_cast<std::byte*>(std::aligned_alloc(kAlign, rounded));
  if (!b->data) out_of_memory(size, "aligned_alloc failed");
  if (flags & KILN_ALLOC_ZERO) std::memset(b->data, 0, rounded);
  return b;
}

void check_range(const CpuBuffer& b, uint64_t offset, uint64_t n, const char* what) {
  if (offset > b.size || n > b.size - offset)
    throw sdk::Error{KILN_STATUS_OUT_OF_RANGE, std::string(what) + ": bytes [" + std::to_string(offset) + ", " +
                                                   std::to_string(offset) + "+" + std::to_string(n) +
                                                   ") are outside the " + std::to_string(b.size) + "-byte buffer"};
}

}  // namespace kiln::cpu
