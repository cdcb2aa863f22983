// runtime/runtime.hpp - device names and running schedules.
#pragma once
#include <string>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln::runtime {

// The canonical name of a device string: "ref" (the built-in reference executor), or a plugin
// device resolved through the registry ("" = the default device, aliases, "cpu" -> "cpu:0").
std::string canonical_device(const std::string& device);

// Runs schedule items in order on their devices.
void run_schedule(const std::vector<ExecItem>& items);

class Storage;
// Copies n bytes between storages on different devices (at least one a plugin device).
void copy_between_devices(Storage& dst, Storage& src, uint64_t n);
// Compiles (cached) and launches a kernel item on its plugin device.
void run_device_kernel(const ExecItem& e);

}  // namespace kiln::runtime
