// plugins/opencl/config.cpp - validating the opencl backend's options.
#include "config.hpp"

#include <cstdlib>

namespace kiln::opencl {

OpenclConfig read_config(const sdk::Options& o) {
  OpenclConfig c;
  for (const std::string& key : o.unknown_keys({"devices", "build_options", "shared_memory", "prewarm", "vector_width", "frontend", "clang", "streaming_bytes", "pocl_kernel_cache", "vector_memory_only"}))
    sdk::log(KILN_LOG_WARNING, "unknown option '" + key + "' (known: devices, build_options, shared_memory, prewarm, vector_width, frontend, clang, streaming_bytes, pocl_kernel_cache, vector_memory_only)");
  c.devices = static_cast<DeviceType>(o.get_choice("devices", "all", {"all", "gpu", "cpu", "accelerator"}));
  c.build_options = o.get_string("build_options", "");
  c.shared_memory = static_cast<SharedMemory>(o.get_choice("shared_memory", "auto", {"auto", "on", "off"}));
  c.frontend = static_cast<Frontend>(o.get_choice("frontend", "auto", {"auto", "driver", "clang"}));
  c.clang = o.get_string("clang", "clang-15");
  if (c.clang.empty()) throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "option 'clang' must name a program, got \"\""};
  c.prewarm = o.get_bool("prewarm", true);
  int64_t width = o.get_int("vector_width", 0);
  if (width != 0 && width != 1 && width != 2 && width != 4 && width != 8 && width != 16)
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT,
                     "option 'vector_width' must be 0 (the device's), 1, 2, 4, 8 or 16, got " + std::to_string(width)};
  c.vector_width = static_cast<uint32_t>(width);
  c.vector_memory_only = o.get_bool("vector_memory_only", false);
  int64_t streaming = o.get_int("streaming_bytes", 0);
  if (streaming < 0)
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT,
                     "option 'streaming_bytes' must be 0 (the device's cache size) or a byte count, got " + std::to_string(streaming)};
  c.streaming_bytes = static_cast<uint64_t>(streaming);
  c.pocl_kernel_cache = o.get_bool("pocl_kernel_cache", true);
  return c;
}

void apply_pocl_kernel_cache(const sdk::Options& o) {
  // PoCL reads it when the platform initialises; a value the user set wins (overwrite 0)
  if (!o.get_bool("pocl_kernel_cache", true)) setenv("POCL_KERNEL_CACHE", "0", 0);
}

}  // namespace kiln::opencl
