// plugins/cuda/plugin.cpp - the cuda backend's plugin object and its only exported symbol.
#include "config.hpp"
#include "cuda_api.hpp"
#include "device.hpp"
#include "kiln/sdk.hpp"

namespace kiln::cuda {

namespace {

// GPUs the driver reports, or the reason there are none.
struct GpuScan {
  int count = 0;
  std::string reason;  // why count is 0
};

GpuScan scan_gpus() {
  GpuScan g;
  try {
    const CudaApi& api = cuda();
    CUresult init = api.cuInit(0);
    int n = 0;
    if (init != CUDA_SUCCESS) {
      g.reason = "no CUDA devices (cuInit: " + cuda_error_name(init) + ")";
    } else if (CUresult s = api.cuDeviceGetCount(&n); s != CUDA_SUCCESS) {
      g.reason = "no CUDA devices (cuDeviceGetCount: " + cuda_error_name(s) + ")";
    } else if (n == 0) {
      g.reason = "no CUDA devices (the driver reports none)";
    } else {
      g.count = n;
    }
  } catch (const sdk::Error& e) {
    g.reason = e.message;
  }
  return g;
}

}  // namespace

class CudaPlugin final : public sdk::Plugin {
 public:
  static constexpr const char* plugin_name = "cuda";
  static constexpr const char* plugin_version = KILN_CUDA_VERSION;

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
    if (index < static_cast<uint32_t>(gpus_.count)) return std::make_unique<CudaDevice>(static_cast<int>(index), index, config_);
    if (index < device_count()) return std::make_unique<CudaDevice>(offline_[index - gpus_.count], index, config_);
    throw sdk::Error{KILN_STATUS_NOT_FOUND, "cuda:" + std::to_string(index) + " does not exist (the backend has " +
                                               std::to_string(device_count()) + " devices)"};
  }

 private:
  GpuScan gpus_;
  std::vector<std::string> offline_;
  CudaConfig config_;
};

}  // namespace kiln::cuda

KILN_PLUGIN(kiln::cuda::CudaPlugin)
