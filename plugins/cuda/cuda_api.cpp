// plugins/cuda/cuda_api.cpp - loading libcuda.so.1 and naming its errors.
#include "cuda_api.hpp"

#include <dlfcn.h>

#include <cstdlib>

namespace kiln::cuda {

namespace {

struct Loaded {
  CudaApi api;
  std::string error;
};

Loaded load() {
  Loaded l;
  const char* env = std::getenv(kDriverEnv);
  l.api.library = env && *env ? env : "libcuda.so.1";
  void* handle = dlopen(l.api.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    l.error = "no CUDA driver (" + std::string(e ? e : l.api.library) +
              "); install the NVIDIA driver to run kernels on NVIDIA GPUs (compiling PTX needs no driver: "
              "KILN_CUDA_OFFLINE_ARCH=sm_90 or `kiln compile --backend cuda --arch sm_90`)";
    return l;
  }
#define KILN_CUDA_RESOLVE(name)                                                                            \
  l.api.name = reinterpret_cast<decltype(l.api.name)>(dlsym(handle, #name));                               \
  if (!l.api.name) {                                                                                       \
    l.error = l.api.library + " has no " #name ": not a CUDA driver, or one too old (CUDA 11 or newer is needed)"; \
    return l;                                                                                              \
  }
  KILN_CUDA_RESOLVE(cuInit) KILN_CUDA_RESOLVE(cuDriverGetVersion) KILN_CUDA_RESOLVE(cuGetErrorName)
  KILN_CUDA_RESOLVE(cuDeviceGetCount) KILN_CUDA_RESOLVE(cuDeviceGet) KILN_CUDA_RESOLVE(cuDeviceGetName)
  KILN_CUDA_RESOLVE(cuDeviceGetAttribute) KILN_CUDA_RESOLVE(cuDeviceTotalMem_v2)
  KILN_CUDA_RESOLVE(cuDevicePrimaryCtxRetain) KILN_CUDA_RESOLVE(cuDevicePrimaryCtxRelease_v2)
  KILN_CUDA_RESOLVE(cuCtxSetCurrent) KILN_CUDA_RESOLVE(cuMemGetInfo_v2)
  KILN_CUDA_RESOLVE(cuMemAlloc_v2) KILN_CUDA_RESOLVE(cuMemFree_v2) KILN_CUDA_RESOLVE(cuMemsetD8Async) KILN_CUDA_RESOLVE(cuMemcpyHtoDAsync_v2)
  KILN_CUDA_RESOLVE(cuMemcpyDtoHAsync_v2) KILN_CUDA_RESOLVE(cuMemcpyDtoDAsync_v2)
  KILN_CUDA_RESOLVE(cuModuleLoadDataEx) KILN_CUDA_RESOLVE(cuModuleUnload) KILN_CUDA_RESOLVE(cuModuleGetFunction)
  KILN_CUDA_RESOLVE(cuLaunchKernel) KILN_CUDA_RESOLVE(cuStreamCreate) KILN_CUDA_RESOLVE(cuStreamSynchronize)
  KILN_CUDA_RESOLVE(cuStreamDestroy_v2) KILN_CUDA_RESOLVE(cuEventCreate) KILN_CUDA_RESOLVE(cuEventRecord)
  KILN_CUDA_RESOLVE(cuEventSynchronize) KILN_CUDA_RESOLVE(cuEventElapsedTime) KILN_CUDA_RESOLVE(cuEventDestroy_v2)
#undef KILN_CUDA_RESOLVE
  return l;  // never unloaded, like the plugin itself
}

}  // namespace

const CudaApi& cuda() {
  static const Loaded loaded = load();
  if (!loaded.error.empty()) throw sdk::Error{KILN_STATUS_UNAVAILABLE, loaded.error};
  return loaded.api;
}

std::string cuda_error_name(CUresult status) {
  const char* name = nullptr;
  try {
    if (cuda().cuGetErrorName(status, &name) != CUDA_SUCCESS) name = nullptr;
  } catch (const sdk::Error&) {
  }
  if (name) return name;
  switch (status) {  // the driver could not name it (a stub library names nothing)
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY (the toolkit's stub libcuda, not a driver)";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    default: return "CUresult " + std::to_string(status);
  }
}

void cuda_check(CUresult status, const std::string& what) {
  if (status == CUDA_SUCCESS) return;
  kiln_status code = KILN_STATUS_INTERNAL;
  switch (status) {
    case CUDA_ERROR_OUT_OF_MEMORY: code = KILN_STATUS_RESOURCE_EXHAUSTED; break;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_NOT_FOUND:
    case CUDA_ERROR_INVALID_CONFIGURATION:
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: code = KILN_STATUS_INVALID_ARGUMENT; break;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_STUB_LIBRARY: code = KILN_STATUS_UNAVAILABLE; break;
    default: break;
  }
  throw sdk::Error{code, what + " failed: " + cuda_error_name(status) + " (" + std::to_string(status) + ")"};
}

}  // namespace kiln::cuda
