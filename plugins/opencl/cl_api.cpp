// plugins/opencl/cl_api.cpp - loading the ICD loader and naming OpenCL errors.
#include "cl_api.hpp"

#include <dlfcn.h>

#include "../common/plugin_util.hpp"

namespace kiln::opencl {

namespace {

struct Loaded {
  ClApi api;
  std::string error;  // why loading failed ("" when api is usable)
};

Loaded load() {
  Loaded l;
  // The versioned soname is what the runtime package installs; the bare name only comes with
  // the -dev package, so it is the fallback.
  std::string tried;
  void* handle = plugins::open_first({"libOpenCL.so.1", "libOpenCL.so"}, l.api.library, tried);
  if (!handle) {
    l.error = "libOpenCL.so.1 not found (" + tried +
              "); install an OpenCL ICD loader and a driver (Debian/Ubuntu: apt-get install ocl-icd-libopencl1 "
              "pocl-opencl-icd)";
    return l;
  }
#define KILN_CL_RESOLVE(name)                                                                                    \
  l.api.name = reinterpret_cast<decltype(&::name)>(dlsym(handle, #name));                                        \
  if (!l.api.name) {                                                                                             \
    l.error = l.api.library + " has no " #name ": the ICD loader is older than OpenCL 1.2; install a newer one"; \
    return l;                                                                                                    \
  }
  KILN_CL_FUNCTIONS(KILN_CL_RESOLVE)
#undef KILN_CL_RESOLVE
  return l;  // the handle stays open for the life of the process (plugins are never unloaded)
}

}  // namespace

const ClApi& cl() {
  static const Loaded loaded = load();  // thread-safe initialisation
  if (!loaded.error.empty()) throw sdk::Error{KILN_STATUS_UNAVAILABLE, loaded.error};
  return loaded.api;
}

const char* cl_error_name(cl_int s) {
  switch (s) {
#define N(code) \
  case code: return #code;
    N(CL_SUCCESS) N(CL_DEVICE_NOT_FOUND) N(CL_DEVICE_NOT_AVAILABLE) N(CL_COMPILER_NOT_AVAILABLE)
    N(CL_MEM_OBJECT_ALLOCATION_FAILURE) N(CL_OUT_OF_RESOURCES) N(CL_OUT_OF_HOST_MEMORY)
    N(CL_PROFILING_INFO_NOT_AVAILABLE) N(CL_MEM_COPY_OVERLAP) N(CL_IMAGE_FORMAT_MISMATCH)
    N(CL_IMAGE_FORMAT_NOT_SUPPORTED) N(CL_BUILD_PROGRAM_FAILURE) N(CL_MAP_FAILURE) N(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    N(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) N(CL_COMPILE_PROGRAM_FAILURE) N(CL_LINKER_NOT_AVAILABLE)
    N(CL_LINK_PROGRAM_FAILURE) N(CL_DEVICE_PARTITION_FAILED) N(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    N(CL_INVALID_VALUE) N(CL_INVALID_DEVICE_TYPE) N(CL_INVALID_PLATFORM) N(CL_INVALID_DEVICE) N(CL_INVALID_CONTEXT)
    N(CL_INVALID_QUEUE_PROPERTIES) N(CL_INVALID_COMMAND_QUEUE) N(CL_INVALID_HOST_PTR) N(CL_INVALID_MEM_OBJECT)
    N(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) N(CL_INVALID_IMAGE_SIZE) N(CL_INVALID_SAMPLER) N(CL_INVALID_BINARY)
    N(CL_INVALID_BUILD_OPTIONS) N(CL_INVALID_PROGRAM) N(CL_INVALID_PROGRAM_EXECUTABLE) N(CL_INVALID_KERNEL_NAME)
    N(CL_INVALID_KERNEL_DEFINITION) N(CL_INVALID_KERNEL) N(CL_INVALID_ARG_INDEX) N(CL_INVALID_ARG_VALUE)
    N(CL_INVALID_ARG_SIZE) N(CL_INVALID_KERNEL_ARGS) N(CL_INVALID_WORK_DIMENSION) N(CL_INVALID_WORK_GROUP_SIZE)
    N(CL_INVALID_WORK_ITEM_SIZE) N(CL_INVALID_GLOBAL_OFFSET) N(CL_INVALID_EVENT_WAIT_LIST) N(CL_INVALID_EVENT)
    N(CL_INVALID_OPERATION) N(CL_INVALID_GL_OBJECT) N(CL_INVALID_BUFFER_SIZE) N(CL_INVALID_MIP_LEVEL)
    N(CL_INVALID_GLOBAL_WORK_SIZE) N(CL_INVALID_PROPERTY) N(CL_INVALID_IMAGE_DESCRIPTOR)
    N(CL_INVALID_COMPILER_OPTIONS) N(CL_INVALID_LINKER_OPTIONS) N(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef N
    // newer than the OpenCL 1.2 headers this plugin compiles against (2.0-3.0), and the Linux
    // drivers' extension codes (values from the Khronos cl.h, cl_ext.h, cl_egl.h)
    case -69: return "CL_INVALID_PIPE_SIZE";
    case -70: return "CL_INVALID_DEVICE_QUEUE";
    case -71: return "CL_INVALID_SPEC_ID";
    case -72: return "CL_MAX_SIZE_RESTRICTION_EXCEEDED";
    case -1000: return "CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    case -1057: return "CL_DEVICE_PARTITION_FAILED_EXT";
    case -1058: return "CL_INVALID_PARTITION_COUNT_EXT";
    case -1059: return "CL_INVALID_PARTITION_NAME_EXT";
    case -1092: return "CL_EGL_RESOURCE_NOT_ACQUIRED_KHR";
    case -1093: return "CL_INVALID_EGL_OBJECT_KHR";
    case -1094: return "CL_INVALID_ACCELERATOR_INTEL";
    case -1095: return "CL_INVALID_ACCELERATOR_TYPE_INTEL";
    case -1096: return "CL_INVALID_ACCELERATOR_DESCRIPTOR_INTEL";
    case -1097: return "CL_ACCELERATOR_TYPE_NOT_SUPPORTED_INTEL";
    default: return "unknown OpenCL error";
  }
}

[[noreturn]] void cl_fail(cl_int status, const std::string& what) {
  kiln_status code = KILN_STATUS_INTERNAL;
  switch (status) {
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_RESOURCES:
    case CL_OUT_OF_HOST_MEMORY:
    case CL_INVALID_BUFFER_SIZE: code = KILN_STATUS_RESOURCE_EXHAUSTED; break;
    case CL_BUILD_PROGRAM_FAILURE:
    case CL_COMPILE_PROGRAM_FAILURE:
    case CL_INVALID_BINARY:
    case CL_INVALID_BUILD_OPTIONS:
    case CL_INVALID_KERNEL_NAME:
    case CL_INVALID_KERNEL_ARGS:
    case CL_INVALID_ARG_INDEX:
    case CL_INVALID_ARG_SIZE:
    case CL_INVALID_ARG_VALUE:
    case CL_INVALID_WORK_GROUP_SIZE:
    case CL_INVALID_WORK_ITEM_SIZE:
    case CL_INVALID_GLOBAL_WORK_SIZE:
    case CL_MISALIGNED_SUB_BUFFER_OFFSET:
    case CL_INVALID_VALUE: code = KILN_STATUS_INVALID_ARGUMENT; break;
    case CL_DEVICE_NOT_AVAILABLE:
    case CL_DEVICE_NOT_FOUND:
    case CL_COMPILER_NOT_AVAILABLE: code = KILN_STATUS_UNAVAILABLE; break;
    default: break;
  }
  throw sdk::Error{code, what + " failed: " + cl_error_name(status) + " (" + std::to_string(status) + ")"};
}

void cl_check(cl_int status, const char* what) {
  if (status != CL_SUCCESS) cl_fail(status, what);
}

namespace {

// clGetDeviceInfo/clGetPlatformInfo for a string: ask the size, then the bytes.
template <typename Object, typename Info>
std::string info_string(cl_int (*query)(Object, Info, size_t, void*, size_t*), Object object, Info what,
                        const char* name) {
  size_t n = 0;
  cl_check(query(object, what, 0, nullptr, &n), name);
  std::string s(n, '\0');
  cl_check(query(object, what, n, s.data(), nullptr), name);
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

std::string device_string(cl_device_id device, cl_device_info what) {
  return info_string(cl().clGetDeviceInfo, device, what, "clGetDeviceInfo");
}

std::string platform_string(cl_platform_id platform, cl_platform_info what) {
  return info_string(cl().clGetPlatformInfo, platform, what, "clGetPlatformInfo");
}

}  // namespace kiln::opencl
