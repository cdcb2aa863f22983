// plugins/common/gpu_plugin.hpp - the plugin object of a GPU backend whose devices are the GPUs its
// driver reports followed by offline targets (compile-only devices named by an architecture, from
// an environment variable and the option `offline_arch`): the hip and cuda plugins. Header-only.
//
// A backend derives from GpuPlugin<Device, Config, Backend>, where Backend supplies
//   static GpuScan scan_gpus();                                       // the driver's GPUs, or why none
//   static std::vector<std::string> env_archs();                      // offline targets from the environment
//   static std::vector<std::string> option_archs(const sdk::Options&);  // ... and from the options
//   static Config read_config(const sdk::Options&);
//   static constexpr const char* plugin_name, plugin_version, offline_arch_env;
// and Device is constructible from (int gpu, uint32_t index, const Config&) and
// (const std::string& arch, uint32_t index, const Config&).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "kiln/sdk.hpp"

namespace kiln::plugins {

// GPUs a driver reports, or the reason there are none.
struct GpuScan {
  int count = 0;
  std::string reason;  // why count is 0
};

template <class Device, class Config, class Backend>
class GpuPlugin : public sdk::Plugin {
 public:
  // Offline targets come from the environment and from the options, so this probe needs them.
  sdk::Probe probe_with_options(const sdk::Options& options) override {
    gpus_ = Backend::scan_gpus();
    try {
      offline_ = Backend::env_archs();
    } catch (const sdk::Error& e) {
      return {0, e.message};
    }
    std::vector<std::string> from_option = Backend::option_archs(options);  // INVALID_ARGUMENT: a config error
    offline_.insert(offline_.end(), from_option.begin(), from_option.end());
    std::string offline_text;
    for (const std::string& a : offline_) offline_text += (offline_text.empty() ? "" : ", ") + a;
    if (gpus_.count == 0 && offline_.empty()) return {0, gpus_.reason};
    std::string reason = gpus_.count ? std::to_string(gpus_.count) + (gpus_.count == 1 ? " GPU" : " GPUs") : gpus_.reason;
    if (!offline_.empty())
      reason += "; offline compiler for " + offline_text + " (" + Backend::offline_arch_env + ", option offline_arch)";
    return {gpus_.count ? 3 : 1, reason};
  }
  sdk::Probe probe() override { return probe_with_options(sdk::Options{}); }

  void initialize(const sdk::Options& options) override { config_ = Backend::read_config(options); }

  uint32_t device_count() override { return static_cast<uint32_t>(gpus_.count + offline_.size()); }

  std::unique_ptr<sdk::Device> open(uint32_t index) override {
    if (index < static_cast<uint32_t>(gpus_.count)) return std::make_unique<Device>(static_cast<int>(index), index, config_);
    if (index < device_count()) return std::make_unique<Device>(offline_[index - gpus_.count], index, config_);
    throw sdk::Error{KILN_STATUS_NOT_FOUND, std::string(Backend::plugin_name) + ":" + std::to_string(index) +
                                               " does not exist (the backend has " + std::to_string(device_count()) +
                                               " devices)"};
  }

 private:
  GpuScan gpus_;
  std::vector<std::string> offline_;
  Config config_;
};

}  // namespace kiln::plugins
