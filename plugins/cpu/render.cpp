// plugins/cpu/render.cpp - the cpu device renders LIR with its C dialect (c_dialect.hpp).
#include "c_dialect.hpp"
#include "device.hpp"

namespace kiln::cpu {

bool CpuDevice::has_renderer() const { return true; }

std::string CpuDevice::render(const kiln_lir& kernel) {
  CDialect dialect;  // stateless between kernels; one per call keeps render() thread-safe
  return dialect.render(kernel);
}

}  // namespace kiln::cpu
