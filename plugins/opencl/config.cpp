// plugins/opencl/config.cpp - validating the opencl backend's options.
#include "config.hpp"

namespace kiln::opencl {

OpenclConfig read_config(const sdk::Options& o) {
  OpenclConfig c;
  for (const std::string& key : o.unknown_keys({"devices", "build_options", "shared_memory", "prewarm", "vector_width", "frontend", "clang"}))
    sdk::log(KILN_LOG_WARNING, "unknown option '" + key + "' (known: devices, build_options, shared_memory, prewarm, vector_width, frontend, clang)");
  std::string devices = o.get_string("devices", "all");
  if (devices == "all") c.devices = DeviceType::all;
  else if (devices == "gpu") c.devices = DeviceType::gpu;
  else if (devices == "cpu") c.devices = DeviceType::cpu;
  else if (devices == "accelerator") c.devices = DeviceType::accelerator;
  else
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT,
                     "option 'devices' must be \"all\", \"gpu\", \"cpu\" or \"accelerator\", got \"" + devices + "\""};
  c.build_options = o.get_string("build_options", "");
  std::string shared = o.get_string("shared_memory", "auto");
  if (shared == "auto") c.shared_memory = SharedMemory::automatic;
  else if (shared == "on") c.shared_memory = SharedMemory::on;
  else if (shared == "off") c.shared_memory = SharedMemory::off;
  else
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "option 'shared_memory' must be \"auto\", \"on\" or \"off\", got \"" + shared + "\""};
  std::string frontend = o.get_string("frontend", "auto");
  if (frontend == "auto") c.frontend = Frontend::automatic;
  else if (frontend == "driver") c.frontend = Frontend::driver;
  else if (frontend == "clang") c.frontend = Frontend::clang;
  else
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "option 'frontend' must be \"auto\", \"driver\" or \"clang\", got \"" + frontend + "\""};
  c.clang = o.get_string("clang", "clang-15");
  if (c.clang.empty()) throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "option 'clang' must name a program, got \"\""};
  c.prewarm = o.get_bool("prewarm", true);
  int64_t width = o.get_int("vector_width", 0);
  if (width != 0 && width != 1 && width != 2 && width != 4 && width != 8 && width != 16)
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT,
                     "option 'vector_width' must be 0 (the device's), 1, 2, 4, 8 or 16, got " + std::to_string(width)};
  c.vector_width = static_cast<uint32_t>(width);
  return c;
}

}  // namespace kiln::opencl
