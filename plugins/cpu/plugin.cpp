// plugins/cpu/plugin.cpp - the cpu backend's plugin object and its only exported symbol.
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "config.hpp"
#include "device.hpp"
#include "kiln/sdk.hpp"
#include "sysinfo.hpp"

namespace kiln::cpu {
namespace {

bool in_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return access(program.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  return false;
}

}  // namespace

class CpuPlugin final : public sdk::Plugin {
 public:
  static constexpr const char* plugin_name = "cpu";
  static constexpr const char* plugin_version = KILN_CPU_VERSION;

  // Always usable, always the lowest score: any accelerator should win the default device.
  sdk::Probe probe() override {
    const CpuInfo& cpu = cpu_info();
    return {1, cpu.model + ", " + std::to_string(cpu.cores) + " cores, " + cpu.isa_level()};
  }

  void initialize(const sdk::Options& options) override {
    config_ = read_config(options, cpu_info());
    if (!config_.compiler.in_process() && !in_path(config_.compiler.compiler))
      sdk::log(KILN_LOG_WARNING, config_.compiler.compiler +
                                     " was not found in PATH: the cpu backend can allocate memory but not compile "
                                     "kernels (install clang-15 or set [backends.cpu.options] compiler)");
  }

  uint32_t device_count() override { return 1; }

  std::unique_ptr<sdk::Device> open(uint32_t index) override {
    if (index != 0) throw sdk::Error{KILN_STATUS_NOT_FOUND, "the cpu backend has one device, cpu:0"};
    return std::make_unique<CpuDevice>(config_);
  }

 private:
  CpuConfig config_ = read_config(sdk::Options{}, cpu_info());
};

}  // namespace kiln::cpu

KILN_PLUGIN(kiln::cpu::CpuPlugin)
