// plugins/hip/device.cpp - properties, target caps and memory of GPUs and offline targets.
#include "device.hpp"

#include <cstring>

#include "../common/plugin_util.hpp"
#include "hip_c.hpp"

namespace kiln::hip {

namespace {

void check_range(const HipBuffer& b, uint64_t offset, uint64_t n, const char* what) {
  plugins::check_range(b.size, offset, n, what);
}

}  // namespace

HipDevice::HipDevice(int ordinal, uint32_t index, const HipConfig& config)
    : offline_(false), ordinal_(ordinal), name_("hip:" + std::to_string(index)), config_(config), compiler_(config.compiler) {
  const HipApi& api = hip();
  hip_check(api.hipGetDeviceProperties(&prop_, ordinal), "hipGetDeviceProperties");
  gpu_name_ = prop_.name;
  arch_ = config.arch.empty() ? base_arch(prop_.gcnArchName) : config.arch;
}

HipDevice::HipDevice(std::string offline_arch, uint32_t index, const HipConfig& config)
    : offline_(true), name_("hip:" + std::to_string(index)), arch_(std::move(offline_arch)), config_(config),
      compiler_(config.compiler) {}

[[noreturn]] void HipDevice::offline(const char* what) const {
  throw sdk::Error{KILN_STATUS_UNAVAILABLE, name_ + " is an offline compiler for " + arch_ +
                                                " (an offline target): it renders and compiles kernels but has no "
                                                "GPU to " + what};
}

void HipDevice::use() const {
  if (offline_) offline("run them on");
  hip_check(hip().hipSetDevice(ordinal_), "hipSetDevice");
}

sdk::DeviceProps HipDevice::props() {
  sdk::DeviceProps p;
  p.kind = KILN_DEVICE_KIND_GPU;
  p.arch = arch_;
  if (offline_) {
    p.name = arch_;
    p.description = "offline compiler for " + arch_ + " (no GPU: compiles, cannot run)";
    return p;
  }
  p.name = gpu_name_;
  p.description = gpu_name_ + " (" + std::string(prop_.gcnArchName) + ", " + std::to_string(prop_.multiProcessorCount) +
                  " compute units, wave" + std::to_string(prop_.warpSize) + ")";
  p.features = prop_.gcnArchName;
  p.memory_total = prop_.totalGlobalMem;
  size_t free_bytes = 0, total = 0;
  if (hip().hipSetDevice(ordinal_) == hipSuccess && hip().hipMemGetInfo(&free_bytes, &total) == hipSuccess)
    p.memory_free = free_bytes;
  p.compute_units = static_cast<uint32_t>(prop_.multiProcessorCount);
  return p;
}

sdk::Target HipDevice::target() {
  sdk::Target t;
  t.flags = KILN_TARGET_HAS_LOCAL | KILN_TARGET_HAS_SHARED | KILN_TARGET_HAS_FMA;
  // AMDGPU limits (every arch LLVM 15 knows): 1024 work items per group, 64 KiB of LDS
  t.local_max = {1024, 1024, 1024};
  t.local_prod_max = 1024;
  t.global_max = {0x7fffffffu, 0xffffu, 0xffffu};
  t.shared_max = 64 * 1024;
  if (!offline_) {
    for (int i = 0; i < 3; ++i) {
      t.local_max[i] = static_cast<uint32_t>(prop_.maxThreadsDim[i]);
      t.global_max[i] = static_cast<uint32_t>(prop_.maxGridSize[i]);
    }
    t.local_prod_max = static_cast<uint32_t>(prop_.maxThreadsPerBlock);
    t.shared_max = prop_.sharedMemPerBlock;
  }
  t.max_vector_width = 4;  // 128-bit loads and stores; the ALUs are scalar per lane
  hip_caps(t.ops.data(), t.dtypes);
  t.source_format = "hip";
  return t;
}

std::string HipDevice::render(const kiln_lir& kernel) {
  HipDialect dialect;
  return dialect.render_kernel(kernel);
}

std::string HipDevice::cache_key() { return compiler_.cache_key(arch_); }

std::string HipDevice::compile(const sdk::CompileRequest& request, std::string& log) {
  return compiler_.compile(std::string(request.source), "kernel '" + std::string(request.entry) + "'", arch_,
                           std::string(request.options), log);
}

// One clang process and one code object for several kernels: the process start and the front
// end's set-up (~40 ms) are paid once.
std::string HipDevice::compile_many(std::span<const sdk::CompileRequest> requests, std::string& log) {
  sdk::JoinedSources j = sdk::join_sources(requests);
  return compiler_.compile(j.source, "kernels " + j.entries, arch_, std::string(j.options), log);
}

void HipDevice::synchronize() {
  if (offline_) return;  // nothing was ever submitted
  use();
  hip_check(hip().hipDeviceSynchronize(), "hipDeviceSynchronize");
}

// ---- memory ----

HipBuffer::~HipBuffer() {
  if (!ptr) return;
  try {
    (void)hip().hipSetDevice(ordinal);
    (void)hip().hipFree(ptr);
  } catch (...) {  // the runtime was loaded when the buffer was made; nothing to report here
  }
}

std::unique_ptr<sdk::Buffer> HipDevice::alloc(uint64_t size, uint32_t flags) {
  if (offline_) offline("allocate memory on");
  use();
  auto b = std::make_unique<HipBuffer>();
  b->size = size;
  b->ordinal = ordinal_;
  hipError_t s = hip().hipMalloc(&b->ptr, size ? size : 1);
  if (s == hipErrorOutOfMemory || s == hipErrorMemoryAllocation)
    throw sdk::Error{KILN_STATUS_RESOURCE_EXHAUSTED,
                     name_ + ": cannot allocate " + std::to_string(size) + " bytes (" + hip_error_name(s) + ")"};
  hip_check(s, name_ + ": hipMalloc(" + std::to_string(size) + " bytes)");
  if ((flags & KILN_ALLOC_ZERO) && size) hip_check(hip().hipMemset(b->ptr, 0, size), "hipMemset");
  return b;
}

void HipDevice::copy_in(sdk::Buffer& dst, uint64_t offset, std::span<const std::byte> src) {
  auto& b = static_cast<HipBuffer&>(dst);
  check_range(b, offset, src.size(), "copy_in");
  if (src.empty()) return;
  use();
  hip_check(hip().hipMemcpy(static_cast<char*>(b.ptr) + offset, src.data(), src.size(), hipMemcpyHostToDevice), "hipMemcpy");
}

void HipDevice::copy_out(std::span<std::byte> dst, const sdk::Buffer& src, uint64_t offset) {
  const auto& b = static_cast<const HipBuffer&>(src);
  check_range(b, offset, dst.size(), "copy_out");
  if (dst.empty()) return;
  use();
  hip_check(hip().hipMemcpy(dst.data(), static_cast<const char*>(b.ptr) + offset, dst.size(), hipMemcpyDeviceToHost),
            "hipMemcpy");
}

void HipDevice::copy(sdk::Buffer& dst, uint64_t dst_offset, const sdk::Buffer& src, uint64_t src_offset, uint64_t n) {
  auto& d = static_cast<HipBuffer&>(dst);
  const auto& s = static_cast<const HipBuffer&>(src);
  check_range(d, dst_offset, n, "copy (destination)");
  check_range(s, src_offset, n, "copy (source)");
  if (n == 0) return;
  use();
  hip_check(hip().hipMemcpy(static_cast<char*>(d.ptr) + dst_offset, static_cast<const char*>(s.ptr) + src_offset, n,
                            hipMemcpyDeviceToDevice),
            "hipMemcpy");
}

}  // namespace kiln::hip
