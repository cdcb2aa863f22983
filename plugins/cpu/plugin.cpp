// plugins/cpu/plugin.cpp - the cpu backend's plugin object and its only exported symbol.
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <vector>

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

// KILN_CPU_OFFLINE_ARCH=x86-64-v4,x86-64-v2, then the option offline_arch (`kiln compile --backend
// cpu --arch x86-64-v4` sets it): devices that compile for those levels. They run kernels only
// where the host has the level.
std::vector<IsaChoice> offline_levels(const sdk::Options& options) {
  const char* env = std::getenv("KILN_CPU_OFFLINE_ARCH");
  std::vector<std::pair<std::string, std::string>> levels;  // (level, where it was named)
  std::string list = env ? env : "";
  for (char& ch : list)
    if (ch == ',') ch = ' ';
  std::istringstream words(list);
  for (std::string w; words >> w;) levels.emplace_back(w, "KILN_CPU_OFFLINE_ARCH");
  for (const std::string& w : options.get_strings("offline_arch", {})) levels.emplace_back(w, "option 'offline_arch'");
  std::vector<IsaChoice> out;
  for (const auto& [w, where] : levels) out.push_back(parse_isa(w, where));
  return out;
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
    offline_ = offline_levels(options);
    if (!config_.compiler.in_process() && !in_path(config_.compiler.compiler))
      sdk::log(KILN_LOG_WARNING, config_.compiler.compiler +
                                     " was not found in PATH: the cpu backend can allocate memory but not compile "
                                     "kernels (install clang-15 or set [backends.cpu.options] compiler)");
  }

  // cpu:0 ... cpu:N-1 (options devices and isa), then one device per offline level
  uint32_t device_count() override { return config_.devices + static_cast<uint32_t>(offline_.size()); }

  std::unique_ptr<sdk::Device> open(uint32_t index) override {
    if (index >= device_count())
      throw sdk::Error{KILN_STATUS_NOT_FOUND, "the cpu backend has " + std::to_string(device_count()) + " device(s)"};
    CpuConfig c = config_;
    if (index >= config_.devices) c.isa = offline_[index - config_.devices].level, c.avx512bf16 = offline_[index - config_.devices].avx512bf16;
    return std::make_unique<CpuDevice>(c);
  }

 private:
  CpuConfig config_ = read_config(sdk::Options{}, cpu_info());
  std::vector<IsaChoice> offline_;
};

}  // namespace kiln::cpu

KILN_PLUGIN(kiln::cpu::CpuPlugin)
