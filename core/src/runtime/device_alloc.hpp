// runtime/device_alloc.hpp - plugin-device memory through the runtime's allocation cache.
//
// Freed device buffers are kept per (device, size) and handed out again before asking the
// plugin, which avoids allocator round trips (and, on CPU, page faults) in loops.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

struct kiln_buffer;

namespace kiln {
class Device;
}

namespace kiln::runtime {

std::shared_ptr<Device> open_device(const std::string& device);
kiln_buffer* device_alloc(const std::shared_ptr<Device>& dev, uint64_t bytes);
void device_free(const std::shared_ptr<Device>& dev, kiln_buffer* buf, uint64_t bytes);

class Storage;
// Device -> host copy of the first `bytes` of a storage.
void device_read(Storage& s, void* dst, uint64_t bytes);

struct DeviceMemory {
  uint64_t live_bytes = 0, peak_bytes = 0, cached_bytes = 0, allocations = 0, cache_hits = 0;
};
DeviceMemory device_memory(const std::string& device);
void reset_device_peak(const std::string& device);
void clear_device_cache();

}  // namespace kiln::runtime
