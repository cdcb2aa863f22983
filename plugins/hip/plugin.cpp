// plugins/hip/plugin.cpp - the hip backend's plugin object and its only exported symbol.
#include <cstdlib>
#include <filesystem>

#include "../common/llvm_clash.hpp"
#include "config.hpp"
#include "device.hpp"
#include "hip_api.hpp"
#include "kiln/sdk.hpp"

namespace kiln::hip {

namespace {

// GPUs the runtime reports, or the reason there are none. hipInit is where a HIP runtime with
// GPUs may load comgr, so it is not called while PoCL is in the process (common/llvm_clash.hpp).
struct GpuScan {
  int count = 0;
  std::string reason;  // why count is 0
};

GpuScan scan_gpus() {
  GpuScan g;
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

class HipPlugin final : public sdk::Plugin {
 public:
  static constexpr const char* plugin_name = "hip";
  static constexpr const char* plugin_version = KILN_HIP_VERSION;

  // Offline targets come from the environment and from the options, so this probe needs them.
  sdk::Probe probe_with_options(const sdk::Options& options) override {
    gpus_ = scan_gpus();
    try {
      offline_ = offline_archs();
    } catch (const sdk::Error& e) {
      return {0, e.message};
    }
    std::vector<std::string> from_option = offline_archs(options);  // INVALID_ARGUMENT: a config error
    offline_.insert(offline_.end(), from_option.begin(), from_option.end());
    std::string offline_text;
    for (const std::string& a : offline_) offline_text += (offline_text.empty() ? "" : ", ") + a;
    if (gpus_.count == 0 && offline_.empty()) return {0, gpus_.reason};
    std::string reason = gpus_.count ? std::to_string(gpus_.count) + (gpus_.count == 1 ? " GPU" : " GPUs") : gpus_.reason;
    if (!offline_.empty())
      reason += "; offline compiler for " + offline_text + " (" + kOfflineArchEnv + ", option offline_arch)";
    return {gpus_.count ? 3 : 1, reason};
  }
  sdk::Probe probe() override { return probe_with_options(sdk::Options{}); }

  void initialize(const sdk::Options& options) override { config_ = read_config(options); }

  uint32_t device_count() override { return static_cast<uint32_t>(gpus_.count + offline_.size()); }

  std::unique_ptr<sdk::Device> open(uint32_t index) override {
    if (index < static_cast<uint32_t>(gpus_.count)) return std::make_unique<HipDevice>(static_cast<int>(index), index, config_);
    if (index < device_count()) return std::make_unique<HipDevice>(offline_[index - gpus_.count], index, config_);
    throw sdk::Error{KILN_STATUS_NOT_FOUND, "hip:" + std::to_string(index) + " does not exist (the backend has " +
                                               std::to_string(device_count()) + " devices)"};
  }

 private:
  GpuScan gpus_;
  std::vector<std::string> offline_;
  HipConfig config_;
};

}  // namespace kiln::hip

KILN_PLUGIN(kiln::hip::HipPlugin)
