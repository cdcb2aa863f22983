// plugins/opencl/cl_api.hpp - the OpenCL API, loaded at run time from the ICD loader.
//
// The plugin does not link libOpenCL: a machine without an ICD loader must still be able to load
// the plugin and hear why it cannot be used ("libOpenCL.so.1 not found: install ocl-icd-libopencl1
// and a driver"). cl() dlopens libOpenCL.so.1 on first use (thread-safe) and resolves every entry
// point this plugin calls; a missing loader or symbol throws sdk::Error{UNAVAILABLE}.
//
// Every OpenCL status that is not CL_SUCCESS is reported by its name (cl_check):
//   "clBuildProgram failed: CL_BUILD_PROGRAM_FAILURE (-11)".
#pragma once
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <string>

#include "kiln/sdk.hpp"

namespace kiln::opencl {

struct ClApi {
  std::string library;  // the loader that was opened (for messages)
#define KILN_CL_FUNCTIONS(X)                                                                                         \
  X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo) X(clCreateContext)                 \
  X(clReleaseContext) X(clCreateCommandQueue) X(clReleaseCommandQueue) X(clCreateBuffer) X(clCreateSubBuffer)       \
  X(clReleaseMemObject) X(clCreateProgramWithSource) X(clCreateProgramWithBinary) X(clBuildProgram)                 \
  X(clGetProgramInfo) X(clGetProgramBuildInfo) X(clRetainProgram) X(clReleaseProgram) X(clCreateKernel)             \
  X(clGetKernelInfo) X(clGetKernelWorkGroupInfo) X(clGetKernelArgInfo) X(clReleaseKernel) X(clSetKernelArg)          \
  X(clEnqueueNDRangeKernel)                                                                                          \
  X(clEnqueueWriteBuffer) X(clEnqueueReadBuffer) X(clEnqueueCopyBuffer) X(clEnqueueFillBuffer) X(clWaitForEvents)   \
  X(clGetEventProfilingInfo) X(clReleaseEvent) X(clFinish) X(clFlush)
#define KILN_CL_MEMBER(name) decltype(&::name) name = nullptr;
  KILN_CL_FUNCTIONS(KILN_CL_MEMBER)
#undef KILN_CL_MEMBER
};

// The loaded API. Throws sdk::Error{UNAVAILABLE} (with what to install) when libOpenCL.so.1 or one
// of its functions is missing; the failure is remembered, so later calls fail the same way.
const ClApi& cl();

// "CL_INVALID_KERNEL_ARGS", or "unknown OpenCL error" for codes outside the standard tables.
const char* cl_error_name(cl_int status);

// Throws sdk::Error for status != CL_SUCCESS: "<what> failed: CL_NAME (code)". Out-of-memory
// statuses become RESOURCE_EXHAUSTED, invalid-argument statuses INVALID_ARGUMENT, the rest INTERNAL.
void cl_check(cl_int status, const char* what);
[[noreturn]] void cl_fail(cl_int status, const std::string& what);

// String and scalar device/platform queries (throw through cl_check).
std::string device_string(cl_device_id device, cl_device_info what);
std::string platform_string(cl_platform_id platform, cl_platform_info what);
template <typename T>
T device_value(cl_device_id device, cl_device_info what) {
  T value{};
  cl_check(cl().clGetDeviceInfo(device, what, sizeof value, &value, nullptr), "clGetDeviceInfo");
  return value;
}

}  // namespace kiln::opencl
