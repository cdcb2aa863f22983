// plugins/cuda/config.hpp - the cuda backend's [backend.options], and the offline targets.
//
//   compiler = "auto"      "nvrtc", "clang", or "auto" (NVRTC when its library loads, else clang)
//   nvrtc    = ""          the libnvrtc.so to load ("" = KILN_CUDA_NVRTC, else the usual names)
//   clang    = "clang-15"  the clang for compiler = "clang"
//   flags    = []          extra compiler flags (a string or an array of strings); in the cache key
//   arch     = ""          compile for this arch instead of the GPU's ("sm_80"); offline devices
//                          always use their own arch
//   offline_arch = []      offline targets (a string or an array), after those of
//                          KILN_CUDA_OFFLINE_ARCH
//
// Offline targets: KILN_CUDA_OFFLINE_ARCH=sm_80,sm_90 (environment) and the option offline_arch
// add one device per arch after the real GPUs, cuda:N.. ("offline compiler for sm_90"). They
// render and compile kernels (`kiln compile --backend cuda --arch sm_90` sets the option), so the
// CUDA path is testable on a machine without an NVIDIA GPU; allocating or launching on them is
// UNAVAILABLE. The probe reads them (probe_with_options): offline targets alone make the backend
// usable.
#pragma once
#include <string>
#include <vector>

#include "compiler.hpp"
#include "kiln/sdk.hpp"

namespace kiln::cuda {

struct CudaConfig {
  CompilerConfig compiler;
  std::string arch;  // override ("" = the device's)
};

inline constexpr const char* kOfflineArchEnv = "KILN_CUDA_OFFLINE_ARCH";

// Throws sdk::Error{INVALID_ARGUMENT} naming a bad option; logs unknown keys as warnings.
CudaConfig read_config(const sdk::Options& options);

// The archs of KILN_CUDA_OFFLINE_ARCH (comma or space separated); throws INVALID_ARGUMENT for a
// name that is not a CUDA arch (sm_<digits>, optionally with a or f).
std::vector<std::string> offline_archs();
// The archs of the option offline_arch; throws INVALID_ARGUMENT naming the option.
std::vector<std::string> offline_archs(const sdk::Options& options);

}  // namespace kiln::cuda
