// plugins/cpu/render_none.cpp - the cpu device has no renderer yet: the core renders C itself.
// Replace this file with render.cpp (the C renderer) to fill the renderer slot.
#include "device.hpp"

namespace kiln::cpu {

bool CpuDevice::has_renderer() const { return false; }

std::string CpuDevice::render(const kiln_lir&) {
  throw sdk::Error{KILN_STATUS_UNIMPLEMENTED, "the cpu backend has no renderer yet"};
}

}  // namespace kiln::cpu
