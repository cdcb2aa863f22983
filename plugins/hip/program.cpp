// plugins/hip/program.cpp - loading code objects and launching kernels.
#include <chrono>

#include "../common/llvm_clash.hpp"
#include "device.hpp"

namespace kiln::hip {

HipProgram::~HipProgram() {
  if (!module) return;
  try {
    (void)hip().hipModuleUnload(static_cast<hipModule_t>(module));
  } catch (...) {
  }
}

std::unique_ptr<sdk::Program> HipDevice::load(std::string_view binary, std::string_view entry) {
  auto p = std::make_unique<HipProgram>();
  p->entry = std::string(entry);
  // Everything that can be checked without a GPU is checked first, so a wrong binary is a clear
  // error (also on offline devices) and never reaches the driver.
  CodeObject co = parse_code_object(binary);
  if (co.machine != kEmAmdgpu)
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "the binary is an ELF file for machine " + std::to_string(co.machine) +
                                                       ", not an AMDGPU code object (e_machine 224)"};
  if (!co.symbol(p->entry) || !co.symbol(p->entry + ".kd"))
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT,
                     "the code object does not define the kernel '" + p->entry + "' (symbol and .kd descriptor)"};
  p->args = kernel_arg_counts(co, p->entry);
  if (offline_) return p;  // validated; launches say why they cannot run
  // Loading a module may bring in comgr, which aborts the process when PoCL is loaded.
  std::string pocl = plugins::loaded_pocl_compiler();
  if (!pocl.empty())
    throw sdk::Error{KILN_STATUS_FAILED_PRECONDITION,
                     name_ + ": " + pocl + " (PoCL, the opencl backend's driver) is loaded in this process, and the HIP "
                                           "runtime's code object manager cannot be loaded next to it (LLVM option "
                                           "clash, the process would abort); use the hip and opencl backends from "
                                           "separate processes (KILN_BACKENDS selects the manifests)"};
  use();
  const HipApi& api = hip();
  hipModule_t module = nullptr;
  hip_check(api.hipModuleLoadData(&module, binary.data()), name_ + ": hipModuleLoadData (kernel '" + p->entry + "')");
  p->module = module;
  hipFunction_t fn = nullptr;
  hip_check(api.hipModuleGetFunction(&fn, module, p->entry.c_str()), "hipModuleGetFunction('" + p->entry + "')");
  p->function = fn;
  return p;
}

double HipDevice::launch(sdk::Program& program, const sdk::Launch& l) {
  auto& p = static_cast<HipProgram&>(program);
  if (p.args.buffers >= 0 && (static_cast<int64_t>(l.buffers.size()) != p.args.buffers ||
                              static_cast<int64_t>(l.values.size()) != p.args.values))
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "kernel '" + p.entry + "' takes " + std::to_string(p.args.buffers) +
                                                       " buffers and " + std::to_string(p.args.values) +
                                                       " values, the launch passed " + std::to_string(l.buffers.size()) +
                                                       " buffers and " + std::to_string(l.values.size()) + " values"};
  for (size_t i = 0; i < l.buffers.size(); ++i) {
    if (!l.buffers[i]) throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "kernel '" + p.entry + "': buffer " + std::to_string(i) + " is NULL"};
    const auto& b = static_cast<const HipBuffer&>(*l.buffers[i]);
    if (l.offset(i) > b.size)
      throw sdk::Error{KILN_STATUS_OUT_OF_RANGE, "kernel '" + p.entry + "': offset " + std::to_string(l.offset(i)) +
                                                     " is past buffer " + std::to_string(i) + "'s " + std::to_string(b.size) +
                                                     " bytes"};
  }
  use();
  // kernel arguments: pointers (buffer + offset), then 64-bit integers, each passed by address
  std::vector<void*> pointers(l.buffers.size());
  std::vector<long long> values(l.values.begin(), l.values.end());
  std::vector<void*> args;
  for (size_t i = 0; i < l.buffers.size(); ++i) {
    pointers[i] = static_cast<char*>(static_cast<HipBuffer&>(*l.buffers[i]).ptr) + l.offset(i);
    args.push_back(&pointers[i]);
  }
  for (long long& v : values) args.push_back(&v);
  for (int d = 0; d < 3; ++d)
    if (l.global[d] == 0 || l.local[d] == 0) return 0;  // an empty grid
  const HipApi& api = hip();
  hipEvent_t start = nullptr, end = nullptr;
  if (l.wait) {
    hip_check(api.hipEventCreate(&start), "hipEventCreate");
    hip_check(api.hipEventCreate(&end), "hipEventCreate");
    hip_check(api.hipEventRecord(start, nullptr), "hipEventRecord");
  }
  hipError_t s = api.hipModuleLaunchKernel(static_cast<hipFunction_t>(p.function), l.global[0], l.global[1], l.global[2],
                                           l.local[0], l.local[1], l.local[2], 0, nullptr, args.data(), nullptr);
  float ms = 0;
  if (l.wait && s == hipSuccess) {
    s = api.hipEventRecord(end, nullptr);
    if (s == hipSuccess) s = api.hipEventSynchronize(end);
    if (s == hipSuccess) s = api.hipEventElapsedTime(&ms, start, end);
  }
  if (start) (void)api.hipEventDestroy(start);
  if (end) (void)api.hipEventDestroy(end);
  hip_check(s, "hipModuleLaunchKernel(kernel '" + p.entry + "', " + std::to_string(l.global[0]) + "x" +
                   std::to_string(l.global[1]) + "x" + std::to_string(l.global[2]) + " workgroups of " +
                   std::to_string(l.local[0]) + "x" + std::to_string(l.local[1]) + "x" + std::to_string(l.local[2]) + ")");
  return l.wait ? std::max(1e-9, ms * 1e-3) : 0;
}

}  // namespace kiln::hip
