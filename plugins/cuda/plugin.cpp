// plugins/cuda/plugin.cpp - the cuda backend's plugin object and its only exported symbol.
#include "../common/gpu_plugin.hpp"
#include "config.hpp"
#include "cuda_api.hpp"
#include "device.hpp"
#include "kiln/sdk.hpp"

namespace kiln::cuda {

namespace {

// GPUs the driver reports, or the reason there are none.
plugins::GpuScan scan_gpus() {
  plugins::GpuScan g;
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

struct CudaBackend {
  static constexpr const char* plugin_name = "cuda";
  static constexpr const char* plugin_version = KILN_CUDA_VERSION;
  static constexpr const char* offline_arch_env = kOfflineArchEnv;
  static plugins::GpuScan scan_gpus() { return cuda::scan_gpus(); }
  static std::vector<std::string> env_archs() { return offline_archs(); }
  static std::vector<std::string> option_archs(const sdk::Options& options) { return offline_archs(options); }
  static CudaConfig read_config(const sdk::Options& options) { return cuda::read_config(options); }
};

class CudaPlugin final : public plugins::GpuPlugin<CudaDevice, CudaConfig, CudaBackend> {
 public:
  static constexpr const char* plugin_name = CudaBackend::plugin_name;
  static constexpr const char* plugin_version = CudaBackend::plugin_version;
};

}  // namespace kiln::cuda

KILN_PLUGIN(kiln::cuda::CudaPlugin)
