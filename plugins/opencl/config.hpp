// plugins/opencl/config.hpp - the opencl backend's [backend.options].
//
//   devices       = "all"   which OpenCL devices become kiln devices: "all", "gpu", "cpu",
//                           "accelerator"
//   build_options = ""      extra clBuildProgram options for every kernel (e.g. "-cl-mad-enable");
//                           part of the compile cache key
#pragma once
#include <string>

#include "kiln/sdk.hpp"

namespace kiln::opencl {

enum class DeviceType { all, gpu, cpu, accelerator };

struct OpenclConfig {
  DeviceType devices = DeviceType::all;
  std::string build_options;
};

// Throws sdk::Error{INVALID_ARGUMENT} naming a bad option; logs unknown keys as warnings.
OpenclConfig read_config(const sdk::Options& options);

}  // namespace kiln::opencl
