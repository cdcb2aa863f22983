// plugins/cuda/program.cpp - loading PTX and launching kernels.
#include <algorithm>

#include "device.hpp"
#include "ptx.hpp"

namespace kiln::cuda {

CudaProgram::~CudaProgram() {
  if (!module) return;
  try {
    (void)cuda().cuCtxSetCurrent(ctx);
    (void)cuda().cuModuleUnload(module);
  } catch (...) {
  }
}

std::unique_ptr<sdk::Program> CudaDevice::load(std::string_view binary, std::string_view entry) {
  auto p = std::make_unique<CudaProgram>();
  p->entry = std::string(entry);
  // Everything that can be checked without a GPU is checked first, so a wrong binary is a clear
  // error (also on offline devices) and never reaches the driver's JIT.
  std::string ptx(binary.substr(0, binary.find('\0')));  // NUL-terminated for the driver
  PtxInfo info = parse_ptx(ptx);
  std::optional<int> target = sm_number(info.target), mine = sm_number(arch_);
  if (!target) throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "the PTX targets '" + info.target + "', not an sm_XX arch"};
  if (mine && *target > *mine)
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "the PTX targets " + info.target + ", newer than " + name_ + "'s " +
                                                       arch_ + " (PTX runs on its own arch and newer ones)"};
  std::optional<int> params = ptx_entry_params(ptx, p->entry);
  if (!params) throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "the PTX does not define the kernel '" + p->entry + "' (.entry)"};
  p->params = *params;
  if (offline_) return p;  // validated; launches say why they cannot run
  use();
  const CudaApi& api = cuda();
  char error_log[8192] = {};
  int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof error_log - 1))};
  CUmodule module = nullptr;
  CUresult s = api.cuModuleLoadDataEx(&module, ptx.c_str(), 2, options, values);
  if (s == CUDA_ERROR_UNSUPPORTED_PTX_VERSION) {
    // An NVRTC newer than the driver writes a PTX ISA version the driver does not know yet; kiln's
    // kernels use nothing of the newest ISAs, so the PTX is relabelled with the driver's own
    // version (it must still name the arch) and loaded again.
    int driver = 0;
    (void)api.cuDriverGetVersion(&driver);
    int isa = max_ptx_version_of_driver(driver);
    if (isa && isa < info.version_major * 10 + info.version_minor && isa >= min_ptx_version(target.value_or(0))) {
      sdk::log(KILN_LOG_WARNING, name_ + ": the driver (CUDA " + std::to_string(driver / 1000) + "." +
                                     std::to_string(driver % 1000 / 10) + ") does not know PTX ISA " +
                                     std::to_string(info.version_major) + "." + std::to_string(info.version_minor) +
                                     "; loading kernel '" + p->entry + "' as PTX " + std::to_string(isa / 10) + "." +
                                     std::to_string(isa % 10) + " (use an NVRTC no newer than the driver to avoid this)");
      ptx = with_ptx_version(ptx, isa);
      error_log[0] = '\0';
      s = api.cuModuleLoadDataEx(&module, ptx.c_str(), 2, options, values);
    }
  }
  if (s != CUDA_SUCCESS && error_log[0])
    cuda_check(s, name_ + ": cuModuleLoadDataEx (kernel '" + p->entry + "'): " + error_log + "\nthe driver");
  cuda_check(s, name_ + ": cuModuleLoadDataEx (kernel '" + p->entry + "')");
  p->module = module;
  p->ctx = ctx_;
  CUfunction fn = nullptr;
  cuda_check(api.cuModuleGetFunction(&fn, module, p->entry.c_str()), "cuModuleGetFunction('" + p->entry + "')");
  p->function = fn;
  return p;
}

double CudaDevice::launch(sdk::Program& program, const sdk::Launch& l) {
  auto& p = static_cast<CudaProgram&>(program);
  if (p.params >= 0 && static_cast<size_t>(p.params) != l.buffers.size() + l.values.size())
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "kernel '" + p.entry + "' takes " + std::to_string(p.params) +
                                                       " arguments (buffers, then values), the launch passed " +
                                                       std::to_string(l.buffers.size()) + " buffers and " +
                                                       std::to_string(l.values.size()) + " values"};
  for (size_t i = 0; i < l.buffers.size(); ++i) {
    if (!l.buffers[i]) throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "kernel '" + p.entry + "': buffer " + std::to_string(i) + " is NULL"};
    const auto& b = static_cast<const CudaBuffer&>(*l.buffers[i]);
    if (l.offset(i) > b.size)
      throw sdk::Error{KILN_STATUS_OUT_OF_RANGE, "kernel '" + p.entry + "': offset " + std::to_string(l.offset(i)) +
                                                     " is past buffer " + std::to_string(i) + "'s " + std::to_string(b.size) +
                                                     " bytes"};
  }
  use();
  // kernel arguments: pointers (buffer + offset), then 64-bit integers, each passed by address
  std::vector<CUdeviceptr> pointers(l.buffers.size());
  std::vector<long long> values(l.values.begin(), l.values.end());
  std::vector<void*> args;
  for (size_t i = 0; i < l.buffers.size(); ++i) {
    pointers[i] = static_cast<CudaBuffer&>(*l.buffers[i]).ptr + l.offset(i);
    args.push_back(&pointers[i]);
  }
  for (long long& v : values) args.push_back(&v);
  for (int d = 0; d < 3; ++d)
    if (l.global[d] == 0 || l.local[d] == 0) return 0;  // an empty grid
  const CudaApi& api = cuda();
  CUevent start = nullptr, end = nullptr;
  if (l.wait) {
    cuda_check(api.cuEventCreate(&start, 0), "cuEventCreate");
    cuda_check(api.cuEventCreate(&end, 0), "cuEventCreate");
    cuda_check(api.cuEventRecord(start, stream_), "cuEventRecord");
  }
  CUresult s = api.cuLaunchKernel(p.function, l.global[0], l.global[1], l.global[2], l.local[0], l.local[1], l.local[2], 0,
                                  stream_, args.data(), nullptr);
  float ms = 0;
  if (l.wait && s == CUDA_SUCCESS) {
    s = api.cuEventRecord(end, stream_);
    if (s == CUDA_SUCCESS) s = api.cuEventSynchronize(end);
    if (s == CUDA_SUCCESS) s = api.cuEventElapsedTime(&ms, start, end);
  }
  if (start) (void)api.cuEventDestroy_v2(start);
  if (end) (void)api.cuEventDestroy_v2(end);
  cuda_check(s, "cuLaunchKernel(kernel '" + p.entry + "', " + std::to_string(l.global[0]) + "x" + std::to_string(l.global[1]) +
                    "x" + std::to_string(l.global[2]) + " blocks of " + std::to_string(l.local[0]) + "x" +
                    std::to_string(l.local[1]) + "x" + std::to_string(l.local[2]) + ")");
  return l.wait ? std::max(1e-9, ms * 1e-3) : 0;
}

}  // namespace kiln::cuda
