// plugins/opencl/plugin.cpp - the opencl backend's plugin object and its only exported symbol.
#include "../common/llvm_clash.hpp"
#include "config.hpp"
#include "device.hpp"
#include "kiln/sdk.hpp"

namespace kiln::opencl {

namespace {

// Refuses (instead of letting the process abort) when the HIP runtime's compiler is loaded:
// PoCL's clang and comgr cannot share a process (see common/llvm_clash.hpp).
void check_llvm_clash() {
  std::string comgr = plugins::loaded_comgr();
  if (!comgr.empty())
    throw sdk::Error{KILN_STATUS_UNAVAILABLE,
                     comgr + " (the HIP runtime's compiler) is loaded in this process, and loading LLVM-based OpenCL "
                             "drivers such as PoCL next to it aborts the process (LLVM option clash); use the opencl "
                             "and hip backends from separate processes (KILN_BACKENDS selects the manifests)"};
}

std::string describe(const std::vector<ClDeviceRef>& devices) {
  std::string s = std::to_string(devices.size()) + (devices.size() == 1 ? " device: " : " devices: ");
  for (size_t i = 0; i < devices.size(); ++i)
    s += (i ? ", " : "") + device_string(devices[i].device, CL_DEVICE_NAME) + " (" +
         platform_string(devices[i].platform, CL_PLATFORM_NAME) + ")";
  return s;
}

}  // namespace

class OpenclPlugin final : public sdk::Plugin {
 public:
  static constexpr const char* plugin_name = "opencl";
  static constexpr const char* plugin_version = KILN_OPENCL_VERSION;

  sdk::Probe probe() override {
    try {
      check_llvm_clash();
      cl();
      std::vector<ClDeviceRef> all = enumerate_devices(DeviceType::all);
      if (all.empty())
        return {0, "no OpenCL devices: the ICD loader (" + cl().library +
                       ") found no driver with a device (drivers are listed in /etc/OpenCL/vendors; install e.g. "
                       "pocl-opencl-icd)"};
      bool gpu = false;
      for (const ClDeviceRef& d : all) gpu |= (device_value<cl_device_type>(d.device, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_GPU) != 0;
      return {gpu ? 2 : 1, describe(all)};
    } catch (const sdk::Error& e) {
      return {0, e.message};
    }
  }

  // The options before anything loads the ICD: pocl_kernel_cache must reach PoCL's start.
  sdk::Probe probe_with_options(const sdk::Options& options) override {
    apply_pocl_kernel_cache(options);
    return probe();
  }

  void initialize(const sdk::Options& options) override {
    config_ = read_config(options);
    devices_ = enumerate_devices(config_.devices);
    if (devices_.empty() && config_.devices != DeviceType::all)  // the status alone would not say why
      sdk::log(KILN_LOG_WARNING, "option devices = '" + options.get_string("devices", "") +
                                     "' selects none of the OpenCL devices (" + describe(enumerate_devices(DeviceType::all)) + ")");
  }

  uint32_t device_count() override { return static_cast<uint32_t>(devices_.size()); }

  std::unique_ptr<sdk::Device> open(uint32_t index) override {
    if (index >= devices_.size())
      throw sdk::Error{KILN_STATUS_NOT_FOUND, "opencl:" + std::to_string(index) + " does not exist (the backend has " +
                                                  std::to_string(devices_.size()) + " devices)"};
    return std::make_unique<OpenclDevice>(devices_[index], index, config_);
  }

 private:
  OpenclConfig config_;
  std::vector<ClDeviceRef> devices_;
};

}  // namespace kiln::opencl

KILN_PLUGIN(kiln::opencl::OpenclPlugin)
