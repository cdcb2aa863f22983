// plugins/cuda/device.hpp - an NVIDIA GPU (or an offline target) as a kiln device.
//
// A GPU device holds its device's primary context and one stream of its own: buffers are
// cuMemAlloc'd, PTX is loaded with cuModuleLoadDataEx (the driver compiles it for the GPU) and
// kernels are queued with cuLaunchKernel on that stream (launches are asynchronous; launch_many
// queues a captured plan's kernels back to back on it; copies out, synchronize() and
// KILN_LAUNCH_WAIT wait, the latter timed with CUDA events). Every call first makes the context
// current (the driver's current context is per thread).
//
// An offline device (KILN_CUDA_OFFLINE_ARCH, config.hpp) has no GPU behind it: it renders and
// compiles PTX for its arch, and load() validates the PTX (.target, the kernel's .entry, its
// parameter count); allocation, launches and copies are UNAVAILABLE.
#pragma once
#include <memory>
#include <string>

#include "compiler.hpp"
#include "config.hpp"
#include "cuda_api.hpp"
#include "kiln/sdk.hpp"

namespace kiln::cuda {

class CudaBuffer final : public sdk::Buffer {
 public:
  ~CudaBuffer() override;
  CUdeviceptr ptr = 0;
  uint64_t size = 0;
  CUcontext ctx = nullptr;
};

class CudaProgram final : public sdk::Program {
 public:
  ~CudaProgram() override;
  CUmodule module = nullptr;  // null on offline devices
  CUfunction function = nullptr;
  CUcontext ctx = nullptr;
  std::string entry;
  int params = -1;  // the PTX entry's parameter count
};

class CudaDevice final : public sdk::Device {
 public:
  // A GPU: `ordinal` is the driver's device index.
  CudaDevice(int ordinal, uint32_t index, const CudaConfig& config);
  // An offline target.
  CudaDevice(std::string offline_arch, uint32_t index, const CudaConfig& config);
  ~CudaDevice() override;

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
  // The SDK's loop: each launch queued on the device's stream, none waiting (a CUDA graph would
  // also save the per-launch driver cost: a follow-up once a GPU has measured it).
  bool has_launch_many() const override { return true; }

  bool has_renderer() const override { return true; }
  std::string render(const kiln_lir& kernel) override;

  void synchronize() override;

  const std::string& arch() const { return arch_; }
  const Compiler& compiler() const { return compiler_; }

 private:
  void use() const;  // makes the context current; offline: UNAVAILABLE
  [[noreturn]] void offline(const char* what) const;
  int attribute(int attr) const;

  bool offline_;
  int ordinal_ = -1;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
  std::string name_, arch_, gpu_name_;
  CudaConfig config_;
  Compiler compiler_;
};

}  // namespace kiln::cuda
