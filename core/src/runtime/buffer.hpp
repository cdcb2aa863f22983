// runtime/buffer.hpp - storage behind BUFFER nodes.
//
// A BUFFER node (arg = (unique id, elements), src = DEVICE) names storage; the storage itself is a
// Storage object bound to the unique id here. Binding is weak in one direction and strong in the
// other: the storage lives while its BUFFER node lives (a destroy hook unbinds it when the node
// dies), and several BUFFER nodes may share one Storage (the memory planner's aliasing). Storage
// is allocated on first use, from a per-device cache of freed allocations (exact-size LRU), so a
// loop that creates and drops same-sized tensors reuses memory instead of faulting in new pages.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "kiln/uop.hpp"

struct kiln_buffer;

namespace kiln {
class Device;
}

namespace kiln::runtime {

inline constexpr const char* kHostDevice = "host";  // host memory holding data given by the user
inline constexpr const char* kRefDevice = "ref";    // the built-in reference executor (host memory)

// Whether a device's buffers live in host memory: the two built-in devices above, which are no
// plugin devices (the one spelling of this predicate; Storage::is_host() asks it).
inline bool is_host_memory(std::string_view device) { return device == kHostDevice || device == kRefDevice; }

// Memory of one allocation: host memory (host/ref devices) or a plugin device buffer.
class Storage {
 public:
  Storage(std::string device, uint64_t bytes) : device_(std::move(device)), bytes_(bytes) {}
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  const std::string& device() const { return device_; }
  uint64_t bytes() const { return bytes_; }
  bool allocated() const { return allocated_.load(std::memory_order_acquire); }
  bool is_host() const { return is_host_memory(device_); }
  // Grows an unallocated storage (the memory planner sizes a group to its largest member).
  void reserve(uint64_t bytes);
  // Allocates on first use; host memory for host/ref devices, else the device's allocator.
  // Thread-safe: threads reading one never-written buffer (Tensor::empty) race to allocate it.
  void ensure_allocated();
  // The same with the handle of device() already resolved (a prepared kernel's), so allocating
  // resolves no device name; null for host memory.
  void ensure_allocated(const std::shared_ptr<Device>& dev);
  void* host_ptr();                  // host/ref devices only
  kiln_buffer* device_buffer();      // plugin devices only
  const std::shared_ptr<Device>& plugin_device() const { return dev_; }
  // Storage over memory someone else owns (wrap_host_memory): `buffer` is the device's wrap of it;
  // `owner` keeps the memory alive and is released after the buffer is freed (never cached).
  static std::shared_ptr<Storage> adopt(std::shared_ptr<Device> dev, kiln_buffer* buffer, uint64_t bytes,
                                        std::shared_ptr<void> owner);

 private:
  std::string device_;
  uint64_t bytes_;
  std::mutex alloc_mu_;
  std::atomic<bool> allocated_{false};  // set (release) after the fields below: reads need no lock
  void* host_ = nullptr;
  kiln_buffer* dev_buf_ = nullptr;
  std::shared_ptr<Device> dev_;
  std::shared_ptr<void> owner_;  // set for adopted memory
};

// A new BUFFER node on `device` for `size` elements of `dtype`; storage is allocated lazily.
UOp new_buffer(const std::string& device, DType dtype, int64_t size);
// A BUFFER on the host device holding a copy of `data` (size * itemsize bytes).
UOp new_host_buffer(DType dtype, int64_t size, const void* data);
// The storage of a BUFFER node (creating an unallocated one on first request).
std::shared_ptr<Storage> storage_of(const UOp& buffer);
// storage_of for many buffers under one lock of the table (a schedule's buffers: none per buffer).
void storages_of(std::span<const UOp* const> buffers, std::shared_ptr<Storage>* out);
// Makes `buffer` use `storage` (aliasing); the buffer must not have storage yet.
void bind_storage(const UOp& buffer, std::shared_ptr<Storage> storage);
uint64_t buffer_bytes(const UOp& buffer);
// Copies the first `bytes` bytes of a buffer to host memory.
void read_buffer(const UOp& buffer, void* dst, uint64_t bytes);
// Memory shared with other libraries (DLPack), on devices whose buffers are host memory (the cpu
// plugin; the host/ref devices): a BUFFER over `size` elements at `data` without a copy, or
// nullopt when the device cannot use that memory (not host memory, or the address lacks the
// alignment its kernels assume) and the caller must copy. `owner` keeps the memory alive; it is
// released when the buffer's storage dies.
std::optional<UOp> wrap_host_memory(const std::string& device, DType dtype, int64_t size, void* data,
                                    std::shared_ptr<void> owner);
// The host address of a buffer's memory (allocating it), or null when its device's memory is not
// host memory. The caller makes sure no launch uses the buffer while it reads or writes there.
void* host_address_of(const UOp& buffer);
const std::string& buffer_device(const UOp& buffer);

// Device memory accounting, for tests and KILN_DEBUG: bytes currently allocated (including the
// free-allocation cache) and the peak, per device.
struct MemoryStats {
  uint64_t live_bytes = 0, peak_bytes = 0, cached_bytes = 0;
  uint64_t allocations = 0, cache_hits = 0;
};
MemoryStats memory_stats(const std::string& device);
void reset_peak(const std::string& device);
// Releases every cached free allocation (tests, low-memory situations).
void clear_allocation_cache();

}  // namespace kiln::runtime
