// plugins/hip/plugin.cpp - the hip backend's plugin object and its only exported symbol.
#include <cstdlib>
#include <filesystem>

#include "../common/llvm_clash.hpp"
#include "../common/gpu_plugin.hpp"
#include "config.hpp"
#include "device.hpp"
#include "hip_api.hpp"
#include "kiln/sdk.hpp"

namespace kiln::hip {

namespace {

// GPUs the runtime reports, or the reason there are none. hipInit is where a HIP runtime with
// GPUs may load comgr, so it is not called while PoCL is in the process (common/llvm_clash.hpp).
plugins::GpuScan scan_gpus() {
  plugins::GpuScan g;
  std::string pocl = plugins::loaded_pocl_compiler();
  if (!pocl.empty()) {
    g.reason = pocl + " (PoCL, the opencl backend's driver) is loaded in this process; the HIP runtime cannot share it "
                      "(LLVM option clash); use the hip and opencl backends from separate processes";
    return g;
  }
  // The ROCm runtime reaches AMD GPUs only through the KFD driver's device node: without it the
  // runtime would answer hipErrorNoDevice after ~17 ms of loading itself (kiln list pays that).
  // KILN_HIP_KFD names another node, so a test on a machine without one can still take the
  // runtime's own path (load libamdhip64, hipInit, hipGetDeviceCount) with any existing file.
  const char* kfd = std::getenv("KILN_HIP_KFD");
  std::error_code ec;
  if (!std::filesystem::exists(kfd && *kfd ? kfd : "/dev/kfd", ec)) {
    g.reason = "no HIP devices (hipErrorNoDevice)";
    return g;
  }
  try {
    const HipApi& api = hip();
    hipError_t init = api.hipInit(0);
    int n = 0;
    hipError_t s = api.hipGetDeviceCount(&n);
    if (s != hipSuccess) {
      g.reason = "no HIP devices (" + hip_error_name(s) + ")";
    } else if (n == 0) {
      g.reason = "no HIP devices (" + (init != hipSuccess ? hip_error_name(init) : std::string("count is 0")) + ")";
    } else {
      g.count = n;
    }
  } catch (const sdk::Error& e) {
    g.reason = e.message;
  }
  return g;
}

}  // namespace

struct HipBackend {
  static constexpr const char* plugin_name = "hip";
  static constexpr const char* plugin_version = KILN_HIP_VERSION;
  static constexpr const char* offline_arch_env = kOfflineArchEnv;
  static plugins::GpuScan scan_gpus() { return hip::scan_gpus(); }
  static std::vector<std::string> env_archs() { return offline_archs(); }
  static std::vector<std::string> option_archs(const sdk::Options& options) { return offline_archs(options); }
  static HipConfig read_config(const sdk::Options& options) { return hip::read_config(options); }
};

class HipPlugin final : public plugins::GpuPlugin<HipDevice, HipConfig, HipBackend> {
 public:
  static constexpr const char* plugin_name = HipBackend::plugin_name;
  static constexpr const char* plugin_version = HipBackend::plugin_version;
};

}  // namespace kiln::hip

KILN_PLUGIN(kiln::hip::HipPlugin)
