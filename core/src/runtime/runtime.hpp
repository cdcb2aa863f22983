// runtime/runtime.hpp - device names and running schedules.
#pragma once
#include <string>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln::runtime {

// The canonical name of a device string: "ref" (the built-in reference executor), or a plugin
// device resolved through the registry ("" = the default device: KILN_DEVICE, as the registry's
// settings read it, else the registry's rule; aliases; "cpu" -> "cpu:0").
std::string canonical_device(const std::string& device);

// Runs schedule items in order on their devices: prepares them (runtime/prepared.hpp; each device
// name resolved once per call) and launches them. Realize runs a cached schedule's prepared
// kernels instead, which resolve nothing.
void run_schedule(const std::vector<ExecItem>& items);

class Storage;
// Copies n bytes between storages on different devices (at least one a plugin device): the
// plugin's own copy when both are one device that has it, its copy_peer when they are two devices
// of one plugin that has that, else through host memory in chunks of kStagingChunk bytes (a large
// tensor is never held twice in host memory).
inline constexpr uint64_t kStagingChunk = uint64_t{8} << 20;
void copy_between_devices(Storage& dst, Storage& src, uint64_t n);

}  // namespace kiln::runtime
