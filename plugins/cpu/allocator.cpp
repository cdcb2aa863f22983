// plugins/cpu/allocator.cpp - aligned host allocations, huge pages for large buffers.
#include "allocator.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "sysinfo.hpp"

namespace kiln::cpu {
namespace {

constexpr uint64_t kAlign = 64;
constexpr uint64_t kHuge = uint64_t{2} << 20;  // x86-64 huge page
constexpr uint64_t kMaxSize = uint64_t{1} << 56;

[[noreturn]] void out_of_memory(uint64_t size, const char* how) {
  throw sdk::Error{KILN_STATUS_RESOURCE_EXHAUSTED,
                   "cannot allocate " + std::to_string(size) + " bytes of host memory (" + how + "; " +
                       std::to_string(memory_available() >> 20) + " MiB available)"};
}

// Populates fresh large mappings on a background thread (MADV_POPULATE_WRITE), so their page
// faults overlap with whatever the host does next - typically compiling the kernel that will
// write them - instead of stalling that kernel. Populating changes no contents, so a kernel may
// run on the buffer while it is still being populated.
class Prefaulter {
 public:
  void submit(std::byte* data, uint64_t length) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!worker_.joinable()) worker_ = std::thread([this] { loop(); });
    queue_.push_back({data, length});
    cv_.notify_one();
  }

  // Before a mapping goes away: drop its job, or wait for the chunk being populated.
  void forget(std::byte* data) {
    std::unique_lock<std::mutex> lock(mu_);
    queue_.erase(std::remove_if(queue_.begin(), queue_.end(), [&](const Job& j) { return j.data == data; }), queue_.end());
    if (running_ == data) cancel_ = true;
    done_.wait(lock, [&] { return running_ != data; });
  }

  ~Prefaulter() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      queue_.clear();
      cancel_ = true;
    }
    cv_.notify_one();
    if (worker_.joinable()) worker_.join();
  }

 private:
  struct Job {
    std::byte* data;
    uint64_t length;
  };

  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      Job job = queue_.front();
      queue_.pop_front();
      running_ = job.data;
      cancel_ = false;
      // In chunks, so forget() waits for one chunk at most.
      for (uint64_t off = 0; off < job.length && !cancel_; off += kChunk) {
        lock.unlock();
        int rc = madvise(job.data + off, std::min(kChunk, job.length - off), kPopulateWrite);
        lock.lock();
        if (rc != 0) break;  // older kernel (EINVAL) or no memory: the kernel faults the pages itself
      }
      running_ = nullptr;
      done_.notify_all();
    }
  }

  static constexpr uint64_t kChunk = uint64_t{8} << 20;
  static constexpr int kPopulateWrite = 23;  // MADV_POPULATE_WRITE (Linux 5.14), missing from older headers
  std::mutex mu_;
  std::condition_variable cv_, done_;
  std::deque<Job> queue_;
  std::byte* running_ = nullptr;
  bool cancel_ = false, stop_ = false;
  std::thread worker_;
};

Prefaulter& prefaulter() {
  static Prefaulter p;
  return p;
}

}  // namespace

CpuBuffer::~CpuBuffer() {
  if (mapped_) {
    prefaulter().forget(data);
    munmap(data, mapped_);
  } else {
    std::free(data);
  }
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
    prefaulter().submit(b->data, length);
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
