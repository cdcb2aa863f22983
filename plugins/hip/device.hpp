// plugins/hip/device.hpp - a HIP GPU (or an offline target) as a kiln device.
//
// A GPU device wraps one HIP device ordinal: hipMalloc'd buffers, code objects loaded with
// hipModuleLoadData and launched with hipModuleLaunchKernel on the null stream (launches are
// asynchronous; copies out, synchronize() and KILN_LAUNCH_WAIT wait, the latter timed with HIP
// events). Every call first makes the ordinal current (HIP's current device is per thread).
//
// An offline device (KILN_HIP_OFFLINE_ARCH, config.hpp) has no GPU behind it: it renders and
// compiles for its arch, and load() validates the code object (ELF EM_AMDGPU, the kernel symbol
// and its .kd descriptor, the argument counts); allocation, launches and copies are UNAVAILABLE.
#pragma once
#include <memory>
#include <string>

#include "code_object.hpp"
#include "compiler.hpp"
#include "hip_api.hpp"
#include "config.hpp"
#include "kiln/sdk.hpp"

namespace kiln::hip {

class HipBuffer final : public sdk::Buffer {
 public:
  ~HipBuffer() override;
  void* ptr = nullptr;
  uint64_t size = 0;
  int ordinal = 0;
};

class HipProgram final : public sdk::Program {
 public:
  ~HipProgram() override;
  void* module = nullptr;    // hipModule_t (null on offline devices)
  void* function = nullptr;  // hipFunction_t
  std::string entry;
  ArgCounts args;
};

class HipDevice final : public sdk::Device {
 public:
  // A GPU: `ordinal` is the HIP device index.
  HipDevice(int ordinal, uint32_t index, const HipConfig& config);
  // An offline target.
  HipDevice(std::string offline_arch, uint32_t index, const HipConfig& config);

  sdk::DeviceProps props() override;
  sdk::Target target() override;

  std::unique_ptr<sdk::Buffer> alloc(uint64_t size, uint32_t flags) override;
  void copy_in(sdk::Buffer& dst, uint64_t offset, std::span<const std::byte> src) override;
  void copy_out(std::span<std::byte> dst, const sdk::Buffer& src, uint64_t offset) override;
  bool has_device_copy() const override { return true; }
  void copy(sdk::Buffer& dst, uint64_t dst_offset, const sdk::Buffer& src, uint64_t src_offset, uint64_t n) override;

  std::string cache_key() override;
  std::string compile(const sdk::CompileRequest& request, std::string& log) override;
  bool has_compile_many() const override { return true; }
  std::string compile_many(std::span<const sdk::CompileRequest> requests, std::string& log) override;
  std::unique_ptr<sdk::Program> load(std::string_view binary, std::string_view entry) override;
  double launch(sdk::Program& program, const sdk::Launch& launch) override;
  // A captured plan's kernels in one call: the SDK's loop, each launch queued on the device's
  // stream with no wait between them (a HIP graph would also save the per-launch driver cost; not
  // done while no machine here has an AMD GPU to test it on).
  bool has_launch_many() const override { return true; }

  bool has_renderer() const override { return true; }
  std::string render(const kiln_lir& kernel) override;

  void synchronize() override;

  const std::string& arch() const { return arch_; }

 private:
  void use() const;                            // makes the ordinal current; offline: UNAVAILABLE
  [[noreturn]] void offline(const char* what) const;

  bool offline_;
  int ordinal_ = -1;
  std::string name_, arch_, gpu_name_;
  HipConfig config_;
  Compiler compiler_;
  hipDeviceProp_t prop_{};
};

}  // namespace kiln::hip
