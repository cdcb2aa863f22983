// plugins/hip/hip_api.cpp - loading libamdhip64 and naming its errors.
#include "hip_api.hpp"

#include <dlfcn.h>

#include "../common/plugin_util.hpp"

namespace kiln::hip {

namespace {

struct Loaded {
  HipApi api;
  std::string error;
};

Loaded load() {
  Loaded l;
  std::string first_error;
  void* handle = plugins::open_first({"libamdhip64.so.5", "libamdhip64.so"}, l.api.library, first_error);
  if (!handle) {
    l.error = "libamdhip64.so.5 not found (" + first_error +
              "); install the HIP runtime (Debian/Ubuntu: apt-get install libamdhip64-5) to run kernels on AMD GPUs";
    return l;
  }
#define KILN_HIP_RESOLVE(name)                                                                          \
  l.api.name = reinterpret_cast<decltype(&::name)>(dlsym(handle, #name));                               \
  if (!l.api.name) {                                                                                    \
    l.error = l.api.library + " has no " #name ": the HIP runtime is too old (ROCm 5 or newer is needed)"; \
    return l;                                                                                           \
  }
  KILN_HIP_FUNCTIONS(KILN_HIP_RESOLVE)
  using MallocFn = hipError_t (*)(void**, size_t);
  l.api.hipMalloc = reinterpret_cast<MallocFn>(dlsym(handle, "hipMalloc"));
  if (!l.api.hipMalloc) {
    l.error = l.api.library + " has no hipMalloc";
    return l;
  }
#undef KILN_HIP_RESOLVE
  return l;  // never unloaded, like the plugin itself
}

}  // namespace

const HipApi& hip() {
  static const Loaded loaded = load();
  if (!loaded.error.empty()) throw sdk::Error{KILN_STATUS_UNAVAILABLE, loaded.error};
  return loaded.api;
}

std::string hip_error_name(hipError_t status) {
  const char* name = nullptr;
  try {
    name = hip().hipGetErrorName(status);
  } catch (const sdk::Error&) {
  }
  return name ? name : "hipError " + std::to_string(static_cast<int>(status));
}

void hip_check(hipError_t status, const std::string& what) {
  if (status == hipSuccess) return;
  kiln_status code = KILN_STATUS_INTERNAL;
  switch (status) {
    case hipErrorOutOfMemory: code = KILN_STATUS_RESOURCE_EXHAUSTED; break;
    case hipErrorInvalidValue:
    case hipErrorInvalidImage:
    case hipErrorInvalidKernelFile:
    case hipErrorNotFound:
    case hipErrorInvalidConfiguration: code = KILN_STATUS_INVALID_ARGUMENT; break;
    case hipErrorNoDevice:
    case hipErrorInvalidDevice: code = KILN_STATUS_UNAVAILABLE; break;
    default: break;
  }
  throw sdk::Error{code, what + " failed: " + hip_error_name(status) + " (" + std::to_string(static_cast<int>(status)) + ")"};
}

}  // namespace kiln::hip
