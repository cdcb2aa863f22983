// runtime/buffer.cpp - the BUFFER -> Storage table, lazy allocation and the allocation cache.
#include "runtime/buffer.hpp"

#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "plugin/device.hpp"
#include "runtime/device_alloc.hpp"
#include "runtime/free_cache.hpp"
#include "support/check.hpp"

namespace kiln::runtime {

namespace {

std::atomic<int64_t> g_next_unique{1};

// unique id -> storage; entries leave when their BUFFER node dies
struct Table {
  std::mutex mu;
  std::unordered_map<int64_t, std::shared_ptr<Storage>> map;
};
Table& table() {
  static Table* t = new Table;  // never destroyed: BUFFER nodes may die during static destruction
  return *t;
}

void on_buffer_destroyed(const UOpNode* n) {
  const auto* ints = std::get_if<std::vector<int64_t>>(&n->arg);
  if (!ints || ints->empty()) return;
  std::shared_ptr<Storage> dead;  // released outside the lock
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.map.find((*ints)[0]);
  if (it == t.map.end()) return;
  dead = std::move(it->second);
  t.map.erase(it);
}

struct HookInstaller {
  HookInstaller() { set_destroy_hook(Ops::BUFFER, on_buffer_destroyed); }
} g_hook_installer;

// ---- host allocation cache: freed blocks kept by exact size (free_cache.hpp) ----
constexpr uint64_t kCacheLimit = uint64_t{2} << 30;  // bytes of free blocks kept per device

struct DeviceAccount {
  MemoryStats stats;
  FreeCache<void*> free_host{kCacheLimit};
  // gives a block back to the C library (the cache let go of it)
  void release(void* p, uint64_t size) {
    stats.live_bytes -= size;
    std::free(p);
  }
};
struct Accounts {
  std::mutex mu;
  std::map<std::string, DeviceAccount> by_device;
};
Accounts& accounts() {
  static Accounts* a = new Accounts;
  return *a;
}

constexpr uint64_t kHugeThreshold = 2u << 20;

void* host_alloc(const std::string& device, uint64_t bytes) {
  uint64_t size = bytes ? (bytes + 63) & ~uint64_t{63} : 64;
  {
    std::lock_guard<std::mutex> lock(accounts().mu);
    DeviceAccount& acc = accounts().by_device[device];
    if (std::optional<void*> p = acc.free_host.take(size)) {
      acc.stats.cached_bytes = acc.free_host.bytes();
      ++acc.stats.cache_hits;
      return *p;
    }
  }
  void* p = nullptr;
  if (posix_memalign(&p, size >= kHugeThreshold ? (2u << 20) : 64, size) != 0 || !p)
    fail(ErrorCode::resource_exhausted, "out of host memory allocating ", bytes, " bytes for device ", device);
  // big buffers: huge pages make first-touch page faults ~10x cheaper
  if (size >= kHugeThreshold) madvise(p, size, MADV_HUGEPAGE);
  std::lock_guard<std::mutex> lock(accounts().mu);
  DeviceAccount& acc = accounts().by_device[device];
  acc.stats.live_bytes += size;
  acc.stats.peak_bytes = std::max(acc.stats.peak_bytes, acc.stats.live_bytes);
  ++acc.stats.allocations;
  return p;
}

void host_free(const std::string& device, void* p, uint64_t bytes) {
  uint64_t size = bytes ? (bytes + 63) & ~uint64_t{63} : 64;
  std::lock_guard<std::mutex> lock(accounts().mu);
  DeviceAccount& acc = accounts().by_device[device];
  acc.free_host.put(size, p, [&](void* q, uint64_t n) { acc.release(q, n); });
  acc.stats.cached_bytes = acc.free_host.bytes();
}

}  // namespace

Storage::~Storage() {
  if (owner_) {  // adopted memory: the handle goes back to the plugin, the memory to its owner
    if (dev_buf_) dev_->free(dev_buf_);
    return;
  }
  if (host_) host_free(device_, host_, bytes_);
  if (dev_buf_) device_free(dev_, dev_buf_, bytes_);
}

std::shared_ptr<Storage> Storage::adopt(std::shared_ptr<Device> dev, kiln_buffer* buffer, uint64_t bytes,
                                        std::shared_ptr<void> owner) {
  auto s = std::make_shared<Storage>(dev->name(), bytes);
  s->dev_ = std::move(dev);
  s->dev_buf_ = buffer;
  s->owner_ = owner ? std::move(owner) : std::make_shared<int>(0);  // owner_ marks the storage adopted
  s->allocated_.store(true, std::memory_order_release);
  return s;
}

void Storage::reserve(uint64_t bytes) {
  KILN_CHECK(!allocated(), "cannot grow allocated storage");
  bytes_ = std::max(bytes_, bytes);
}

void Storage::ensure_allocated() {
  if (allocated()) return;
  ensure_allocated(is_host() ? nullptr : open_device(device_));
}

void Storage::ensure_allocated(const std::shared_ptr<Device>& dev) {
  if (allocated()) return;
  std::lock_guard<std::mutex> lock(alloc_mu_);
  if (allocated()) return;
  if (is_host()) {
    host_ = host_alloc(device_, bytes_);
  } else {
    KILN_CHECK(dev && dev->name() == device_, "storage on ", device_, " allocated on ", dev ? dev->name() : "host memory");
    dev_ = dev;
    dev_buf_ = device_alloc(dev_, bytes_);
  }
  allocated_.store(true, std::memory_order_release);
}

void* Storage::host_ptr() {
  KILN_CHECK(is_host(), "host_ptr() of device storage on ", device_);
  ensure_allocated();
  return host_;
}

kiln_buffer* Storage::device_buffer() {
  KILN_CHECK(!is_host(), "device_buffer() of host storage");
  ensure_allocated();
  return dev_buf_;
}

UOp new_buffer(const std::string& device, DType dtype, int64_t size) {
  int64_t id = g_next_unique.fetch_add(1, std::memory_order_relaxed);
  return UOp::make(Ops::BUFFER, dtype, {UOp::make(Ops::DEVICE, dtypes::void_, {}, Arg{device})},
                   Arg{std::vector<int64_t>{id, size}});
}

UOp new_host_buffer(DType dtype, int64_t size, const void* data) {
  UOp b = new_buffer(kHostDevice, dtype, size);
  auto s = storage_of(b);
  if (size) std::memcpy(s->host_ptr(), data, static_cast<size_t>(size) * dtype.itemsize());
  return b;
}

void read_buffer(const UOp& buffer, void* dst, uint64_t bytes) {
  auto s = storage_of(buffer);
  if (s->is_host()) std::memcpy(dst, s->host_ptr(), bytes);
  else device_read(*s, dst, bytes);
}

std::optional<UOp> wrap_host_memory(const std::string& device, DType dtype, int64_t size, void* data,
                                    std::shared_ptr<void> owner) {
  if (is_host_memory(device)) return std::nullopt;  // host/ref storage is kiln's own allocation
  std::shared_ptr<Device> dev = open_device(device);
  if (!dev->has_host_memory()) return std::nullopt;
  uint64_t bytes = static_cast<uint64_t>(size) * static_cast<uint64_t>(dtype.itemsize());
  kiln_buffer* buf = dev->wrap_host(data, bytes);
  if (!buf) return std::nullopt;
  UOp b = new_buffer(device, dtype, size);
  bind_storage(b, Storage::adopt(std::move(dev), buf, bytes, std::move(owner)));
  return b;
}

void* host_address_of(const UOp& buffer) {
  auto s = storage_of(buffer);
  if (s->is_host()) return s->host_ptr();
  s->ensure_allocated();
  Device& dev = *s->plugin_device();
  if (!dev.has_host_memory()) return nullptr;
  dev.synchronize();  // whatever the device still runs is done before the caller touches the memory
  return dev.host_address(s->device_buffer());
}

uint64_t buffer_bytes(const UOp& buffer) {
  return static_cast<uint64_t>(buffer.arg_ints()[1]) * static_cast<uint64_t>(buffer.dtype().itemsize());
}

const std::string& buffer_device(const UOp& buffer) { return buffer.src(0).arg_string(); }

std::shared_ptr<Storage> storage_of(const UOp& buffer) {
  KILN_CHECK(buffer.op() == Ops::BUFFER, "storage_of(", op_name(buffer.op()), ")");
  int64_t id = buffer.arg_ints()[0];
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto& slot = t.map[id];
  if (!slot) slot = std::make_shared<Storage>(buffer_device(buffer), buffer_bytes(buffer));
  return slot;
}

void storages_of(std::span<const UOp* const> buffers, std::shared_ptr<Storage>* out) {
  for (const UOp* b : buffers) KILN_CHECK(b->op() == Ops::BUFFER, "storage_of(", op_name(b->op()), ")");
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  for (const UOp* b : buffers) {
    auto& slot = t.map[b->arg_ints()[0]];
    if (!slot) slot = std::make_shared<Storage>(buffer_device(*b), buffer_bytes(*b));
    *out++ = slot;
  }
}

void bind_storage(const UOp& buffer, std::shared_ptr<Storage> storage) {
  int64_t id = buffer.arg_ints()[0];
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto& slot = t.map[id];
  KILN_CHECK(!slot || slot == storage, "buffer ", id, " already has storage");
  slot = std::move(storage);
}

MemoryStats memory_stats(const std::string& device) {
  std::lock_guard<std::mutex> lock(accounts().mu);
  MemoryStats s = accounts().by_device[device].stats;
  DeviceMemory d = device_memory(device);
  s.live_bytes += d.live_bytes;
  s.peak_bytes = std::max(s.peak_bytes, d.peak_bytes);
  s.cached_bytes += d.cached_bytes;
  s.allocations += d.allocations;
  s.cache_hits += d.cache_hits;
  return s;
}

void reset_peak(const std::string& device) {
  {
    std::lock_guard<std::mutex> lock(accounts().mu);
    auto& st = accounts().by_device[device].stats;
    st.peak_bytes = st.live_bytes;
  }
  reset_device_peak(device);
}

void clear_allocation_cache() {
  std::lock_guard<std::mutex> lock(accounts().mu);
  for (auto& [dev, acc] : accounts().by_device) {
    acc.free_host.clear([&](void* q, uint64_t n) { acc.release(q, n); });
    acc.stats.cached_bytes = 0;
  }
  clear_device_cache();
}

}  // namespace kiln::runtime
