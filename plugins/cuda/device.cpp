// plugins/cuda/device.cpp - properties, target caps and memory of GPUs and offline targets.
#include "device.hpp"

#include "../common/plugin_util.hpp"
#include "cuda_c.hpp"

namespace kiln::cuda {

CudaDevice::CudaDevice(int ordinal, uint32_t index, const CudaConfig& config)
    : offline_(false), ordinal_(ordinal), name_("cuda:" + std::to_string(index)), config_(config), compiler_(config.compiler) {
  const CudaApi& api = cuda();
  cuda_check(api.cuDeviceGet(&dev_, ordinal), "cuDeviceGet");
  char name[256] = {};
  cuda_check(api.cuDeviceGetName(name, sizeof name - 1, dev_), "cuDeviceGetName");
  gpu_name_ = name;
  arch_ = config.arch.empty() ? "sm_" + std::to_string(attribute(kComputeCapabilityMajor)) +
                                    std::to_string(attribute(kComputeCapabilityMinor))
                              : config.arch;
  cuda_check(api.cuDevicePrimaryCtxRetain(&ctx_, dev_), name_ + ": cuDevicePrimaryCtxRetain");
  cuda_check(api.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
  // flags 0: a blocking stream, ordered with the legacy default stream like the synchronous copies
  cuda_check(api.cuStreamCreate(&stream_, 0), name_ + ": cuStreamCreate");
}

CudaDevice::CudaDevice(std::string offline_arch, uint32_t index, const CudaConfig& config)
    : offline_(true), name_("cuda:" + std::to_string(index)), arch_(std::move(offline_arch)), config_(config),
      compiler_(config.compiler) {}

CudaDevice::~CudaDevice() {
  if (offline_) return;
  try {
    const CudaApi& api = cuda();
    (void)api.cuCtxSetCurrent(ctx_);
    if (stream_) {
      (void)api.cuStreamSynchronize(stream_);
      (void)api.cuStreamDestroy_v2(stream_);
    }
    if (ctx_) (void)api.cuDevicePrimaryCtxRelease_v2(dev_);
  } catch (...) {  // the driver was loaded when the device was opened; nothing to report here
  }
}

[[noreturn]] void CudaDevice::offline(const char* what) const {
  throw sdk::Error{KILN_STATUS_UNAVAILABLE, name_ + " is an offline compiler for " + arch_ +
                                                " (an offline target): it renders and compiles kernels but has no "
                                                "GPU to " + what};
}

void CudaDevice::use() const {
  if (offline_) offline("run them on");
  cuda_check(cuda().cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
}

int CudaDevice::attribute(int attr) const {
  int v = 0;
  cuda_check(cuda().cuDeviceGetAttribute(&v, attr, dev_), "cuDeviceGetAttribute(" + std::to_string(attr) + ")");
  return v;
}

sdk::DeviceProps CudaDevice::props() {
  sdk::DeviceProps p;
  p.kind = KILN_DEVICE_KIND_GPU;
  p.arch = arch_;
  if (offline_) {
    p.name = arch_;
    p.description = "offline compiler for " + arch_ + " with " + compiler_.describe() + " (no GPU: compiles, cannot run)";
    return p;
  }
  p.name = gpu_name_;
  int sms = attribute(kMultiprocessorCount);
  int driver = 0;
  (void)cuda().cuDriverGetVersion(&driver);
  p.description = gpu_name_ + " (" + arch_ + ", " + std::to_string(sms) + " SMs, warp " + std::to_string(attribute(kWarpSize)) +
                  "; driver CUDA " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10) + ", " +
                  compiler_.describe() + ")";
  size_t total = 0, free_bytes = 0;
  if (cuda().cuDeviceTotalMem_v2(&total, dev_) == CUDA_SUCCESS) p.memory_total = total;
  if (cuda().cuCtxSetCurrent(ctx_) == CUDA_SUCCESS && cuda().cuMemGetInfo_v2(&free_bytes, &total) == CUDA_SUCCESS)
    p.memory_free = free_bytes;
  p.compute_units = static_cast<uint32_t>(sms);
  return p;
}

sdk::Target CudaDevice::target() {
  sdk::Target t;
  t.flags = KILN_TARGET_HAS_LOCAL | KILN_TARGET_HAS_SHARED | KILN_TARGET_HAS_FMA | KILN_TARGET_VECTOR_MEMORY_ONLY;
  // every NVIDIA GPU since sm_30: 1024 threads per block (64 in z), 48 KiB of static shared memory
  t.local_max = {1024, 1024, 64};
  t.local_prod_max = 1024;
  t.global_max = {0x7fffffffu, 0xffffu, 0xffffu};
  t.shared_max = 48 * 1024;
  if (!offline_) {
    for (int i = 0; i < 3; ++i) {
      t.local_max[i] = static_cast<uint32_t>(attribute(kMaxBlockDimX + i));
      t.global_max[i] = static_cast<uint32_t>(attribute(kMaxGridDimX + i));
    }
    t.local_prod_max = static_cast<uint32_t>(attribute(kMaxThreadsPerBlock));
    t.shared_max = static_cast<uint64_t>(attribute(kMaxSharedMemoryPerBlock));
  }
  t.max_vector_width = 4;  // float4 loads and stores, arithmetic per lane (cuda_c.hpp)
  cuda_caps(t.ops.data(), t.dtypes);
  t.source_format = "cuda";
  return t;
}

std::string CudaDevice::render(const kiln_lir& kernel) {
  CudaDialect dialect;
  return dialect.render_kernel(kernel);
}

std::string CudaDevice::cache_key() { return compiler_.cache_key(arch_); }

std::string CudaDevice::compile(const sdk::CompileRequest& request, std::string& log) {
  return compiler_.compile(std::string(request.source), "kernel '" + std::string(request.entry) + "'", arch_,
                           std::string(request.options), log);
}

// One compiler run and one PTX module for several kernels (the preludes repeat identical macros).
std::string CudaDevice::compile_many(std::span<const sdk::CompileRequest> requests, std::string& log) {
  sdk::JoinedSources j = sdk::join_sources(requests);
  return compiler_.compile(j.source, "kernels " + j.entries, arch_, std::string(j.options), log);
}

void CudaDevice::synchronize() {
  if (offline_) return;  // nothing was ever submitted
  use();
  cuda_check(cuda().cuStreamSynchronize(stream_), name_ + ": cuStreamSynchronize");
}

// ---- memory ----

CudaBuffer::~CudaBuffer() {
  if (!ptr) return;
  try {
    (void)cuda().cuCtxSetCurrent(ctx);
    (void)cuda().cuMemFree_v2(ptr);
  } catch (...) {
  }
}

std::unique_ptr<sdk::Buffer> CudaDevice::alloc(uint64_t size, uint32_t flags) {
  if (offline_) offline("allocate memory on");
  use();
  auto b = std::make_unique<CudaBuffer>();
  b->size = size;
  b->ctx = ctx_;
  CUresult s = cuda().cuMemAlloc_v2(&b->ptr, size ? size : 1);
  if (s == CUDA_ERROR_OUT_OF_MEMORY)
    throw sdk::Error{KILN_STATUS_RESOURCE_EXHAUSTED,
                     name_ + ": cannot allocate " + std::to_string(size) + " bytes (" + cuda_error_name(s) + ")"};
  cuda_check(s, name_ + ": cuMemAlloc(" + std::to_string(size) + " bytes)");
  if ((flags & KILN_ALLOC_ZERO) && size) cuda_check(cuda().cuMemsetD8Async(b->ptr, 0, size, stream_), "cuMemsetD8Async");
  return b;
}

// Copies go through the device's stream, so they are ordered with the kernels queued on it. A
// copy in from pageable memory returns once the driver has staged the bytes; the stream is still
// synchronised, so the caller's memory is never read late (pinned staging buffers: a follow-up).
void CudaDevice::copy_in(sdk::Buffer& dst, uint64_t offset, std::span<const std::byte> src) {
  auto& b = static_cast<CudaBuffer&>(dst);
  plugins::check_range(b.size, offset, src.size(), "copy_in");
  if (src.empty()) return;
  use();
  cuda_check(cuda().cuMemcpyHtoDAsync_v2(b.ptr + offset, src.data(), src.size(), stream_), name_ + ": cuMemcpyHtoDAsync");
  cuda_check(cuda().cuStreamSynchronize(stream_), name_ + ": cuStreamSynchronize (after a copy in)");
}

void CudaDevice::copy_out(std::span<std::byte> dst, const sdk::Buffer& src, uint64_t offset) {
  const auto& b = static_cast<const CudaBuffer&>(src);
  plugins::check_range(b.size, offset, dst.size(), "copy_out");
  if (dst.empty()) return;
  use();
  cuda_check(cuda().cuMemcpyDtoHAsync_v2(dst.data(), b.ptr + offset, dst.size(), stream_), name_ + ": cuMemcpyDtoHAsync");
  cuda_check(cuda().cuStreamSynchronize(stream_), name_ + ": cuStreamSynchronize (after a copy out)");
}

void CudaDevice::copy(sdk::Buffer& dst, uint64_t dst_offset, const sdk::Buffer& src, uint64_t src_offset, uint64_t n) {
  auto& d = static_cast<CudaBuffer&>(dst);
  const auto& s = static_cast<const CudaBuffer&>(src);
  plugins::check_range(d.size, dst_offset, n, "copy (destination)");
  plugins::check_range(s.size, src_offset, n, "copy (source)");
  if (n == 0) return;
  use();
  cuda_check(cuda().cuMemcpyDtoDAsync_v2(d.ptr + dst_offset, s.ptr + src_offset, n, stream_), name_ + ": cuMemcpyDtoDAsync");
}

}  // namespace kiln::cuda
