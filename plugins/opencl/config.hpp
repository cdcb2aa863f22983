// plugins/opencl/config.hpp - the opencl backend's [backend.options].
//
//   devices       = "all"   which OpenCL devices become kiln devices: "all", "gpu", "cpu",
//                           "accelerator"
//   build_options = ""      extra clBuildProgram options for every kernel (e.g. "-cl-mad-enable");
//                           part of the compile cache key
//   shared_memory = "auto"  whether kernels may use workgroup-shared memory and barriers
//                           (grouped reductions): "auto" where it is dedicated memory
//                           (CL_DEVICE_LOCAL_MEM_TYPE = CL_LOCAL), "on", "off"
//   vector_width  = 0       widest vectors kernels use: 0 = the device's preferred float width
//                           (at most 8 on CPU devices), else 1, 2, 4, 8 or 16
//   vector_memory_only = false  true: vectors in loads and stores only, arithmetic per lane
//                           (KILN_TARGET_VECTOR_MEMORY_ONLY, what CUDA's float4 gets), so that
//                           path of the core runs on PoCL in CI (tests/opencl/vector_memory_only.toml)
//   frontend      = "auto"  how OpenCL C becomes a program: "driver" = clBuildProgram from source
//                           (any driver); "clang" = clang compiles it to LLVM bitcode that the driver
//                           builds as a binary (PoCL CPU devices only: skips PoCL's ~150 ms front
//                           end per build; see frontend.hpp); "auto" = clang where the device is
//                           PoCL on the CPU and clang is installed, falling back to the driver (with
//                           a warning) if clang fails where the driver does not
//   clang         = "clang-15"  the clang for frontend "clang"/"auto" (a name in PATH, or a path)
//   streaming_bytes = 0     outputs this large are stored past the caches: 0 = the device's global
//                           cache size (CL_DEVICE_GLOBAL_MEM_CACHE_SIZE)
//   prewarm       = true    build a trivial kernel in the background soon after a device opens
//                           (at its first alloc, or 50 ms later), so the driver's compiler is
//                           initialised (PoCL: ~0.7 s) before the first real kernel needs it;
//                           false saves that CPU time when every kernel comes from the compile cache
//   pocl_kernel_cache = true  false turns PoCL's own cache of built programs off for this process
//                           (POCL_KERNEL_CACHE=0, set before the ICD loader loads PoCL; a
//                           POCL_KERNEL_CACHE in the environment wins); `kiln bench` sets it false
//                           so every `first` is measured with an empty driver cache
#pragma once
#include <string>

#include "kiln/sdk.hpp"

namespace kiln::opencl {

// In the order of the options' names (read_config maps them by position).
enum class DeviceType { all, gpu, cpu, accelerator };
enum class SharedMemory { automatic, on, off };
enum class Frontend { automatic, driver, clang };

struct OpenclConfig {
  DeviceType devices = DeviceType::all;
  std::string build_options;
  SharedMemory shared_memory = SharedMemory::automatic;
  Frontend frontend = Frontend::automatic;
  std::string clang = "clang-15";
  bool prewarm = true;
  uint32_t vector_width = 0;
  bool vector_memory_only = false;
  uint64_t streaming_bytes = 0;
  bool pocl_kernel_cache = true;
};

// Throws sdk::Error{INVALID_ARGUMENT} naming a bad option; logs unknown keys as warnings.
OpenclConfig read_config(const sdk::Options& options);

// Applies pocl_kernel_cache to the process environment; before anything loads the ICD (the probe).
void apply_pocl_kernel_cache(const sdk::Options& options);

}  // namespace kiln::opencl
