// plugins/cpu/device.hpp - the cpu device: host memory, LLVM or clang, a thread pool.
//
// Thread-safe (reports KILN_DEVICE_THREADSAFE): allocation, copies and compiles may run from many
// threads at once (parallel compiles help BEAM search); launches that use the pool are serialised
// by the pool, single-item launches run concurrently on their callers' threads.
#pragma once
#include <memory>

#include "compiler.hpp"
#include "config.hpp"
#include "kiln/sdk.hpp"
#include "thread_pool.hpp"

namespace kiln::cpu {

class CpuDevice final : public sdk::Device {
 public:
  explicit CpuDevice(const CpuConfig& config);

  sdk::DeviceProps props() override;
  sdk::Target target() override;

  std::unique_ptr<sdk::Buffer> alloc(uint64_t size, uint32_t flags) override;
  void copy_in(sdk::Buffer& dst, uint64_t offset, std::span<const std::byte> src) override;
  void copy_out(std::span<std::byte> dst, const sdk::Buffer& src, uint64_t offset) override;
  bool has_device_copy() const override { return true; }
  void copy(sdk::Buffer& dst, uint64_t dst_offset, const sdk::Buffer& src, uint64_t src_offset, uint64_t n) override;
  // Between two cpu devices (option devices): both are host memory, so a memcpy.
  bool has_peer_copy() const override { return true; }
  void copy_from_peer(sdk::Buffer& dst, uint64_t dst_offset, sdk::Device& src_device, const sdk::Buffer& src,
                      uint64_t src_offset, uint64_t n) override;
  // Buffers are host memory: their addresses, and the host's memory as buffers (DLPack, no copy).
  bool has_host_memory() const override { return true; }
  void* host_address(const sdk::Buffer& buffer) override;
  std::unique_ptr<sdk::Buffer> wrap_host(void* address, uint64_t size) override;

  std::string cache_key() override;
  std::string compile(const sdk::CompileRequest& request, std::string& log) override;

  std::unique_ptr<sdk::Program> load(std::string_view binary, std::string_view entry) override;
  double launch(sdk::Program& program, const sdk::Launch& launch) override;
  // A captured plan's kernels in one call: each is still one hand-off to the pool, whose workers
  // spin between runs, so a kernel that depends on the previous one starts without a wake-up.
  bool has_launch_many() const override { return true; }

  // LLVM IR (compiler = "llvm") or C (a clang). Defined in render.cpp.
  bool has_renderer() const override;
  std::string render(const kiln_lir& kernel) override;

 private:
  bool runnable() const;  // the host has every feature of config_.isa
  bool bf16_dot() const;  // vdpbf16ps: the host's AVX512-BF16 (native) or the isa's +avx512bf16

  CpuConfig config_;
  std::unique_ptr<KernelCompiler> compiler_;
  ThreadPool pool_;
};

}  // namespace kiln::cpu
