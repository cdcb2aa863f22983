// plugins/cuda/cuda_api.hpp - the CUDA driver API (libcuda.so.1), loaded at run time.
//
// The plugin links neither libcuda nor the toolkit: a machine without an NVIDIA driver must still
// load the plugin, compile PTX offline and hear why it cannot run kernels. cuda() dlopens
// libcuda.so.1 on first use (thread-safe) and resolves every function below. No CUDA header is
// needed to build: the few types, enum values and prototypes are declared here, from the driver
// API's stable ABI (the `_v2` entry points are the ones cuda.h has mapped its names to since
// CUDA 4/5; the primary context API since CUDA 7). Errors are reported by name:
// "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (218)".
#pragma once
#include <cstddef>
#include <string>

#include "kiln/sdk.hpp"

namespace kiln::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
inline constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
inline constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
inline constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
inline constexpr CUresult CUDA_ERROR_INVALID_IMAGE = 200;
inline constexpr CUresult CUDA_ERROR_INVALID_PTX = 218;
inline constexpr CUresult CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222;
inline constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
inline constexpr CUresult CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701;
inline constexpr CUresult CUDA_ERROR_INVALID_CONFIGURATION = 9;

// CUdevice_attribute values used for props and target caps
enum CuAttr : int {
  kMaxThreadsPerBlock = 1,
  kMaxBlockDimX = 2,  // Y = 3, Z = 4
  kMaxGridDimX = 5,   // Y = 6, Z = 7
  kMaxSharedMemoryPerBlock = 8,
  kWarpSize = 10,
  kClockRate = 13,
  kMultiprocessorCount = 16,
  kComputeCapabilityMajor = 75,
  kComputeCapabilityMinor = 76,
};

// CUjit_option values for cuModuleLoadDataEx's error log
inline constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
inline constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

struct CudaApi {
  std::string library;
  CUresult (*cuInit)(unsigned int flags) = nullptr;
  CUresult (*cuDriverGetVersion)(int* version) = nullptr;
  CUresult (*cuGetErrorName)(CUresult error, const char** name) = nullptr;
  CUresult (*cuDeviceGetCount)(int* count) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal) = nullptr;
  CUresult (*cuDeviceGetName)(char* name, int len, CUdevice device) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute, CUdevice device) = nullptr;
  CUresult (*cuDeviceTotalMem_v2)(size_t* bytes, CUdevice device) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* ctx, CUdevice device) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice device) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext ctx) = nullptr;
  CUresult (*cuMemGetInfo_v2)(size_t* free_bytes, size_t* total) = nullptr;
  CUresult (*cuMemAlloc_v2)(CUdeviceptr* ptr, size_t bytes) = nullptr;
  CUresult (*cuMemFree_v2)(CUdeviceptr ptr) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr ptr, unsigned char value, size_t n, CUstream stream) = nullptr;
  CUresult (*cuMemcpyHtoDAsync_v2)(CUdeviceptr dst, const void* src, size_t n, CUstream stream) = nullptr;
  CUresult (*cuMemcpyDtoHAsync_v2)(void* dst, CUdeviceptr src, size_t n, CUstream stream) = nullptr;
  CUresult (*cuMemcpyDtoDAsync_v2)(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream) = nullptr;
  CUresult (*cuModuleLoadDataEx)(CUmodule* module, const void* image, unsigned int n_options, int* options,
                                 void** values) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule module) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction* fn, CUmodule module, const char* name) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                             unsigned int by, unsigned int bz, unsigned int shared_bytes, CUstream stream,
                             void** params, void** extra) = nullptr;
  CUresult (*cuStreamCreate)(CUstream* stream, unsigned int flags) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream stream) = nullptr;
  CUresult (*cuStreamDestroy_v2)(CUstream stream) = nullptr;
  CUresult (*cuEventCreate)(CUevent* event, unsigned int flags) = nullptr;
  CUresult (*cuEventRecord)(CUevent event, CUstream stream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent event) = nullptr;
  CUresult (*cuEventElapsedTime)(float* ms, CUevent start, CUevent end) = nullptr;
  CUresult (*cuEventDestroy_v2)(CUevent event) = nullptr;
};

// The environment variable naming the driver library to load instead of libcuda.so.1 (tests
// point it at a file that is not a driver, to take the "no driver" path on any machine).
inline constexpr const char* kDriverEnv = "KILN_CUDA_DRIVER";

// The loaded driver; throws sdk::Error{UNAVAILABLE} saying what is missing when libcuda.so.1 or
// one of its functions is (the failure is remembered).
const CudaApi& cuda();

// "CUDA_ERROR_NO_DEVICE" (from the driver when it is loaded, else the number).
std::string cuda_error_name(CUresult status);

// Throws sdk::Error for status != CUDA_SUCCESS: "<what> failed: CUDA_ERROR_X (code)". Out of
// memory becomes RESOURCE_EXHAUSTED, invalid values/images/PTX INVALID_ARGUMENT, no device
// UNAVAILABLE, the rest INTERNAL.
void cuda_check(CUresult status, const std::string& what);

}  // namespace kiln::cuda
