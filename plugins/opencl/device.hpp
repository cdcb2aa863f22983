// plugins/opencl/device.hpp - one OpenCL device as a kiln device.
//
// Each device owns a context and one in-order command queue with profiling. Calls on a device are
// serialised by the host (the device does not report KILN_DEVICE_THREADSAFE).
//
// Memory: buffers are cl_mem objects (size 0 allocates one byte so every buffer is distinct).
// Copies in and out are blocking; kernel launches and device copies are only enqueued, so
// synchronize() (clFinish), a copy out or a launch with KILN_LAUNCH_WAIT is where work completes.
//
// Compiler and runtime: compile() builds the source with clBuildProgram and returns the program
// binary (CL_PROGRAM_BINARIES), so the host's compile cache can skip the OpenCL compiler next
// time; load() creates the program from that binary. On PoCL's CPU devices clang compiles the
// source to LLVM bitcode instead (option frontend, frontend.hpp), the program is built from that,
// and the bitcode is the binary: asking PoCL for its own binary would make it compile every
// kernel's generic work-group function (~40 ms each), which the first launch compiles again for
// its actual local size. The program built by compile() is kept
// for the load() that normally follows, so a fresh kernel is built once, not twice. compile_many()
// builds a schedule's kernels as one program (one clBuildProgram), kept until each is loaded. The kernel
// argument convention is the OpenCL C dialect's (opencl_c.hpp): buffers in slot order, then each
// integer value as a 64-bit long.
//
// Opening a device schedules a background build of a trivial kernel (option prewarm): a driver's
// first build in a process pays for initialising its compiler (PoCL: ~0.7 s of LLVM and kernel
// library set-up), which then overlaps with the program building its graph instead of delaying
// its first kernel. The build starts at the first alloc or after a short grace period, and is
// skipped if a real build or closing the device comes first.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "cl_api.hpp"
#include "config.hpp"
#include "frontend.hpp"
#include "opencl_c.hpp"
#include "kiln/sdk.hpp"

namespace kiln::opencl {

// An OpenCL device as enumerated by the plugin (GPUs and accelerators before CPUs).
struct ClDeviceRef {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
};
std::vector<ClDeviceRef> enumerate_devices(DeviceType type);


class OpenclBuffer final : public sdk::Buffer {
 public:
  ~OpenclBuffer() override;
  cl_mem mem = nullptr;
  uint64_t size = 0;
  // Sub-buffers for non-zero launch offsets, created on first use and released with the buffer.
  std::vector<std::pair<uint64_t, cl_mem>> views;
};

class OpenclProgram final : public sdk::Program {
 public:
  ~OpenclProgram() override;
  cl_program program = nullptr;
  cl_kernel kernel = nullptr;
  std::string entry;
  cl_uint n_args = 0;
  int64_t n_buffers = -1;  // global pointer arguments, -1 when the driver keeps no argument info
};

class OpenclDevice final : public sdk::Device {
 public:
  OpenclDevice(const ClDeviceRef& ref, uint32_t index, const OpenclConfig& config);
  ~OpenclDevice() override;

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
  // Enqueues every launch of a captured plan's run, then flushes once: the driver starts on the
  // first kernel while the host returns (the in-order queue keeps their order).
  bool has_launch_many() const override { return true; }
  void launch_many(std::span<sdk::Program* const> programs, std::span<const sdk::Launch> launches) override;

  bool has_renderer() const override { return true; }
  std::string render(const kiln_lir& kernel) override;

  void synchronize() override;

 private:
  cl_mem launch_view(OpenclBuffer& b, uint64_t offset, const std::string& entry);
  std::string build_log(cl_program program) const;

  ClDeviceRef ref_;
  std::string name_;  // "opencl:0", for messages
  OpenclConfig config_;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  uint64_t max_alloc_ = 0, base_align_ = 1;
  // Programs built by compile(), waiting for their load() (by binary fingerprint); bounded.
  struct Built {
    uint64_t hash;
    size_t size;
    uint32_t loads_left;  // its kernels not loaded yet (compile_many builds several)
    cl_program program;
  };
  std::string build(std::span<const sdk::CompileRequest> requests, std::string& log);
  // One program from the joined sources: through clang when frontend_ is set (falling back to the
  // driver under frontend = "auto"), else clBuildProgram from source. Returns the built program,
  // and in `bitcode` clang's bitcode when the program was built from it.
  cl_program build_program(const sdk::JoinedSources& joined, size_t kernels, std::string& log, std::string& bitcode);
  // clBuildProgram from source, or from a binary (appending to `log`): the program, or nullptr
  // with the status in `s`; `log` = the build log.
  cl_program build_program_from_source(const std::string& source, const std::string& options, std::string& log,
                                       cl_int& s);
  cl_program build_program_from_binary(const std::string& binary, const std::string& options, std::string& log,
                                       cl_int& s);
  std::deque<Built> built_;
  // Set where kernels are compiled to bitcode by clang (option frontend); reset when "auto" falls
  // back to the driver.
  std::optional<ClangFrontend> frontend_;
  std::string frontend_key_;  // "|bitcode by <clang>" in the compile cache key when opened with frontend_
  // The compiler warm-up (config prewarm). It waits for a short grace period, or until the first
  // alloc (build now) or compile (not needed: that build warms the compiler), so opening a device
  // only to read its properties (kiln list) neither pays for a build nor waits for one when it
  // closes. Joined before the device goes away.
  enum class Warm { waiting, go, cancelled };
  void start_prewarm();                // in the constructor
  // A waiting warm-up goes or is cancelled; after the first call this is a no-op unless `always`.
  void settle_prewarm(Warm decision, bool always = false);
  std::thread prewarm_;
  std::mutex prewarm_mu_;
  std::condition_variable prewarm_cv_;
  Warm prewarm_state_ = Warm::waiting;
  std::atomic<bool> prewarm_settled_{false};
  uint64_t cache_bytes_ = 0;  // option streaming_bytes or CL_DEVICE_GLOBAL_MEM_CACHE_SIZE: larger outputs are streamed
  HalfSupport half_ = HalfSupport::storage;  // native with cl_khr_fp16 (the target's dtypes and the renderer agree)
};

}  // namespace kiln::opencl
