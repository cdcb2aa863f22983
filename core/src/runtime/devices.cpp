// runtime/devices.cpp - TEMPORARY until the plugin registry lands: only "ref" exists.
#include "runtime/buffer.hpp"
#include "runtime/device_alloc.hpp"
#include "runtime/runtime.hpp"
#include "support/check.hpp"
#include "support/env.hpp"

namespace kiln::runtime {

std::string canonical_device(const std::string& device) {
  std::string d = device.empty() ? getenv_str("KILN_DEVICE", kRefDevice) : device;
  if (d == kRefDevice || d == kHostDevice) return d;
  fail(ErrorCode::not_found, "unknown device '", d, "'; available: ref");
}
std::shared_ptr<Device> open_device(const std::string& device) { fail(ErrorCode::not_found, "no device ", device); }
kiln_buffer* device_alloc(const std::shared_ptr<Device>&, uint64_t) { KILN_UNREACHABLE("no plugin devices"); }
void device_free(const std::shared_ptr<Device>&, kiln_buffer*, uint64_t) {}
DeviceMemory device_memory(const std::string&) { return {}; }
void reset_device_peak(const std::string&) {}
void clear_device_cache() {}
void device_read(Storage&, void*, uint64_t) { KILN_UNREACHABLE("no plugin devices"); }
void copy_between_devices(Storage&, Storage&, uint64_t) { KILN_UNREACHABLE("no plugin devices"); }
void run_device_kernel(const ExecItem& e) { fail(ErrorCode::unimplemented, "device ", e.device, " cannot run kernels yet"); }

}  // namespace kiln::runtime

namespace kiln {
std::string default_device() { return runtime::canonical_device(""); }
std::vector<std::string> devices() { return {"ref"}; }
}  // namespace kiln
