// runtime/devices.cpp - plugin devices for the runtime: names, memory (with a cache of freed
// allocations) and copies between devices.
#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "plugin/registry.hpp"
#include "runtime/buffer.hpp"
#include "runtime/device_alloc.hpp"
#include "runtime/free_cache.hpp"
#include "runtime/runtime.hpp"
#include "support/check.hpp"

namespace kiln::runtime {

namespace {

constexpr uint64_t kCacheLimit = uint64_t{2} << 30;  // bytes of freed buffers kept per device

struct Pool {
  std::mutex mu;
  struct PerDevice {
    DeviceMemory mem;
    FreeCache<kiln_buffer*> free{kCacheLimit};  // freed buffers by size (free_cache.hpp)
    std::shared_ptr<Device> dev;
    // gives a buffer back to the plugin (the cache let go of it)
    void release(kiln_buffer* b, uint64_t size) {
      mem.live_bytes -= size;
      dev->free(b);
    }
  };
  std::map<std::string, PerDevice> by_device;
};
Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: buffers may be freed during static destruction
  return *p;
}

uint64_t rounded(uint64_t bytes) { return bytes ? (bytes + 63) & ~uint64_t{63} : 64; }

}  // namespace

std::string canonical_device(const std::string& device) {
  Registry& r = Registry::get();
  const std::string& d = device.empty() ? r.settings().device : device;  // settings().device: KILN_DEVICE, read once
  if (is_host_memory(d)) return d;
  return d.empty() ? r.default_device() : r.resolve(d);
}

std::shared_ptr<Device> open_device(const std::string& device) { return Registry::get().open(device); }

kiln_buffer* device_alloc(const std::shared_ptr<Device>& dev, uint64_t bytes) {
  uint64_t size = rounded(bytes);
  {
    std::lock_guard<std::mutex> lock(pool().mu);
    auto& pd = pool().by_device[dev->name()];
    pd.dev = dev;
    if (std::optional<kiln_buffer*> b = pd.free.take(size)) {
      pd.mem.cached_bytes = pd.free.bytes();
      ++pd.mem.cache_hits;
      return *b;
    }
  }
  kiln_buffer* b;
  try {
    b = dev->alloc(size);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::resource_exhausted) throw;
    clear_device_cache();  // out of memory: give the cached buffers back and try once more
    b = dev->alloc(size);
  }
  std::lock_guard<std::mutex> lock(pool().mu);
  auto& pd = pool().by_device[dev->name()];
  pd.mem.live_bytes += size;
  pd.mem.peak_bytes = std::max(pd.mem.peak_bytes, pd.mem.live_bytes);
  ++pd.mem.allocations;
  return b;
}

void device_free(const std::shared_ptr<Device>& dev, kiln_buffer* buf, uint64_t bytes) {
  uint64_t size = rounded(bytes);
  std::lock_guard<std::mutex> lock(pool().mu);
  auto& pd = pool().by_device[dev->name()];
  pd.dev = dev;
  pd.free.put(size, buf, [&](kiln_buffer* b, uint64_t n) { pd.release(b, n); });
  pd.mem.cached_bytes = pd.free.bytes();
}

DeviceMemory device_memory(const std::string& device) {
  std::lock_guard<std::mutex> lock(pool().mu);
  auto it = pool().by_device.find(device);
  return it == pool().by_device.end() ? DeviceMemory{} : it->second.mem;
}

void reset_device_peak(const std::string& device) {
  std::lock_guard<std::mutex> lock(pool().mu);
  auto it = pool().by_device.find(device);
  if (it != pool().by_device.end()) it->second.mem.peak_bytes = it->second.mem.live_bytes;
}

void clear_device_cache() {
  std::lock_guard<std::mutex> lock(pool().mu);
  for (auto& [name, pd] : pool().by_device) {
    pd.free.clear([&](kiln_buffer* b, uint64_t n) { pd.release(b, n); });
    pd.mem.cached_bytes = 0;
  }
}

// Storage is allocated on first use, and plugin_device() is set by that allocation: allocate
// before asking for the device (an empty() tensor is read before anything wrote it).
void device_read(Storage& s, void* dst, uint64_t bytes) {
  if (!bytes) return;
  s.ensure_allocated();
  s.plugin_device()->copy_out(dst, s.device_buffer(), 0, bytes);
}

void copy_between_devices(Storage& dst, Storage& src, uint64_t n) {
  if (!n) return;
  bool dst_host = dst.is_host(), src_host = src.is_host();
  if (src_host && !dst_host) {
    dst.ensure_allocated();
    dst.plugin_device()->copy_in(dst.device_buffer(), 0, src.host_ptr(), n);
    return;
  }
  if (!src_host && dst_host) {
    src.ensure_allocated();
    src.plugin_device()->copy_out(dst.host_ptr(), src.device_buffer(), 0, n);
    return;
  }
  dst.ensure_allocated();
  src.ensure_allocated();
  Device& to = *dst.plugin_device();
  Device& from = *src.plugin_device();
  if (&from == &to && to.has_device_copy()) {
    to.copy(dst.device_buffer(), 0, src.device_buffer(), 0, n);
    return;
  }
  if (&from != &to && from.backend() == to.backend() && to.has_peer_copy()) {  // two devices of one plugin
    to.copy_from_peer(dst.device_buffer(), 0, from, src.device_buffer(), 0, n);
    return;
  }
  // Different devices: through host memory, a chunk at a time, so a large tensor is not held twice
  // in host memory; the staging buffer is the thread's own and stays, so a JIT replay of a copy
  // allocates nothing.
  thread_local std::vector<char> staging;
  const uint64_t chunk = std::min<uint64_t>(n, kStagingChunk);
  if (staging.size() < chunk) staging.resize(chunk);
  for (uint64_t at = 0; at < n; at += chunk) {
    const uint64_t len = std::min(chunk, n - at);
    src.plugin_device()->copy_out(staging.data(), src.device_buffer(), at, len);
    dst.plugin_device()->copy_in(dst.device_buffer(), at, staging.data(), len);
  }
}

}  // namespace kiln::runtime
