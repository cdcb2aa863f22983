// plugins/cpu/render.cpp - the cpu device renders LIR as LLVM IR (in-process LLVM) or as C.
#include "c_dialect.hpp"
#include "device.hpp"
#include "llvm_ir.hpp"
#include "sysinfo.hpp"

namespace kiln::cpu {

bool CpuDevice::has_renderer() const { return true; }

std::string CpuDevice::render(const kiln_lir& kernel) {
  if (config_.compiler.in_process()) {
    LlvmRenderOptions options;
    if (uint64_t llc = cpu_info().caches.last_level) options.streaming_store_bytes = llc;
    return render_llvm_ir(kernel, options);
  }
  CDialect dialect;  // stateless between kernels; one per call keeps render() thread-safe
  return dialect.render(kernel);
}

}  // namespace kiln::cpu
