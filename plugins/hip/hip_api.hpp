// plugins/hip/hip_api.hpp - the HIP runtime (libamdhip64), loaded at run time.
//
// The plugin does not link libamdhip64: compiling kernels needs only clang-15, and a machine
// without ROCm must still load the plugin and hear why it cannot run kernels. hip() dlopens
// libamdhip64.so.5 on first use (thread-safe) and resolves every function this plugin calls; the
// installed headers give the types and enums of that same runtime version. Errors are reported by
// name: "hipModuleLoadData failed: hipErrorInvalidImage (200)".
#pragma once
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>

#include <string>

#include "kiln/sdk.hpp"

namespace kiln::hip {

struct HipApi {
  std::string library;
#define KILN_HIP_FUNCTIONS(X)                                                                                     \
  X(hipInit) X(hipGetDeviceCount) X(hipGetDeviceProperties) X(hipSetDevice) X(hipGetErrorName)                  \
  X(hipFree) X(hipMemcpy) X(hipMemset) X(hipMemGetInfo) X(hipModuleLoadData) X(hipModuleUnload)                 \
  X(hipModuleGetFunction) X(hipModuleLaunchKernel) X(hipEventCreate) X(hipEventRecord) X(hipEventSynchronize)    \
  X(hipEventElapsedTime) X(hipEventDestroy) X(hipDeviceSynchronize) X(hipRuntimeGetVersion)
#define KILN_HIP_MEMBER(name) decltype(&::name) name = nullptr;
  KILN_HIP_FUNCTIONS(KILN_HIP_MEMBER)
#undef KILN_HIP_MEMBER
  hipError_t (*hipMalloc)(void** ptr, size_t size) = nullptr;  // the header overloads it with a template
};

// The loaded runtime; throws sdk::Error{UNAVAILABLE} naming what to install when
// libamdhip64.so.5 or one of its functions is missing (the failure is remembered).
const HipApi& hip();

// "hipErrorNoDevice" (from the runtime when it is loaded).
std::string hip_error_name(hipError_t status);

// Throws sdk::Error for status != hipSuccess: "<what> failed: hipErrorX (code)". Out-of-memory
// becomes RESOURCE_EXHAUSTED, invalid values/images INVALID_ARGUMENT, the rest INTERNAL.
void hip_check(hipError_t status, const std::string& what);

}  // namespace kiln::hip
